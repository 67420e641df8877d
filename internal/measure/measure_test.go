package measure

import (
	"testing"
	"time"
)

func TestLatencyQuantilesAndMerge(t *testing.T) {
	a, b := NewLatency(), NewLatency()
	for i := 1; i <= 100; i++ {
		a.Record(time.Duration(i) * time.Millisecond)
	}
	b.Record(2 * time.Hour) // clamped, not an error
	a.Merge(b)
	if a.Count() != 101 {
		t.Fatalf("count = %d, want 101", a.Count())
	}
	if p50 := a.Quantile(0.5); p50 < 49*time.Millisecond || p50 > 52*time.Millisecond {
		t.Errorf("p50 = %v, want about 50ms", p50)
	}
	if a.Max() < 59*time.Minute {
		t.Errorf("max = %v, want the clamp at one hour", a.Max())
	}
	m := a.Metrics("rt")
	if m["rt_p50_us"] < 49000 || m["rt_p50_us"] > 52000 {
		t.Errorf("rt_p50_us = %v", m["rt_p50_us"])
	}
}
