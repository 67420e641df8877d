package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
	"github.com/dbrig/dbrig/internal/load"
	"github.com/dbrig/dbrig/internal/study"
)

// TestClientLimitIsSaidBesideTheTPS: a script that only computes keeps
// its user's CPU busy, and dbrig load script says that the load
// generator, not the server, limited the point: on the point's line and
// at the top of report.md, with the client's CPU per transaction in
// results.jsonl.
func TestClientLimitIsSaidBesideTheTPS(t *testing.T) {
	t.Parallel()
	server := pgtest.Start(t, "client-limit", nil)
	base := pgtest.BaseDir(t)
	tmp := t.TempDir()
	busy := filepath.Join(tmp, "busy.sql")
	if err := os.WriteFile(busy, []byte(strings.Repeat("\\set x random(1, 1000000) * 3 + hash(:client_id)\n", 50)), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "load")
	code, stdout, stderr := runDbrig(t, base, []string{"MY_PG=" + server.Conn("postgres").URI()},
		"load", "script", busy, "--target", "env:MY_PG", "--users", "1", "--duration", "1s", "--warm-up", "200ms", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	saved, err := study.ReadResults(dir)
	if err != nil || len(saved) != 1 || saved[0].Metrics["client_cpu_us_per_tx"] <= 0 || saved[0].Metrics["client_busy_pct"] < 90 {
		t.Fatalf("results.jsonl: %+v (%v)", saved, err)
	}
	// The rule counts a wait for a CPU as the client's demand only beside a
	// quarter of a CPU run: on a machine whose other load left the busy
	// client less (at load 8 to 10 on 2 CPUs, about a fifth), the rule does
	// not apply, and the point says nothing.
	if cpu := saved[0].Metrics["client_cpu_pct"]; cpu < 25 {
		t.Skipf("the client ran %.0f %% of a CPU and waited for one the rest: this machine's other load decided the point", cpu)
	}
	said := "WARNING: " + load.ClientLimitedWarning
	pointLine := ""
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, "users=1 #1: tps ") {
			pointLine = l
		}
	}
	if !strings.Contains(pointLine, said) {
		t.Errorf("the point's line does not say it: %q\n%s", pointLine, stderr)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil || !strings.Contains(string(md), "> **Warning.** users=1 #1 (tps ") || !strings.Contains(string(md), load.ClientLimitedWarning) {
		t.Errorf("report.md (%v) does not say it at its top", err)
	}
}
