package keylookup

import (
	"fmt"
	"maps"
	"math"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/workload"
)

// measured is a hand-made point of one path, run n of its combination, on
// an engine's table of 1,000 rows on 100 pages, an index of 5 pages and a
// lookup of one page; pages 0 leaves it unmeasured (a point about to run).
func measured(eng, path string, run int, timeMS, pages float64) workload.Result {
	combo := "engine=" + eng + " path=" + path
	r := workload.Result{Combo: combo, Key: fmt.Sprintf("%s #%d", combo, run), Run: run,
		Params:    workload.Params{"rows": int64(1000), "path": path, "executions": int64(5), "instance": "db"},
		Instances: []engine.InstanceConfig{{Name: "db", Engine: eng}},
	}
	if pages > 0 {
		r.Metrics = map[string]float64{"time_ms": timeMS, "pages": pages, "rows": 1000, "table_pages": 100, "index_pages": 5, "lookup_depth": 1}
	}
	return r
}

// withSample is p with the lookups of the index's first twentieth timed
// at us a row.
func withSample(p workload.Result, us float64) workload.Result {
	p.Metrics = maps.Clone(p.Metrics)
	p.Metrics["lookup_sample_us_per_row"] = us
	return p
}

// TestPredictFromPointsBefore: a point's pages come from the layout an
// earlier point of its table measured, its time from a page's cost on the
// same path's earlier points, or for the lookup path's first point the
// lookups the points before timed on the index's first twentieth, or the
// other path's when there are none;
// never from the point itself, another engine's table, or a point after.
func TestPredictFromPointsBefore(t *testing.T) {
	t.Parallel()
	// A page visit costs the scan 0.02 ms and the lookups 0.05 ms.
	scan1, scan2 := measured("postgres", Scan, 1, 2, 100), measured("postgres", Scan, 2, 2.2, 100)
	look1 := measured("postgres", Lookup, 1, 50.25, 1005)
	// The point about to run, as it will be measured: a prediction that
	// reads it would be right by construction.
	look2Done := measured("postgres", Lookup, 2, 999, 1005)
	mariaLook := measured("mariadb", Lookup, 1, 1, 1005)
	// The scans timed the lookups of the index's first twentieth at 40
	// and 60 µs a row: the first lookup takes their median, 50 µs, for
	// each of its 1,000 rows.
	sampled1, sampled2 := withSample(scan1, 40), withSample(scan2, 60)
	for _, tc := range []struct {
		name      string
		point     workload.Result
		before    []workload.Result
		pages, ms float64 // 0: no prediction
		formula   string
		reasonHas string
	}{
		{"the table's first point", measured("postgres", Scan, 1, 0, 0), []workload.Result{mariaLook}, 0, 0, "", "no prediction: first point"},
		{"a scan after a scan", measured("postgres", Scan, 2, 0, 0), []workload.Result{scan1, mariaLook}, 100, 2, "the scan path's on 1 point(s)", "this path's earlier points"},
		{"the first lookup, from the scans", measured("postgres", Lookup, 1, 0, 0), []workload.Result{scan1, scan2}, 1005, 2.1 / 100 * 1005, "the scan path's on 2 point(s)", "the first point of its path: no point before it measured what a page visit costs this path"},
		{"the first lookup, from the sampled lookups", measured("postgres", Lookup, 1, 0, 0), []workload.Result{sampled1, sampled2}, 1005, 50, "time = rows × the lookups' time a row = 1000 × 50 µs, the median of the 2 point(s)", "the lookup path's first point: its time is its rows"},
		{"a lookup after a lookup, the sample aside", measured("postgres", Lookup, 2, 0, 0), []workload.Result{sampled1, sampled2, look1}, 1005, 50.25, "the lookup path's on 1 point(s)", "this path's earlier points"},
		{"a lookup after a lookup", measured("postgres", Lookup, 2, 0, 0), []workload.Result{scan1, scan2, look1, mariaLook}, 1005, 50.25, "the lookup path's on 1 point(s)", "this path's earlier points"},
		{"never the point itself", measured("postgres", Lookup, 2, 0, 0), []workload.Result{scan1, scan2, look1, look2Done}, 1005, 50.25, "the lookup path's on 1 point(s)", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := Predict(tc.point, tc.before)
			if tc.pages == 0 {
				if len(p.Metrics) != 0 || !strings.HasPrefix(p.Reason, tc.reasonHas) {
					t.Errorf("got %v, %q; want no figure and %q", p.Metrics, p.Reason, tc.reasonHas)
				}
				return
			}
			if p.Metrics["pages"] != tc.pages {
				t.Errorf("pages = %v, want %v", p.Metrics["pages"], tc.pages)
			}
			if math.Abs(p.Metrics["time_ms"]-tc.ms) > 1e-9 {
				t.Errorf("time = %v ms, want %v (%s)", p.Metrics["time_ms"], tc.ms, p.Formula)
			}
			if !strings.Contains(p.Formula, tc.formula) || !strings.Contains(p.Reason, tc.reasonHas) {
				t.Errorf("formula %q, reason %q: want %q and %q", p.Formula, p.Reason, tc.formula, tc.reasonHas)
			}
		})
	}
}
