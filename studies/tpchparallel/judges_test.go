package tpchparallel

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
	"github.com/dbrig/dbrig/internal/workload/tpch"
	"github.com/dbrig/dbrig/studies/studytest"
)

// theStudy parses the built-in study, whose published figures the judges
// read.
func theStudy(t *testing.T) *study.Spec {
	t.Helper()
	reg := study.NewRegistry(engine.NewRegistry(postgres.New(""), mariadb.New("")), []workload.Kind{tpch.Kind()}, Study())
	spec, err := study.Parse("studies/tpchparallel/tpch-parallel.toml", file, reg)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// handMade is one degree of a hand-made sweep: each query's time, given
// its number and the degree's n.
type handMade struct {
	degree  int
	workers float64
	time    func(q int, n float64) float64
}

// runData builds a run's data from hand-made results, with each result's
// model computed as the runner does (in order, from the results before it).
func runData(t *testing.T, cpus float64, levels []handMade) *study.RunData {
	t.Helper()
	spec := theStudy(t)
	plan, err := spec.Plan("quick")
	if err != nil {
		t.Fatal(err)
	}
	var all []workload.Result
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, l := range levels {
		combo := fmt.Sprintf("degree=%d", l.degree)
		r := workload.Result{
			Study: spec.Name, Key: combo + " #1", Combo: combo, Run: 1,
			Values:    map[string]any{"degree": int64(l.degree)},
			Params:    workload.Params{"scale_factor": 0.5, "degree": int64(l.degree), "streams": int64(6), "queries": "all", "instance": "db"},
			Instances: []engine.InstanceConfig{{Name: "db", Engine: "postgres", Site: "db"}},
			Started:   start.Add(time.Duration(i) * time.Minute),
			Metrics: map[string]float64{
				"degree": float64(l.degree), "processes": float64(l.degree + 1), "host_cpus": cpus, "streams_kept": 3,
			},
		}
		n := math.Min(float64(l.degree+1), cpus)
		var total float64
		for q := 1; q <= tpch.NumQueries; q++ {
			v := l.time(q, n)
			r.Metrics[tpch.MetricName(q)] = v
			r.Metrics[tpch.WorkersName(q)] = l.workers
			total += v / 1000
		}
		r.Metrics["total_s"] = total
		r.SetModel(workload.Prediction{}, tpch.Model(r, workload.OtherCombinations(r, all)))
		all = append(all, r)
	}
	return &study.RunData{Spec: spec, Plan: plan, Results: all, Summaries: study.Summarize(all, plan.Repeat)}
}

// seedScaling times each query as the seed's own fit predicts: its MAXDOP 1
// time (scaled down) on Amdahl's law with its fitted serial fraction.
func seedScaling(t *testing.T) func(q int, n float64) float64 {
	seed, ok := seedOf(theStudy(t))
	if !ok {
		t.Fatal("the study publishes no seed table")
	}
	return func(q int, n float64) float64 {
		s, _ := seed.fit(q)
		return tpch.Amdahl(seed.query[q][1]/100, s, n)
	}
}

func serialOnly(t *testing.T) func(q int, n float64) float64 {
	seed, _ := seedOf(theStudy(t))
	return func(q int, n float64) float64 { return seed.query[q][1] / 100 }
}

func judge(t *testing.T, id string, rd *study.RunData) report.Finding {
	t.Helper()
	p, ok := rd.Spec.PublishedByID(id)
	if !ok {
		t.Fatalf("the study has no finding %q", id)
	}
	return Judges()[id](rd, p)
}

func TestJudges(t *testing.T) {
	scales := seedScaling(t)
	flat := serialOnly(t)
	seed, _ := seedOf(theStudy(t))
	reversed := func(q int, n float64) float64 {
		s, _ := seed.fit(q)
		return tpch.Amdahl(seed.query[q][1]/100, 0.4-s, n)
	}
	// From 8 to 16 processes Q17 slows down, as in the seed.
	slowQ17 := func(q int, n float64) float64 {
		v := scales(q, n)
		if q == 17 && n == 16 {
			v = scales(q, 8) * 1.3
		}
		return v
	}
	// From 8 to 16 processes Q17, Q19 and Q20 slow down, as in the seed.
	slow3 := func(q int, n float64) float64 {
		v := scales(q, n)
		if (q == 17 || q == 19 || q == 20) && n == 16 {
			v = scales(q, 8) * 1.3
		}
		return v
	}
	for _, tc := range []struct {
		name   string
		id     string
		cpus   float64
		levels []handMade
		want   report.Verdict
		says   string
	}{
		{"scales as the seed", "total-speedup", 2, []handMade{{0, 0, scales}, {1, 1, scales}, {2, 2, scales}}, report.Reproduced, "at least 80 %"},
		{"more than n", "total-speedup", 2, []handMade{{0, 0, flat}, {1, 1, func(q int, n float64) float64 { return flat(q, n) / 3 }}}, report.Differs, "more than the processes can give"},
		{"no gain", "total-speedup", 2, []handMade{{0, 0, flat}, {1, 0, flat}}, report.Differs, "planned no parallel worker for Q1, Q2"},
		{"every query faster", "queries-scale", 2, []handMade{{0, 0, scales}, {1, 1, scales}}, report.Reproduced, "22 of 22"},
		{"no query faster", "queries-scale", 2, []handMade{{0, 0, flat}, {1, 0, flat}}, report.Differs, "Only 0 of 22"},
		{"the seed's fractions", "amdahl-fraction", 2, []handMade{{0, 0, scales}, {1, 1, scales}}, report.Reproduced, "within 10 points"},
		{"all serial", "amdahl-fraction", 2, []handMade{{0, 0, flat}, {1, 0, flat}}, report.Differs, "97 points"},
		{"same order", "which-queries-scale", 2, []handMade{{0, 0, scales}, {1, 1, scales}}, report.Reproduced, "1.00"},
		{"reversed order", "which-queries-scale", 2, []handMade{{0, 0, scales}, {1, 1, reversed}}, report.Differs, "-1.00"},
		{"one query slower from 8 to 16", "slower-at-high-degree", 16, []handMade{{0, 0, slowQ17}, {7, 7, slowQ17}, {15, 15, slowQ17}}, report.Differs, "Only 1 of 22"},
		{"three slower, one run each", "slower-at-high-degree", 16, []handMade{{0, 0, slow3}, {7, 7, slow3}, {15, 15, slow3}}, report.WithinNoise, "only 0 beyond their runs' spread"},
		{"every query faster than processes allow", "queries-scale", 2, []handMade{{0, 0, flat}, {1, 1, func(q int, n float64) float64 { return flat(q, n) / 3 }}}, report.WithinNoise, "different loads"},
		{"faster from 8 to 16", "slower-at-high-degree", 16, []handMade{{0, 0, scales}, {7, 7, scales}, {15, 15, scales}}, report.Differs, "No query got slower"},
		{"two CPUs only", "slower-at-high-degree", 2, []handMade{{0, 0, scales}, {7, 7, scales}, {15, 15, scales}}, report.NotMeasured, "reached n = 2"},
		{"no serial degree", "total-speedup", 2, []handMade{{1, 1, scales}, {2, 2, scales}}, report.NotMeasured, "degree 0"},
		{"serial only", "queries-scale", 2, []handMade{{0, 0, scales}}, report.NotMeasured, "more than one process"},
	} {
		t.Run(tc.id+"/"+tc.name, func(t *testing.T) {
			f := judge(t, tc.id, runData(t, tc.cpus, tc.levels))
			if f.Verdict != tc.want || !strings.Contains(f.Why+" "+f.Measured, tc.says) {
				t.Errorf("verdict %q, want %q with %q;\nmeasured: %s\nmodel: %s\nwhy: %s", f.Verdict, tc.want, tc.says, f.Measured, f.Model, f.Why)
			}
		})
	}
}

// TestModelIsHeldOutAndReportShowsTheMeasuredFraction: each point's
// Amdahl figure is fitted on the other degrees (the serial point, with
// no serial time but its own, has none); the report's serial fractions
// are the measured speedups' over every degree, the seed's way.
func TestModelIsHeldOutAndReportShowsTheMeasuredFraction(t *testing.T) {
	scales := seedScaling(t)
	rd := runData(t, 16, []handMade{{0, 0, scales}, {3, 3, scales}, {7, 7, scales}})
	first, last := rd.Results[0], rd.Results[2]
	if len(first.Model) != 0 {
		t.Errorf("the serial point alone has a model: %v", first.Model)
	}
	if first.FitReason == "" {
		t.Errorf("the serial point says nothing of why it has no figure")
	}
	seed, _ := seedOf(rd.Spec)
	sw := analyze(rd)[0]
	for q := 1; q <= tpch.NumQueries; q++ {
		want, _ := seed.fit(q)
		if got := sw.fraction(tpch.MetricName(q)); math.Abs(got-want) > 1e-9 {
			t.Errorf("Q%d: measured s = %v, want %v", q, got, want)
		}
		if got, want := last.Model[tpch.MetricName(q)], last.Metrics[tpch.MetricName(q)]; math.Abs(got-want) > 1e-9*want {
			t.Errorf("Q%d: model %v ms, measured %v ms on an exact Amdahl curve", q, got, want)
		}
	}
	if last.Model["amdahl_points"] != 2 || !strings.Contains(last.Formula, "over n = 1, 4 ") || last.ModelFrom("total_s") != "fit" {
		t.Errorf("model of the last point: %v points, formula %q", last.Model["amdahl_points"], last.Formula)
	}
	d := &report.Doc{}
	Report(rd, d)
	if want, _ := seed.fit(1); len(d.Sections) != 1 || !strings.Contains(fmt.Sprint(d.Sections[0].Tables[0].Rows[0]), pct(want)) {
		t.Errorf("the report does not show Q1's measured serial fraction (%s): %v", pct(want), d.Sections[0].Tables[0].Rows[0])
	}
	if len(d.Charts) != 4 {
		t.Errorf("%d charts, want the total, the speedups, each query's speedup and the fractions", len(d.Charts))
	}
}

// TestJudgesSayWhatOtherProcessesTook: the CPU time other processes took
// while the streams ran is in the verdict.
func TestJudgesSayWhatOtherProcessesTook(t *testing.T) {
	flat := serialOnly(t)
	rd := runData(t, 2, []handMade{{0, 0, flat}, {1, 1, flat}})
	for i := range rd.Results {
		rd.Results[i].Metrics["other_cpus"] = 1.5
	}
	rd.Summaries = study.Summarize(rd.Results, rd.Plan.Repeat)
	if f := judge(t, "total-speedup", rd); !strings.Contains(f.Why, "kept 1.5 of its 2 CPUs busy") {
		t.Errorf("total-speedup: %s", f.Why)
	}
	// No query gained, on a machine whose other processes took 1.5 CPUs:
	// the degree cannot be blamed.
	if f := judge(t, "queries-scale", rd); f.Verdict != report.WithinNoise || !strings.Contains(f.Why, "took 1.5 CPUs") {
		t.Errorf("queries-scale: %s: %s", f.Verdict, f.Why)
	}
	if f := judge(t, "total-speedup", runData(t, 2, []handMade{{0, 0, flat}, {1, 1, flat}})); strings.Contains(f.Why, "CPUs busy") {
		t.Errorf("without a measure of other processes: %s", f.Why)
	}
}

// TestSlowerAtHighDegreeWeighsTheRuns: three queries slower from 8 to 16
// processes reproduce the seed only where the two degrees' runs do not
// overlap.
func TestSlowerAtHighDegreeWeighsTheRuns(t *testing.T) {
	t.Parallel()
	scales := seedScaling(t)
	slow3 := func(q int, n float64) float64 {
		v := scales(q, n)
		if (q == 17 || q == 19 || q == 20) && n == 16 {
			v = scales(q, 8) * 1.3
		}
		return v
	}
	levels := []handMade{{0, 0, slow3}, {7, 7, slow3}, {15, 15, slow3}}
	for _, tc := range []struct {
		name    string
		factors []float64
		want    report.Verdict
	}{
		{"runs apart", []float64{0.99, 1.01}, report.Reproduced},
		{"runs overlap", []float64{0.7, 1.4}, report.WithinNoise},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rd := studytest.Scaled(runData(t, 16, levels), tc.factors...)
			if f := judge(t, "slower-at-high-degree", rd); f.Verdict != tc.want {
				t.Errorf("verdict %q, want %q;\nmeasured: %s\nwhy: %s", f.Verdict, tc.want, f.Measured, f.Why)
			}
		})
	}
}
