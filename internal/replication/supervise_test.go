package replication

import (
	"math"
	"testing"
	"time"
)

// TestRateWindow: the rate an operator sees is the recent one: after a
// stall it falls to zero within the window, where an average since the
// start would still show most of the earlier rate.
func TestRateWindow(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var w rateWindow
	if w.perSecond() != 0 {
		t.Fatal("a rate without samples")
	}
	n := int64(0)
	for s := 0; s <= 60; s++ { // a minute at 1,000 commands/s
		w.add(t0.Add(time.Duration(s)*time.Second), n)
		n += 1000
	}
	if r := w.perSecond(); math.Abs(r-1000) > 1e-9 {
		t.Errorf("steady: %.1f/s, want 1000", r)
	}
	n -= 1000
	for s := 61; s <= 66; s++ { // then a stall
		w.add(t0.Add(time.Duration(s)*time.Second), n)
	}
	if r := w.perSecond(); r < 400 || r > 500 {
		t.Errorf("half the window stalled: %.1f/s, want 450", r)
	}
	for s := 67; s <= 72; s++ {
		w.add(t0.Add(time.Duration(s)*time.Second), n)
	}
	if r := w.perSecond(); r != 0 {
		t.Errorf("stalled for the whole window: %.1f/s, want 0", r)
	}
	if avg := float64(n) / 72; avg < 800 {
		t.Logf("(the average since the start would say %.0f/s)", avg)
	}
}
