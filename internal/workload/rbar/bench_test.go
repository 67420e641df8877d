package rbar

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dbrig/dbrig/internal/benchgoal"
	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/mariadb/mariatest"
	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
	"github.com/dbrig/dbrig/internal/workload"
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
	w := &rbar{experiment: "client-row-by-row", rows: n, rowByRow: "select", instance: "db"}
	m, err := w.pgRowByRow(ctx, conn.PgConn(), &workload.Env{})
	if err != nil {
		tb.Fatal(err)
	}
	return m.Metrics["rows_per_s"]
}

// BenchmarkRowByRowVsPgbench measures the row-by-row client's round trips
// per second against pgbench doing the same on the same unix socket in the
// same run (pgbench before and after, averaged), and reports the ratio.
// Target: ratio >= 0.8, printed as the goal rbar-vs-pgbench.
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
	benchgoal.Print(b, benchgoal.AtLeast("rbar-vs-pgbench", fmt.Sprintf("%.0frt/s", o), fmt.Sprintf("%.0ftps", t), o/t, 0.8))
}

// sysbench runs Debian's sysbench (1.0.20) with the mysql driver against a
// MariaDB login through its unix socket. The login (password included)
// lives in a --config-file of mode 0600 in a 0700 directory, so that it is
// in no process's command line.
type sysbench struct {
	config string
}

func newSysbench(tb testing.TB, login engine.Conn) *sysbench {
	tb.Helper()
	if _, err := exec.LookPath("sysbench"); err != nil {
		if os.Getenv("CI") == "" {
			tb.Skipf("skipped: no sysbench (apt-get install sysbench, or scripts/install-deps --test): %v", err)
		}
		tb.Fatalf("find sysbench: %v", err)
	}
	if !login.IsUnix() {
		tb.Fatalf("sysbench needs the unix socket, got %s", login)
	}
	dir := tb.TempDir() // 0700
	config := filepath.Join(dir, "sysbench.conf")
	text := fmt.Sprintf("db-driver=mysql\nmysql-socket=%s\nmysql-user=%s\nmysql-password=%s\nmysql-db=%s\n",
		login.SocketPath(), login.User, login.Password(), login.Database)
	if err := os.WriteFile(config, []byte(text), 0o600); err != nil {
		tb.Fatal(err)
	}
	return &sysbench{config: config}
}

// run runs sysbench with the login's configuration and returns its
// output, which must not show the password.
func (s *sysbench) run(tb testing.TB, password string, args ...string) []byte {
	out, _ := s.runCPU(tb, password, args...)
	return out
}

// runCPU is run, and the CPU time sysbench used.
func (s *sysbench) runCPU(tb testing.TB, password string, args ...string) ([]byte, time.Duration) {
	tb.Helper()
	cmd := exec.Command("sysbench", append([]string{"--config-file=" + s.config}, args...)...)
	out, err := cmd.CombinedOutput()
	if bytes.Contains(out, []byte(password)) {
		tb.Fatalf("sysbench %v printed the password", args)
	}
	if err != nil {
		tb.Fatalf("sysbench %v: %v\n%s", args, err, out)
	}
	return out, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

var sysbenchTPS = regexp.MustCompile(`transactions:\s+[0-9]+\s+\(([0-9.]+) per sec\.\)`)

// tps runs n events of a sysbench test (a script or a built-in test) on
// one thread with server-side prepared statements, and returns its rate
// and the CPU time it used per event, start-up included.
func (s *sysbench) tps(tb testing.TB, password, test string, n int) (float64, time.Duration) {
	tb.Helper()
	out, cpu := s.runCPU(tb, password, test, "run", "--threads=1", "--db-ps-mode=auto", "--tables=1", "--table-size=10000",
		"--time=0", "--events="+strconv.Itoa(n))
	m := sysbenchTPS.FindSubmatch(out)
	if m == nil {
		tb.Fatalf("no rate in sysbench's output:\n%s", out)
	}
	tps, _ := strconv.ParseFloat(string(m[1]), 64)
	return tps, cpu / time.Duration(n)
}

// selectParamLua is sysbench doing what the row-by-row client does: a
// prepared SELECT ? per event (oltp_point_select reads a row of an InnoDB
// table by its primary key instead).
const selectParamLua = `function thread_init()
  drv = sysbench.sql.driver()
  con = drv:connect()
  stmt = con:prepare("SELECT ?")
  param = stmt:bind_create(sysbench.sql.type.INT)
  stmt:bind_param(param)
  i = 0
end

function event()
  i = i + 1
  param:set(i % 1000 + 1)
  stmt:execute()
end

function thread_done()
  stmt:close()
  con:disconnect()
end
`

// mariadbRoundTripsPerSecond runs the study's row-by-row client on
// MariaDB (a server-side prepared SELECT ? per row on one connection,
// exactly the code a study point runs) for n rows.
func mariadbRoundTripsPerSecond(tb testing.TB, login engine.Conn, n int64) (float64, time.Duration) {
	tb.Helper()
	ctx := context.Background()
	before := processCPU(tb)
	s, err := openSession(ctx, login)
	if err != nil {
		tb.Fatal(err)
	}
	defer s.close()
	w := &rbar{experiment: "client-row-by-row", rows: n, rowByRow: "select", instance: "db"}
	m, err := w.myRowByRow(ctx, s, &workload.Env{})
	if err != nil {
		tb.Fatal(err)
	}
	return m.Metrics["rows_per_s"], (processCPU(tb) - before) / time.Duration(n)
}

// processCPU is the CPU time this process has used (the benchmark's other
// goroutines are idle while the client runs).
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRowByRowVsSysbench measures the row-by-row client's round trips
// per second on MariaDB against sysbench oltp_point_select (one thread,
// server-side prepared statements) on the same unix socket of the same
// server in the same run, nine times each, alternating, and reports the
// ratio of the medians. Target: ratio >= 1.0 (the goal rbar-vs-sysbench). It also reports the ratio
// against sysbench running the client's own statement, a prepared
// SELECT ? (ratio-same-query), since oltp_point_select also reads an
// InnoDB row, and the CPU time each client spends per round trip (its
// process's user and system time over its events), which a busy shared
// machine disturbs less than the rates.
//
//	go test -run '^$' -bench RowByRowVsSysbench ./internal/workload/rbar/
func BenchmarkRowByRowVsSysbench(b *testing.B) {
	inst := mariatest.Start(b, "bench", mariadbStudySettings)
	ctx := context.Background()
	if err := inst.CreateDatabase(ctx, "sbtest"); err != nil {
		b.Fatal(err)
	}
	login, _ := inst.UnixLogin("sbtest")
	sb := newSysbench(b, login)
	pw := login.Password()
	sb.run(b, pw, "oltp_point_select", "prepare", "--tables=1", "--table-size=10000")
	script := filepath.Join(b.TempDir(), "select_param.lua")
	if err := os.WriteFile(script, []byte(selectParamLua), 0o644); err != nil {
		b.Fatal(err)
	}
	const n = 20000
	sb.tps(b, pw, "oltp_point_select", 2000) // warm up the server and the buffer pool
	var ours, point, same, oursCPU, pointCPU, sameCPU []float64
	for b.Loop() {
		for range 9 {
			r, cpu := sb.tps(b, pw, "oltp_point_select", n)
			point, pointCPU = append(point, r), append(pointCPU, cpu.Seconds()*1e6)
			r, cpu = mariadbRoundTripsPerSecond(b, login, n)
			ours, oursCPU = append(ours, r), append(oursCPU, cpu.Seconds()*1e6)
			r, cpu = sb.tps(b, pw, script, n)
			same, sameCPU = append(same, r), append(sameCPU, cpu.Seconds()*1e6)
		}
	}
	o, p, s := median(ours), median(point), median(same)
	b.ReportMetric(o, "dbrig-rt/s")
	b.ReportMetric(p, "sysbench-point-select-tps")
	b.ReportMetric(s, "sysbench-select-param-tps")
	b.ReportMetric(o/p, "ratio")
	b.ReportMetric(o/s, "ratio-same-query")
	b.ReportMetric(median(oursCPU), "dbrig-cpu-us/rt")
	b.ReportMetric(median(pointCPU), "sysbench-point-select-cpu-us/rt")
	b.ReportMetric(median(sameCPU), "sysbench-select-param-cpu-us/rt")
	b.Logf("row-by-row client %.0f round trips/s, %.1f µs of client CPU each; sysbench oltp_point_select %.0f tps, %.1f µs (ratio %.2f, target >= 1.0); sysbench SELECT ? %.0f tps, %.1f µs (ratio %.2f)",
		o, median(oursCPU), p, median(pointCPU), o/p, s, median(sameCPU), o/s)
	b.Logf("each run: dbrig %.0f; oltp_point_select %.0f; SELECT ? %.0f", ours, point, same)
	benchgoal.Print(b, benchgoal.AtLeast("rbar-vs-sysbench", fmt.Sprintf("%.0frt/s", o), fmt.Sprintf("%.0ftps", p), o/p, 1.0))
	benchgoal.Where(b, "rbar-vs-sysbench", "client CPU per round trip: %.1f us the row-by-row client, %.1f us sysbench oltp_point_select, %.1f us sysbench SELECT ? (%.0f tps, ratio %.2f)",
		median(oursCPU), median(pointCPU), median(sameCPU), s, o/s)
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
