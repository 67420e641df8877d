package measure

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// The range and precision every latency histogram of the load layer uses.
// Values are recorded in microseconds; a value above the range is recorded as
// the range's top and counted as clamped, so one pathological operation cannot
// fail a run, and the report can say it happened.
const (
	histLowest  = 1                                   // 1 µs
	histHighest = int64(time.Hour / time.Microsecond) // 1 h
	histDigits  = 3                                   // 0.1 % resolution
)

// NewDense returns an empty dense histogram with the layer's geometry (about
// 184 KB: only the collector keeps these, a fixed number per run).
func NewDense() *hdrhistogram.Histogram { return hdrhistogram.New(histLowest, histHighest, histDigits) }

// NewPacked returns an empty sparse histogram with the layer's geometry: its
// storage grows with the populated buckets (a few hundred bytes for a typical
// second of one worker), which is what lets every worker keep its own.
func NewPacked() *hdrhistogram.PackedHistogram {
	return hdrhistogram.NewPacked(histLowest, histHighest, histDigits)
}

// ToMicros converts a duration to the recorded value, clamping it into the
// range; clamped reports whether it was above the range.
func ToMicros(d time.Duration) (v int64, clamped bool) {
	v = int64(d / time.Microsecond)
	switch {
	case v < 0:
		return 0, false
	case v > histHighest:
		return histHighest, true
	}
	return v, false
}

// Histogram is a latency distribution kept in a result: HDR, 3 significant
// figures, 1 µs to 1 h, stored sparsely. Histograms from different workers,
// processes or machines merge without loss ([Histogram.Merge]); a percentile
// of a merged distribution is exact to the histogram's resolution, unlike an
// average of percentiles. Encode and [DecodeHistogram] carry one between
// processes in the standard HdrHistogram V2 compressed form, which other
// HdrHistogram implementations read too.
type Histogram struct {
	h       *hdrhistogram.PackedHistogram
	clamped int64
}

// NewHistogram returns an empty histogram.
func NewHistogram() *Histogram { return &Histogram{h: NewPacked()} }

// FromDense copies a collector's dense histogram into a compact one.
func FromDense(d *hdrhistogram.Histogram, clamped int64) *Histogram {
	h := NewHistogram()
	h.h.MergeFrom(d)
	h.clamped = clamped
	return h
}

// Record adds one observation, clamped into 0..1 h.
func (h *Histogram) Record(d time.Duration) {
	v, clamped := ToMicros(d)
	if clamped {
		h.clamped++
	}
	_ = h.h.RecordValue(v) // cannot fail: v is in range
}

// Merge adds every observation of o.
func (h *Histogram) Merge(o *Histogram) {
	h.h.Merge(o.h)
	h.clamped += o.clamped
}

// Count is the number of observations.
func (h *Histogram) Count() int64 { return h.h.TotalCount() }

// Clamped is the number of observations above 1 h, recorded as 1 h.
func (h *Histogram) Clamped() int64 { return h.clamped }

// Quantile returns the q-quantile (0 <= q <= 1), to the histogram's
// resolution (the highest value equivalent to the bucket that holds it).
func (h *Histogram) Quantile(q float64) time.Duration {
	return time.Duration(h.h.ValueAtPercentile(q*100)) * time.Microsecond
}

// Min is the smallest observation (to resolution).
func (h *Histogram) Min() time.Duration { return time.Duration(h.h.Min()) * time.Microsecond }

// Max is the largest observation (to resolution).
func (h *Histogram) Max() time.Duration { return time.Duration(h.h.Max()) * time.Microsecond }

// Mean is the mean observation (to resolution).
func (h *Histogram) Mean() time.Duration {
	return time.Duration(h.h.Mean() * float64(time.Microsecond))
}

// CountAbove is the number of observations larger than d (to resolution:
// observations in d's own bucket are not counted).
func (h *Histogram) CountAbove(d time.Duration) int64 {
	limit, _ := ToMicros(d)
	var n int64
	for value, count := range h.h.ForEachBucket {
		if value > limit {
			n += count
		}
	}
	return n
}

// ForEach calls f with each recorded value (to resolution) and how many
// observations it holds, in increasing order of value.
func (h *Histogram) ForEach(f func(value time.Duration, count int64)) {
	for value, count := range h.h.ForEachBucket {
		if count > 0 {
			f(time.Duration(value)*time.Microsecond, count)
		}
	}
}

// Encode returns the histogram in HdrHistogram's V2 compressed encoding
// (base64 text). The clamped count is not part of that format; [Histogram]'s
// JSON form carries both.
func (h *Histogram) Encode() ([]byte, error) { return h.h.Encode() }

// DecodeHistogram reads a histogram written by [Histogram.Encode] (or by any
// HdrHistogram V2 writer that used the same geometry).
func DecodeHistogram(encoded []byte) (*Histogram, error) {
	p, err := hdrhistogram.DecodePacked(encoded)
	if err != nil {
		return nil, fmt.Errorf("decode histogram: %w", err)
	}
	if p.LowestTrackableValue() != histLowest || p.HighestTrackableValue() != histHighest ||
		p.SignificantFigures() != histDigits {
		return nil, fmt.Errorf("decode histogram: geometry %d..%d µs at %d digits, want %d..%d at %d",
			p.LowestTrackableValue(), p.HighestTrackableValue(), p.SignificantFigures(),
			histLowest, histHighest, histDigits)
	}
	return &Histogram{h: p}, nil
}

// histogramJSON is the stored form: the usual summary for people and tools
// that only read numbers, and the full distribution for merging.
type histogramJSON struct {
	Count   int64   `json:"count"`
	MinUS   float64 `json:"min_us"`
	MeanUS  float64 `json:"mean_us"`
	P50US   float64 `json:"p50_us"`
	P90US   float64 `json:"p90_us"`
	P95US   float64 `json:"p95_us"`
	P99US   float64 `json:"p99_us"`
	P999US  float64 `json:"p999_us"`
	MaxUS   float64 `json:"max_us"`
	Clamped int64   `json:"clamped,omitempty"`
	HDR     string  `json:"hdr"`
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// MarshalJSON writes the summary and the V2-encoded distribution.
func (h *Histogram) MarshalJSON() ([]byte, error) {
	enc, err := h.Encode()
	if err != nil {
		return nil, err
	}
	return json.Marshal(histogramJSON{
		Count: h.Count(), MinUS: us(h.Min()), MeanUS: us(h.Mean()),
		P50US: us(h.Quantile(0.50)), P90US: us(h.Quantile(0.90)), P95US: us(h.Quantile(0.95)),
		P99US: us(h.Quantile(0.99)), P999US: us(h.Quantile(0.999)), MaxUS: us(h.Max()),
		Clamped: h.clamped, HDR: string(enc),
	})
}

// UnmarshalJSON reads the distribution back; the summary fields are derived
// from it and ignored.
func (h *Histogram) UnmarshalJSON(b []byte) error {
	var j histogramJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	d, err := DecodeHistogram([]byte(j.HDR))
	if err != nil {
		return err
	}
	*h = Histogram{h: d.h, clamped: j.Clamped}
	return nil
}
