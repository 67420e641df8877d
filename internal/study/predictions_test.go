package study

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/workload"
)

func TestSummarizeFigures(t *testing.T) {
	t.Parallel()
	fig := func(wl, from string, errPct float64) Figure {
		f := Figure{Workload: wl, Metric: "tps", Combo: "users=" + from, Measured: 100, From: from, ErrorPct: errPct}
		if from == "" {
			f.ErrorPct, f.Reason = 0, "no prediction: first point"
		}
		return f
	}
	for _, tc := range []struct {
		name              string
		figures           []Figure
		predicted, fitted int
		median, p90       float64
		worst             []float64 // each workload's worst error, by workload's name
		says              string
	}{
		{name: "none", says: "0 of 0 headline figures modelled", median: math.NaN(), p90: math.NaN()},
		{name: "every figure predicted", figures: []Figure{fig("oltp", "predicted", 1), fig("oltp", "predicted", -2), fig("oltp", "predicted", 3), fig("oltp", "predicted", -4)},
			predicted: 4, median: 2, p90: 4, worst: []float64{-4}, says: "4 of 4 headline figures modelled (4 predicted"},
		{name: "ten figures: the nearest rank", figures: []Figure{
			fig("rbar", "predicted", 1), fig("rbar", "predicted", 2), fig("rbar", "predicted", 3), fig("rbar", "fit", 4), fig("rbar", "fit", 5),
			fig("tpch", "fit", -6), fig("tpch", "fit", 7), fig("tpch", "fit", 8), fig("tpch", "predicted", 90), fig("tpch", "predicted", -100)},
			predicted: 5, fitted: 5, median: 5, p90: 90, worst: []float64{5, -100}, says: "absolute error median 5.0 %, p90 90 %"},
		{name: "a figure without a model counts, with no error", figures: []Figure{fig("keylookup", "", 0), fig("keylookup", "fit", 10)},
			fitted: 1, median: 10, p90: 10, worst: []float64{10}, says: "1 of 2 headline figures modelled (0 predicted before the point ran, 1 fit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := SummarizeFigures(tc.figures)
			same := func(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }
			if st.Figures != len(tc.figures) || st.Predicted != tc.predicted || st.Fitted != tc.fitted || !same(st.MedianPct, tc.median) || !same(st.P90Pct, tc.p90) {
				t.Errorf("got %+v, want %d figures, %d predicted, %d fit, median %v, p90 %v", st, len(tc.figures), tc.predicted, tc.fitted, tc.median, tc.p90)
			}
			if len(st.Worst) != len(tc.worst) {
				t.Fatalf("worst %+v, want %v", st.Worst, tc.worst)
			}
			for i, w := range tc.worst {
				if st.Worst[i].ErrorPct != w {
					t.Errorf("worst of %s: %v, want %v", st.Worst[i].Workload, st.Worst[i].ErrorPct, w)
				}
			}
			if !strings.Contains(st.Line(), tc.says) {
				t.Errorf("line %q, want %q in it", st.Line(), tc.says)
			}
		})
	}
}

// TestWorstLineSaysWhy: a figure without a model says why; one with says
// its label and the reason the model states.
func TestWorstLineSaysWhy(t *testing.T) {
	t.Parallel()
	format := func(_ string, v float64) string { return strings.TrimRight(strings.TrimRight(fmtFloat(v), "0"), ".") }
	none := Figure{Workload: "tpch", Metric: "total_s", Combo: "degree=0", Measured: 12, Reason: "no prediction: first point"}
	if got := WorstLine(none, format); !strings.Contains(got, "no figure (no prediction: first point)") {
		t.Errorf("%q", got)
	}
	miss := Figure{Workload: "keylookup", Metric: "time_ms", Combo: "path=lookup", Measured: 30, Model: 10, From: "predicted", ErrorPct: 200, Reason: "a lookup's page costs more than a scan's"}
	if got := WorstLine(miss, format); !strings.Contains(got, "measured 30, predicted 10 (+200.0 %): a lookup's page costs more than a scan's") {
		t.Errorf("%q", got)
	}
}

func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }

// TestAFiguresModelIsTheKeptRunsPredictions: a prediction stored before
// each run is held against the runs it predicted (the runs the repeat rule
// keeps: their mean against their predictions' mean), never the last run's
// against every run; a fit beside predictions, or a kept run without a
// model, leaves the last run's.
func TestAFiguresModelIsTheKeptRunsPredictions(t *testing.T) {
	t.Parallel()
	s, err := parseExpect(t, "")
	if err != nil {
		t.Fatal(err)
	}
	const lan = "net=lan-1g mode=a"
	nan := math.NaN()
	for _, tc := range []struct {
		name            string
		rule            RepeatSpec
		runs, predicted []float64 // each run's; NaN: no prediction
		fitted          int       // runs (from the first) with a fit instead
		measured, model float64
		from            string
	}{
		{"each run predicted", RepeatSpec{Runs: 3}, []float64{100, 200, 300}, []float64{100, 200, 300}, 0, 200, 200, "predicted"},
		{"the first run discarded", RepeatSpec{Runs: 3, DiscardFirst: true}, []float64{900, 200, 300}, []float64{10, 200, 300}, 0, 250, 250, "predicted"},
		{"the lowest and highest trimmed", RepeatSpec{Runs: 5, Trim: "min-max"}, []float64{100, 200, 300, 400, 500}, []float64{1000, 200, 300, 400, 1}, 0, 300, 300, "predicted"},
		{"a run without one: the last run's", RepeatSpec{Runs: 3}, []float64{100, 200, 300}, []float64{nan, 200, 300}, 0, 200, 300, "predicted"},
		{"a fit beside predictions: the last run's", RepeatSpec{Runs: 3}, []float64{100, 200, 300}, []float64{nan, 200, 300}, 1, 200, 300, "predicted"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rd := runData(t, s, "tps", map[string][]float64{lan: tc.runs})
			rd.Plan.Repeat = tc.rule
			for i := range rd.Results {
				var pred, fit workload.Prediction
				if i < tc.fitted {
					fit.Metrics = map[string]float64{"tps": 150}
				}
				if p := tc.predicted[i]; !math.IsNaN(p) {
					pred.Metrics = map[string]float64{"tps": p}
				}
				rd.Results[i].SetModel(pred, fit)
			}
			rd.Summaries = Summarize(rd.Results, rd.Plan.Repeat)
			for _, f := range rd.Figures() {
				if f.Combo != lan || f.Metric != "tps" {
					continue
				}
				want := 100 * (tc.measured - tc.model) / tc.model
				if f.Measured != tc.measured || f.Model != tc.model || math.Abs(f.ErrorPct-want) > 1e-9 || f.From != tc.from {
					t.Errorf("figure %+v, want %v measured against %v %s (%+.1f %%)", f, tc.measured, tc.model, tc.from, want)
				}
				return
			}
			t.Fatalf("no tps figure at %s in %+v", lan, rd.Figures())
		})
	}
}
