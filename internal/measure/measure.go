// Package measure records latencies in HDR histograms (fixed range,
// clamped, so one slow outlier cannot fail a run) and summarises them.
package measure

import (
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Latency records durations from 1 ns up to an hour with 3 significant
// digits.
type Latency struct {
	h       *hdrhistogram.Histogram
	clamped int64
}

const maxLatency = int64(time.Hour)

// NewLatency makes an empty recorder.
func NewLatency() *Latency {
	return &Latency{h: hdrhistogram.New(1, maxLatency, 3)}
}

// Record adds one observation; values out of range are clamped.
func (l *Latency) Record(d time.Duration) {
	v := int64(d)
	if v < 1 {
		v = 1
	}
	if v > maxLatency {
		v = maxLatency
		l.clamped++
	}
	_ = l.h.RecordValue(v)
}

// Merge adds another recorder's observations (one recorder per worker,
// merged at the end).
func (l *Latency) Merge(o *Latency) {
	l.h.Merge(o.h)
	l.clamped += o.clamped
}

// Count is the number of observations.
func (l *Latency) Count() int64 { return l.h.TotalCount() }

// Quantile returns the q-quantile (0..1).
func (l *Latency) Quantile(q float64) time.Duration {
	return time.Duration(l.h.ValueAtQuantile(q * 100))
}

// Mean is the average observation.
func (l *Latency) Mean() time.Duration { return time.Duration(l.h.Mean()) }

// Max is the largest observation.
func (l *Latency) Max() time.Duration { return time.Duration(l.h.Max()) }

// Metrics returns mean and percentiles in microseconds, named with a
// prefix ("rt" -> rt_mean_us, rt_p50_us, rt_p99_us, rt_p999_us, rt_max_us).
func (l *Latency) Metrics(prefix string) map[string]float64 {
	us := func(d time.Duration) float64 { return float64(d) / 1e3 }
	return map[string]float64{
		prefix + "_mean_us": us(l.Mean()),
		prefix + "_p50_us":  us(l.Quantile(0.50)),
		prefix + "_p99_us":  us(l.Quantile(0.99)),
		prefix + "_p999_us": us(l.Quantile(0.999)),
		prefix + "_max_us":  us(l.Max()),
	}
}
