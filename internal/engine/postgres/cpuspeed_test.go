package postgres_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
	"github.com/dbrig/dbrig/internal/procstat"
)

// spinQuery keeps one backend busy on the CPU alone: no I/O, no locks.
const spinQuery = "SELECT count(*) FROM generate_series(1, 3000000)"

// TestCPUSpeedCapsTheServerAndItsBackends starts a server at a quarter of a
// core and one at a whole core, and runs the same CPU-bound query on each in
// turn. The quarter's backend is in its cgroup with a 25 ms quota per 100 ms
// period, never uses more than about a quarter of a core, and takes longer
// than the whole core's by the ratio of the CPU shares the two got: the
// model says 4x where the machine gives the whole core all of a core; on a
// machine busy with other work the uncapped backend gets less, and the
// model's ratio is its measured share over 0.25.
func TestCPUSpeedCapsTheServerAndItsBackends(t *testing.T) {
	t.Parallel()
	if how, err := engine.CgroupSupport("cpu"); err != nil {
		t.Skip(err)
	} else {
		t.Log("CPU caps by", how)
	}
	bin := pgtest.Binaries(t)
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	start := func(name string, speed float64) *postgres.Instance {
		inst, err := postgres.Start(ctx, postgres.Options{
			InstanceConfig: engine.InstanceConfig{Name: name, CPUSpeed: speed, Settings: map[string]string{"jit": "off", "max_parallel_workers_per_gather": "0"}},
			StartOptions:   engine.StartOptions{BaseDir: pgtest.BaseDir(t)}, Binaries: bin})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = inst.Stop(context.Background()) })
		return inst
	}
	slow, fast := start("quarter-core", 0.25), start("whole-core", 1.0)

	cg := slow.Cgroup()
	if cg == nil {
		t.Fatal("no cgroup for cpu_speed 0.25")
	}
	quotaFile, periodFile := "cpu.cfs_quota_us", "cpu.cfs_period_us"
	if _, err := os.Stat(filepath.Join(cg.Path(), quotaFile)); err != nil {
		quotaFile, periodFile = "cpu.max", ""
	}
	quota := readTrimmed(t, filepath.Join(cg.Path(), quotaFile))
	if periodFile != "" {
		quota += " " + readTrimmed(t, filepath.Join(cg.Path(), periodFile))
	}
	if quota != "25000 100000" {
		t.Errorf("%s of %s = %q, want 25000 us of each 100000 us period", quotaFile, cg.Path(), quota)
	}

	slowConn, slowPID := backend(ctx, t, slow)
	fastConn, fastPID := backend(ctx, t, fast)
	procs := readTrimmed(t, filepath.Join(cg.Path(), "cgroup.procs"))
	if !strings.Contains("\n"+procs+"\n", "\n"+strconvI(slowPID)+"\n") {
		t.Errorf("backend %d is not in its server's cgroup %s (%q)", slowPID, cg.Path(), procs)
	}

	// Alternated, so that a stretch of a busy machine falls on both.
	var slowWall, slowCPU, fastWall, fastCPU float64
	for range 2 {
		w, c := timeQuery(ctx, t, fastConn, fastPID)
		fastWall, fastCPU = fastWall+w, fastCPU+c
		w, c = timeQuery(ctx, t, slowConn, slowPID)
		slowWall, slowCPU = slowWall+w, slowCPU+c
	}
	slowShare, fastShare := slowCPU/slowWall, fastCPU/fastWall
	ratio := slowWall / fastWall
	t.Logf("wall %.2f s at 0.25, %.2f s at 1.0 (ratio %.2f); CPU shares %.2f and %.2f", slowWall, fastWall, ratio, slowShare, fastShare)
	// /proc counts CPU time in 10 ms ticks: a tenth of a core's slack.
	if slowShare > 0.35 {
		t.Errorf("the backend at cpu_speed 0.25 used %.2f of a core (%.2f s of CPU in %.2f s)", slowShare, slowCPU, slowWall)
	}
	if model := fastShare / 0.25; model >= 2 && ratio < model/2 {
		t.Errorf("the query at 0.25 took %.2fx as long as at 1.0; the model, the uncapped backend's share %.2f over 0.25, is %.1fx (judged to half of it)", ratio, fastShare, model)
	} else if model < 2 {
		t.Logf("the machine gave the uncapped backend %.2f of a core: too busy for the ratio to show the cap", fastShare)
	}
}

func readTrimmed(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

func backend(ctx context.Context, t *testing.T, inst *postgres.Instance) (*pgx.Conn, int) {
	t.Helper()
	conn, err := inst.Connect(ctx, "postgres")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	var pid int
	if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	return conn, pid
}

// timeQuery runs spinQuery and returns its wall seconds and the CPU seconds
// its backend used meanwhile.
func timeQuery(ctx context.Context, t *testing.T, conn *pgx.Conn, pid int) (wall, cpu float64) {
	t.Helper()
	before, err := procstat.TreeUsage(pid)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var n int64
	if err := conn.QueryRow(ctx, spinQuery).Scan(&n); err != nil {
		t.Fatal(err)
	}
	wall = time.Since(start).Seconds()
	after, err := procstat.TreeUsage(pid)
	if err != nil {
		t.Fatal(err)
	}
	return wall, after.CPU - before.CPU
}
