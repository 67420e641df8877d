package study

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"

	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/workload"
)

// Figure is one headline figure of a combination beside its model's: the
// kept value, the figure the model gave (a prediction stored before the
// point ran, or a fit held out of it), their error, and why there is none
// or where the model misses.
type Figure struct {
	Workload string  `json:"workload"`
	Combo    string  `json:"combination"`
	Metric   string  `json:"metric"`
	Measured float64 `json:"measured"`
	Model    float64 `json:"model,omitempty"`
	// From is "predicted", "fit" or "" (no figure).
	From     string  `json:"from,omitempty"`
	ErrorPct float64 `json:"error_pct,omitempty"`
	Reason   string  `json:"reason,omitempty"`
}

// HasModel reports whether a model gave the figure a value.
func (f Figure) HasModel() bool { return f.From != "" }

// Figures lists every combination's modelled headline figures: the
// headline metrics with a direction that the workload does not declare
// unmodelled (MetricSpec.Unmodelled).
func (rd *RunData) Figures() []Figure {
	kind := rd.Spec.Kind()
	var out []Figure
	for _, sm := range rd.Summaries {
		last := sm.Results[len(sm.Results)-1]
		for _, name := range rd.HeadlineMetrics(sm) {
			if spec, ok := kind.Metric(name); ok && (spec.Unmodelled != "" || spec.Better == workload.Neither) {
				continue
			}
			f := Figure{Workload: kind.Name, Combo: sm.Combo, Metric: name, Measured: sm.Stats[name].Mean, Reason: last.Reason(name)}
			if mv, from, ok := rd.keptModel(sm, name); ok {
				if e := PercentError(f.Measured, mv); !math.IsNaN(e) {
					f.Model, f.From, f.ErrorPct = mv, from, e
				}
			} else if len(last.Model) > 0 || f.Reason == "" {
				// The model gave figures, none for this metric: its
				// reason is about the others.
				f.Reason = "the model gives no figure for " + name
			}
			out = append(out, f)
		}
	}
	return out
}

// keptModel is a combination's model figure for a metric: the mean of the
// models of the runs whose measurements the study's rule keeps, held against
// their kept mean, since a prediction is stored before each run and the
// last run's alone says nothing of the runs before it. When a kept run has
// none, or the kept runs mix predictions and fits, the last run's model
// stands (a fit held out of the combination is the same for each run).
func (rd *RunData) keptModel(sm *Summary, name string) (mv float64, from string, ok bool) {
	last := sm.Results[len(sm.Results)-1]
	mv, ok = last.Model[name]
	from = last.ModelFrom(name)
	var values []float64
	var runs []workload.Result
	for _, r := range sm.Results {
		if v, has := r.Metrics[name]; has {
			values, runs = append(values, v), append(runs, r)
		}
	}
	kept := rd.Plan.Repeat.Kept(values)
	var sum float64
	for _, i := range kept {
		m, has := runs[i].Model[name]
		if !has || runs[i].ModelFrom(name) != runs[kept[0]].ModelFrom(name) {
			return mv, from, ok // a run without one, or a fit beside predictions
		}
		sum += m
	}
	if len(kept) == 0 {
		return mv, from, ok
	}
	return sum / float64(len(kept)), runs[kept[0]].ModelFrom(name), true
}

// PredictionStats sum up how well the models predicted a set of figures.
type PredictionStats struct {
	Figures   int `json:"figures"`
	Predicted int `json:"predicted"` // made before the point ran
	Fitted    int `json:"fitted"`    // held out of the fit
	// MedianPct and P90Pct are the absolute errors' median and 90th
	// percentile over the figures with a model (NaN when none).
	MedianPct float64 `json:"median_error_pct"`
	P90Pct    float64 `json:"p90_error_pct"`
	// Worst is, per workload, the figure the model misses most (or one
	// it gives nothing for, when it misses none).
	Worst []Figure `json:"worst,omitempty"`
}

// SummarizeFigures counts the figures with a model and the spread of their
// absolute errors; percentiles are by the nearest rank.
func SummarizeFigures(fs []Figure) PredictionStats {
	st := PredictionStats{Figures: len(fs), MedianPct: math.NaN(), P90Pct: math.NaN()}
	var errs []float64
	worst := map[string]Figure{}
	for _, f := range fs {
		switch f.From {
		case "predicted":
			st.Predicted++
		case "fit":
			st.Fitted++
		}
		if f.HasModel() {
			errs = append(errs, math.Abs(f.ErrorPct))
		}
		if w, seen := worst[f.Workload]; !seen || missesMore(f, w) {
			worst[f.Workload] = f
		}
	}
	if len(errs) > 0 {
		sort.Float64s(errs)
		st.MedianPct, st.P90Pct = nearestRank(errs, 0.5), nearestRank(errs, 0.9)
	}
	for _, name := range slices.Sorted(maps.Keys(worst)) {
		st.Worst = append(st.Worst, worst[name])
	}
	return st
}

// missesMore orders figures by how badly the model misses: a larger error
// first; a figure without one only where no figure has an error.
func missesMore(a, b Figure) bool {
	switch {
	case a.HasModel() && b.HasModel():
		return math.Abs(a.ErrorPct) > math.Abs(b.ErrorPct)
	case b.HasModel():
		return false
	}
	return a.HasModel()
}

// nearestRank is the p-quantile of sorted values by the nearest rank.
func nearestRank(sorted []float64, p float64) float64 {
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

// Line says the stats in a sentence: "40 of 52 figures modelled (12
// predicted before the point ran, 28 fit with it held out); absolute
// error median 3.2 %, p90 18 %".
func (st PredictionStats) Line() string {
	line := fmt.Sprintf("%d of %d headline figures modelled (%d predicted before the point ran, %d fit with its combination held out)",
		st.Predicted+st.Fitted, st.Figures, st.Predicted, st.Fitted)
	if math.IsNaN(st.MedianPct) {
		return line + "; no error to measure"
	}
	return line + fmt.Sprintf("; absolute error median %s, p90 %s", formatErrorPct(st.MedianPct), formatErrorPct(st.P90Pct))
}

// WorstLine says where a workload's model misses most, and why.
func WorstLine(f Figure, format func(metric string, v float64) string) string {
	if !f.HasModel() {
		return fmt.Sprintf("%s %s at %s: no figure (%s)", f.Workload, f.Metric, f.Combo, f.Reason)
	}
	line := fmt.Sprintf("%s %s at %s: measured %s, %s %s (%+.1f %%)", f.Workload, f.Metric, f.Combo,
		format(f.Metric, f.Measured), f.From, format(f.Metric, f.Model), f.ErrorPct)
	if f.Reason != "" {
		line += ": " + f.Reason
	}
	return line
}

func formatErrorPct(v float64) string {
	if v < 10 {
		return fmt.Sprintf("%.1f %%", v)
	}
	return fmt.Sprintf("%.0f %%", v)
}

// predictionsSection opens the report: the share of headline figures a
// model gave, their error, and per workload where the model misses most.
func predictionsSection(rd *RunData) *report.Section {
	fs := rd.Figures()
	if len(fs) == 0 {
		return nil
	}
	st := SummarizeFigures(fs)
	sec := &report.Section{Title: "Predictions", Text: st.Line() + "."}
	t := report.Table{Title: "Where the model misses most", Columns: []string{"workload", "combination", "metric", "measured", "model", "from", "error", "why"}}
	for _, f := range st.Worst {
		model, errPct := "-", "-"
		if f.HasModel() {
			model, errPct = rd.FormatMetric(f.Metric, f.Model), fmt.Sprintf("%+.1f%%", f.ErrorPct)
		}
		t.Rows = append(t.Rows, []string{f.Workload, f.Combo, f.Metric, rd.FormatMetric(f.Metric, f.Measured), model, orNone(f.From), errPct, orNone(f.Reason)})
	}
	sec.Tables = []report.Table{t}
	return sec
}
