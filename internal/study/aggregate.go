package study

import (
	"math"

	"slices"
	"sort"

	"github.com/dbrig/dbrig/internal/measure"
	"github.com/dbrig/dbrig/internal/workload"
)

// Stat is one metric of one combination, over its runs.
type Stat struct {
	Mean float64   `json:"mean"` // after the trimming rule
	Min  float64   `json:"min"`
	Max  float64   `json:"max"`
	Kept int       `json:"kept"`
	Runs []float64 `json:"runs"` // every run, in run order
}

// Summary is one combination's results combined by the study's rule.
type Summary struct {
	Combo   string
	Values  map[string]any
	Params  workload.Params
	Results []workload. // successful runs, in run order
		Result
	Stats map[string]Stat
	// Histograms merge the kept runs' distributions (the first run left
	// out when the rule discards it): percentiles of a combination come
	// from all its samples, never from an average of percentiles.
	Histograms map[string]*measure.Histogram
}

// Trim applies a repeat rule to one metric's runs (in run order): drop the
// first run when asked and more than one remains; drop the minimum and the
// maximum when asked and at least three remain; average the rest.
func Trim(runs []float64, rule RepeatSpec) Stat {
	st := Stat{Runs: slices.Clone(runs)}
	if len(runs) == 0 {
		return st
	}
	st.Min, st.Max = slices.Min(runs), slices.Max(runs)
	kept := rule.Kept(runs)
	var sum float64
	for _, i := range kept {
		sum += runs[i]
	}
	st.Mean, st.Kept = sum/float64(len(kept)), len(kept)
	return st
}

// Summarize groups successful results by combination, in first-seen order,
// and combines each metric by the rule.
func Summarize(results []workload.Result, rule RepeatSpec) []*Summary {
	var out []*Summary
	by := map[string]*Summary{}
	for _, r := range results {
		if !r.Measured() {
			continue
		}
		s, ok := by[r.Combo]
		if !ok {
			s = &Summary{Combo: r.Combo, Values: r.Values, Params: r.Params, Stats: map[string]Stat{}}
			by[r.Combo] = s
			out = append(out, s)
		}
		s.Results = append(s.Results, r)
	}
	for _, s := range out {
		sort.SliceStable(s.Results, func(i, j int) bool { return s.Results[i].Run < s.Results[j].Run })
		s.Histograms = map[string]*measure.Histogram{}
		for i, r := range s.Results {
			if rule.DiscardFirst && i == 0 && len(s.Results) > 1 {
				continue
			}
			for name, h := range r.Histograms {
				if h == nil {
					continue
				}
				if s.Histograms[name] == nil {
					s.Histograms[name] = measure.NewHistogram()
				}
				s.Histograms[name].Merge(h)
			}
		}
		names := map[string]bool{}
		for _, r := range s.Results {
			for k := range r.Metrics {
				names[k] = true
			}
		}
		for k := range names {
			var runs []float64
			for _, r := range s.Results {
				if v, ok := r.Metrics[k]; ok {
					runs = append(runs, v)
				}
			}
			s.Stats[k] = Trim(runs, rule)
		}
	}
	return out
}

// Mean returns a metric's trimmed mean, or NaN when it was not measured.
func (s *Summary) Mean(metric string) float64 {
	if st, ok := s.Stats[metric]; ok && st.Kept > 0 {
		return st.Mean
	}
	return math.NaN()
}
