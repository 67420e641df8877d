package link

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/dbrig/dbrig/internal/units"
)

// Profile is a named link configuration, or a named modifier that changes
// some settings of another profile ("tukwila-dublin+legacy-window").
type Profile struct {
	Name        string
	Description string
	// Modifier profiles apply on top of a base profile.
	Modifier bool
	// Source names where the figures come from.
	Source string
	// settings are the profile's values of the link's parameters, by name,
	// in the words a flag or a study file would write them.
	settings map[string]string
}

// Apply returns cfg changed by the profile. Its values are read by the
// parameters' parsers but not held to their bounds, which a Config's
// reader checks (rtt-1000000h is a profile, refused by Validate).
func (p Profile) Apply(cfg Config) Config {
	for _, param := range params {
		text, ok := p.settings[param.Name]
		if !ok {
			continue
		}
		if err := param.read(&cfg, text); err != nil {
			// Only a misspelt built-in profile reads wrong: the profiles'
			// test reads every one.
			panic(fmt.Sprintf("link profile %s: %s: %v", p.Name, param.Name, err))
		}
	}
	return cfg
}

// Config returns the profile applied to a zero Config.
func (p Profile) Config() Config { return p.Apply(Config{}) }

// WANRate is the bandwidth given to the site-to-site profiles. Seed 000 does
// not publish the circuits' bandwidth; it says a 16 MiB window makes 77 ms
// bandwidth-bound, which holds for 1 Gbit/s.
const WANRate = units.Gbit

// autotunedWindow is AutotunedWindow as a profile writes it.
var autotunedWindow = units.Size(AutotunedWindow).String()

// wan is a site-to-site link of the given RTT.
func wan(rtt string) map[string]string {
	return map[string]string{"rtt": rtt, "rate": WANRate.String(), "window": autotunedWindow}
}

// Sites is seed 000's latency matrix between data centres, in milliseconds.
var siteNames = []string{"tukwila", "quincy", "santa-clara", "blueridge", "dublin"}

var siteRTTms = [5][5]int{
	{1, 4, 19, 77, 150},
	{4, 1, 23, 68, 146},
	{19, 23, 1, 79, 156},
	{77, 68, 79, 1, 84},
	{150, 146, 156, 84, 1},
}

// bonded is settings with the given number of members.
func bonded(settings map[string]string, members int) map[string]string {
	settings["members"] = strconv.Itoa(members)
	return settings
}

// Profiles returns every built-in profile, base profiles first, each group
// sorted by name.
func Profiles() []Profile {
	lan := func(rate, rtt string) map[string]string {
		return map[string]string{"rate": rate, "rtt": rtt, "window": autotunedWindow}
	}
	ps := []Profile{
		{Name: "loopback", Description: "no impairment: the proxy only segments and forwards"},
		{Name: "lan-1g", Description: "1 Gbit/s Ethernet LAN, 0.2 ms RTT", Source: "seed 004", settings: lan("1gbit", "200us")},
		{Name: "lan-2x1g", Description: "two 1 Gbit/s Ethernet links bonded (802.3ad), 0.2 ms RTT: one connection rides one member",
			Source: "seed 004", settings: bonded(lan("1gbit", "200us"), 2)},
		{Name: "lan-4x1g", Description: "four 1 Gbit/s Ethernet links bonded (802.3ad), 0.2 ms RTT: one connection rides one member",
			Source: "seed 004", settings: bonded(lan("1gbit", "200us"), 4)},
		{Name: "lan-10g", Description: "10 Gbit/s Ethernet LAN, 0.1 ms RTT", Source: "seed 004", settings: lan("10gbit", "100us")},
		{Name: "infiniband", Description: "Infiniband-like fabric, 40 Gbit/s, 0.02 ms RTT", Source: "seed 004", settings: lan("40gbit", "20us")},
		{Name: "legacy-window", Modifier: true, Source: "seed 000",
			Description: "64 KiB TCP window (65,535 bytes, no window scaling: Windows Server 2003)",
			settings:    map[string]string{"window": strconv.Itoa(LegacyWindow)}},
		{Name: "legacy-stack", Modifier: true, Source: "seed 000",
			Description: "Windows Server 2003's stack: a 64 KiB window (no scaling) and the 8 KB Winsock send buffer",
			settings:    map[string]string{"window": strconv.Itoa(LegacyWindow), "sndbuf": strconv.Itoa(LegacySendBuffer)}},
		{Name: "autotuned", Modifier: true, Source: "seed 000",
			Description: "16 MiB TCP window (receive window autotuning: Windows Server 2008)",
			settings:    map[string]string{"window": autotunedWindow}},
		{Name: "bond2", Modifier: true, Source: "seed 004",
			Description: "two links bonded (802.3ad), each at the base profile's rate: one connection rides one member",
			settings:    map[string]string{"members": "2"}},
		{Name: "bond4", Modifier: true, Source: "seed 004",
			Description: "four links bonded (802.3ad), each at the base profile's rate: one connection rides one member",
			settings:    map[string]string{"members": "4"}},
		{Name: "half-duplex", Modifier: true, Source: "seed 002",
			Description: "both directions share one medium",
			settings:    map[string]string{"duplex": HalfDuplex.String()}},
		{Name: "duplex-mismatch", Modifier: true, Source: "seed 002",
			Description: "one end half duplex, the other full: late collisions and retransmissions",
			settings:    map[string]string{"duplex": Mismatch.String()}},
	}
	for i := range siteNames {
		for j := i + 1; j < len(siteNames); j++ {
			ps = append(ps, Profile{
				Name:        siteNames[i] + "-" + siteNames[j],
				Description: fmt.Sprintf("WAN %s to %s, %d ms RTT, %s", title(siteNames[i]), title(siteNames[j]), siteRTTms[i][j], WANRate),
				Source:      "seed 000 latency matrix",
				settings:    wan(fmt.Sprintf("%dms", siteRTTms[i][j])),
			})
		}
	}
	sort.SliceStable(ps, func(a, b int) bool {
		if ps[a].Modifier != ps[b].Modifier {
			return !ps[a].Modifier
		}
		return ps[a].Name < ps[b].Name
	})
	return ps
}

func title(site string) string {
	words := strings.Split(site, "-")
	for i, w := range words {
		words[i] = strings.ToUpper(w[:1]) + w[1:]
	}
	return strings.Join(words, " ")
}

// LookupProfile finds a base profile or modifier by name. Site pairs are
// found in either order ("dublin-tukwila" is "tukwila-dublin"), and
// "rtt-<duration>" (e.g. "rtt-23ms") is a WAN link of that RTT at WANRate.
func LookupProfile(name string) (Profile, bool) {
	name = strings.ToLower(strings.TrimSpace(name))
	for _, p := range Profiles() {
		if p.Name == name {
			return p, true
		}
	}
	for i, a := range siteNames {
		for j, b := range siteNames {
			if i > j && name == a+"-"+b {
				return LookupProfile(b + "-" + a)
			}
		}
	}
	if d, ok := strings.CutPrefix(name, "rtt-"); ok {
		rtt, err := units.ParseDuration(d)
		if err == nil && rtt > 0 {
			return Profile{
				Name:        name,
				Description: fmt.Sprintf("WAN link of %s RTT at %s", units.FormatDuration(rtt), WANRate),
				settings:    wan(d),
			}, true
		}
	}
	return Profile{}, false
}

// ParseProfile reads a profile expression: a base profile followed by any
// number of modifiers joined with "+", such as "tukwila-dublin+legacy-window"
// or "lan-1g+half-duplex". A modifier alone applies to the loopback profile.
func ParseProfile(expr string) (Config, error) {
	if strings.TrimSpace(expr) == "" {
		return Config{}, fmt.Errorf("empty link profile: %s", profileHint())
	}
	var cfg Config
	for i, part := range strings.Split(expr, "+") {
		p, ok := LookupProfile(part)
		if !ok {
			return Config{}, fmt.Errorf("unknown link profile %q: %s", strings.TrimSpace(part), profileHint())
		}
		if i > 0 && !p.Modifier {
			return Config{}, fmt.Errorf("link profile %q: %q is a base profile, only modifiers (%s) may follow a '+'",
				expr, p.Name, strings.Join(names(true), ", "))
		}
		cfg = p.Apply(cfg)
	}
	return cfg, nil
}

func names(modifiers bool) []string {
	var out []string
	for _, p := range Profiles() {
		if p.Modifier == modifiers {
			out = append(out, p.Name)
		}
	}
	return out
}

func profileHint() string {
	return "see `dbrig link --list-profiles` (e.g. loopback, lan-1g, tukwila-blueridge, rtt-23ms, with modifiers such as +legacy-window)"
}
