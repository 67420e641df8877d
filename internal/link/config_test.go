package link

import (
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/units"
)

// A setting beyond its bound is refused by name with the bound, whether it
// came from a flag, a study file or a profile (rtt-1000000h): a WAN of a
// million hours once hung a study.
func TestValidateRefusesSettingsBeyondTheirBounds(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"rtt of a million hours", Config{RTT: 1_000_000 * time.Hour}, "rtt 1000000h0m0s: at most 10s"},
		{"forward delay", Config{ForwardDelay: time.Minute}, "forward-delay 1m0s: at most 10s"},
		{"reverse delay", Config{ReverseDelay: time.Minute}, "reverse-delay 1m0s: at most 10s"},
		{"jitter", Config{Jitter: 11 * time.Second}, "jitter 11s: at most 10s"},
		{"rate of 10 bit/s", Config{Rate: 10}, "rate 10bit: at least 1kbit"},
		{"rate of 10 Tbit/s", Config{Rate: 10e12}, "rate 10000gbit: at most 1000gbit"},
		{"window of 2 GiB", Config{Window: 2 * units.GiB}, "window 2GiB: at most 1GiB"},
		{"mss below the IPv4 minimum", Config{MSS: 100}, "mss 100: want 536 to 65495 bytes"},
		{"mss above an IPv4 datagram", Config{MSS: 65535}, "mss 65535: want 536 to 65495 bytes"},
		{"rto of an hour", Config{RTO: time.Hour}, "rto 1h0m0s: at most 2m0s"},
		{"negative rto", Config{RTO: -time.Second}, "rto -1s: must not be negative"},
		{"overhead", Config{Overhead: 70000}, "overhead 70000: want 0 to 65535 bytes"},
	} {
		err := tt.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Validate() = %v, want it to say %q", tt.name, err, tt.want)
		}
	}
	for _, ok := range []Config{
		{RTT: 10 * time.Second, Jitter: 10 * time.Second},
		{Rate: 1000, MSS: 536},
		{Rate: 1e12, MSS: 65495, Window: units.GiB},
		{RTO: 120 * time.Second},
	} {
		if err := ok.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v, want nil: it is within every bound", ok, err)
		}
	}
}
