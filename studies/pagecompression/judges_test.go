package pagecompression

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/mariadb"
	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/workload"
	"github.com/dbrig/dbrig/internal/workload/pagecompress"
)

// theStudy parses the study's own file, whose published findings the
// judges read.
func theStudy(t *testing.T) *study.Spec {
	t.Helper()
	b := Study()
	reg := study.NewRegistry(engine.NewRegistry(postgres.New(""), mariadb.New("")), []workload.Kind{pagecompress.Kind()}, b)
	spec, err := study.Parse(b.Path, b.File, reg)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// point is one hand-made measurement of one order and period.
type point struct {
	order    string
	period   int64
	ratio    float64 // zstd's, or the engine's on MariaDB
	distinct float64
}

// runData builds a run's data from hand-made points of each engine (58
// rows of 140 bytes a PostgreSQL page, values of 101), each with its model
// computed as the runner does.
func runData(t *testing.T, byEngine map[string][]point) *study.RunData {
	t.Helper()
	spec := theStudy(t)
	plan, err := spec.Plan("quick")
	if err != nil {
		t.Fatal(err)
	}
	var all []workload.Result
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, eng := range []string{"postgres", "mariadb"} {
		for _, p := range byEngine[eng] {
			combo := fmt.Sprintf("engine=%s period=%d order=%s", eng, p.period, p.order)
			in := engine.InstanceConfig{Name: "db", Engine: eng, Site: "db"}
			r := workload.Result{
				Study: spec.Name, Key: combo + " #1", Combo: combo, Run: 1,
				Values:  map[string]any{"engine": eng, "period": p.period, "order": p.order},
				Params:  workload.Params{"rows": int64(1_000_000), "period": p.period, "order": p.order, "instance": "db"},
				Started: start.Add(time.Duration(len(all)) * time.Minute),
				Metrics: map[string]float64{
					"ratio": p.ratio, "zstd_ratio": p.ratio, "s2_ratio": p.ratio / 2, "deflate_ratio": p.ratio * 0.8,
					"distinct_per_page": p.distinct, "distinct_values": 73, "rows_per_page": 58, "row_bytes": 140, "value_bytes": 101, "page_bytes": 8192, "pages": 17_000,
				},
				Series: map[string][]float64{"pages_by_distinct": {0, 10, 5}, "zstd_bytes_by_distinct": {0, 500, 520}},
			}
			if eng == "mariadb" {
				in.Settings = map[string]string{"innodb_page_size": "64k"}
				r.Metrics["engine_ratio"] = p.ratio
				r.Metrics["blocks_ratio"] = p.ratio
				r.Metrics["fs_block_bytes"] = 4096
				r.Metrics["page_bytes"] = 65536
			}
			r.Instances = []engine.InstanceConfig{in}
			pred := pagecompress.Model(r, all)
			r.Model, r.Formula = pred.Metrics, pred.Formula
			all = append(all, r)
		}
	}
	return &study.RunData{Spec: spec, Plan: plan, Results: all, Summaries: study.Summarize(all, plan.Repeat)}
}

// seedLike compresses as the seed's pages did: barely on cid, ten times on
// filler, alike with every value distinct.
var seedLike = []point{
	{pagecompress.ByCID, 80, 1.1, 55}, {pagecompress.ByFiller, 80, 10, 1.2}, {pagecompress.ByCID, 0, 1.05, 58}, {pagecompress.ByFiller, 0, 1.05, 58},
}

// zstdLike compresses as a byte-level codec does: well in either order.
var zstdLike = []point{
	{pagecompress.ByCID, 80, 14.7, 55}, {pagecompress.ByFiller, 80, 16.5, 1.2}, {pagecompress.ByCID, 0, 14.6, 58}, {pagecompress.ByFiller, 0, 19, 58},
}

func judge(t *testing.T, rd *study.RunData, id string) report.Finding {
	t.Helper()
	for _, p := range rd.Spec.Published {
		if p.ID == id {
			return Judges()[id](rd, p)
		}
	}
	t.Fatalf("the study publishes no finding %q", id)
	return report.Finding{}
}

func TestJudges(t *testing.T) {
	capped := cappedByBlocks()
	shuffled := []point{{pagecompress.ByCID, 80, 1.1, 55}, {pagecompress.ByFiller, 80, 10, 30}}
	for _, tc := range []struct {
		name    string
		points  map[string][]point
		id      string
		verdict report.Verdict
		says    string
	}{
		{"cid order barely compresses", map[string][]point{"postgres": seedLike}, "cid-order", report.Reproduced, "at most 1.5x"},
		{"cid order compresses well", map[string][]point{"postgres": zstdLike}, "cid-order", report.Differs, "zstd finds what repeats inside each value"},
		{"filler order ten times", map[string][]point{"postgres": seedLike}, "filler-order", report.Reproduced, "more than clustered on cid: duplicates share pages"},
		{"filler order ten times, cid order too", map[string][]point{"postgres": {{pagecompress.ByCID, 80, 9, 55}, {pagecompress.ByFiller, 80, 10, 1.2}}}, "filler-order", report.Differs, "the ratio does not come from the order"},
		{"filler order held by blocks", map[string][]point{"mariadb": capped}, "filler-order", report.Differs, "whole 4 KiB blocks"},
		{"the order decides", map[string][]point{"postgres": seedLike}, "order-decides", report.Reproduced, "9.09x better clustered on filler"},
		{"the order barely matters", map[string][]point{"postgres": zstdLike}, "order-decides", report.Differs, "only 1.12x better"},
		{"distinct values decide", map[string][]point{"postgres": seedLike}, "distinct-values", report.Reproduced, "clustered on filler one or two"},
		{"duplicates on many pages", map[string][]point{"postgres": shuffled}, "distinct-values", report.Differs, "duplicates did not share pages"},
		{"distinct values as the seed's, ratios alike", map[string][]point{"mariadb": capped}, "distinct-values", report.Differs, "did not compress at least 5 % better"},
		{"a page holds most of the values", map[string][]point{"postgres": {{pagecompress.ByCID, 80, 1.1, 40}, {pagecompress.ByFiller, 80, 10, 1}}}, "distinct-values", report.Reproduced, "the table's 73 distinct values"},
		{"no gain without duplicates", map[string][]point{"postgres": seedLike}, "all-distinct", report.Reproduced, "within 15 %"},
		{"a gain without duplicates", map[string][]point{"postgres": zstdLike}, "all-distinct", report.Differs, "differ by 30 %"},
		{"no all-distinct points", map[string][]point{"postgres": seedLike[:2]}, "all-distinct", report.NotMeasured, "period 0"},
		{"one engine of two differs", map[string][]point{"postgres": seedLike, "mariadb": capped}, "order-decides", report.Differs, "PostgreSQL: reproduced."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := judge(t, runData(t, tc.points), tc.id)
			if f.Verdict != tc.verdict {
				t.Errorf("verdict %q, want %q\n%+v", f.Verdict, tc.verdict, f)
			}
			if !strings.Contains(f.Measured+" "+f.Why, tc.says) {
				t.Errorf("the finding does not say %q:\n%s\n%s", tc.says, f.Measured, f.Why)
			}
		})
	}
}

func cappedByBlocks() []point {
	return []point{{pagecompress.ByCID, 80, 3.9, 70}, {pagecompress.ByFiller, 80, 3.9, 1.4}}
}

func TestReport(t *testing.T) {
	rd := runData(t, map[string][]point{"postgres": seedLike, "mariadb": cappedByBlocks()})
	d := &report.Doc{}
	Report(rd, d)
	if len(d.Sections) != 1 || len(d.Charts) != 1 {
		t.Fatalf("report %+v", d)
	}
	rows := d.Sections[0].Tables[0].Rows
	if len(rows) != 8 || !strings.HasPrefix(rows[0][0], "seed") || rows[2][0] != "PostgreSQL" || rows[6][0] != "MariaDB, 64k pages" {
		t.Errorf("rows %q", rows)
	}
	if len(d.Charts[0].Series) != 4 || len(d.Charts[0].Series[0].Points) != 8 {
		t.Errorf("chart series %+v", d.Charts[0].Series)
	}
	if !strings.Contains(d.Sections[0].Text, "PostgreSQL: zstd bytes per page") {
		t.Errorf("section text %q", d.Sections[0].Text)
	}
}

func TestSpearman(t *testing.T) {
	if r := spearman([]float64{1, 2, 3, 4}, []float64{10, 20, 30, 40}); r != 1 {
		t.Errorf("increasing: %v", r)
	}
	if r := spearman([]float64{1, 2, 3}, []float64{3, 2, 1}); r != -1 {
		t.Errorf("decreasing: %v", r)
	}
	if r := spearman([]float64{1, 2}, []float64{1, 2}); !math.IsNaN(r) {
		t.Errorf("two points: %v", r)
	}
}

// TestAllDistinctLooksBeneathTheBlocks: MariaDB stores a compressed page
// in whole file-system blocks, which rounds the two orders' pages to the
// same blocks; the codec's own ratios decide whether the orders differ.
func TestAllDistinctLooksBeneathTheBlocks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name                string
		cidDeflate, filDefl float64
		want                report.Verdict
	}{
		{"deflate differs", 2.5, 3.5, report.Differs}, // equal blocks reproduced it before
		{"deflate alike", 2.5, 2.6, report.Reproduced},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rd := runData(t, map[string][]point{"mariadb": {{pagecompress.ByCID, 0, 2, 58}, {pagecompress.ByFiller, 0, 2, 58}}})
			for i, r := range rd.Results {
				rd.Results[i].Metrics["deflate_ratio"] = map[string]float64{pagecompress.ByCID: tc.cidDeflate, pagecompress.ByFiller: tc.filDefl}[r.Params.String("order")]
			}
			rd.Summaries = study.Summarize(rd.Results, rd.Plan.Repeat)
			if f := judge(t, rd, "all-distinct"); f.Verdict != tc.want || !strings.Contains(f.Measured, "deflate alone") {
				t.Errorf("verdict %q, want %q;\nmeasured: %s\nwhy: %s", f.Verdict, tc.want, f.Measured, f.Why)
			}
		})
	}
}
