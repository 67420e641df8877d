package pagecompress

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/workload"
)

// planned is a point of a million rows as the runner gives it to Predict:
// its parameters and its server, nothing measured.
func planned(eng, pageSize string, period int64, order string) workload.Result {
	combo := fmt.Sprintf("engine=%s page=%s period=%d order=%s", eng, pageSize, period, order)
	in := engine.InstanceConfig{Name: "db", Engine: eng, Site: "db"}
	if pageSize != "" {
		in.Settings = map[string]string{"innodb_page_size": pageSize}
	}
	return workload.Result{Key: combo + " #1", Combo: combo, Run: 1,
		Params:    workload.Params{"rows": int64(1_000_000), "period": period, "order": order, "instance": "db"},
		Instances: []engine.InstanceConfig{in}}
}

// pgMeasured is a PostgreSQL point that measured 58 rows of 140 bytes a
// page, the distinct values its order and period give, and zstd's bytes a
// page on the line 500 + 1.1 × D, plus ownBytes.
func pgMeasured(period int64, order string, ownBytes float64) workload.Result {
	r := planned("postgres", "", period, order)
	d := DistinctPerPage(1_000_000, period, order, 58)
	r.Metrics = map[string]float64{"rows_per_page": 58, "row_bytes": 140, "value_bytes": 101, "page_bytes": 8192, "pages": 17_242,
		"distinct_per_page": d, "zstd_ratio": 8192 / (500 + 1.1*d + ownBytes), "deflate_ratio": 11.7}
	r.Metrics["ratio"] = r.Metrics["zstd_ratio"]
	return r
}

func TestKindPredictsBeforeThePoint(t *testing.T) {
	t.Parallel()
	if Kind().Predict == nil {
		t.Fatal("page-compression has no Predict: its ratio is fitted after the point")
	}
}

// The distinct values a page holds follow from the data's definition: the
// seed's filler has 73 distinct strings in a period of 80, so a page of 58
// consecutive cids holds fewer than 58, a page of 124 all 73, and a page
// clustered on filler one (or two at a run's edge).
func TestDistinctPerPageFollowsTheDefinition(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		period   int64
		order    string
		r        float64
		min, max float64
	}{
		{80, ByCID, 58, 54, 55.5}, // measured on PostgreSQL: 54.6
		{80, ByCID, 124, 73, 73},
		{80, ByFiller, 58, 1, 1.01},
		{0, ByFiller, 58, 58, 58},
	} {
		if got := DistinctPerPage(1_000_000, tt.period, tt.order, tt.r); got < tt.min || got > tt.max {
			t.Errorf("period %d, %s order, %v rows a page: D = %v, want %v to %v", tt.period, tt.order, tt.r, got, tt.min, tt.max)
		}
	}
}

// PostgreSQL's ratio comes from zstd's line through the points before: the
// first point has none, the second one D (its bytes as they were), the
// third the line through two.
func TestPredictFitsZstdsLineOnThePointsBefore(t *testing.T) {
	t.Parallel()
	first, second := pgMeasured(80, ByCID, 0), pgMeasured(80, ByFiller, 0)
	if p := Predict(planned("postgres", "", 80, ByCID), nil); len(p.Metrics) != 0 || !strings.Contains(p.Reason, "first point") {
		t.Errorf("the first point: %v, %q", p.Metrics, p.Reason)
	}
	p := Predict(planned("postgres", "", 80, ByFiller), []workload.Result{first})
	if got, want := p.Metrics["ratio"], first.Metrics["zstd_ratio"]; math.Abs(got-want) > 1e-9 {
		t.Errorf("from one point: %v, want its ratio %v (%s)", got, want, p.Formula)
	}
	if !strings.Contains(p.Reason, "one value of D") {
		t.Errorf("reason %q", p.Reason)
	}
	third := Predict(planned("postgres", "", 0, ByCID), []workload.Result{first, second})
	if got, want := third.Metrics["ratio"], 8192/(500+1.1*58); math.Abs(got-want)/want > 1e-9 {
		t.Errorf("on the line: %v, want %v (%s)", got, want, third.Formula)
	}
	if got, want := third.Metrics["distinct_per_page"], 58.0; got != want {
		t.Errorf("D = %v, want %v", got, want)
	}
	if got, want := third.Metrics["dictionary_ratio"], DictionaryRatio(58, 58, 140, 101); math.Abs(got-want) > 1e-9 {
		t.Errorf("dictionary ratio %v, want %v", got, want)
	}
}

// MariaDB's own ratio is its page over deflate's bytes a page + 40 in whole
// blocks: a 16 KiB page at 11.7x fits one 4 KiB block (4x), a 64 KiB page
// two (8x).
func TestPredictCountsMariaDBsBlocks(t *testing.T) {
	t.Parallel()
	pg := pgMeasured(80, ByCID, 0)
	maria := planned("mariadb", "16k", 80, ByFiller)
	maria.Metrics = map[string]float64{"rows_per_page": 124, "row_bytes": 128, "value_bytes": 100, "page_bytes": 16384,
		"distinct_per_page": 1, "deflate_ratio": 12, "fs_block_bytes": 4096, "ratio": 3.98, "engine_ratio": 3.98, "zstd_ratio": 15}
	for _, tt := range []struct {
		name   string
		point  workload.Result
		before []workload.Result
		want   float64
		reason string
	}{
		{"16 KiB, block assumed", planned("mariadb", "16k", 80, ByCID), []workload.Result{pg}, 4, "taken as 4 KiB"},
		{"64 KiB, block assumed", planned("mariadb", "64k", 80, ByCID), []workload.Result{pg}, 8, "taken as 4 KiB"},
		{"64 KiB, block measured before", planned("mariadb", "64k", 80, ByCID), []workload.Result{pg, maria}, 8, "near a block's edge"},
		{"16 KiB, deflate of its own server's other order", planned("mariadb", "16k", 0, ByCID), []workload.Result{maria}, 4, "another order or period on this server"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := Predict(tt.point, tt.before)
			if got := p.Metrics["ratio"]; got != tt.want {
				t.Errorf("ratio %v, want %v (%s)", got, tt.want, p.Formula)
			}
			if !strings.Contains(p.Reason, tt.reason) {
				t.Errorf("reason %q, want it to say %q", p.Reason, tt.reason)
			}
		})
	}
	if p := Predict(planned("mariadb", "16k", 80, ByCID), nil); len(p.Metrics) != 0 || p.Reason == "" {
		t.Errorf("the first point, with nothing before: %v, %q", p.Metrics, p.Reason)
	}
}

// Whatever the point and an earlier run of its own combination measured,
// the prediction is the same.
func TestThePointsOwnFigureNeverEntersItsPrediction(t *testing.T) {
	t.Parallel()
	history := []workload.Result{pgMeasured(80, ByCID, 0), pgMeasured(80, ByFiller, 0)}
	var preds []float64
	for _, own := range []float64{1, 5000} {
		earlier := pgMeasured(0, ByCID, own)
		earlier.Key, earlier.Run = earlier.Combo+" #0", 0
		earlier.Metrics["rows_per_page"], earlier.Metrics["deflate_ratio"] = own, own
		p := Predict(planned("postgres", "", 0, ByCID), append(history, earlier))
		preds = append(preds, p.Metrics["ratio"], p.Metrics["distinct_per_page"], p.Metrics["dictionary_ratio"])
	}
	for i := range 3 {
		if preds[i] != preds[i+3] || !(preds[i] > 0) {
			t.Errorf("predicted %v as the point's own run measured 1 and 5000: its own figure entered", preds)
		}
	}
}
