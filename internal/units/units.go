// Package units parses and formats the quantities dbrig's users type: bit rates
// ("1gbit", "100 Mbps", "10 gigabits"), byte sizes ("64KiB", "16 megabytes")
// and durations ("77ms", "200 µs"). Every command-line flag and study-file key
// that takes a quantity goes through these parsers, so a spelling accepted in
// one place is accepted everywhere, and a refused one is answered with the
// forms that are accepted (RateForms, SizeForms, DurationForms).
//
// Rates are bits per second and sizes are bytes, both as the user would say
// them on the command line or in a study file.
package units

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Rate is a bit rate in bits per second. Zero means unlimited.
type Rate float64

// Common rates.
const (
	Kbit Rate = 1e3
	Mbit Rate = 1e6
	Gbit Rate = 1e9
)

// RateForms names the rate spellings ParseRate reads, for messages and help.
const RateForms = "a number and a unit in bits per second, decimal as in networking: " +
	"100mbit, 1gbit, 10Gbit/s, 10 Gbps, 10 gigabits, 1g, 10GbE; or bytes per second: " +
	"125MB/s, 125 MBps, 125 megabytes/s (B is a byte, b a bit); 0 or unlimited for no limit"

// ParseRate parses a bit rate as people write it: "1gbit", "100 Mbps",
// "2.5Gbit/s", "10 gigabits", "1g", "10GbE", or in bytes per second
// "125MB/s" / "125 MBps". Prefixes k, M, G, T are decimal (1 kbit = 1000
// bit) as in networking; Ki, Mi, Gi, Ti are binary. In abbreviations "b" is
// a bit and "B" a byte, so "10 Mbps" is megabits and "10 MBps" megabytes
// per second (tc reads "mbps" as megabytes; dbrig follows the network
// specifications). A unit of bits needs no "/s" ("1gbit"); a unit of bytes
// does, since "10MB" alone is a size. "0" and "unlimited" mean no limit.
func ParseRate(s string) (Rate, error) {
	in := strings.TrimSpace(s)
	if in == "" {
		return 0, fmt.Errorf("empty rate: want %s", RateForms)
	}
	if strings.EqualFold(in, "unlimited") {
		return 0, nil
	}
	num, unit := splitQuantity(in)
	v, ok := parseNumber(num)
	switch {
	case !ok:
		return 0, fmt.Errorf("rate %q: want %s", s, RateForms)
	case v < 0:
		return 0, fmt.Errorf("rate %q is negative: want %s", s, RateForms)
	case unit == "" && v == 0:
		return 0, nil
	case unit == "":
		return 0, fmt.Errorf("rate %q has no unit: want %s", s, RateForms)
	}
	mult, bytes, perSecond, ok := rateUnit(unit)
	if !ok {
		return 0, fmt.Errorf("rate %q: unknown unit %q: want %s", s, unit, RateForms)
	}
	if bytes && !perSecond {
		return 0, fmt.Errorf("rate %q is an amount of bytes, not a rate: add /s for bytes per second (such as 125MB/s), "+
			"or give bits (such as 1gbit)", s)
	}
	if bytes {
		mult *= 8
	}
	return Rate(v * mult), nil
}

// rateUnit reads the unit of a rate: its multiplier to bits (or bytes) per
// second, whether it counts bytes, and whether it said "per second".
func rateUnit(unit string) (mult float64, bytes, perSecond, ok bool) {
	u := unit
	lower := strings.ToLower(u)
	for _, suffix := range []string{" per second", "/second", "/sec", "/s", "ps"} {
		if strings.HasSuffix(lower, suffix) && (suffix != "ps" || strings.HasSuffix(lower, "bps")) {
			u = strings.TrimSpace(u[:len(u)-len(suffix)])
			lower = strings.ToLower(u)
			perSecond = true
			break
		}
	}
	// Ethernet's names for its line rates: 1GbE, 10GbE, 10GigE.
	if !perSecond && (lower == "gbe" || lower == "gige") {
		return 1e9, false, false, true
	}
	for _, p := range ratePrefixes {
		if len(u) < len(p.prefix) || !strings.EqualFold(u[:len(p.prefix)], p.prefix) {
			continue
		}
		rest := u[len(p.prefix):]
		switch low := strings.ToLower(rest); {
		case low == "bit" || low == "bits" || rest == "b":
			return p.mult, false, perSecond, true
		case low == "byte" || low == "bytes" || rest == "B":
			return p.mult, true, perSecond, true
		case rest == "" && p.bare:
			return p.mult, false, perSecond, true
		}
	}
	return 0, false, false, false
}

// ratePrefixes are tried in order, longest first, so that "mega" is not
// read as "m" followed by "ega". bare marks the prefixes that may stand
// alone for bits ("1g").
var ratePrefixes = []struct {
	prefix string
	mult   float64
	bare   bool
}{
	{"kilo", 1e3, false}, {"mega", 1e6, false}, {"giga", 1e9, false}, {"tera", 1e12, false},
	{"kibi", 1 << 10, false}, {"mebi", 1 << 20, false}, {"gibi", 1 << 30, false}, {"tebi", 1 << 40, false},
	{"ki", 1 << 10, false}, {"mi", 1 << 20, false}, {"gi", 1 << 30, false}, {"ti", 1 << 40, false},
	{"k", 1e3, true}, {"m", 1e6, true}, {"g", 1e9, true}, {"t", 1e12, true},
	{"", 1, false},
}

// String formats the rate the way ParseRate reads it back.
func (r Rate) String() string {
	switch {
	case r <= 0:
		return "unlimited"
	case r >= 1e9:
		return trimFloat(float64(r)/1e9) + "gbit"
	case r >= 1e6:
		return trimFloat(float64(r)/1e6) + "mbit"
	case r >= 1e3:
		return trimFloat(float64(r)/1e3) + "kbit"
	}
	return trimFloat(float64(r)) + "bit"
}

// BytesPerSecond converts the rate to bytes per second.
func (r Rate) BytesPerSecond() float64 { return float64(r) / 8 }

// Size is a number of bytes.
type Size int64

// Common sizes.
const (
	KiB Size = 1 << 10
	MiB Size = 1 << 20
	GiB Size = 1 << 30
)

// SizeForms names the size spellings ParseSize reads, for messages and help.
const SizeForms = "a number of bytes with an optional unit: 1448, 64KiB, 16MiB, 1GiB (binary), " +
	"64KB, 16 MB, 16 megabytes (decimal), 8k (binary, as 8KiB)"

// ParseSize parses a byte size such as "64KiB", "64 KB", "16MiB",
// "16 megabytes", "1448" or "1448b". KiB/MiB/GiB/TiB (and kibibytes ...)
// are binary, KB/MB/GB/TB (and kilobytes ...) decimal, a bare k/m/g/t
// binary ("8k" is 8192) and a bare number bytes. Sizes are bytes whatever
// the case of the b: a size in bits is refused.
func ParseSize(s string) (Size, error) {
	in := strings.TrimSpace(s)
	if in == "" {
		return 0, fmt.Errorf("empty size: want %s", SizeForms)
	}
	num, unit := splitQuantity(in)
	v, ok := parseNumber(num)
	if !ok {
		return 0, fmt.Errorf("size %q: want %s", s, SizeForms)
	}
	if v < 0 {
		return 0, fmt.Errorf("size %q is negative", s)
	}
	mult, err := sizeUnit(unit)
	if err != nil {
		return 0, fmt.Errorf("size %q: %w: want %s", s, err, SizeForms)
	}
	z := math.Round(v * mult)
	if z >= math.MaxInt64 {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return Size(z), nil
}

// sizeUnit reads the unit of a size and returns its multiplier to bytes.
func sizeUnit(unit string) (float64, error) {
	u := strings.ToLower(unit)
	if u == "" {
		return 1, nil
	}
	for _, suffix := range []string{"/s", "ps", "/sec", "per second"} {
		if strings.HasSuffix(u, suffix) {
			return 0, fmt.Errorf("%q is a rate, not a size", unit)
		}
	}
	if strings.HasSuffix(u, "bit") || strings.HasSuffix(u, "bits") {
		return 0, fmt.Errorf("%q counts bits; sizes are bytes", unit)
	}
	for _, p := range sizePrefixes {
		rest, ok := strings.CutPrefix(u, p.prefix)
		if !ok {
			continue
		}
		switch rest {
		case "b", "byte", "bytes":
			return p.mult, nil
		case "":
			if p.bare != 0 {
				return p.bare, nil
			}
		}
	}
	return 0, fmt.Errorf("unknown unit %q", unit)
}

// sizePrefixes are tried longest first. mult applies with a byte unit
// ("KB", "kilobytes"); bare, when not zero, is the prefix alone ("8k").
var sizePrefixes = []struct {
	prefix     string
	mult, bare float64
}{
	{"kilo", 1e3, 0}, {"mega", 1e6, 0}, {"giga", 1e9, 0}, {"tera", 1e12, 0},
	{"kibi", 1 << 10, 0}, {"mebi", 1 << 20, 0}, {"gibi", 1 << 30, 0}, {"tebi", 1 << 40, 0},
	{"ki", 1 << 10, 1 << 10}, {"mi", 1 << 20, 1 << 20}, {"gi", 1 << 30, 1 << 30}, {"ti", 1 << 40, 1 << 40},
	{"k", 1e3, 1 << 10}, {"m", 1e6, 1 << 20}, {"g", 1e9, 1 << 30}, {"t", 1e12, 1 << 40},
	{"", 1, 0},
}

// String formats the size with a binary unit when it is a whole multiple.
func (z Size) String() string {
	switch {
	case z != 0 && z%GiB == 0:
		return strconv.FormatInt(int64(z/GiB), 10) + "GiB"
	case z != 0 && z%MiB == 0:
		return strconv.FormatInt(int64(z/MiB), 10) + "MiB"
	case z != 0 && z%KiB == 0:
		return strconv.FormatInt(int64(z/KiB), 10) + "KiB"
	}
	return strconv.FormatInt(int64(z), 10) + "B"
}

// DurationForms names the duration spellings ParseDuration reads.
const DurationForms = "a number and a unit: 77ms, 77 ms, 0.2ms, 200us (or 200µs), 1.5s, 2m, 1h, 1m30s; 0 for none"

// durationUnits maps the unit words people write to their length.
var durationUnits = map[string]time.Duration{
	"ns": time.Nanosecond, "nsec": time.Nanosecond, "nanosecond": time.Nanosecond, "nanoseconds": time.Nanosecond,
	"us": time.Microsecond, "µs": time.Microsecond, "μs": time.Microsecond, "usec": time.Microsecond,
	"microsecond": time.Microsecond, "microseconds": time.Microsecond,
	"ms": time.Millisecond, "msec": time.Millisecond, "millisecond": time.Millisecond, "milliseconds": time.Millisecond,
	"s": time.Second, "sec": time.Second, "secs": time.Second, "second": time.Second, "seconds": time.Second,
	"m": time.Minute, "min": time.Minute, "mins": time.Minute, "minute": time.Minute, "minutes": time.Minute,
	"h": time.Hour, "hr": time.Hour, "hrs": time.Hour, "hour": time.Hour, "hours": time.Hour,
}

// ParseDuration parses a duration as people write it: "77ms", "77 ms",
// "0.2ms", "200us", "200µs", "1.5 seconds", or Go's compound form
// ("1m30s"). It refuses negative values and a number without a unit,
// except "0".
func ParseDuration(s string) (time.Duration, error) {
	in := strings.TrimSpace(s)
	if in == "" {
		return 0, fmt.Errorf("empty duration: want %s", DurationForms)
	}
	num, unit := splitQuantity(in)
	v, ok := parseNumber(num)
	if ok && v < 0 {
		return 0, fmt.Errorf("duration %q is negative", s)
	}
	if ok && unit == "" {
		if v == 0 {
			return 0, nil
		}
		return 0, fmt.Errorf("duration %q has no unit: want %s", s, DurationForms)
	}
	if per, known := durationUnits[strings.ToLower(unit)]; ok && known {
		d := v * float64(per)
		if d >= math.MaxInt64 {
			return 0, fmt.Errorf("duration %q is too long", s)
		}
		return time.Duration(math.Round(d)), nil
	}
	d, err := time.ParseDuration(strings.ReplaceAll(in, " ", ""))
	if err != nil {
		return 0, fmt.Errorf("duration %q: want %s", s, DurationForms)
	}
	if d < 0 {
		return 0, fmt.Errorf("duration %q is negative", s)
	}
	return d, nil
}

// splitQuantity splits "10 gigabits" into the number "10" and the unit
// "gigabits". The number is a sign, digits and at most one decimal point.
func splitQuantity(s string) (num, unit string) {
	i := 0
	if i < len(s) && (s[i] == '-' || s[i] == '+') {
		i++
	}
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	return s[:i], strings.TrimSpace(s[i:])
}

// parseNumber reads the number splitQuantity found; ok is false when there
// was none.
func parseNumber(num string) (float64, bool) {
	v, err := strconv.ParseFloat(num, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}

// ParsePercent parses a probability written as "0.1%" or "0.001" into [0,1].
func ParsePercent(s string) (float64, error) {
	in := strings.TrimSpace(s)
	scale := 1.0
	if n, ok := strings.CutSuffix(in, "%"); ok {
		in, scale = strings.TrimSpace(n), 0.01
	}
	v, err := strconv.ParseFloat(in, 64)
	if err != nil || math.IsNaN(v) {
		return 0, fmt.Errorf("probability %q: want a percentage such as 0.1%% or a fraction such as 0.001", s)
	}
	v *= scale
	if v < 0 || v > 1 {
		return 0, fmt.Errorf("probability %q is outside 0..100%%", s)
	}
	return v, nil
}

// FormatDuration prints a duration with three significant digits in the unit
// a reader expects (µs below 1 ms, ms below 1 s, s above).
func FormatDuration(d time.Duration) string {
	switch {
	case d < time.Microsecond:
		return strconv.FormatInt(int64(d), 10) + "ns"
	case d < time.Millisecond:
		return trimFloat(float64(d)/1e3) + "µs"
	case d < time.Second:
		return trimFloat(float64(d)/1e6) + "ms"
	}
	return trimFloat(d.Seconds()) + "s"
}

func trimFloat(v float64) string {
	s := strconv.FormatFloat(v, 'f', 3, 64)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}

// counts prints whole numbers with a comma between thousands, as a
// reader of English expects a bound to read (1,000,000 rows).
var counts = message.NewPrinter(language.English)

// FormatCount writes a count with thousands separators: 1,000,000.
func FormatCount(n int64) string { return counts.Sprintf("%d", n) }
