package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine/mariadb/mariatest"
	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
	"github.com/dbrig/dbrig/internal/study"
)

// scriptLoadJSON is the part of `dbrig load script --json` the tests read.
type scriptLoadJSON struct {
	Dir      string `json:"dir"`
	Engine   string `json:"engine"`
	Server   string `json:"server_version"`
	Scripts  string `json:"scripts"`
	Protocol string `json:"protocol"`
	MaxTries int    `json:"max_tries"`
	Error    string `json:"error"`
	Points   []struct {
		Users   int     `json:"users"`
		TPS     float64 `json:"tps"`
		Failed  int64   `json:"failed"`
		Retried int64   `json:"retried"`
		Retries int64   `json:"retries"`
		Overall struct {
			Ops       int64              `json:"ops"`
			LatencyMs map[string]float64 `json:"latency_ms"`
		} `json:"overall"`
		Scripts []struct {
			Name       string             `json:"name"`
			Weight     int                `json:"weight"`
			Ops        int64              `json:"transactions"`
			TPS        float64            `json:"tps"`
			Failed     map[string]int64   `json:"failed"`
			LatencyMs  map[string]float64 `json:"latency_ms"`
			Statements []struct {
				Line      int                `json:"line"`
				Text      string             `json:"text"`
				LatencyMs map[string]float64 `json:"latency_ms"`
			} `json:"statements"`
		} `json:"scripts"`
	} `json:"points"`
	Interrupted []struct {
		Interrupted bool `json:"interrupted"`
	} `json:"interrupted_points"`
}

// Two scripts of the user's, weighted, with \gset and \if, beside
// pgbench's three built-ins, on either engine.
const (
	ordersScript = `\set aid random(1, 100000 * :scale)
\set delta random(-5, 5)
SELECT abalance AS bal FROM pgbench_accounts WHERE aid = :aid \gset
\if :bal >= 0
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
\else
UPDATE pgbench_accounts SET abalance = abalance - :delta WHERE aid = :aid;
\endif
`
	branchesScript = `SELECT count(*) AS n FROM pgbench_branches \gset
\if :n > 0
SELECT :n AS branches;
\endif
`
)

// TestLoadScript: dbrig load script runs pgbench's three built-ins and two
// weighted files (given as pgbench's -b and -f, and as an argument) with \gset and \if on both engines through a link, ending with each
// script's and each statement's figures (--json), the files' texts kept in
// the run directory.
func TestLoadScript(t *testing.T) {
	pgtest.Binaries(t)
	t.Parallel()
	for _, engineName := range []string{"postgres", "mariadb"} {
		t.Run(engineName, func(t *testing.T) {
			t.Parallel()
			if engineName == "mariadb" {
				mariatest.Engine(t)
			}
			base := pgtest.BaseDir(t)
			files := t.TempDir()
			orders, branches := filepath.Join(files, "orders.sql"), filepath.Join(files, "branches.sql")
			for path, text := range map[string]string{orders: ordersScript, branches: branchesScript} {
				if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			dir := filepath.Join(t.TempDir(), "load")
			code, stdout, stderr := runDbrig(t, base, nil, "load", "script", "-b", "tpcb-like@2", "-b", "simple-update", "--builtin", "select-only", "-f", orders+"@3", branches,
				"--engine", engineName, "--init", "-M", "prepared", "--link", "lan-1g", "--users", "3", "--duration", "1s", "--warm-up", "300ms", "--json", "--out", dir)
			if code != 0 {
				t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
			}
			j := decodeJSON[scriptLoadJSON](t, stdout)
			if j.Engine != engineName || j.Protocol != "prepared" || j.MaxTries != 1 || j.Error != "" || len(j.Points) != 1 {
				t.Fatalf("summary = %+v", j)
			}
			p := j.Points[0]
			if p.Users != 3 || p.TPS <= 0 || p.Failed != 0 || p.Overall.Ops == 0 || p.Overall.LatencyMs["p99"] <= 0 || len(p.Scripts) != 5 {
				t.Fatalf("point = %+v", p)
			}
			weights := []int{2, 1, 1, 3, 1}
			for i, s := range p.Scripts {
				if s.Weight != weights[i] || s.Ops == 0 || s.LatencyMs["mean"] <= 0 || len(s.Statements) == 0 {
					t.Errorf("script %d %s: weight %d, %d transactions, latency %v, %d statements", i, s.Name, s.Weight, s.Ops, s.LatencyMs, len(s.Statements))
				}
				if _, ok := s.Failed["serialization"]; !ok {
					t.Errorf("%s: failures by class missing: %v", s.Name, s.Failed)
				}
			}
			if st := p.Scripts[3].Statements; len(st) != 8 || st[2].Line != 3 || st[2].LatencyMs["p50"] <= 0 {
				t.Errorf("orders.sql's statements: %+v", st)
			}
			results, err := study.ReadResults(dir)
			if err != nil || len(results) != 1 || len(results[0].Links) != 1 || results[0].Links[0].Profile != "lan-1g" || results[0].Links[0].ForwardBytes == 0 {
				t.Errorf("results (%v): the point's link is not recorded", err)
			}
			spec, err := os.ReadFile(filepath.Join(dir, study.SpecFile))
			if err != nil || !strings.Contains(string(spec), `\if :bal >= 0`) || !strings.Contains(string(spec), "SELECT :n AS branches;") {
				t.Errorf("spec.toml (%v) does not keep the scripts' texts:\n%s", err, spec)
			}
			pgtest.WaitNoServers(t, base, 10*time.Second)
			assertNoInstanceDirs(t, base)
		})
	}
}

// Bad input is refused before anything starts, exit 2, naming the flag,
// or the script's file and line.
func TestLoadScriptUsage(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	bad := filepath.Join(t.TempDir(), "bad.sql")
	if err := os.WriteFile(bad, []byte("SELECT 1;\n\\shell ls\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{bad}, bad + `:2: \shell: dbrig does not run shell commands`},
		{[]string{"nope.sql"}, `could not open file "nope.sql"`},
		{[]string{"select-only@x"}, `invalid weight specification "@x"`},
		{[]string{"-M", "bogus"}, "--protocol bogus: want one of simple, extended, prepared"},
		{[]string{"-D", "x"}, `--define x: invalid variable definition "x"`},
		{[]string{"--max-tries", "-1"}, "--max-tries"},
		{[]string{"--agents", bad, "--target", "postgres://u@127.0.0.1:1/db"}, "--agents: " + bad + `:1: "SELECT 1;": want one host per line`},
	} {
		args := append([]string{"load", "script"}, tc.args...)
		code, stdout, stderr := runDbrig(t, base, nil, args...)
		if code != 2 || !strings.Contains(stderr, tc.says) {
			t.Errorf("dbrig %s: exit %d, stderr %q; want 2 saying %q\n%s", strings.Join(args, " "), code, stderr, tc.says, stdout)
		}
	}
}

// TestInterruptedLoadScript: SIGINT in the measured interval exits 130,
// the point kept as interrupted, nothing of dbrig's left.
func TestInterruptedLoadScript(t *testing.T) {
	pgtest.Binaries(t)
	t.Parallel()
	base := pgtest.BaseDir(t)
	dir := filepath.Join(t.TempDir(), "load")
	cmd, stdout, lines := startDbrig(t, base, "load", "script", "select-only", "--init", "--users", "2", "--duration", "10m",
		"--warm-up", "500ms", "--json", "--out", dir)
	log := signalWhenMeasuring(t, cmd, lines, syscall.SIGINT, false)
	err := cmd.Wait()
	all := strings.Join(log, "\n") + "\n" + stdout.String()
	if code := exitCode(err); code != 130 {
		t.Errorf("exit %d (%v), want 130:\n%s", code, err, all)
	}
	assertNothingLeft(t, base, nil)
	assertInterruptedPoint(t, dir, all)
	if j := decodeJSON[scriptLoadJSON](t, stdout.String()); len(j.Points) != 0 || len(j.Interrupted) != 1 || !j.Interrupted[0].Interrupted {
		t.Errorf("--json: %d points, interrupted %+v", len(j.Points), j.Interrupted)
	}
}
