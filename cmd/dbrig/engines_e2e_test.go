package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine/mariadb/mariatest"
	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
	"github.com/dbrig/dbrig/internal/study"
)

// twoEngineSpec is the row-by-row study with its instance's engine swept
// over PostgreSQL and MariaDB, at a scale smaller than smoke: every
// experiment on the unix socket and across lan-1g, one run each (as
// smoke's).
func twoEngineSpec(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../../studies/rbarlatency/rbar-latency.toml")
	if err != nil {
		t.Fatal(err)
	}
	spec := string(b)
	for _, r := range []struct{ old, new string }{
		{`name = "rbar-latency"`, `name = "rbar-engines"`},
		{"engine = \"postgres\"\n", "engine = \"${engine}\"\n"},
		// The engine varies slowest: one server of each, one after the other.
		{"[sweep]\n", "[sweep]\nengine = [\"postgres\", \"mariadb\"]\n"},
		{`sweep = { net = ["unix", "lan-1g", "rtt-4ms"], client_cost = ["0s"] }`, `sweep = { net = ["unix", "lan-1g"], client_cost = ["0s"] }`},
	} {
		if !strings.Contains(spec, r.old) {
			t.Fatalf("studies/rbarlatency/rbar-latency.toml no longer has %q", r.old)
		}
		spec = strings.Replace(spec, r.old, r.new, 1)
	}
	path := filepath.Join(t.TempDir(), "rbar-engines.toml")
	if err := os.WriteFile(path, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestEngineSweepEndToEnd runs the row-by-row study on PostgreSQL and on
// MariaDB in one run through the CLI, and checks that every point ran on
// the engine it names, that the report sets both engines side by side
// (a table per experiment and engine, findings judged on each) and that no
// server is left.
func TestEngineSweepEndToEnd(t *testing.T) {
	t.Parallel()
	pgtest.Binaries(t)
	mariatest.Engine(t)
	base := mariatest.BaseDir(t)
	dir := filepath.Join(t.TempDir(), "run")
	cmd, stdout, lines := startDbrig(t, base, "run", twoEngineSpec(t), "--scale", "smoke", "--out", dir)
	var log []string
	for line := range lines {
		log = append(log, line)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("run: %v\n%s\n%s", err, stdout, strings.Join(log, "\n"))
	}
	pgtest.WaitNoServers(t, base, 10*time.Second)
	mariatest.WaitNoServers(t, base, 10*time.Second)
	assertNoInstanceDirs(t, base)
	if left, _ := filepath.Glob(filepath.Join(base, "dbrig-mariadb-*")); len(left) > 0 {
		t.Errorf("MariaDB instance directories left behind: %v", left)
	}

	// As the report reads them: each link's row-by-row figure is predicted
	// from, or fitted on, the other link.
	rd, err := study.LoadRun(dir, newRegistry(binDirs{}))
	if err != nil {
		t.Fatal(err)
	}
	results := rd.Results
	perEngine := map[string]int{}
	for _, r := range results {
		if !r.Measured() {
			t.Errorf("%s: not measured: %s%s", r.Key, r.Error, r.Skipped)
			continue
		}
		if len(r.Instances) != 1 || r.Instances[0].Engine != r.Values["engine"] {
			t.Errorf("%s ran on %+v", r.Key, r.Instances)
			continue
		}
		perEngine[r.Instances[0].Engine]++
		if _, ok := r.Model["us_per_row"]; !ok && r.Params.String("experiment") == "client-row-by-row" {
			t.Errorf("%s: no model prediction", r.Key)
		}
	}
	// 6 experiments × 2 links × 1 run on each engine.
	if perEngine["postgres"] != 12 || perEngine["mariadb"] != 12 {
		t.Errorf("measured points per engine: %v, want 12 on each", perEngine)
	}

	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, exp := range []string{"server-loop", "server-cursor", "client-stream", "cursor-messages", "client-row-by-row", "wide-rows"} {
		for _, eng := range []string{"postgres", "mariadb"} {
			want = append(want, "### "+exp+", engine="+eng)
		}
	}
	// The row-by-row finding is judged on each engine.
	want = append(want, "engine=postgres: unix", "engine=mariadb: unix", "postgres 1", "mariadb 1")
	for _, w := range want {
		if !bytes.Contains(md, []byte(w)) {
			t.Errorf("report.md lacks %q", w)
		}
	}
}
