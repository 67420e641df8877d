package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/workload/tpch"
	"github.com/dbrig/dbrig/internal/workload/tpch/tpchtest"
)

// runDbrig runs the dbrig binary to its end with TMPDIR=base and extra
// environment, and returns its exit code, stdout and stderr.
func runDbrig(t *testing.T, base string, env []string, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, dbrigBinary(t), args...)
	cmd.Env = append(append(os.Environ(), "TMPDIR="+base, "NO_COLOR=1"), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return exitCode(err), stdout.String(), stderr.String()
}

// tpchJSON is the part of `dbrig load tpch --json` the tests read.
type tpchJSON struct {
	Dir         string  `json:"dir"`
	HTML        string  `json:"report_html"`
	Engine      string  `json:"engine"`
	Server      string  `json:"server_version"`
	ScaleFactor float64 `json:"scale_factor"`
	Streams     int     `json:"streams"`
	Error       string  `json:"error"`
	Points      []struct {
		Degree  int                `json:"degree"`
		TotalS  float64            `json:"total_s"`
		Speedup float64            `json:"speedup"`
		Queries map[string]float64 `json:"query_ms"`
		Workers map[string]float64 `json:"workers_planned"`
		Error   string             `json:"error"`
	} `json:"points"`
}

// decodeJSON reads a command's --json output, which must be one JSON
// document of type T.
func decodeJSON[T any](t *testing.T, stdout string) T {
	t.Helper()
	var j T
	if err := json.Unmarshal([]byte(stdout), &j); err != nil {
		t.Fatalf("--json output is not one JSON document: %v\n%s", err, stdout)
	}
	return j
}

// TestLoadTPCH runs `dbrig load tpch --json` as a user would: on a server
// dbrig starts, at two degrees, then against a server the user runs (the
// URI from the environment); each writes a run directory that `dbrig
// report` rebuilds, and leaves nothing behind.
func TestLoadTPCH(t *testing.T) {
	t.Parallel()
	pgtest.Binaries(t)
	tpchtest.Generator(t)

	t.Run("own server", func(t *testing.T) {
		t.Parallel()
		base := pgtest.BaseDir(t)
		dir := filepath.Join(t.TempDir(), "load")
		code, stdout, stderr := runDbrig(t, base, nil, "load", "tpch", "--scale", "0.01", "--degree", "0,1", "--runs", "2", "--json", "--out", dir)
		if code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
		}
		j := decodeJSON[tpchJSON](t, stdout)
		if j.Dir != dir || j.Engine != "postgres" || j.Server == "" || j.ScaleFactor != 0.01 || j.Streams != 2 || len(j.Points) != 2 {
			t.Fatalf("summary = %+v", j)
		}
		for _, p := range j.Points {
			if p.Error != "" || p.TotalS <= 0 || len(p.Queries) != 22 || len(p.Workers) != 22 || p.Speedup <= 0 {
				t.Errorf("degree %d: %+v", p.Degree, p)
			}
		}
		pgtest.WaitNoServers(t, base, 10*time.Second)
		assertNoInstanceDirs(t, base)
		if code, out, errOut := runDbrig(t, base, nil, "report", dir); code != 0 || !strings.Contains(out, "report: "+filepath.Join(dir, "report.html")) {
			t.Errorf("dbrig report %s: exit %d\n%s\n%s", dir, code, out, errOut)
		}
		md, err := os.ReadFile(filepath.Join(dir, "report.md"))
		if err != nil || !strings.Contains(string(md), "Per-query times") || !strings.Contains(string(md), "speedup 1") {
			t.Errorf("report.md lacks the per-query table: %v", err)
		}
	})

	t.Run("target", func(t *testing.T) {
		t.Parallel()
		server := pgtest.Start(t, "users-tpch", nil)
		base := pgtest.BaseDir(t)
		dir := filepath.Join(t.TempDir(), "load")
		login := server.Conn("postgres")
		code, stdout, stderr := runDbrig(t, base, []string{"MY_PG=" + login.URI()},
			"load", "tpch", "--scale", "0.01", "--degree", "1", "--runs", "1", "--queries", "1-3,6", "--target", "env:MY_PG", "--json", "--out", dir)
		if code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
		}
		j := decodeJSON[tpchJSON](t, stdout)
		if len(j.Points) != 1 || len(j.Points[0].Queries) != 4 || j.Points[0].Error != "" || !strings.HasPrefix(j.Server, server.Version()) {
			t.Fatalf("summary = %+v", j)
		}
		// The user's server runs on with its own settings; dbrig's session
		// set the degree and said so; its database is gone.
		results, err := study.ReadResults(dir)
		if err != nil || len(results) != 1 || !strings.Contains(strings.Join(results[0].Notes, " "), "dbrig's session set 1") {
			t.Errorf("results: %+v, %v", results, err)
		}
		if dbs := databases(t, server); dbs["dbrig_load_tpch"] || server.PID() == 0 {
			t.Errorf("after the load the user's server holds %v", dbs)
		}
		assertNoPassword(t, dir, stdout+stderr, login.Password())
	})
}

func databases(t *testing.T, inst interface {
	Exec(context.Context, string, ...string) error
}) map[string]bool {
	t.Helper()
	// Connecting to the database fails once it is gone.
	err := inst.Exec(context.Background(), "dbrig_load_tpch", "SELECT 1")
	return map[string]bool{"dbrig_load_tpch": err == nil}
}

// assertNoPassword fails when the output or any file of the run holds it.
func assertNoPassword(t *testing.T, dir, output, secret string) {
	t.Helper()
	if strings.Contains(output, secret) {
		t.Error("the output contains the password")
	}
	_ = filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return nil
		}
		if b, _ := os.ReadFile(path); strings.Contains(string(b), secret) {
			t.Errorf("%s contains the password", path)
		}
		return nil
	})
}

func TestLoadTPCHUsage(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"load"}, "name a workload: oltp, script, tpch"},
		{[]string{"load", "tpch"}, "--scale: want the TPC-H scale factor"},
		{[]string{"load", "tpch", "--scale", "-1"}, "--scale"},
		{[]string{"load", "tpch", "--scale", "1", "--degree", "two"}, "--degree two: want whole numbers"},
		{[]string{"load", "tpch", "--scale", "1", "--degree", "1,1"}, "1 is given twice"},
		{[]string{"load", "tpch", "--scale", "1", "--runs", "0"}, "--runs 0"},
		{[]string{"load", "tpch", "--scale", "200000"}, "--scale 200000: want the TPC-H scale factor, a number above 0 (e.g. 0.01, 1, 10) and at most 100000"},
		{[]string{"load", "tpch", "--scale", "1", "--runs", "5000"}, "--runs 5000: want 1 to 1000"},
		{[]string{"load", "tpch", "--scale", "1", "--queries", "0"}, "--queries"},
		{[]string{"load", "tpch", "--scale", "1", "--engine", "oracle"}, "--engine oracle: want one of"},
		{[]string{"load", "tpch", "--scale", "1", "--engine", "postgres", "--target", "postgres://u@127.0.0.1:1/db"}, "--target and --engine"},
		{[]string{"load", "tpch", "--scale", "1", "--target", "db2://u:sekrit@h/db"}, "unknown connection scheme"},
	} {
		code, stdout, stderr := runDbrig(t, base, nil, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.says) || strings.Contains(stdout+stderr, "sekrit") {
			t.Errorf("dbrig %s: exit %d, stderr %q; want 2 saying %q", strings.Join(tc.args, " "), code, stderr, tc.says)
		}
	}
}

// TestTPCHParallelSmokeStudy runs the study's smoke scale through the CLI:
// the data loaded once, degrees 0 and 1 (the second reloads the settings
// in place), every finding judged, the report rebuilt from the run.
func TestTPCHParallelSmokeStudy(t *testing.T) {
	t.Parallel()
	pgtest.Binaries(t)
	tpchtest.Generator(t)
	base := pgtest.BaseDir(t)
	dir := filepath.Join(t.TempDir(), "run")
	code, stdout, stderr := runDbrig(t, base, nil, "run", "tpch-parallel", "--scale", "smoke", "--out", dir, "--json", "--verbose")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	var summary struct {
		Ran, Failed int
		Findings    []report.Finding `json:"findings"`
	}
	if err := json.Unmarshal([]byte(stdout), &summary); err != nil {
		t.Fatalf("--json output: %v\n%s", err, stdout)
	}
	if summary.Ran != 2 || summary.Failed != 0 || len(summary.Findings) != 5 {
		t.Errorf("summary: %+v", summary)
	}
	if strings.Count(stderr, "table=lineitem") != 1 || !strings.Contains(stderr, `msg="postgres reloaded"`) {
		t.Errorf("the data was not loaded once with the degree reloaded in place:\n%s", stderr)
	}
	pgtest.WaitNoServers(t, base, 10*time.Second)
	assertNoInstanceDirs(t, base)
	results, err := study.ReadResults(dir)
	if err != nil || len(results) != 2 {
		t.Fatalf("results: %d, %v", len(results), err)
	}
	// Degree 1 is predicted before it runs, from degree 0 and what the
	// probe found just before it (each query's plan), never fitted on
	// itself.
	if _, ok := results[1].Model["total_s"]; !ok || results[1].ModelFrom("total_s") != "predicted" ||
		len(results[1].Probe) != 2*tpch.NumQueries {
		t.Errorf("the degree-1 point: model %v, probe %v; want a prediction from the probe", results[1].Model, results[1].Probe)
	}
	os.Remove(filepath.Join(dir, "report.md"))
	if code, out, errOut := runDbrig(t, base, nil, "report", dir); code != 0 {
		t.Errorf("dbrig report: exit %d\n%s\n%s", code, out, errOut)
	}
	if md, err := os.ReadFile(filepath.Join(dir, "report.md")); err != nil || !strings.Contains(string(md), "seed MAXDOP 16") {
		t.Errorf("the rebuilt report lacks the seed's table: %v", err)
	}
	checkInBrowser(t, filepath.Join(dir, "report.html"))
}
