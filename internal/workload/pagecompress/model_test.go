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
// each with its model computed from the other combinations before it, as
// the runner does.
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
		r.SetModel(workload.Prediction{}, Model(r, workload.OtherCombinations(r, all)))
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
	// zstd's bytes a page on the line 8192/10 + (D − 1.2) × 100: the
	// third point lies on the line through the other two.
	onLine := func(d float64) float64 { return 8192 / (8192.0/10 + (d-1.2)*100) }
	results := modelled("postgres", []handPoint{{ByCID, 80, onLine(55), 55}, {ByFiller, 80, 10, 1.2}, {ByFiller, 40, onLine(20), 20}})
	first, second, third := results[0], results[1], results[2]
	if _, ok := second.Model["ratio"]; ok {
		t.Errorf("a line through one other point: %v", second.Model)
	}
	if _, ok := first.Model["ratio"]; ok {
		t.Errorf("one point fitted a line: %v", first.Model)
	}
	// The line through the other two predicts the third, never fitted on it.
	if got, want := third.Model["ratio"], onLine(20); math.Abs(got-want) > 1e-6 {
		t.Errorf("the line through the other two predicts %v for the third, want %v", got, want)
	}
	if !strings.Contains(third.Formula, "zstd bytes per page") || !strings.Contains(third.Formula, "page dictionary") {
		t.Errorf("formula %q", third.Formula)
	}
	maria := modelled("mariadb", []handPoint{{ByCID, 80, 3.9, 70}, {ByFiller, 80, 3.9, 1.4}})
	if got := maria[0].Model["ratio"]; got != 3.9 {
		t.Errorf("MariaDB's model is its blocks ratio: %v", got)
	}
}
