package load

import (
	"errors"
	"fmt"
	"time"

	"github.com/dbrig/dbrig/internal/measure"
)

// Merging the results of several processes or machines (load agents) that
// ran shares of one load from a common start: counts add up, distributions
// merge without loss, and every percentile is read from the merged
// distribution, never averaged.

// MergeResults merges the results of runs that shared one load, each of the
// same mix. The merged result's users, rate and in-flight bound are the
// sums; its measured interval is the longest of the runs' (they ran the same
// duration from a common start, so they differ by the stop's jitter); its
// series is [MergeSeries] of theirs.
func MergeResults(results []*Result) (*Result, error) {
	if len(results) == 0 {
		return nil, errors.New("merge results: none to merge")
	}
	first := results[0]
	m := &Result{
		Mode: first.Mode, Arrival: first.Arrival, Think: first.Think, Keying: first.Keying, RampUp: first.RampUp,
		WarmUp: first.WarmUp, TxLimit: first.TxLimit, LateAfter: first.LateAfter,
		StartLag: measure.NewHistogram(), AfterEnd: measure.NewHistogram(),
	}
	for i, r := range results {
		if r.Mode != first.Mode || len(r.Types) != len(first.Types) {
			return nil, fmt.Errorf("merge results: run %d is a %s loop of %d types, run 0 a %s loop of %d", i, r.Mode, len(r.Types), first.Mode, len(first.Types))
		}
		for j := range r.Types {
			if r.Types[j].Name != first.Types[j].Name {
				return nil, fmt.Errorf("merge results: run %d's type %d is %q, run 0's %q", i, j, r.Types[j].Name, first.Types[j].Name)
			}
		}
		m.Users += r.Users
		m.Rate += r.Rate
		m.MaxInFlight += r.MaxInFlight
		m.Measured = max(m.Measured, r.Measured)
		mergeInto(m.StartLag, r.StartLag)
		m.Late += r.Late
		m.NotStarted += r.NotStarted
		m.Overloaded = m.Overloaded || r.Overloaded
		m.NotStartedAtEnd += r.NotStartedAtEnd
		m.WarmUpOps += r.WarmUpOps
		mergeInto(m.AfterEnd, r.AfterEnd)
		m.CancelledAtStop += r.CancelledAtStop
		m.Interrupted = m.Interrupted || r.Interrupted
	}
	m.Types = make([]TypeResult, len(first.Types))
	for j, t := range first.Types {
		parts := make([]TypeResult, len(results))
		for i, r := range results {
			parts[i] = r.Types[j]
		}
		m.Types[j] = mergeTypes(t.Name, t.Weight, parts, m.Measured)
	}
	overall := make([]TypeResult, len(results))
	for i, r := range results {
		overall[i] = r.Overall
	}
	m.Overall = mergeTypes(first.Overall.Name, 0, overall, m.Measured)
	series := make([][]Interval, len(results))
	for i, r := range results {
		series[i] = r.Series
	}
	m.Series = MergeSeries(series)
	return m, nil
}

func mergeInto(dst, src *measure.Histogram) {
	if src != nil {
		dst.Merge(src)
	}
}

func mergeTypes(name string, weight int, parts []TypeResult, measured time.Duration) TypeResult {
	t := TypeResult{Name: name, Weight: weight, Latency: measure.NewHistogram()}
	for _, p := range parts {
		t.Ops += p.Ops
		t.Errors.add(&p.Errors)
		t.OverLimit += p.OverLimit
		mergeInto(t.Latency, p.Latency)
		if p.Service != nil {
			if t.Service == nil {
				t.Service = measure.NewHistogram()
			}
			t.Service.Merge(p.Service)
		}
	}
	if measured > 0 {
		t.TPS = float64(t.Ops) / measured.Seconds()
	}
	return t
}

// MergeSeries merges the per-second series of runs that started at a common
// instant: within each phase, the i-th intervals of every run cover the same
// second and become one. An interval's counts are the sums; its percentiles
// come from the merged distributions when every part carries them
// (Config.IntervalHistograms), else the largest of the parts' (an upper
// bound, said nowhere else). Runs end a moment apart, so one may close a
// measured sliver where another has begun stopping: aligning by phase keeps
// every merged interval of one phase, and a run whose phase has fewer
// intervals leaves the others' as they are.
func MergeSeries(series [][]Interval) []Interval {
	var out []Interval
	for phase := WarmUp; phase <= Stopping; phase++ {
		var ofPhase [][]Interval
		n := 0
		for _, s := range series {
			var own []Interval
			for _, iv := range s {
				if iv.Phase == phase {
					own = append(own, iv)
				}
			}
			ofPhase = append(ofPhase, own)
			n = max(n, len(own))
		}
		for i := range n {
			var parts []Interval
			for _, s := range ofPhase {
				if i < len(s) {
					parts = append(parts, s[i])
				}
			}
			out = append(out, MergeIntervals(parts))
		}
	}
	return out
}

// MergeIntervals merges the same second of several runs (see MergeSeries).
func MergeIntervals(parts []Interval) Interval {
	if len(parts) == 0 {
		return Interval{}
	}
	first := parts[0]
	m := Interval{Start: first.Start, Phase: first.Phase, Overall: IntervalStats{Name: first.Overall.Name},
		Types: make([]IntervalStats, len(first.Types))}
	end := time.Duration(0)
	withHist := true
	for _, p := range parts {
		m.Start = min(m.Start, p.Start)
		end = max(end, p.Start+p.Length)
		m.Users += p.Users
		m.InFlight += p.InFlight
		m.Late += p.Late
		m.LagMax = max(m.LagMax, p.LagMax)
		m.NotStarted += p.NotStarted
		m.Samples = append(m.Samples, p.Samples...)
		if p.Histograms == nil || len(p.Histograms.Latency) != len(first.Types) {
			withHist = false
		}
	}
	m.Length = end - m.Start
	for j := range m.Types {
		m.Types[j].Name = first.Types[j].Name
	}
	for _, p := range parts {
		for j := range m.Types {
			if j < len(p.Types) {
				addStats(&m.Types[j], p.Types[j])
			}
		}
		addStats(&m.Overall, p.Overall)
	}
	if !withHist {
		return m
	}
	h := &IntervalHistograms{StartLag: measure.NewHistogram()}
	overall := measure.NewHistogram()
	for j := range m.Types {
		lat := measure.NewHistogram()
		var svc *measure.Histogram
		for _, p := range parts {
			mergeInto(lat, p.Histograms.Latency[j])
			if j < len(p.Histograms.Service) {
				if svc == nil {
					svc = measure.NewHistogram()
				}
				mergeInto(svc, p.Histograms.Service[j])
			}
		}
		h.Latency = append(h.Latency, lat)
		if svc != nil {
			h.Service = append(h.Service, svc)
		}
		overall.Merge(lat)
		setPercentiles(&m.Types[j], lat)
	}
	for _, p := range parts {
		mergeInto(h.StartLag, p.Histograms.StartLag)
	}
	setPercentiles(&m.Overall, overall)
	m.Histograms = h
	return m
}

// addStats adds a part's counts; its percentiles stand until the merged
// distribution replaces them (the largest part's is kept meanwhile).
func addStats(dst *IntervalStats, p IntervalStats) {
	dst.Ops += p.Ops
	dst.Errors.add(&p.Errors)
	dst.OverLimit += p.OverLimit
	dst.P50 = max(dst.P50, p.P50)
	dst.P99 = max(dst.P99, p.P99)
	dst.Max = max(dst.Max, p.Max)
}

func setPercentiles(s *IntervalStats, h *measure.Histogram) {
	if h.Count() == 0 {
		s.P50, s.P99, s.Max = 0, 0, 0
		return
	}
	s.P50, s.P99, s.Max = h.Quantile(0.50), h.Quantile(0.99), h.Max()
}
