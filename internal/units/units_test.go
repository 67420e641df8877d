package units

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestParseRate(t *testing.T) {
	tests := []struct {
		in   string
		want Rate
		bad  string // a part of the message when the rate is refused
	}{
		{in: "1gbit", want: 1e9},
		{in: "100mbit", want: 100e6},
		{in: "2.5Gbit/s", want: 2.5e9},
		{in: "64kbit", want: 64e3},
		{in: "10Mbps", want: 10e6},
		{in: "0", want: 0},
		{in: "unlimited", want: 0},
		{in: "1000bit", want: 1000},
		// The spellings people write for bits per second.
		{in: "10gbit", want: 10e9},
		{in: "10Gbit/s", want: 10e9},
		{in: "10 Gbps", want: 10e9},
		{in: "10 gbps", want: 10e9},
		{in: "10gigabit", want: 10e9},
		{in: "10 gigabits", want: 10e9},
		{in: "10 Gigabits per second", want: 10e9},
		{in: "10 gigabit/s", want: 10e9},
		{in: "1g", want: 1e9},
		{in: "1 G", want: 1e9},
		{in: "100mbit", want: 100e6},
		{in: "100 Mbps", want: 100e6},
		{in: "100 Mb/s", want: 100e6},
		{in: "1.5Mbit/s", want: 1.5e6},
		{in: "512 kbit/s", want: 512e3},
		{in: "10 megabits", want: 10e6},
		{in: "10GbE", want: 10e9},
		{in: "10GBE", want: 10e9},
		{in: "1 GigE", want: 1e9},
		{in: "1Gibit", want: 1 << 30},
		{in: "  2.5 Gbps  ", want: 2.5e9},
		// Bytes per second: a capital B, or the word.
		{in: "125MB/s", want: 1e9},
		{in: "125 MBps", want: 1e9},
		{in: "125 megabytes/s", want: 1e9},
		{in: "100 kB/s", want: 800e3},
		{in: "1MiB/s", want: 8 << 20},
		{in: "", bad: "empty rate"},
		{in: "fast", bad: "10 gigabits"},
		{in: "100", bad: "has no unit"},
		{in: "-1gbit", bad: "negative"},
		{in: "xgbit", bad: "1gbit"},
		{in: "10 gigaflops", bad: `unknown unit "gigaflops"`},
		{in: "10MB", bad: "add /s for bytes per second"},
		{in: "10 megabytes", bad: "not a rate"},
		{in: "1.2.3gbit", bad: "want a number"},
	}
	for _, tt := range tests {
		got, err := ParseRate(tt.in)
		if tt.bad != "" {
			if err == nil {
				t.Errorf("ParseRate(%q) = %v, want an error", tt.in, got)
			} else if !strings.Contains(err.Error(), tt.bad) {
				t.Errorf("ParseRate(%q): %q does not say %q", tt.in, err, tt.bad)
			}
			continue
		}
		if err != nil || math.Abs(float64(got-tt.want)) > 1e-6*float64(tt.want) {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", tt.in, float64(got), err, float64(tt.want))
		}
		// String keeps three decimals: it reads back within 0.05 %.
		if back, err := ParseRate(got.String()); tt.want > 0 && (err != nil || math.Abs(float64(back-got)) > 5e-4*float64(got)) {
			t.Errorf("ParseRate(%q.String()=%q) = %v, %v", tt.in, got.String(), back, err)
		}
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want Size
		bad  string
	}{
		{in: "64KiB", want: 65536},
		{in: "16MiB", want: 16 << 20},
		{in: "40KB", want: 40000},
		{in: "1448", want: 1448},
		{in: "1448b", want: 1448},
		{in: "1GiB", want: 1 << 30},
		{in: "8k", want: 8192},
		{in: "64 KB", want: 64000},
		{in: "64 KiB", want: 65536},
		{in: "16 megabytes", want: 16e6},
		{in: "16 mebibytes", want: 16 << 20},
		{in: "1 byte", want: 1},
		{in: "1448 bytes", want: 1448},
		{in: "1.5KiB", want: 1536},
		{in: "2 kilobytes", want: 2000},
		{in: "", bad: "empty size"},
		{in: "-5KiB", bad: "negative"},
		{in: "lots", bad: "64KiB"},
		{in: "64 kbit", bad: "sizes are bytes"},
		{in: "64KB/s", bad: "a rate, not a size"},
		{in: "64 furlongs", bad: `unknown unit "furlongs"`},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		if tt.bad != "" {
			if err == nil {
				t.Errorf("ParseSize(%q) = %v, want an error", tt.in, got)
			} else if !strings.Contains(err.Error(), tt.bad) {
				t.Errorf("ParseSize(%q): %q does not say %q", tt.in, err, tt.bad)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseSize(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
	if s := Size(65536).String(); s != "64KiB" {
		t.Errorf("Size(65536).String() = %q", s)
	}
	if s := Size(65535).String(); s != "65535B" {
		t.Errorf("Size(65535).String() = %q", s)
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		bad  string
	}{
		{in: "77ms", want: 77 * time.Millisecond},
		{in: "77 ms", want: 77 * time.Millisecond},
		{in: "0.2ms", want: 200 * time.Microsecond},
		{in: "200us", want: 200 * time.Microsecond},
		{in: "200µs", want: 200 * time.Microsecond}, // micro sign
		{in: "200μs", want: 200 * time.Microsecond}, // Greek mu
		{in: "200 µs", want: 200 * time.Microsecond},
		{in: "1.5s", want: 1500 * time.Millisecond},
		{in: "1.5 seconds", want: 1500 * time.Millisecond},
		{in: "20 sec", want: 20 * time.Second},
		{in: "2m", want: 2 * time.Minute},
		{in: "1h", want: time.Hour},
		{in: "1m30s", want: 90 * time.Second},
		{in: "1h 30m", want: 90 * time.Minute},
		{in: "77 milliseconds", want: 77 * time.Millisecond},
		{in: "0", want: 0},
		{in: "0s", want: 0},
		{in: "", bad: "empty duration"},
		{in: "-1ms", bad: "negative"},
		{in: "-1m30s", bad: "negative"},
		{in: "77", bad: "has no unit"},
		{in: "soon", bad: "77ms"},
		{in: "5 fortnights", bad: "200us"},
		{in: "9999999999h", bad: "too long"},
	}
	for _, tt := range tests {
		got, err := ParseDuration(tt.in)
		if tt.bad != "" {
			if err == nil {
				t.Errorf("ParseDuration(%q) = %v, want an error", tt.in, got)
			} else if !strings.Contains(err.Error(), tt.bad) {
				t.Errorf("ParseDuration(%q): %q does not say %q", tt.in, err, tt.bad)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestParsePercentAndFormatDuration(t *testing.T) {
	if p, err := ParsePercent("0.1%"); err != nil || p != 0.001 {
		t.Errorf("ParsePercent(0.1%%) = %v, %v", p, err)
	}
	if _, err := ParsePercent("150%"); err == nil {
		t.Error("ParsePercent(150%): want an error")
	}
	if s := FormatDuration(1500 * time.Microsecond); s != "1.5ms" {
		t.Errorf("FormatDuration = %q", s)
	}
}

func TestFormatCount(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 100_000: "100,000", -1234567: "-1,234,567",
		9223372036854775807: "9,223,372,036,854,775,807"} {
		if got := FormatCount(n); got != want {
			t.Errorf("FormatCount(%d) = %q, want %q", n, got, want)
		}
	}
}
