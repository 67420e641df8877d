package diagnose

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/measure"
)

// body records n transactions of a healthy server: log-uniform from lo to
// hi (a median near their geometric mean).
func body(h *measure.Histogram, rng *rand.Rand, n int, lo, hi time.Duration) {
	ratio := float64(hi) / float64(lo)
	for range n {
		h.Record(time.Duration(float64(lo) * math.Pow(ratio, rng.Float64())))
	}
}

// stalls records n transactions stalled by k timeouts of rto each on top
// of a healthy transaction's time.
func stalls(h *measure.Histogram, rng *rand.Rand, n, k int, rto time.Duration) {
	for range n {
		h.Record(time.Duration(k)*rto + time.Duration(300+rng.IntN(3000))*time.Microsecond)
	}
}

func TestDetect(t *testing.T) {
	rto := 200*time.Millisecond + 200*time.Microsecond
	for _, tc := range []struct {
		name  string
		make  func(h *measure.Histogram, rng *rand.Rand)
		ev    Evidence
		found bool
		says  string
	}{
		{"timeouts at 1, 2 and 7 RTO", func(h *measure.Histogram, rng *rand.Rand) {
			body(h, rng, 20_000, 200*time.Microsecond, 5*time.Millisecond)
			stalls(h, rng, 600, 1, rto)
			stalls(h, rng, 30, 2, rto)
			stalls(h, rng, 3, 7, rto)
		}, Evidence{Users: 32}, true, "633 of 20,633 transactions (3.1 %) stalled in clusters at 1, 2, 7 × 200"},
		{"one cluster, more stalls than users", func(h *measure.Histogram, rng *rand.Rand) {
			body(h, rng, 20_000, 200*time.Microsecond, 5*time.Millisecond)
			stalls(h, rng, 300, 1, rto)
		}, Evidence{Users: 32}, true, "300 of 20,300"},
		{"one cluster in many seconds", func(h *measure.Histogram, rng *rand.Rand) {
			body(h, rng, 20_000, 200*time.Microsecond, 5*time.Millisecond)
			stalls(h, rng, 20, 1, rto)
		}, Evidence{Users: 32, SecondMax: []float64{3, 201, 202, 5, 203}}, true, "20 of 20,020"},
		{"a slow server's tail", func(h *measure.Histogram, rng *rand.Rand) {
			body(h, rng, 20_000, 200*time.Microsecond, 5*time.Millisecond)
			for range 2_000 {
				h.Record(time.Duration(rng.ExpFloat64() * float64(150*time.Millisecond)))
			}
		}, Evidence{Users: 150}, false, "the tail thins out"},
		{"one pause of the machine", func(h *measure.Histogram, rng *rand.Rand) {
			body(h, rng, 20_000, 200*time.Microsecond, 5*time.Millisecond)
			stalls(h, rng, 40, 1, 586*time.Millisecond)
		}, Evidence{Users: 80, SecondMax: []float64{4, 5, 589, 6}}, false, "one pause of the whole machine"},
		{"one cluster and nothing else known", func(h *measure.Histogram, rng *rand.Rand) {
			body(h, rng, 20_000, 200*time.Microsecond, 5*time.Millisecond)
			stalls(h, rng, 300, 1, rto)
		}, Evidence{}, false, "none at its multiples"},
		{"a slow median", func(h *measure.Histogram, rng *rand.Rand) {
			body(h, rng, 20_000, 20*time.Millisecond, 120*time.Millisecond)
			stalls(h, rng, 600, 1, rto)
			stalls(h, rng, 60, 2, rto)
		}, Evidence{Users: 32}, false, "the median"},
		{"clusters off the multiples", func(h *measure.Histogram, rng *rand.Rand) {
			body(h, rng, 20_000, 200*time.Microsecond, 5*time.Millisecond)
			stalls(h, rng, 300, 1, 200*time.Millisecond)
			stalls(h, rng, 300, 1, 310*time.Millisecond)
			stalls(h, rng, 300, 1, 520*time.Millisecond)
		}, Evidence{Users: 32}, false, "whole multiples"},
		{"too few", func(h *measure.Histogram, rng *rand.Rand) {
			body(h, rng, 100, 200*time.Microsecond, 5*time.Millisecond)
			stalls(h, rng, 20, 1, rto)
		}, Evidence{Users: 4}, false, "too few"},
		{"strays", func(h *measure.Histogram, rng *rand.Rand) {
			body(h, rng, 200_000, 200*time.Microsecond, 5*time.Millisecond)
			stalls(h, rng, 12, 1, rto)
		}, Evidence{Users: 8}, false, "holds 21 transactions"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := measure.NewHistogram()
			tc.make(h, rand.New(rand.NewPCG(1, 2)))
			s := DetectWith(h, tc.ev)
			if s.Found != tc.found || !strings.Contains(s.Why, tc.says) {
				t.Errorf("found %v, want %v with %q; why: %s", s.Found, tc.found, tc.says, s.Why)
			}
			if s.Found && (s.Spacing < 199*time.Millisecond || s.Spacing > 204*time.Millisecond) {
				t.Errorf("spacing %v, want the timeout, %v", s.Spacing, rto)
			}
		})
	}
}
