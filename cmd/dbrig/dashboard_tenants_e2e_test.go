package main

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
	"github.com/dbrig/dbrig/internal/study"
)

// tenantsStudy is one point of the consolidation study's workload, as small
// as it goes: two tenant databases on one instance.
const tenantsStudy = `name = "tenants-live"
title = "Two tenants, watched live"

[[instance]]
name = "db"
engine = "postgres"

[[link]]
between = ["client", "db"]
profile = "unix"

[workload]
kind = "tenants"
databases = 2
functions = 12
size = "128KB"
think = "5ms"
warm_up = "1s"
duration = "3s"

[repeat]
runs = 1
`

// TestDashboardTenants watches a tenants point (the consolidation study's
// workload) over the dashboard's stream: its seconds arrive as the load's
// do, over both tenants, and the measured ones hold the point's
// transactions as results.jsonl records them.
func TestDashboardTenants(t *testing.T) {
	t.Parallel()
	pgtest.Binaries(t)
	base := pgtest.BaseDir(t)
	file := filepath.Join(t.TempDir(), "tenants-live.toml")
	if err := os.WriteFile(file, []byte(tenantsStudy), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "run")
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd, _, lines := startDbrig(t, base, "run", file, "--dashboard", "127.0.0.1:0", "--dashboard-linger", "5m", "--out", dir)
	url, stderr := dashboardURL(t, lines)
	var ops float64
	measured, lastEnd := 0, 0.0
	for _, e := range readFeed(t, ctx, url) {
		if e.Type != study.EventSecond || e.Second == nil {
			continue
		}
		s := e.Second
		length := s.EndS - lastEnd
		lastEnd = s.EndS
		if s.Users != 2 {
			t.Errorf("second %+v: want the 2 tenants' connections", s)
		}
		if s.Phase == "measured" {
			measured++
			ops += math.Round(s.TPS * length)
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := exitCode(cmd.Wait()); code != 0 && code != 130 {
		t.Errorf("exit %d after the linger was cut short:\n%s", code, stderr())
	}
	results, err := study.ReadResults(dir)
	if err != nil || len(results) != 1 || results[0].Histograms["response"] == nil {
		t.Fatalf("results: %+v, %v", results, err)
	}
	if want := float64(results[0].Histograms["response"].Count()); measured < 3 || ops != want || want == 0 {
		t.Errorf("%d measured seconds counting %v transactions, the point %v", measured, ops, want)
	}
	pgtest.WaitNoServers(t, base, 10*time.Second)
	assertNoInstanceDirs(t, base)
}
