package measure

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// lognormalLatencies returns n latencies around median, with a long tail, as
// database latencies are.
func lognormalLatencies(rng *rand.Rand, n int, median time.Duration, sigma float64) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = time.Duration(float64(median) * math.Exp(sigma*rng.NormFloat64()))
	}
	return out
}

func TestHistogramsMergeAcrossProcessesWithoutLoss(t *testing.T) {
	// Three load agents with different latency profiles each encode their
	// histogram; a coordinator decodes and merges them. Every percentile of
	// the merge equals the one of a single histogram of all the samples.
	rng := rand.New(rand.NewPCG(1, 2))
	agents := [][]time.Duration{
		lognormalLatencies(rng, 20000, 2*time.Millisecond, 0.5),
		lognormalLatencies(rng, 5000, 9*time.Millisecond, 1.0),
		lognormalLatencies(rng, 100, 250*time.Millisecond, 0.3),
	}
	all := NewHistogram()
	dense := hdrhistogram.New(histLowest, histHighest, histDigits)
	merged := NewHistogram()
	var p99s []time.Duration
	for _, samples := range agents {
		h := NewHistogram()
		for _, d := range samples {
			h.Record(d)
			all.Record(d)
			v, _ := ToMicros(d)
			_ = dense.RecordValue(v)
		}
		p99s = append(p99s, h.Quantile(0.99))
		wire, err := h.Encode()
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeHistogram(wire)
		if err != nil {
			t.Fatal(err)
		}
		merged.Merge(got)
	}
	if merged.Count() != all.Count() || merged.Min() != all.Min() || merged.Max() != all.Max() || merged.Mean() != all.Mean() {
		t.Errorf("merged count/min/max/mean %d/%v/%v/%v, single %d/%v/%v/%v", merged.Count(), merged.Min(), merged.Max(),
			merged.Mean(), all.Count(), all.Min(), all.Max(), all.Mean())
	}
	for _, q := range []float64{0, 0.1, 0.5, 0.9, 0.95, 0.99, 0.999, 0.9999, 1} {
		if m, a := merged.Quantile(q), all.Quantile(q); m != a {
			t.Errorf("q%v: merged %v, single histogram %v", q, m, a)
		}
		// The sparse histogram agrees with the library's dense one.
		if a, d := all.Quantile(q), time.Duration(dense.ValueAtPercentile(q*100))*time.Microsecond; a != d {
			t.Errorf("q%v: sparse %v, dense %v", q, a, d)
		}
	}
	// Why percentiles are never averaged: the mean of the agents' p99s is
	// nowhere near the p99 of the whole.
	var sum time.Duration
	for _, p := range p99s {
		sum += p
	}
	if avg, p99 := sum/time.Duration(len(p99s)), all.Quantile(0.99); near(avg, p99, 0.2) {
		t.Errorf("the average of p99s (%v) is close to the true p99 (%v); the test data shows nothing", avg, p99)
	}
}

func TestHistogramJSONKeepsTheDistribution(t *testing.T) {
	h := NewHistogram()
	for _, d := range lognormalLatencies(rand.New(rand.NewPCG(3, 4)), 1000, time.Millisecond, 1) {
		h.Record(d)
	}
	h.Record(2 * time.Hour) // clamped
	b, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	var back Histogram
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Count() != h.Count() || back.Quantile(0.99) != h.Quantile(0.99) || back.Clamped() != 1 {
		t.Errorf("JSON round trip: count %d p99 %v clamped %d, want %d %v 1", back.Count(), back.Quantile(0.99),
			back.Clamped(), h.Count(), h.Quantile(0.99))
	}
	var summary struct {
		P99 float64 `json:"p99_us"`
		Max float64 `json:"max_us"`
	}
	if err := json.Unmarshal(b, &summary); err != nil || summary.P99 != us(h.Quantile(0.99)) || summary.Max != us(h.Max()) || !near(h.Max(), time.Hour, 0.001) {
		t.Errorf("summary %+v (%v), want p99 %v µs and the clamped max of 1 h", summary, err, us(h.Quantile(0.99)))
	}
}

func TestHistogramRangeAndClamping(t *testing.T) {
	h := NewHistogram()
	h.Record(500 * time.Nanosecond) // below the 1 µs resolution: 0 µs
	h.Record(time.Microsecond)
	h.Record(59*time.Minute + 59*time.Second)
	h.Record(3 * time.Hour)
	if h.Clamped() != 1 {
		t.Errorf("clamped %d, want 1", h.Clamped())
	}
	if h.Count() != 4 || !near(h.Max(), time.Hour, 0.001) || h.Min() != 0 {
		t.Errorf("count %d min %v max %v", h.Count(), h.Min(), h.Max())
	}
	if got := h.CountAbove(time.Minute); got != 2 {
		t.Errorf("CountAbove(1m) = %d, want 2", got)
	}
}

func TestDecodeHistogramRefusesOtherGeometries(t *testing.T) {
	other := hdrhistogram.New(1, 16_000_000, 1) // go-tpc's 1 significant figure
	_ = other.RecordValue(1000)
	wire, err := other.Encode(hdrhistogram.V2CompressedEncodingCookieBase)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeHistogram(wire); err == nil {
		t.Error("a histogram of another precision was accepted: its merge would be lossy")
	}
	if _, err := DecodeHistogram([]byte("not base64!")); err == nil {
		t.Error("garbage was accepted")
	}
}

// near reports whether got is within rel (a fraction) of want.
func near(got, want time.Duration, rel float64) bool {
	return math.Abs(float64(got-want)) <= rel*float64(want)
}
