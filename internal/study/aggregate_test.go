package study

import (
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/measure"
	"github.com/dbrig/dbrig/internal/workload"
)

// Repeated runs merge their distributions: the combination's p99 is the
// p99 of all the kept runs' samples, not an average of the runs' p99s.
func TestSummarizeMergesHistograms(t *testing.T) {
	hist := func(ms ...int) *measure.Histogram {
		h := measure.NewHistogram()
		for _, v := range ms {
			h.Record(time.Duration(v) * time.Millisecond)
		}
		return h
	}
	many := func(v, n int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = v
		}
		return out
	}
	results := []workload.Result{
		{Combo: "c", Run: 1, Histograms: map[string]*measure.Histogram{"latency": hist(many(900, 100)...)}}, // warm-up run
		{Combo: "c", Run: 2, Histograms: map[string]*measure.Histogram{"latency": hist(many(1, 98)...)}},
		{Combo: "c", Run: 3, Histograms: map[string]*measure.Histogram{"latency": hist(append(many(1, 95), many(200, 5)...)...)}},
	}
	for _, tt := range []struct {
		rule  RepeatSpec
		count int64
		p99   time.Duration
	}{
		{RepeatSpec{DiscardFirst: true}, 198, 200 * time.Millisecond},
		{RepeatSpec{}, 298, 900 * time.Millisecond},
	} {
		s := Summarize(results, tt.rule)[0]
		h := s.Histograms["latency"]
		if h.Count() != tt.count {
			t.Errorf("%+v: %d samples, want %d", tt.rule, h.Count(), tt.count)
		}
		if p99 := h.Quantile(0.99); p99 < tt.p99*999/1000 || p99 > tt.p99*1001/1000 {
			t.Errorf("%+v: p99 %v, want %v", tt.rule, p99, tt.p99)
		}
	}
}
