package link

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/spf13/pflag"

	"github.com/dbrig/dbrig/internal/units"
)

// fromFlags reads a command line as every command with a link reads it.
func fromFlags(t *testing.T, args ...string) (Config, error) {
	t.Helper()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	f := AddFlags(fs, "profile", "the profile")
	if err := fs.Parse(args); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return f.Config()
}

// fromTOML reads a study file's [[link]] settings over a profile, as the
// study package does once the TOML decoder has read them.
func fromTOML(t *testing.T, profile, src string) (Config, error) {
	t.Helper()
	var table map[string]any
	if _, err := toml.Decode(src, &table); err != nil {
		t.Fatalf("%s: %v", src, err)
	}
	var base Config
	if profile != "" {
		var err error
		if base, err = ParseProfile(profile); err != nil {
			t.Fatal(err)
		}
	}
	return Override(base, table)
}

// tomlLine writes a setting as a study file would: the flag's text quoted,
// unless the case gives the TOML value (a number) itself.
func tomlLine(p Param, text, value string) string {
	if value == "" {
		value = `"` + text + `"`
	}
	return p.Key() + " = " + value
}

func mustParam(t *testing.T, name string) Param {
	t.Helper()
	p, ok := LookupParam(name)
	if !ok {
		t.Fatalf("no parameter %q", name)
	}
	return p
}

// Every parameter written on a command line and in a study file gives the
// same Config: one parser reads both (a study file once refused
// window = 65535, a flag took it; a flag took --mss 1.5KiB, a study file
// only whole numbers).
func TestEveryParameterReadsTheSameFromAFlagAndAStudyFile(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		param, text string
		toml        string // the TOML value when not the text quoted
		want        Config
	}{
		{"rtt", "77ms", "", Config{RTT: 77 * time.Millisecond}},
		{"rtt", "200µs", "", Config{RTT: 200 * time.Microsecond}},
		{"forward-delay", "70ms", "", Config{ForwardDelay: 70 * time.Millisecond}},
		{"reverse-delay", "7 ms", "", Config{ReverseDelay: 7 * time.Millisecond}},
		{"rate", "1gbit", "", Config{Rate: units.Gbit}},
		{"rate", "125MB/s", "", Config{Rate: units.Gbit}},
		{"rate", "0", "", Config{}},
		{"members", "2", "2", Config{Members: 2}},
		{"window", "64KiB", "", Config{Window: 64 * units.KiB}},
		{"window", "65535", "65535", Config{Window: LegacyWindow}},
		{"sndbuf", "8KiB", "", Config{SendBuffer: 8 * units.KiB}},
		{"jitter", "2ms", "", Config{Jitter: 2 * time.Millisecond}},
		{"loss", "0.1%", "", Config{Loss: 0.001}},
		{"loss", "0.001", "0.001", Config{Loss: 0.001}},
		{"duplex", "half", "", Config{Duplex: HalfDuplex}},
		{"duplex", "mismatch", "", Config{Duplex: Mismatch}},
		{"mss", "1.5KiB", "", Config{MSS: 1536}},
		{"mss", "536", "536", Config{MSS: 536}},
		{"overhead", "52", "52", Config{Overhead: 52}},
		{"rto", "300ms", "", Config{RTO: 300 * time.Millisecond}},
		{"seed", "7", "7", Config{Seed: 7}},
		{"seed", "-3", "", Config{Seed: -3}},
	} {
		p := mustParam(t, tt.param)
		byFlag, err := fromFlags(t, "--"+p.Name, tt.text)
		if err != nil || byFlag != tt.want {
			t.Errorf("--%s %s: %#v, %v; want %#v", p.Name, tt.text, byFlag, err, tt.want)
		}
		line := tomlLine(p, tt.text, tt.toml)
		byFile, err := fromTOML(t, "", line)
		if err != nil || byFile != tt.want {
			t.Errorf("%s: %#v, %v; want %#v", line, byFile, err, tt.want)
		}
	}
	// Over a profile, both override only what they set.
	byFlag, err1 := fromFlags(t, "--profile", "tukwila-dublin+legacy-window", "--rtt", "6ms", "--forward-delay", "5ms")
	byFile, err2 := fromTOML(t, "tukwila-dublin+legacy-window", "rtt = \"6ms\"\nforward_delay = \"5ms\"")
	want := Config{RTT: 6 * time.Millisecond, ForwardDelay: 5 * time.Millisecond, Rate: WANRate, Window: LegacyWindow}
	if err1 != nil || err2 != nil || byFlag != want || byFile != want {
		t.Errorf("over a profile: flags %#v (%v), study file %#v (%v); want %#v", byFlag, err1, byFile, err2, want)
	}
}

// Every bound, and every value no parser takes, is refused with the same
// words from a flag and from a study file, the flag named as a flag
// ("--rtt") and the key as a key ("rtt").
func TestEveryBoundIsRefusedTheSameWayFromAFlagAndAStudyFile(t *testing.T) {
	t.Parallel()
	covered := map[string]bool{}
	for _, tt := range []struct {
		param, text string
		want        string // the study file's message
	}{
		{"rtt", "11s", "rtt 11s: at most 10s (the Moon is 2.6 s away and back: a longer WAN is a typo)"},
		{"rtt", "1000000h", "rtt 1000000h0m0s: at most 10s"},
		{"rtt", "77", `rtt: duration "77" has no unit`},
		{"forward-delay", "1m", "forward_delay 1m0s: at most 10s"},
		{"reverse-delay", "-1ms", `reverse_delay: duration "-1ms" is negative`},
		{"rate", "10bit", "rate 10bit: at least 1kbit, or 0 for unlimited (slower, one full segment takes more than 10 s)"},
		{"rate", "10tbit", "rate 10000gbit: at most 1000gbit (faster than any Ethernet)"},
		{"rate", "100", `rate: rate "100" has no unit`},
		{"members", "0", "members 0: want 1 to 8: 802.3ad (802.1AX) aggregates at most 8 active members"},
		{"members", "9", "members 9: want 1 to 8"},
		{"members", "two", `members: "two": want a whole number of members`},
		{"window", "2GiB", "window 2GiB: at most 1GiB (TCP's largest window with window scaling, RFC 7323)"},
		{"window", "1000", "window 1000B: smaller than one segment (mss 1448 bytes): want at least the segment, or 0 for unlimited"},
		{"sndbuf", "2GiB", "sndbuf 2GiB: at most 1GiB (TCP's largest window with window scaling, RFC 7323)"},
		{"jitter", "10.5s", "jitter 10.5s: at most 10s"},
		{"loss", "100%", "loss 100%: want a probability below 100%, such as 0.1%"},
		{"loss", "150%", `loss: probability "150%" is outside 0..100%`},
		{"duplex", "sideways", `duplex: duplex "sideways": want full, half or mismatch`},
		{"mss", "0", "mss 0: want 536 to 65495 bytes (the segment every IPv4 host accepts, the largest IPv4 datagram less its headers)"},
		{"mss", "100", "mss 100: want 536 to 65495 bytes"},
		{"mss", "65496", "mss 65496: want 536 to 65495 bytes"},
		{"overhead", "70000", "overhead 70000: want 0 to 65535 bytes"},
		{"rto", "121s", "rto 2m1s: at most 2m0s (Linux's largest retransmission timeout)"},
		{"seed", "lucky", `seed: "lucky": want a whole number`},
	} {
		p := mustParam(t, tt.param)
		covered[p.Name] = true
		_, flagErr := fromFlags(t, "--"+p.Name, tt.text)
		_, fileErr := fromTOML(t, "", tomlLine(p, tt.text, ""))
		if fileErr == nil || !strings.Contains(fileErr.Error(), tt.want) {
			t.Errorf("%s = %q: %v, want %q", p.Key(), tt.text, fileErr, tt.want)
			continue
		}
		if flagErr == nil {
			t.Errorf("--%s %s: accepted, refused in a study file: %v", p.Name, tt.text, fileErr)
			continue
		}
		flagWords := strings.ReplaceAll(flagErr.Error(), "--", "")
		if flagWords != strings.ReplaceAll(fileErr.Error(), p.Key(), p.Name) {
			t.Errorf("--%s %s: %v\nwant the study file's words: %v", p.Name, tt.text, flagErr, fileErr)
		}
		if !strings.HasPrefix(flagErr.Error(), "--"+p.Name) {
			t.Errorf("--%s %s: %v, want the flag named first", p.Name, tt.text, flagErr)
		}
	}
	for _, p := range Params() {
		if !covered[p.Name] {
			t.Errorf("parameter %s has no refused value in this test: add one", p.Name)
		}
	}
}

// A profile's value beyond its bound (rtt-1000000h) is blamed on the
// profile, by the flag that named it or the study file's profile key.
func TestAProfileBeyondABoundIsNamedAsTheProfile(t *testing.T) {
	t.Parallel()
	const want = "rtt 1000000h0m0s: at most 10s"
	_, err := fromFlags(t, "--profile", "rtt-1000000h", "--rate", "10mbit")
	if err == nil || !strings.HasPrefix(err.Error(), "--profile: "+want) {
		t.Errorf("--profile rtt-1000000h: %v, want %q", err, "--profile: "+want)
	}
	_, err = fromTOML(t, "rtt-1000000h", `rate = "10mbit"`)
	var pe *ParamError
	if !errors.As(err, &pe) || !pe.FromBase || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("profile rtt-1000000h in a study file: %v (%+v), want %q from the profile", err, pe, want)
	}
	// A relation broken by a written setting is the setting's.
	_, err = fromFlags(t, "--profile", "lan-1g+legacy-window", "--window", "1KiB")
	if err == nil || !strings.HasPrefix(err.Error(), "--window 1KiB: smaller than one segment (--mss 1448 bytes)") {
		t.Errorf("--window 1KiB over a profile: %v", err)
	}
}

// Every problem of a command line is reported at once, in the table's order.
func TestEveryBadFlagIsReportedAtOnce(t *testing.T) {
	t.Parallel()
	_, err := fromFlags(t, "--loss", "100%", "--rtt", "11s", "--profile", "tukwila-mars", "--mss", "lots")
	var got []string
	for _, line := range strings.Split(err.Error(), "\n") {
		name, _, _ := strings.Cut(line, " ")
		got = append(got, strings.TrimSuffix(name, ":"))
	}
	if want := "--profile --rtt --loss --mss"; strings.Join(got, " ") != want {
		t.Errorf("errors for %s, want %s:\n%v", strings.Join(got, " "), want, err)
	}
}

// Given tells a command whether a link was asked for at all.
func TestFlagsGiven(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		args []string
		want bool
	}{
		{nil, false},
		{[]string{"--other", "x"}, false},
		{[]string{"--link", "lan-1g"}, true},
		{[]string{"--rtt", "0"}, true},
		{[]string{"--seed", "7"}, true},
	} {
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		fs.String("other", "", "")
		f := AddFlags(fs, "link", "the link's profile")
		if err := fs.Parse(tt.args); err != nil {
			t.Fatal(err)
		}
		if got := f.Given(); got != tt.want {
			t.Errorf("%v: Given() = %v, want %v", tt.args, got, tt.want)
		}
	}
}

// A study file's value that is neither text nor a number is refused with
// what it was; an empty table changes nothing.
func TestAStudyFileValueOfTheWrongType(t *testing.T) {
	t.Parallel()
	_, err := fromTOML(t, "", "rtt = [1, 2]\nduplex = true")
	for _, want := range []string{"rtt: want a string", "got a list", "duplex: want a string", "got a boolean"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("rtt = [1, 2], duplex = true: %v, want it to say %q", err, want)
		}
	}
	if c, err := fromTOML(t, "lan-1g", ""); err != nil || c != mustProfile(t, "lan-1g") {
		t.Errorf("no settings over lan-1g: %#v, %v", c, err)
	}
}

func mustProfile(t *testing.T, expr string) Config {
	t.Helper()
	c, err := ParseProfile(expr)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
