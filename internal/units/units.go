// Package units parses and formats the quantities dbrig's users type: bit rates
// ("1gbit", "100mbit"), byte sizes ("64KiB", "16MiB") and durations ("77ms").
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
)

// Rate is a bit rate in bits per second. Zero means unlimited.
type Rate float64

// Common rates.
const (
	Kbit Rate = 1e3
	Mbit Rate = 1e6
	Gbit Rate = 1e9
)

var rateSuffixes = []struct {
	suffix string
	mult   float64
}{
	// Longest suffixes first so "kbit" is not taken for "bit".
	{"kbit/s", 1e3}, {"mbit/s", 1e6}, {"gbit/s", 1e9}, {"tbit/s", 1e12},
	{"kbps", 1e3}, {"mbps", 1e6}, {"gbps", 1e9}, {"tbps", 1e12},
	{"kbit", 1e3}, {"mbit", 1e6}, {"gbit", 1e9}, {"tbit", 1e12},
	{"bit/s", 1}, {"bps", 1}, {"bit", 1},
}

// ParseRate parses a bit rate such as "1gbit", "100mbit", "2.5Gbit/s" or
// "0" (unlimited). Units are decimal (1 kbit = 1000 bit) as in networking.
func ParseRate(s string) (Rate, error) {
	in := strings.ToLower(strings.TrimSpace(s))
	if in == "" {
		return 0, fmt.Errorf("empty rate: want a number with a unit such as 1gbit or 100mbit")
	}
	if in == "0" || in == "unlimited" {
		return 0, nil
	}
	for _, u := range rateSuffixes {
		if num, ok := strings.CutSuffix(in, u.suffix); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return 0, fmt.Errorf("rate %q: %q is not a number", s, num)
			}
			if v < 0 {
				return 0, fmt.Errorf("rate %q is negative", s)
			}
			return Rate(v * u.mult), nil
		}
	}
	return 0, fmt.Errorf("rate %q has no unit: want kbit, mbit or gbit (e.g. 1gbit)", s)
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

var sizeSuffixes = []struct {
	suffix string
	mult   float64
}{
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
	{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12},
	{"k", 1 << 10}, {"m", 1 << 20}, {"g", 1 << 30},
	{"b", 1},
}

// ParseSize parses a byte size such as "64KiB", "16MiB", "40KB", "1448" or
// "1448b". KiB/MiB/GiB are binary, KB/MB/GB decimal, a bare number is bytes.
func ParseSize(s string) (Size, error) {
	in := strings.ToLower(strings.TrimSpace(s))
	if in == "" {
		return 0, fmt.Errorf("empty size: want a number with a unit such as 64KiB")
	}
	mult := 1.0
	num := in
	for _, u := range sizeSuffixes {
		if n, ok := strings.CutSuffix(in, u.suffix); ok {
			num, mult = n, u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("size %q: want a number with an optional unit (KiB, MiB, GiB, KB, MB, GB)", s)
	}
	if v < 0 {
		return 0, fmt.Errorf("size %q is negative", s)
	}
	return Size(math.Round(v * mult)), nil
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

// ParseDuration parses a Go duration ("77ms", "1.5s", "200us") and refuses
// negative values. A bare "0" is zero.
func ParseDuration(s string) (time.Duration, error) {
	in := strings.TrimSpace(s)
	if in == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(in)
	if err != nil {
		return 0, fmt.Errorf("duration %q: want a Go duration such as 77ms, 1.5s or 200us", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("duration %q is negative", s)
	}
	return d, nil
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
