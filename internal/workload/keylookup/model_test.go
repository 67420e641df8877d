package keylookup

import (
	"math"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/workload"
)

// measured is a hand-made point of one path over a table of 1,000 rows on
// 100 pages, an index of 5 pages and a lookup of one page.
func measured(path string, timeMS, pages float64) workload.Result {
	r := workload.Result{Combo: "path=" + path, Key: "path=" + path + " #1", Run: 1,
		Params:    workload.Params{"rows": int64(1000), "path": path, "executions": int64(5), "instance": "db"},
		Instances: []engine.InstanceConfig{{Name: "db", Engine: "postgres"}},
	}
	if pages > 0 {
		r.Metrics = map[string]float64{"time_ms": timeMS, "pages": pages, "rows": 1000, "table_pages": 100, "index_pages": 5, "lookup_depth": 1}
	}
	return r
}

// TestPredictFromTheOtherPath: the lookup path's pages come from the layout
// the scan measured before it, its time from the scan's time a page.
func TestPredictFromTheOtherPath(t *testing.T) {
	scan := measured(Scan, 2, 100)
	p := Predict(measured(Lookup, 0, 0), []workload.Result{scan})
	if p.Metrics["pages"] != 1005 {
		t.Errorf("pages = %v, want rows × 1 + index pages = 1005", p.Metrics["pages"])
	}
	if want := 2.0 / 100 * 1005; math.Abs(p.Metrics["time_ms"]-want) > 1e-9 {
		t.Errorf("time = %v ms, want %v", p.Metrics["time_ms"], want)
	}
	if p.Reason == "" || !strings.Contains(p.Formula, "scan path") {
		t.Errorf("formula %q, reason %q", p.Formula, p.Reason)
	}
	if first := Predict(scan, nil); len(first.Metrics) != 0 || !strings.HasPrefix(first.Reason, "no prediction: first point") {
		t.Errorf("first point: %v, %q", first.Metrics, first.Reason)
	}
}
