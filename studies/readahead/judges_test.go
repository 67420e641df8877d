package readahead

import (
	"fmt"
	"maps"
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
	"github.com/dbrig/dbrig/internal/workload/readahead"
)

func theStudy(t *testing.T) *study.Spec {
	t.Helper()
	reg := study.NewRegistry(engine.NewRegistry(postgres.New(""), mariadb.New("")), []workload.Kind{readahead.Kind()}, Study())
	spec, err := study.Parse("studies/readahead/read-ahead.toml", file, reg)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// scan is one hand-made cold scan.
type scan struct {
	setting            string
	seconds, mbPerS    float64 // the scan's
	bytesPerRead       float64
	deviceMBPerS       float64 // the plain read's
	resident, engineRA float64
}

// bytes is the table every hand-made scan reads: 1,600 MB.
const bytes = 1600e6

// runData builds a run's data from hand-made scans of each engine, each
// with its model computed as the runner does.
func runData(t *testing.T, byEngine map[string][]scan, skipped string) *study.RunData {
	t.Helper()
	spec := theStudy(t)
	plan, err := spec.Plan("quick")
	if err != nil {
		t.Fatal(err)
	}
	var all []workload.Result
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, eng := range []string{"postgres", "mariadb"} {
		for _, s := range byEngine[eng] {
			combo := fmt.Sprintf("engine=%s read_ahead=%s", eng, s.setting)
			r := workload.Result{
				Study: spec.Name, Key: combo + " #1", Combo: combo, Run: 1,
				Values:    map[string]any{"engine": eng, "read_ahead": s.setting},
				Params:    workload.Params{"rows": int64(200_000), "read_ahead": s.setting, "instance": "db"},
				Instances: []engine.InstanceConfig{{Name: "db", Engine: eng, Site: "db"}},
				Started:   start.Add(time.Duration(len(all)) * time.Minute),
				Metrics: map[string]float64{
					"seconds": s.seconds, "mb_per_s": s.mbPerS, "bytes_per_read": s.bytesPerRead, "bytes_read": bytes,
					"reads": bytes / s.bytesPerRead, "queue_depth": 1, "read_ahead_kb": 2560, "pages_read": bytes / 8192,
					"table_bytes": bytes, "resident_before": s.resident, "device_mb_per_s": s.deviceMBPerS, "device_bytes_per_read": s.bytesPerRead,
				},
			}
			if eng == "mariadb" {
				r.Metrics["pages_read"] = bytes / 16384
				r.Metrics["engine_read_ahead_pages"] = s.engineRA
				r.Metrics["engine_read_ahead_threshold"] = 56
			}
			pred := readahead.Model(r, all)
			r.Model, r.Formula = pred.Metrics, pred.Formula
			all = append(all, r)
		}
	}
	if skipped != "" {
		all = append(all, workload.Result{Study: spec.Name, Key: "engine=postgres read_ahead=default #1", Combo: "engine=postgres read_ahead=default", Run: 1,
			Params: workload.Params{"read_ahead": "default"}, Skipped: skipped})
	}
	return &study.RunData{Spec: spec, Plan: plan, Results: all, Summaries: study.Summarize(all, plan.Repeat)}
}

// seedLike scans as the seed's did: 8 s with large reads at 200 MB/s, 21 s
// with 8 KiB reads at 80 MB/s, each its bytes over the device's throughput.
var seedLike = []scan{
	{setting: readahead.Default, seconds: 8, mbPerS: 200, bytesPerRead: 400 << 10, deviceMBPerS: 200},
	{setting: readahead.Minimal, seconds: 21, mbPerS: 76, bytesPerRead: 8 << 10, deviceMBPerS: 80},
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
	// A fast device: read-ahead barely matters, the scan is the CPU's.
	cpuBound := []scan{
		{setting: readahead.Default, seconds: 4, mbPerS: 400, bytesPerRead: 1 << 20, deviceMBPerS: 2000},
		{setting: readahead.Minimal, seconds: 5, mbPerS: 320, bytesPerRead: 8 << 10, deviceMBPerS: 330},
	}
	// InnoDB: page-sized reads either way, more of them in flight.
	innodb := []scan{
		{setting: readahead.Default, seconds: 8, mbPerS: 200, bytesPerRead: 16 << 10, deviceMBPerS: 80, engineRA: 90000},
		{setting: readahead.Minimal, seconds: 20, mbPerS: 80, bytesPerRead: 16 << 10, deviceMBPerS: 80},
	}
	warm := []scan{seedLike[0], seedLike[1]}
	warm[1].resident = 5000
	for _, tc := range []struct {
		name    string
		scans   map[string][]scan
		skipped string
		id      string
		verdict report.Verdict
		says    string
	}{
		{"slower without read-ahead", map[string][]scan{"postgres": seedLike}, "", "scan-time", report.Reproduced, "2.62x as long, within a factor 1.5"},
		{"about as fast without", map[string][]scan{"postgres": cpuBound}, "", "scan-time", report.Differs, "1.25x as long where the seed's took 2.62x"},
		{"large reads and page reads", map[string][]scan{"postgres": seedLike}, "", "read-size", report.Reproduced, "at least the seed's 350.0 KiB"},
		{"page reads either way", map[string][]scan{"mariadb": innodb}, "", "read-size", report.Differs, "does not make reads larger"},
		{"throughput up", map[string][]scan{"postgres": seedLike}, "", "throughput", report.Reproduced, "raised the throughput 2.63x"},
		{"throughput flat", map[string][]scan{"postgres": cpuBound}, "", "throughput", report.Differs, "raised the throughput 1.25x"},
		{"time is bytes over throughput", map[string][]scan{"postgres": seedLike}, "", "model", report.Reproduced, "within 25 %"},
		{"the scan is the CPU's", map[string][]scan{"postgres": cpuBound}, "", "model", report.Differs, "did more than wait for the device"},
		{"more in flight than a plain read", map[string][]scan{"mariadb": innodb}, "", "model", report.Differs, "more reads in flight"},
		{"not cold", map[string][]scan{"postgres": warm}, "", "scan-time", report.Differs, "Not every scan was cold"},
		{"skipped: no loop devices", nil, "the read-ahead of the table's device cannot be set: dbrig is not running as root", "scan-time", report.NotMeasured, "dbrig is not running as root"},
		{"one engine of two differs", map[string][]scan{"postgres": seedLike, "mariadb": innodb}, "", "read-size", report.Differs, "PostgreSQL: reproduced."},
		{"only one setting", map[string][]scan{"postgres": seedLike[:1]}, "", "scan-time", report.NotMeasured, "without read-ahead (minimal or off) was not measured"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := judge(t, runData(t, tc.scans, tc.skipped), tc.id)
			if f.Verdict != tc.verdict {
				t.Errorf("verdict %q, want %q\n%+v", f.Verdict, tc.verdict, f)
			}
			if !strings.Contains(f.Measured+" "+f.Why, tc.says) {
				t.Errorf("the finding does not say %q:\n%s\n%s", tc.says, f.Measured, f.Why)
			}
		})
	}
}

// TestModelIsStoredWithEachScan: each point stores its time as its bytes
// over its own device's throughput.
func TestModelIsStoredWithEachScan(t *testing.T) {
	rd := runData(t, map[string][]scan{"postgres": seedLike}, "")
	if got := rd.Results[1].Model["seconds"]; math.Abs(got-20) > 1e-9 {
		t.Errorf("1,600 MB at 80 MB/s: model %v s, want 20", got)
	}
}

// TestModelSecondsKeepsTheRulesRuns: the model's time of a setting is the
// mean of its kept runs' own arithmetic, the first left out when the rule
// drops it, and never the prediction a run stored before it ran.
func TestModelSecondsKeepsTheRulesRuns(t *testing.T) {
	sm := &study.Summary{}
	for _, v := range []float64{100, 10, 20} {
		// v MB at 1 MB/s; the prediction stored before the run, 1 s, is
		// not the seed's arithmetic.
		sm.Results = append(sm.Results, workload.Result{Metrics: map[string]float64{"bytes_read": v * 1e6, "device_mb_per_s": 1},
			Model: map[string]float64{"seconds": 1}, Predicted: []string{"seconds"}})
	}
	if got := modelSeconds(sm, true); got != 15 {
		t.Errorf("with the first dropped: %v, want 15", got)
	}
	if got := modelSeconds(sm, false); math.Abs(got-130.0/3) > 1e-9 {
		t.Errorf("every run: %v", got)
	}
	if got := modelSeconds(&study.Summary{Results: []workload.Result{{}}}, true); !math.IsNaN(got) {
		t.Errorf("no model: %v", got)
	}
}

// TestModelWeighsTheRuns: a setting whose kept runs take 8 to 11 s against
// the model's 8 s errs from 0 to +37 %, on both sides of ±25 %: within
// noise, where the mean alone (+17 %) reproduced it. The first run, which
// the study discards, does not count.
func TestModelWeighsTheRuns(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		runs []float64 // the default setting's runs 2 to 4, s
		want report.Verdict
	}{
		{"runs agree", []float64{8, 8.2, 8.4}, report.Reproduced},
		{"runs straddle the bound", []float64{8, 9, 11}, report.WithinNoise},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rd := runData(t, map[string][]scan{"postgres": seedLike}, "")
			all := rd.Results
			for _, r := range rd.Results {
				for i, sec := range tc.runs {
					x := r
					x.Run = i + 2
					x.Key = fmt.Sprintf("%s #%d", r.Combo, x.Run)
					x.Metrics = maps.Clone(r.Metrics)
					if r.Params.String("read_ahead") == readahead.Default {
						x.Metrics["seconds"] = sec
					}
					all = append(all, x)
				}
			}
			// The first run, discarded, is far off: it must not count.
			all[0].Metrics = maps.Clone(all[0].Metrics)
			all[0].Metrics["seconds"] = 30
			rd.Results, rd.Summaries = all, study.Summarize(all, rd.Plan.Repeat)
			if f := judge(t, rd, "model"); f.Verdict != tc.want {
				t.Errorf("verdict %q, want %q; measured %s; spread %s; why %s", f.Verdict, tc.want, f.Measured, f.Spread, f.Why)
			}
		})
	}
}
