package rbar

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
	"github.com/dbrig/dbrig/internal/study"
)

var pgbenchTPS = regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`)

// runPgbench runs pgbench with one client doing `SELECT :id` per
// transaction (-M prepared) on ci for n transactions and returns its tps.
func runPgbench(tb testing.TB, inst *postgres.Instance, ci postgres.ConnInfo, n int) float64 {
	tb.Helper()
	script := filepath.Join(tb.TempDir(), "select.sql")
	if err := os.WriteFile(script, []byte("\\set id random(1, 1000)\nSELECT :id;\n"), 0o644); err != nil {
		tb.Fatal(err)
	}
	cmd := exec.Command(inst.Binaries().Path("pgbench"), "-n", "-M", "prepared", "-c", "1", "-t", strconv.Itoa(n), "-f", script)
	cmd.Env = append(os.Environ(), ci.Env()...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		tb.Fatalf("pgbench: %v\n%s", err, out)
	}
	m := pgbenchTPS.FindSubmatch(out)
	if m == nil {
		tb.Fatalf("no tps in pgbench's output:\n%s", out)
	}
	tps, _ := strconv.ParseFloat(string(m[1]), 64)
	return tps
}

// roundTripsPerSecond runs the study's row-by-row client (prepared
// SELECT $1 per row, exactly the code a study point runs) for n rows.
func roundTripsPerSecond(tb testing.TB, ci postgres.ConnInfo, n int64) float64 {
	tb.Helper()
	ctx := context.Background()
	cfg, err := ci.ConnConfig()
	if err != nil {
		tb.Fatal(err)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close(ctx)
	w := &workload{experiment: "client-row-by-row", rows: n, rowByRow: "select", instance: "db"}
	m, err := w.rowByRowRun(ctx, conn.PgConn(), &study.Env{})
	if err != nil {
		tb.Fatal(err)
	}
	return m.Metrics["rows_per_s"]
}

// BenchmarkRowByRowVsPgbench measures the row-by-row client's round trips
// per second against pgbench doing the same on the same unix socket in the
// same run (pgbench before and after, averaged), and reports the ratio.
// Target: ratio >= 0.8.
//
//	go test -run '^$' -bench RowByRowVsPgbench ./internal/workload/rbar/
func BenchmarkRowByRowVsPgbench(b *testing.B) {
	inst := pgtest.Start(b, "bench", nil)
	ci := inst.UnixConn("postgres")
	const n = 40000
	runPgbench(b, inst, ci, 2000) // warm up the server and the page cache
	var ours, theirs []float64
	for b.Loop() {
		for range 3 {
			theirs = append(theirs, runPgbench(b, inst, ci, n))
			ours = append(ours, roundTripsPerSecond(b, ci, n))
		}
	}
	o, t := median(ours), median(theirs)
	b.ReportMetric(o, "dbrig-rt/s")
	b.ReportMetric(t, "pgbench-tps")
	b.ReportMetric(o/t, "ratio")
	b.Logf("row-by-row client %.0f round trips/s, pgbench %.0f tps, ratio %.2f (target >= 0.8)", o, t, o/t)
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s[len(s)/2]
}
