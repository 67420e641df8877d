package study

import (
	"math"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/workload"
	"github.com/dbrig/dbrig/internal/workload/rbar"
)

// rowByRow is a hand-made row-by-row point over one link, measured at
// usPerRow.
func rowByRow(profile, mode string, rtt, usPerRow float64) workload.Result {
	return workload.Result{Key: "net=" + profile + " #1", Combo: "net=" + profile, Run: 1,
		Params:    workload.Params{"experiment": "client-row-by-row", "row_by_row": "fetch", "client_cost": "0s", "instance": "db", "rows": int64(1000)},
		Instances: []engine.InstanceConfig{{Name: "db", Engine: "postgres"}},
		Links:     []workload.LinkResult{{Name: "client-db", Mode: mode, Profile: profile, RTTSeconds: rtt}},
		Metrics:   map[string]float64{"us_per_row": usPerRow, "rows_per_s": 1e6 / usPerRow, "rows": 1000},
	}
}

// TestHoldOutNeverFitsAPointOnItself: the fastest link was the model's
// reference, so its figure fitted on itself was the measurement (+0 %);
// held out, it is predicted from the other link, and the text says fit.
func TestHoldOutNeverFitsAPointOnItself(t *testing.T) {
	t.Parallel()
	kind := rbar.Kind()
	results := []workload.Result{rowByRow("direct", "direct", 0, 50), rowByRow("rtt-1ms", "link", 0.001, 1100)}
	HoldOut(kind, results)
	direct := results[0]
	got, ok := direct.Model["us_per_row"]
	if !ok {
		t.Fatalf("no held-out figure for the direct point: %+v", direct)
	}
	if got == 50 {
		t.Fatalf("the direct point's figure is its own measurement (+0 %%): a fit on itself")
	}
	if want := 1100.0 - 1000; math.Abs(got-want) > 1e-9 {
		t.Errorf("held out, us_per_row = %v, want the other link's cost less its round trip, %v", got, want)
	}
	if from := direct.ModelFrom("us_per_row"); from != "fit" {
		t.Errorf("ModelFrom = %q, want fit", from)
	}
	line := HeadlineFigures(kind, direct)
	if !strings.Contains(line, "(fit 99.999µs, -50%)") || strings.Contains(line, "+0%") {
		t.Errorf("headline figures %q: want the held-out fit labelled fit, not +0 %%", line)
	}
	if !strings.Contains(direct.Formula, workload.FitFormulaPrefix) {
		t.Errorf("formula %q does not say it is a fit on the other combinations", direct.Formula)
	}
}

// TestHoldOutKeepsWhatWasPredictedBeforeThePoint: a figure Kind.Predict
// stored stays as it was and reads "predicted"; the fit fills in only
// what the prediction left out.
func TestHoldOutKeepsWhatWasPredictedBeforeThePoint(t *testing.T) {
	t.Parallel()
	kind := rbar.Kind()
	results := []workload.Result{rowByRow("direct", "direct", 0, 50), rowByRow("rtt-1ms", "link", 0.001, 1100)}
	results[1].SetModel(workload.Prediction{Metrics: map[string]float64{"us_per_row": 1040}, Formula: "before"}, workload.Prediction{})
	HoldOut(kind, results)
	r := results[1]
	if r.Model["us_per_row"] != 1040 || r.ModelFrom("us_per_row") != "predicted" {
		t.Errorf("us_per_row: %v from %s, want the stored 1040, predicted", r.Model["us_per_row"], r.ModelFrom("us_per_row"))
	}
	if _, ok := r.Model["rows_per_s"]; !ok || r.ModelFrom("rows_per_s") != "fit" {
		t.Errorf("rows_per_s: want a fit beside the prediction, got %v (%s)", r.Model, r.ModelFrom("rows_per_s"))
	}
	if line := HeadlineFigures(kind, r); !strings.Contains(line, "(predicted 1.04ms, +6%)") {
		t.Errorf("headline figures %q: want the stored prediction labelled predicted", line)
	}
	if !strings.HasPrefix(r.Formula, "before; "+workload.FitFormulaPrefix) {
		t.Errorf("formula %q: want the prediction's, then the fit's", r.Formula)
	}
}
