package pagecompress

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/workload"
)

// handPoint is one hand-made measurement of one order and period: its
// ratio (zstd's, or the engine's on MariaDB) and distinct values a page.
type handPoint struct {
	order    string
	period   int64
	ratio    float64
	distinct float64
}

// modelled makes an engine's points (58 rows of 140 bytes a PostgreSQL
// page, values of 101; MariaDB's in whole 4 KiB blocks of 64 KiB pages),
// each with its model computed from the points before it, as the runner
// does.
func modelled(eng string, ms []handPoint) []workload.Result {
	var all []workload.Result
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, m := range ms {
		combo := fmt.Sprintf("engine=%s period=%d order=%s", eng, m.period, m.order)
		in := engine.InstanceConfig{Name: "db", Engine: eng, Site: "db"}
		r := workload.Result{Key: combo + " #1", Combo: combo, Run: 1,
			Params:  workload.Params{"rows": int64(1_000_000), "period": m.period, "order": m.order, "instance": "db"},
			Started: start.Add(time.Duration(len(all)) * time.Minute),
			Metrics: map[string]float64{"ratio": m.ratio, "zstd_ratio": m.ratio, "distinct_per_page": m.distinct,
				"rows_per_page": 58, "row_bytes": 140, "value_bytes": 101, "page_bytes": 8192, "pages": 17_000},
		}
		if eng == "mariadb" {
			in.Settings = map[string]string{"innodb_page_size": "64k"}
			r.Metrics["engine_ratio"], r.Metrics["blocks_ratio"] = m.ratio, m.ratio
			r.Metrics["fs_block_bytes"], r.Metrics["page_bytes"] = 4096, 65536
		}
		r.Instances = []engine.InstanceConfig{in}
		pred := Model(r, all)
		r.Model, r.Formula = pred.Metrics, pred.Formula
		all = append(all, r)
	}
	return all
}

func TestModel(t *testing.T) {
	// The seed's own pages: ~80 rows of ~113 bytes, values of 100: the
	// dictionary gives ~1x with 73 distinct values and several times
	// with one.
	if r := DictionaryRatio(80, 73, 113, 100); r < 0.9 || r > 1.2 {
		t.Errorf("the seed's cid order: %.2fx", r)
	}
	if r := DictionaryRatio(80, 1, 113, 100); r < 6 {
		t.Errorf("the seed's filler order: %.2fx", r)
	}
	results := modelled("postgres", []handPoint{{ByCID, 80, 1.1, 55}, {ByFiller, 80, 10, 1.2}})
	first, second := results[0], results[1]
	if _, ok := first.Model["ratio"]; ok {
		t.Errorf("one point fitted a line: %v", first.Model)
	}
	// Two points: the line passes through both.
	if got := second.Model["ratio"]; math.Abs(got-10) > 1e-6 {
		t.Errorf("the line through two points predicts %v for the second, want 10", got)
	}
	if !strings.Contains(second.Formula, "zstd bytes per page") || !strings.Contains(second.Formula, "page dictionary") {
		t.Errorf("formula %q", second.Formula)
	}
	maria := modelled("mariadb", []handPoint{{ByCID, 80, 3.9, 70}, {ByFiller, 80, 3.9, 1.4}})
	if got := maria[0].Model["ratio"]; got != 3.9 {
		t.Errorf("MariaDB's model is its blocks ratio: %v", got)
	}
}
