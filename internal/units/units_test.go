package units

import (
	"testing"
	"time"
)

func TestParseRate(t *testing.T) {
	tests := []struct {
		in   string
		want Rate
		bad  bool
	}{
		{in: "1gbit", want: 1e9},
		{in: "100mbit", want: 100e6},
		{in: "2.5Gbit/s", want: 2.5e9},
		{in: "64kbit", want: 64e3},
		{in: "10Mbps", want: 10e6},
		{in: "0", want: 0},
		{in: "unlimited", want: 0},
		{in: "1000bit", want: 1000},
		{in: "", bad: true},
		{in: "fast", bad: true},
		{in: "100", bad: true},
		{in: "-1gbit", bad: true},
		{in: "xgbit", bad: true},
	}
	for _, tt := range tests {
		got, err := ParseRate(tt.in)
		if tt.bad {
			if err == nil {
				t.Errorf("ParseRate(%q) = %v, want an error", tt.in, got)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
		if back, err := ParseRate(got.String()); tt.want > 0 && (err != nil || back != got) {
			t.Errorf("ParseRate(%q.String()=%q) = %v, %v", tt.in, got.String(), back, err)
		}
	}
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want Size
		bad  bool
	}{
		{in: "64KiB", want: 65536},
		{in: "16MiB", want: 16 << 20},
		{in: "40KB", want: 40000},
		{in: "1448", want: 1448},
		{in: "1448b", want: 1448},
		{in: "1GiB", want: 1 << 30},
		{in: "8k", want: 8192},
		{in: "", bad: true},
		{in: "-5KiB", bad: true},
		{in: "lots", bad: true},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		if tt.bad {
			if err == nil {
				t.Errorf("ParseSize(%q) = %v, want an error", tt.in, got)
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

func TestParseDurationAndPercent(t *testing.T) {
	if d, err := ParseDuration("77ms"); err != nil || d != 77*time.Millisecond {
		t.Errorf("ParseDuration(77ms) = %v, %v", d, err)
	}
	if _, err := ParseDuration("-1ms"); err == nil {
		t.Error("ParseDuration(-1ms): want an error")
	}
	if _, err := ParseDuration("77"); err == nil {
		t.Error("ParseDuration(77): want an error (no unit)")
	}
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
