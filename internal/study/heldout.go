package study

import (
	"maps"
	"slices"
	"strings"

	"github.com/dbrig/dbrig/internal/workload"
)

// HoldOut refits each measured result's model on every other combination
// of the run, measured before or after it (leave one combination out), and
// keeps what Kind.Predict stored before the point ran: a report shows a
// fit's held-out error, never its residual on the points it was fitted on,
// and the judges read the same figures.
func HoldOut(kind workload.Kind, results []workload.Result) {
	for i := range results {
		r := &results[i]
		if !r.Measured() {
			continue
		}
		if kind.Model == nil {
			// Only Kind.Predict made what Model holds; a run written
			// before Predicted was recorded did not list it.
			if len(r.Predicted) == 0 && len(r.Model) > 0 {
				r.Predicted = slices.Sorted(maps.Keys(r.Model))
			}
			continue
		}
		pred := workload.Prediction{Metrics: map[string]float64{}, Formula: predictionFormula(*r), Reason: r.PredictReason}
		for _, name := range r.Predicted {
			pred.Metrics[name] = r.Model[name]
		}
		if len(pred.Metrics) == 0 {
			pred = workload.Prediction{}
		}
		r.SetModel(pred, kind.Model(*r, workload.OtherCombinations(*r, results)))
	}
}

// predictionFormula is the formula the stored prediction came with: the
// part before the fit's.
func predictionFormula(r workload.Result) string {
	if strings.HasPrefix(r.Formula, workload.FitFormulaPrefix) {
		return ""
	}
	f, _, _ := strings.Cut(r.Formula, "; "+workload.FitFormulaPrefix)
	return f
}
