package tpch

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/mariadb/mariatest"
	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
	"github.com/dbrig/dbrig/internal/topology"
	"github.com/dbrig/dbrig/internal/workload"
	"github.com/dbrig/dbrig/internal/workload/workloadtest"
)

var (
	update       = flag.Bool("update", false, "record testdata/answers.json from a real run")
	updateScales = flag.String("update-scales", "0.01", "with -update: the scale factors to record, comma-separated")
)

// goldenScale is the scale factor the tests check the golden answers at.
const goldenScale = 0.01

// requireGenerator skips without tpchgen-cli (fails in CI).
func requireGenerator(t *testing.T) {
	t.Helper()
	if _, err := FindGenerator(context.Background()); err != nil {
		if os.Getenv("CI") == "" {
			t.Skipf("skipped: %v", err)
		}
		t.Fatal(err)
	}
}

// testServer starts PostgreSQL with the study's parallel settings.
func testServer(t *testing.T) *postgres.Instance {
	t.Helper()
	requireGenerator(t)
	return pgtest.Start(t, "tpch", map[string]string{
		"shared_buffers": "256MB", "work_mem": "64MB", "jit": "off",
		"max_worker_processes": "20", "max_parallel_workers": "2", "max_parallel_workers_per_gather": "2",
		"min_parallel_table_scan_size": "0", "min_parallel_index_scan_size": "0",
	})
}

func newTestWorkload(t *testing.T, sf float64, degree, streams int, queries string) *tpch {
	t.Helper()
	w, err := newWorkload(workload.Params{"scale_factor": sf, "degree": int64(degree), "streams": int64(streams), "queries": queries, "instance": "db"})
	if err != nil {
		t.Fatal(err)
	}
	return w.(*tpch)
}

// TestGoldenAnswers loads the smallest scale factor, checks every query's
// serial answer against testdata/answers.json (Prepare fails otherwise),
// and runs the stream at degree 1: every answer of the parallel plans
// matches, and every metric is there. With -update it records the golden
// answers of -update-scales instead.
func TestGoldenAnswers(t *testing.T) {
	t.Parallel()
	inst := testServer(t)
	ctx := context.Background()
	if *update {
		recordGolden(t, inst)
		return
	}
	want, ok := golden(goldenScale)
	if !ok || len(want) != NumQueries {
		t.Fatalf("testdata/answers.json has %d answers at scale factor %v, want %d (record them with -update)", len(want), goldenScale, NumQueries)
	}
	env := workloadtest.Env("dbrig_tpch_golden", inst)
	if err := newTestWorkload(t, goldenScale, 1, 3, "all").Prepare(ctx, env); err != nil {
		t.Fatalf("prepare at scale factor %v: %v", goldenScale, err)
	}
	checkProbe(t, env)
	w := newTestWorkload(t, goldenScale, 1, 3, "all")
	m, err := w.Run(ctx, env)
	if err != nil {
		t.Fatalf("run at degree 1: %v", err)
	}
	for q := 1; q <= NumQueries; q++ {
		if v, ok := m.Metrics[MetricName(q)]; !ok || v <= 0 {
			t.Errorf("Q%d: time %v, %v", q, v, ok)
		}
		if _, ok := m.Metrics[WorkersName(q)]; !ok {
			t.Errorf("Q%d: no planned workers", q)
		}
		if len(m.Series[MetricName(q)]) != 3 {
			t.Errorf("Q%d: %d streams recorded, want 3", q, len(m.Series[MetricName(q)]))
		}
	}
	if m.Metrics["total_s"] <= 0 || m.Metrics["degree"] != 1 || m.Metrics["processes"] != 2 || m.Metrics["streams_kept"] != 2 { // 3 streams: the first dropped, two too few to trim
		t.Errorf("metrics: %v", m.Metrics)
	}
	// The server runs with degree 2; the point's session set 1 and says so.
	if len(m.Notes) != 1 || !strings.Contains(m.Notes[0], "max_parallel_workers_per_gather = 2; dbrig's session set 1") {
		t.Errorf("notes: %q", m.Notes)
	}
	if _, ok := m.Metrics["other_cpus"]; !ok {
		t.Error("no measure of the other processes' CPU use")
	}
}

// checkProbe: before a point at degree 1 the probe reads each query's
// plan at that degree from the server, and some plan runs part of its
// query in parallel (every scan may have a worker).
func checkProbe(t *testing.T, env *workload.Env) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := workload.Result{Params: workload.Params{"scale_factor": goldenScale, "degree": int64(1), "streams": int64(3), "queries": "all", "instance": "db"},
		Instances: []engine.InstanceConfig{{Name: "db", Engine: "postgres"}}}
	got, err := Probe(ctx, r, env)
	if err != nil {
		t.Fatalf("probe before degree 1: %v", err)
	}
	parallel := 0
	for q := 1; q <= NumQueries; q++ {
		w, okW := got[probePlanWorkers(q)]
		s, okS := got[probePlanFraction(q)]
		if !okW || !okS || w < 0 || w > 1 || s < 0 || s > 1 || (w == 0 && s != 1) {
			t.Errorf("Q%d's plan at degree 1: %v workers (%v), serial fraction %v (%v)", q, w, okW, s, okS)
		}
		if w == 1 && s < 1 {
			parallel++
		}
	}
	if parallel == 0 {
		t.Error("no query's plan at degree 1 has a parallel part")
	}
}

// recordGolden loads each scale factor of -update-scales, runs every query
// serially and writes the answers to testdata/answers.json.
func recordGolden(t *testing.T, inst engine.Instance) {
	ctx := context.Background()
	var g GoldenFile
	if err := json.Unmarshal(goldenJSON, &g); err != nil {
		t.Fatal(err)
	}
	g.Note = "Each TPC-H query's answer (rows, and a checksum of the rows in order with decimals rounded to 2 places) at these scale factors, from tpchgen-cli's data and the specification's validation parameters. Recorded by: go test ./internal/workload/tpch -run TestGoldenAnswers -update -update-scales SF,SF... (each scale factor named is recorded anew, the others kept)."
	if g.Scales == nil {
		g.Scales = map[string]map[string]Answer{}
	}
	for _, f := range strings.Split(*updateScales, ",") {
		sf, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil {
			t.Fatal(err)
		}
		env := workloadtest.Env("dbrig_tpch_golden", inst)
		w := newTestWorkload(t, sf, 0, 1, "all")
		delete(g.Scales, FormatScale(sf)) // record anew, not against the old answers
		goldenJSON, _ = json.Marshal(g)
		if err := w.Prepare(ctx, env); err != nil {
			t.Fatal(err)
		}
		s, err := openSession(ctx, env.Engines, inst.Login(env.Database))
		if err != nil {
			t.Fatal(err)
		}
		got, err := readAnswers(ctx, s)
		s.close(ctx)
		if err != nil {
			t.Fatal(err)
		}
		g.Scales[FormatScale(sf)] = map[string]Answer{}
		for q, a := range got {
			g.Scales[FormatScale(sf)]["Q"+strconv.Itoa(q)] = a
		}
		t.Logf("recorded %d answers at scale factor %s", len(got), FormatScale(sf))
	}
	b, err := json.MarshalIndent(g, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("testdata", "answers.json"), append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// broken returns the embedded queries with one query's text changed.
func broken(n int, change func(string) string) func(string, float64, []int) ([]Query, error) {
	return func(e string, sf float64, sel []int) ([]Query, error) {
		qs, err := Queries(e, sf, sel)
		for i := range qs {
			if qs[i].N == n {
				qs[i].SQL = change(qs[i].SQL)
			}
		}
		return qs, err
	}
}

// TestBrokenQueryFailsThePoint: a query that answers something else than
// the golden answer, one the server cannot parse, and a parallel run whose
// answer differs from the serial run each fail, naming the query.
func TestBrokenQueryFailsThePoint(t *testing.T) {
	t.Parallel()
	inst := testServer(t)
	ctx := context.Background()
	env := workloadtest.Env("dbrig_tpch_broken", inst)

	for _, tc := range []struct {
		name   string
		query  int
		change func(string) string
		says   []string
	}{
		{"wrong answer", 6, func(s string) string { return strings.Replace(s, "0.06 - 0.01", "0.05 - 0.01", 1) },
			[]string{"wrong answers", "Q6 returned", "golden answer at scale factor 0.01"}},
		{"dialect error", 3, func(s string) string {
			return strings.Replace(s, "interval", "intervall", 1) + " fetch first 10 rows only limit 10"
		},
			[]string{"Q3 (serial reference run)", "syntax error"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newTestWorkload(t, goldenScale, 0, 2, "3,6")
			w.queriesFor = broken(tc.query, tc.change)
			err := w.Prepare(ctx, env)
			for _, s := range tc.says {
				if err == nil || !strings.Contains(err.Error(), s) {
					t.Errorf("prepare with a broken Q%d: %v; want it to say %q", tc.query, err, s)
				}
			}
		})
	}

	t.Run("parallel answer differs", func(t *testing.T) {
		if err := newTestWorkload(t, goldenScale, 0, 2, "3,14").Prepare(ctx, env); err != nil {
			t.Fatal(err)
		}
		w := newTestWorkload(t, goldenScale, 2, 2, "3,14")
		// As a wrong parallel plan would: the same query, another answer.
		w.queriesFor = broken(14, func(s string) string { return strings.Replace(s, "100.00 *", "99.00 *", 1) })
		_, err := w.Run(ctx, env)
		if err == nil || !strings.Contains(err.Error(), "Q14 at degree 2 returned") || !strings.Contains(err.Error(), "the parallel plan's answer differs") {
			t.Errorf("run with Q14 answering otherwise: %v", err)
		}
		// The same point with the real queries passes.
		if _, err := newTestWorkload(t, goldenScale, 2, 2, "3,14").Run(ctx, env); err != nil {
			t.Errorf("run with the real queries: %v", err)
		}
	})
}

// TestMariaDBRunsSerialOnly: MariaDB has no parallel query, so a point at
// a parallel degree is skipped with the reason, and degree 0 is not.
func TestMariaDBRunsSerialOnly(t *testing.T) {
	t.Parallel()
	var u *topology.Unreachable
	if err := skipDegree("mariadb", 1); !errors.As(err, &u) || !strings.Contains(u.Reason, "MariaDB has no parallel query") {
		t.Errorf("degree 1 on MariaDB: %v", err)
	}
	for _, tc := range []struct {
		engine string
		degree int
	}{{"mariadb", 0}, {"postgres", 0}, {"postgres", 16}} {
		if err := skipDegree(tc.engine, tc.degree); err != nil {
			t.Errorf("degree %d on %s: %v", tc.degree, tc.engine, err)
		}
	}
}

// TestDegreeIsNotCappedAtTheCPUs: a study written for a 16-core server
// validates here.
func TestDegreeIsNotCappedAtTheCPUs(t *testing.T) {
	t.Parallel()
	for _, d := range []int{0, 15, 16, 64} {
		if _, err := newWorkload(workload.Params{"scale_factor": 1.0, "degree": int64(d), "streams": int64(10), "queries": "all", "instance": "db"}); err != nil {
			t.Errorf("degree %d: %v", d, err)
		}
	}
	for _, p := range []workload.Params{
		{"scale_factor": 0.0, "degree": int64(0), "streams": int64(1), "queries": "all"},
		{"scale_factor": 1.0, "degree": int64(MaxDegree + 1), "streams": int64(1), "queries": "all"},
		{"scale_factor": 1.0, "degree": int64(0), "streams": int64(1), "queries": "7-30"},
	} {
		if err := declared(p); err == nil {
			t.Errorf("%v: accepted", p)
		}
	}
}

// declared checks parameters against the kind's declarations, as a study's
// parse does.
func declared(p workload.Params) error {
	for _, spec := range Kind().Params {
		if v, ok := p[spec.Name]; ok {
			if _, err := spec.Normalize(v); err != nil {
				return err
			}
		}
	}
	return nil
}

// TestMariaDB: the MariaDB dialect's answers at scale factor 0.01 are the
// golden answers PostgreSQL's are checked against; the data loads through
// LOAD DATA LOCAL INFILE from the generator's stream; a parallel degree is
// skipped with the reason.
func TestMariaDB(t *testing.T) {
	t.Parallel()
	requireGenerator(t)
	inst := mariatest.Start(t, "tpch", map[string]string{"innodb_buffer_pool_size": "256M"})
	ctx := context.Background()
	env := workloadtest.Env("dbrig_tpch_maria", inst)
	if err := newTestWorkload(t, goldenScale, 0, 2, "all").Prepare(ctx, env); err != nil {
		t.Fatalf("prepare on MariaDB: %v", err)
	}
	m, err := newTestWorkload(t, goldenScale, 0, 2, "all").Run(ctx, env)
	if err != nil {
		t.Fatalf("run on MariaDB: %v", err)
	}
	if m.Metrics["total_s"] <= 0 || m.Metrics["processes"] != 1 || m.Metrics[WorkersName(1)] != 0 {
		t.Errorf("metrics: %v", m.Metrics)
	}
	_, err = newTestWorkload(t, goldenScale, 1, 2, "all").Run(ctx, env)
	var u *topology.Unreachable
	if !errors.As(err, &u) || !strings.Contains(u.Reason, "MariaDB has no parallel query") {
		t.Errorf("degree 1 on MariaDB: %v, want skipped", err)
	}
}
