package doctor

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// ARPHRD_LOOPBACK in /sys/class/net/*/type.
const typeLoopback = 772

// iface is a network interface from /sys/class/net.
type iface struct {
	name         string
	typ          int64
	mtu          int64
	carrier      int64 // 1 up, 0 down, -1 unknown
	operstate    string
	speed        int64 // Mb/s, -1 unknown
	duplex       string
	driver       string
	virtual      bool // under /sys/devices/virtual: bridge, veth, bond, tun
	defaultRoute bool // carries the default route
	ethtool      *ethtoolInfo
}

func readInterfaces(src Source) []iface {
	routes := defaultRouteIfaces(src)
	names, _ := src.ReadDir("sys/class/net")
	var out []iface
	for _, name := range names {
		dir := "sys/class/net/" + name
		i := iface{name: name, carrier: -1, speed: -1, defaultRoute: routes[name]}
		i.typ, _ = readInt(src, dir+"/type")
		i.mtu, _ = readInt(src, dir+"/mtu")
		if v, ok := readInt(src, dir+"/carrier"); ok {
			i.carrier = v
		}
		i.operstate, _ = readString(src, dir+"/operstate")
		if v, ok := readInt(src, dir+"/speed"); ok && v > 0 {
			i.speed = v
		}
		i.duplex, _ = readString(src, dir+"/duplex")
		if t, err := src.ReadLink(dir); err == nil {
			i.virtual = strings.Contains(t, "/virtual/")
		}
		i.driver = readLinkBase(src, dir+"/device/driver")
		if out, err := src.Command("ethtool", name); err == nil && strings.TrimSpace(out) != "" {
			i.ethtool = parseEthtool(out)
		}
		out = append(out, i)
	}
	return out
}

// defaultRouteIfaces reads /proc/net/route: the interfaces of routes with
// destination and mask 0.
func defaultRouteIfaces(src Source) map[string]bool {
	b, err := src.ReadFile("proc/net/route")
	if err != nil {
		return nil
	}
	out := map[string]bool{}
	for line := range strings.Lines(string(b)) {
		f := strings.Fields(line)
		if len(f) >= 8 && f[1] == "00000000" && f[7] == "00000000" {
			out[f[0]] = true
		}
	}
	return out
}

// ethtoolInfo is what ethtool IFACE adds to sysfs.
type ethtoolInfo struct {
	autoneg            string
	supported, partner []string // link modes such as "1000baseT/Full"
}

// parseEthtool reads "ethtool IFACE": "Key: value" lines, where link-mode
// lists continue on lines without a colon.
func parseEthtool(out string) *ethtoolInfo {
	fields := map[string]string{}
	last := ""
	for line := range strings.Lines(out) {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "Settings for ") {
			continue
		}
		k, v, ok := strings.Cut(t, ":")
		if !ok {
			if last != "" {
				fields[last] += " " + t
			}
			continue
		}
		last = strings.TrimSpace(k)
		fields[last] = strings.TrimSpace(v)
	}
	modes := func(k string) []string {
		v := fields[k]
		if v == "" || strings.HasPrefix(v, "Not reported") {
			return nil
		}
		return strings.Fields(v)
	}
	return &ethtoolInfo{autoneg: fields["Auto-negotiation"],
		supported: modes("Supported link modes"), partner: modes("Link partner advertised link modes")}
}

// bestFull is the highest speed in Mb/s among full-duplex link modes.
func bestFull(modes []string) int64 {
	var best int64
	for _, m := range modes {
		base, dup, ok := strings.Cut(m, "/")
		if !ok || dup != "Full" {
			continue
		}
		n, _, _ := strings.Cut(base, "base")
		if v, err := strconv.ParseInt(n, 10, 64); err == nil && v > best {
			best = v
		}
	}
	return best
}

// carries reports whether an interface is one the checks look at: a
// device of its own, or the one that carries the default route.
func (i iface) carries() bool {
	return i.typ != typeLoopback && (!i.virtual || i.defaultRoute)
}

func (i iface) up() bool {
	return i.carrier == 1 || (i.carrier == -1 && i.operstate == "up")
}

func checkNetwork(h *host) []Result {
	var out []Result
	var carrying []iface
	for _, i := range h.ifaces {
		if !i.carries() {
			continue
		}
		out = append(out, checkLink(i))
		if i.up() {
			carrying = append(carrying, i)
		}
	}
	if len(out) == 0 {
		out = append(out, result("net.link", "", Skip, "no network interface with a device of its own or a default route", "full duplex"))
	}
	out = append(out, checkMTU(carrying))
	return out
}

func checkLink(i iface) Result {
	driver := i.driver
	if driver == "" {
		driver = "none (virtual)"
	}
	carrier := "carrier up"
	if !i.up() {
		carrier = "no carrier"
	}
	speed := "speed not reported"
	if i.speed > 0 {
		speed = fmt.Sprintf("%d Mb/s", i.speed)
	}
	duplex := i.duplex
	if duplex == "" || duplex == "unknown" {
		duplex = "duplex not reported"
	} else {
		duplex += " duplex"
	}
	obs := fmt.Sprintf("%s, %s, MTU %d, %s, driver %s", speed, duplex, i.mtu, carrier, driver)
	var notes []string
	if e := i.ethtool; e != nil {
		if e.autoneg != "" {
			notes = append(notes, "autonegotiation "+e.autoneg)
		}
		if len(e.partner) > 0 {
			notes = append(notes, "partner advertises "+strings.Join(e.partner, " "))
		}
	}
	if len(notes) > 0 {
		obs += " (" + strings.Join(notes, "; ") + ")"
	}
	r := result("net.link", i.name, Pass, obs, "full duplex at the port's best speed").
		with("speed_mbps", i.speed, "duplex", i.duplex, "mtu", i.mtu, "carrier", i.up(), "driver", i.driver,
			"virtual", i.virtual, "default_route", i.defaultRoute)
	fix := fmt.Sprintf("Set %[1]s and its switch port both to autonegotiation (ethtool -s %[1]s autoneg on), or force both ends "+
		"to the same speed and full duplex (ethtool -s %[1]s speed 1000 duplex full autoneg off, and the same on the switch); "+
		"make it permanent in the interface's configuration.", i.name)
	switch {
	case !i.up():
		r.Status = Info
	case i.duplex == "half":
		r.Status = Fail
		if e := i.ethtool; e != nil && bestFull(e.partner) > 0 {
			r.Observed += "; the link partner offers full duplex: a duplex mismatch"
		}
		r = r.withFix(fix)
	case i.duplex == "full":
		if e := i.ethtool; e != nil && i.speed > 0 {
			best := bestFull(e.supported)
			if p := bestFull(e.partner); len(e.partner) > 0 {
				best = min(best, p)
			}
			if best > i.speed {
				r.Status = Warn
				r.Observed += fmt.Sprintf("; both ends support %d Mb/s", best)
				r = r.withFix(fmt.Sprintf("%s runs at %d Mb/s although both ends support %d Mb/s: check the cable (a damaged pair "+
					"falls back to 100 Mb/s) and the switch port's settings.", i.name, i.speed, best))
			}
		}
	default:
		r.Status = Info
		r.Observed += "; a virtual NIC: the physical NIC of the hypervisor host sets speed and duplex"
	}
	return r
}

// checkMTU compares the MTUs of the interfaces that are up.
func checkMTU(ifs []iface) Result {
	if len(ifs) == 0 {
		return result("net.mtu", "", Skip, "no interface with a carrier", "one MTU on every interface carrying database traffic")
	}
	var parts []string
	mtus := map[string]any{}
	var distinct []int64
	for _, i := range ifs {
		parts = append(parts, fmt.Sprintf("%s %d", i.name, i.mtu))
		mtus[i.name] = i.mtu
		if !slices.Contains(distinct, i.mtu) {
			distinct = append(distinct, i.mtu)
		}
	}
	r := result("net.mtu", "", Pass, "MTU "+strings.Join(parts, ", "), "one MTU on every interface carrying database traffic").with("mtu", mtus)
	if len(distinct) > 1 {
		r.Status = Warn
		r = r.withFix("Give every interface on the database's path the same MTU (ip link set dev IFACE mtu N, and the same on " +
			"switches and peers), or make sure path MTU discovery works (ICMP 'fragmentation needed' must pass firewalls).")
	}
	return r
}

// primaryMTU is the MTU of the interface carrying the default route (or of
// the only interface up), for comparing hosts of a fleet; 0 when unknown.
func (h *host) primaryMTU() (string, int64) {
	var up []iface
	for _, i := range h.ifaces {
		if i.carries() && i.up() {
			if i.defaultRoute {
				return i.name, i.mtu
			}
			up = append(up, i)
		}
	}
	if len(up) == 1 {
		return up[0].name, up[0].mtu
	}
	return "", 0
}
