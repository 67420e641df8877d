package predict

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/link"
	"github.com/dbrig/dbrig/internal/units"
)

// tpcb is a hand-made calibration shaped like pgbench's tpcb-like under
// the prepared protocol: 7 round trips, 0.6 ms in the server, 0.1 ms in the
// client, 2,000 transactions per second at most.
var tpcb = Calibration{RoundTrips: 7, BytesOut: 700, BytesIn: 900, Server: 600 * time.Microsecond,
	Client: 100 * time.Microsecond, Capacity: 2000, CapacityUsers: 4}

func TestClosed(t *testing.T) {
	t.Parallel()
	bulk := Calibration{RoundTrips: 1, BytesOut: 100, BytesIn: 1 << 20, Server: time.Millisecond}
	tests := []struct {
		name     string
		cal      Calibration
		link     link.Config
		users    int
		think    time.Duration
		tps      float64
		response time.Duration
		dominant string
	}{
		// 0.7 ms + 7 × 5 ms = 35.7 ms a transaction: one user makes 28 tps.
		{"latency dominates", tpcb, link.Config{RTT: 5 * time.Millisecond}, 1, 0, 1 / 0.0357, 35700 * time.Microsecond, Latency},
		// Think time stretches the cycle, not the response.
		{"think time", tpcb, link.Config{RTT: 5 * time.Millisecond}, 4, 64300 * time.Microsecond, 40, 35700 * time.Microsecond, Latency},
		// No delay: 100 users would make 142,857 tps, the server takes 2,000;
		// each user then waits 100 / 2,000 s = 50 ms a transaction.
		{"server dominates", tpcb, link.Config{}, 100, 0, 2000, 50 * time.Millisecond, Server},
		// One MiB back through a 64 KiB window: 15 stalls of 20 ms beside
		// one round trip of 20 ms.
		{"window dominates", bulk, link.Config{RTT: 20 * time.Millisecond, Window: 64 << 10}, 1, 0, 1 / 0.321, 321 * time.Millisecond, Window},
		// One MiB at 10 Mbit/s: 0.839 s on the wire (0.84 with 100 bytes out).
		{"bandwidth dominates", bulk, link.Config{RTT: time.Millisecond, Rate: 10 * units.Mbit}, 1, 0, 1 / 0.84094, 840940 * time.Microsecond, Bandwidth},
		// Two users share the 10 Mbit/s: the link carries 1.19 tps.
		{"link rate bounds", bulk, link.Config{RTT: time.Millisecond, Rate: 10 * units.Mbit}, 2, 0, 1 / 0.8389, 1677800 * time.Microsecond, Bandwidth},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := Closed(tt.cal, tt.link, tt.users, tt.think)
			if !near(e.TPS, tt.tps, 0.002) || !near(float64(e.Response), float64(tt.response), 0.002) || e.Dominant != tt.dominant {
				t.Errorf("got %.4g tps, response %v, %s dominates; want %.4g tps, %v, %s (parts %+v)",
					e.TPS, e.Response, e.Dominant, tt.tps, tt.response, tt.dominant, e.Parts)
			}
		})
	}
}

func TestOpen(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		rate     float64
		link     link.Config
		response time.Duration
		dominant string
	}{
		// At 100 a second the server is 5 % busy: 0.6 ms / 0.95.
		{"light load", 100, link.Config{RTT: time.Millisecond}, 100*time.Microsecond + 631579*time.Nanosecond + 7*time.Millisecond, Latency},
		// At 1,980 a second it is 99 % busy: its time grows a hundredfold.
		{"server queue", 1980, link.Config{RTT: 100 * time.Microsecond}, 100*time.Microsecond + 60*time.Millisecond + 700*time.Microsecond, Server},
		{"over capacity", 2500, link.Config{}, time.Duration(math.MaxInt64), Server},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := Open(tpcb, tt.link, tt.rate)
			if !near(float64(e.Response), float64(tt.response), 0.002) || e.Dominant != tt.dominant {
				t.Errorf("got response %v, %s dominates; want %v, %s", e.Response, e.Dominant, tt.response, tt.dominant)
			}
			if want := min(tt.rate, tpcb.Capacity); e.TPS != want {
				t.Errorf("got %v tps, want %v", e.TPS, want)
			}
		})
	}
}

func TestCalibrateTakesThePathsRoundTripsOut(t *testing.T) {
	t.Parallel()
	c := Calibrate(7, 700, 900, 1300*time.Microsecond, 100*time.Microsecond, 100*time.Microsecond)
	if c.Server != 600*time.Microsecond || c.Client != 100*time.Microsecond || c.RoundTrips != 7 {
		t.Errorf("got %+v", c)
	}
}

// TestCompare checks that a measurement near its prediction holds and one
// far from it is reported as an error beyond the tolerance.
func TestCompare(t *testing.T) {
	t.Parallel()
	pred := Closed(tpcb, link.Config{RTT: 5 * time.Millisecond}, 4, 0).TPS
	if c := Compare(pred, pred*1.03); !c.Holds() || !strings.Contains(c.String(), "holds") {
		t.Errorf("3 %% off: %s", c)
	}
	far := Compare(pred, pred*0.8)
	if far.Holds() || !near(far.Error, -0.2, 1e-9) || !strings.Contains(far.String(), "differs beyond 5 %") {
		t.Errorf("20 %% off: %s", far)
	}
	if c := Compare(0, 10); c.Holds() {
		t.Errorf("nothing predicted: %s", c)
	}
}

func TestSerializationTime(t *testing.T) {
	t.Parallel()
	l := link.Config{Rate: 8 * units.Mbit, Overhead: 52}
	// 3,000 bytes are 3 segments of 1,448 at most: 3,156 bytes on the wire.
	if got, want := l.SerializationTime(3000), 3156*time.Microsecond; got != want {
		t.Errorf("got %v, want %v", got, want)
	}
	if got := (link.Config{}).SerializationTime(3000); got != 0 {
		t.Errorf("unlimited rate: %v", got)
	}
}

func near(got, want, rel float64) bool {
	if math.IsInf(want, 0) || want == 0 {
		return got == want
	}
	return math.Abs(got-want) <= rel*math.Abs(want)
}
