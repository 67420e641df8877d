package oltp

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/dbrig/dbrig/internal/benchgoal"
	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/mariadb/mariatest"
	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
	"github.com/dbrig/dbrig/internal/load"
	"github.com/dbrig/dbrig/internal/measure"
	"github.com/dbrig/dbrig/internal/workload"
	"github.com/dbrig/dbrig/internal/workload/workloadtest"
)

// The driver must not be what is measured. These benchmarks run dbrig's
// point-select mix (one primary-key lookup per transaction) and the peers
// doing the same work on the same server through the same unix socket, in
// one run, alternating rounds so that a disturbance of the shared machine
// falls on both, and print each one's throughput (median of the rounds),
// the ratio, and each client's CPU time per transaction (its process's user
// and system time over its transactions, which a busy machine disturbs less
// than the rates).
//
//	make bench-oltp   # go test -run '^$' -bench 'PointSelectVs|StalledServer' -benchtime 1x -timeout 30m ./internal/workload/oltp/
//
// Targets, each printed as a goal (internal/benchgoal): ratio >= 1.0 at 1,
// 2, 4 and 8 clients against pgbench -S -M prepared and against sysbench
// oltp_point_select; in an open loop, the latency percentiles within 10 %
// of pgbench -R's either way (measured, as dbrig measures, from each
// transaction's scheduled start).

// benchClients are the client counts compared (DBRIG_BENCH_CLIENTS, a
// comma-separated list, picks others).
func benchClients(tb testing.TB) []int {
	v := os.Getenv("DBRIG_BENCH_CLIENTS")
	if v == "" {
		return []int{1, 2, 4, 8}
	}
	var ns []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			tb.Fatalf("DBRIG_BENCH_CLIENTS=%q: want client counts like 1,2,4,8", v)
		}
		ns = append(ns, n)
	}
	return ns
}

// benchRounds and benchSeconds are each comparison's rounds and length.
const (
	benchRounds  = 5
	benchSeconds = 3
)

// processCPU is this process's user and system time so far.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// sample is one client's figures in one round.
type sample struct {
	tps      float64
	cpuPerTx time.Duration
}

type samples []sample

func (s samples) median(f func(sample) float64) float64 {
	v := make([]float64, len(s))
	for i, x := range s {
		v[i] = f(x)
	}
	slices.Sort(v)
	return v[len(v)/2]
}

func (s samples) tps() float64 { return s.median(func(x sample) float64 { return x.tps }) }
func (s samples) cpuUs() float64 {
	return s.median(func(x sample) float64 { return float64(x.cpuPerTx) / float64(time.Microsecond) })
}

// pointSelect is the point-select workload at scale factor 1 (100,000
// customers, the size of pgbench's accounts at scale 1 and of the sysbench
// table the benchmark prepares).
func pointSelectWorkload(tb testing.TB, users int, rate float64, d time.Duration) *oltp {
	tb.Helper()
	p := workload.Params{}
	for _, ps := range params() {
		if ps.Default != nil {
			v, _ := ps.Normalize(ps.Default)
			p[ps.Name] = v
		}
	}
	p["mix"], p["scale_factor"], p["users"], p["duration"], p["warm_up"] = "point-select", 1.0, int64(users), d.String(), "500ms"
	p["rate"] = rate
	w, err := newWorkload(p)
	if err != nil {
		tb.Fatal(err)
	}
	return w
}

// runDbrig runs point-select and returns the run's figures and result.
func runDbrig(tb testing.TB, env *workload.Env, users int, rate float64, d time.Duration) (sample, *load.Result) {
	tb.Helper()
	w := pointSelectWorkload(tb, users, rate, d)
	var res *load.Result
	w.live = &Live{Result: func(r *load.Result) { res = r }}
	before := processCPU(tb)
	m, err := w.Run(context.Background(), env)
	cpu := processCPU(tb) - before
	if err != nil {
		tb.Fatal(err)
	}
	if m.Metrics["errors"] > 0 {
		tb.Fatalf("dbrig point-select: %v errors: %q", m.Metrics["errors"], m.Notes)
	}
	ops := res.Overall.Ops + res.WarmUpOps + res.AfterEnd.Count()
	return sample{tps: m.Metrics["tps"], cpuPerTx: cpu / time.Duration(max(ops, 1))}, res
}

var (
	pgbenchTPS = regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`)
	pgbenchTx  = regexp.MustCompile(`number of transactions actually processed: ([0-9]+)`)
)

// pgbench runs pgbench on ci with args in dir and returns its output and
// its CPU time.
func pgbench(tb testing.TB, inst *postgres.Instance, ci postgres.ConnInfo, dir string, args ...string) (string, time.Duration) {
	tb.Helper()
	cmd := exec.Command(inst.Binaries().Path("pgbench"), args...)
	cmd.Env = append(os.Environ(), ci.Env()...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if strings.Contains(string(out), ci.Password()) {
		tb.Fatal("pgbench printed the password")
	}
	if err != nil {
		tb.Fatalf("pgbench %v: %v\n%s", args, err, out)
	}
	return string(out), cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

// runPgbench runs pgbench -S -M prepared with one thread per client.
func runPgbench(tb testing.TB, inst *postgres.Instance, ci postgres.ConnInfo, clients int, d time.Duration) sample {
	tb.Helper()
	out, cpu := pgbench(tb, inst, ci, tb.TempDir(), "-n", "-S", "-M", "prepared", "-c", strconv.Itoa(clients), "-j", strconv.Itoa(clients),
		"-T", strconv.Itoa(int(d.Seconds())))
	tps, tx := pgbenchTPS.FindStringSubmatch(out), pgbenchTx.FindStringSubmatch(out)
	if tps == nil || tx == nil {
		tb.Fatalf("no tps in pgbench's output:\n%s", out)
	}
	v, _ := strconv.ParseFloat(tps[1], 64)
	n, _ := strconv.ParseInt(tx[1], 10, 64)
	return sample{tps: v, cpuPerTx: cpu / time.Duration(max(n, 1))}
}

// runPgbenchRate runs pgbench -S -M prepared -R rate with a per-transaction
// log, and returns the distribution of the logged latencies, which under
// -R run from each transaction's scheduled start, and of their schedule
// lags (how late pgbench started each).
func runPgbenchRate(tb testing.TB, inst *postgres.Instance, ci postgres.ConnInfo, clients int, rate float64, d time.Duration) (latency, lags *measure.Histogram) {
	tb.Helper()
	dir := tb.TempDir()
	pgbench(tb, inst, ci, dir, "-n", "-S", "-M", "prepared", "-c", strconv.Itoa(clients), "-j", strconv.Itoa(clients),
		"-T", strconv.Itoa(int(d.Seconds())), "-R", strconv.FormatFloat(rate, 'f', 0, 64), "-l", "--log-prefix="+filepath.Join(dir, "log"))
	logs, _ := filepath.Glob(filepath.Join(dir, "log.*"))
	h, lagh := measure.NewHistogram(), measure.NewHistogram()
	for _, name := range logs {
		f, err := os.Open(name)
		if err != nil {
			tb.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// client_id transaction_no time script_no time_epoch time_us schedule_lag
			fields := strings.Fields(sc.Text())
			if len(fields) < 7 {
				tb.Fatalf("pgbench log line %q: no schedule lag (not run with -R?)", sc.Text())
			}
			us, _ := strconv.ParseInt(fields[2], 10, 64)
			lag, _ := strconv.ParseInt(fields[6], 10, 64)
			if us < lag {
				tb.Fatalf("pgbench log line %q: latency below its schedule lag, so not measured from the scheduled start", sc.Text())
			}
			h.Record(time.Duration(us) * time.Microsecond)
			lagh.Record(time.Duration(lag) * time.Microsecond)
		}
		f.Close()
	}
	if h.Count() == 0 {
		tb.Fatal("pgbench logged no transactions")
	}
	return h, lagh
}

// pointSelectServer starts a PostgreSQL server with dbrig's point-select
// table and pgbench's, both at scale 1.
func pointSelectServer(b *testing.B, name string) (*postgres.Instance, *workload.Env, postgres.ConnInfo) {
	b.Helper()
	inst := pgtest.Start(b, name, nil)
	ctx := context.Background()
	env := workloadtest.Env("dbrig_oltp_bench", inst)
	if err := pointSelectWorkload(b, 1, 0, time.Second).Prepare(ctx, env); err != nil {
		b.Fatal(err)
	}
	if err := inst.CreateDatabase(ctx, "pgbench"); err != nil {
		b.Fatal(err)
	}
	ci := inst.UnixConn("pgbench")
	pgbench(b, inst, ci, b.TempDir(), "-i", "-q", "-s", "1")
	return inst, env, ci
}

// comparison reports dbrig's throughput at n clients against the peer's,
// prints it as a goal (at least the peer's) with where the client's time
// goes, and returns the row of the benchmark's table.
func comparison(b *testing.B, peer string, n int, ours, theirs samples) []string {
	ratio := ours.tps() / theirs.tps()
	b.ReportMetric(ratio, fmt.Sprintf("ratio-%d-clients", n))
	name := fmt.Sprintf("oltp-vs-%s-%d-clients", peer, n)
	benchgoal.Print(b, benchgoal.AtLeast(name, fmt.Sprintf("%.0ftps", ours.tps()), fmt.Sprintf("%.0ftps", theirs.tps()), ratio, 1.0))
	benchgoal.Where(b, name, "client CPU per transaction: %.1f us dbrig, %.1f us %s", ours.cpuUs(), theirs.cpuUs(), peer)
	return []string{strconv.Itoa(n), fmt.Sprintf("%.0f", ours.tps()), fmt.Sprintf("%.0f", theirs.tps()),
		fmt.Sprintf("%.2f", ratio), fmt.Sprintf("%.1f", ours.cpuUs()), fmt.Sprintf("%.1f", theirs.cpuUs())}
}

// micros is a latency as a goal's figure: one word, in ASCII so that the
// goal table's columns line up.
func micros(d time.Duration) string {
	if d >= time.Millisecond {
		return fmt.Sprintf("%.3fms", d.Seconds()*1e3)
	}
	return fmt.Sprintf("%.0fus", d.Seconds()*1e6)
}

func printRows(tb testing.TB, header string, rows [][]string) {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, header)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t")+"\t")
	}
	tw.Flush()
	fmt.Print(b.String())
	tb.Log("\n" + b.String())
}

// BenchmarkPointSelectVsPgbench compares dbrig with pgbench -S -M prepared
// on one PostgreSQL server: closed loops at 1, 2, 4 and 8 clients, then
// open loops at a fixed rate.
func BenchmarkPointSelectVsPgbench(b *testing.B) {
	inst, env, ci := pointSelectServer(b, "bench")
	d := benchSeconds * time.Second
	for b.Loop() {
		runPgbench(b, inst, ci, 1, time.Second) // warm both tables into the cache
		runDbrig(b, env, 1, 0, time.Second)
		var rows [][]string
		for _, n := range benchClients(b) {
			var ours, theirs samples
			for range benchRounds {
				theirs = append(theirs, runPgbench(b, inst, ci, n, d))
				s, _ := runDbrig(b, env, n, 0, d)
				ours = append(ours, s)
			}
			rows = append(rows, comparison(b, "pgbench", n, ours, theirs))
		}
		printRows(b, fmt.Sprintf("clients\tdbrig tps\tpgbench tps\tratio\tdbrig µs CPU/tx\tpgbench µs CPU/tx\t   (medians of %d rounds of %d s)", benchRounds, benchSeconds), rows)

		// Open loop: Poisson arrivals at a rate the server serves with room
		// to spare, latency from the scheduled start on both sides; each
		// percentile is the median of the rounds'. BenchmarkStalledServer
		// compares them where the queueing is long.
		// The start lag (how late each tool began a transaction against
		// its schedule) is part of each latency, so it is shown beside
		// them: the latencies differ by it where the servers' part is the
		// same.
		const clients, rate, openSeconds = 4, 2000.0, 10
		quantiles := []float64{0.5, 0.9, 0.99, 0.999}
		n := len(quantiles)
		ourQ, theirQ := make([][]float64, 2*n), make([][]float64, 2*n)
		for range 3 {
			theirs, theirLag := runPgbenchRate(b, inst, ci, clients, rate, openSeconds*time.Second)
			_, res := runDbrig(b, env, clients, rate, openSeconds*time.Second)
			for i, q := range quantiles {
				ourQ[i] = append(ourQ[i], float64(res.Overall.Latency.Quantile(q)))
				theirQ[i] = append(theirQ[i], float64(theirs.Quantile(q)))
				ourQ[n+i] = append(ourQ[n+i], float64(res.StartLag.Quantile(q)))
				theirQ[n+i] = append(theirQ[n+i], float64(theirLag.Quantile(q)))
			}
		}
		for i := range ourQ {
			slices.Sort(ourQ[i])
			slices.Sort(theirQ[i])
		}
		median := func(q [][]float64, i int) time.Duration { return time.Duration(q[i][1]) }
		var orows [][]string
		for i := range ourQ {
			o, t := median(ourQ, i), median(theirQ, i)
			name := fmt.Sprintf("p%g", quantiles[i%n]*100)
			if i >= n {
				name = "start lag " + name
			}
			orows = append(orows, []string{name, o.String(), t.String(), fmt.Sprintf("%+.0f %%", 100*(float64(o)/float64(t)-1))})
			if i < n {
				goal := "oltp-open-loop-" + name
				benchgoal.Print(b, benchgoal.Within(goal, micros(o), micros(t), float64(o)/float64(t), 0.1))
				// Each latency counts its tool's own start lag (pgbench's
				// thread sleeps with the kernel's 50 µs of timer slack), so
				// the rest of it is shown beside.
				ol, tl := median(ourQ, n+i), median(theirQ, n+i)
				benchgoal.Where(b, goal, "start lag %s: %s dbrig, %s pgbench -R; the latency less it at this percentile: %s dbrig, %s pgbench -R",
					name, micros(ol), micros(tl), micros(o-ol), micros(t-tl))
			}
		}
		printRows(b, fmt.Sprintf("open loop, Poisson %.0f/s, %d clients, %d s (medians of 3 rounds)\tdbrig\tpgbench -R\tdifference\t", rate, clients, openSeconds), orows)
	}
}

// sysbench runs Debian's sysbench with the mysql driver against a MariaDB
// login through its unix socket; the login (password included) lives in a
// --config-file of mode 0600 in a 0700 directory, so that it is in no
// process's command line.
type sysbench struct {
	config, password string
}

func newSysbench(tb testing.TB, login engine.Conn) *sysbench {
	tb.Helper()
	if _, err := exec.LookPath("sysbench"); err != nil {
		if os.Getenv("CI") == "" {
			tb.Skipf("skipped: no sysbench (apt-get install sysbench, or scripts/install-deps --test): %v", err)
		}
		tb.Fatalf("find sysbench: %v", err)
	}
	config := filepath.Join(tb.TempDir(), "sysbench.conf")
	text := fmt.Sprintf("db-driver=mysql\nmysql-socket=%s\nmysql-user=%s\nmysql-password=%s\nmysql-db=%s\n",
		login.SocketPath(), login.User, login.Password(), login.Database)
	if err := os.WriteFile(config, []byte(text), 0o600); err != nil {
		tb.Fatal(err)
	}
	return &sysbench{config: config, password: login.Password()}
}

var sysbenchTPS = regexp.MustCompile(`transactions:\s+([0-9]+)\s+\(([0-9.]+) per sec\.\)`)

func (s *sysbench) run(tb testing.TB, args ...string) (string, time.Duration) {
	tb.Helper()
	cmd := exec.Command("sysbench", append([]string{"--config-file=" + s.config}, args...)...)
	out, err := cmd.CombinedOutput()
	if strings.Contains(string(out), s.password) {
		tb.Fatalf("sysbench %v printed the password", args)
	}
	if err != nil {
		tb.Fatalf("sysbench %v: %v\n%s", args, err, out)
	}
	return string(out), cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

// pointSelect runs oltp_point_select with server-side prepared statements.
func (s *sysbench) pointSelect(tb testing.TB, threads int, d time.Duration) sample {
	tb.Helper()
	out, cpu := s.run(tb, "oltp_point_select", "run", "--threads="+strconv.Itoa(threads), "--db-ps-mode=auto", "--tables=1",
		"--table-size=100000", "--time="+strconv.Itoa(int(d.Seconds())))
	m := sysbenchTPS.FindStringSubmatch(out)
	if m == nil {
		tb.Fatalf("no rate in sysbench's output:\n%s", out)
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	tps, _ := strconv.ParseFloat(m[2], 64)
	return sample{tps: tps, cpuPerTx: cpu / time.Duration(max(n, 1))}
}

// BenchmarkPointSelectVsSysbench compares dbrig with sysbench
// oltp_point_select on one MariaDB server at 1, 2, 4 and 8 clients.
// oltp_point_select reads `SELECT c FROM sbtest1 WHERE id = ?` (c is 120
// characters) from a table of 100,000 rows; dbrig reads a customer's
// balance by its id from 100,000 customers.
func BenchmarkPointSelectVsSysbench(b *testing.B) {
	inst := mariatest.Start(b, "bench", nil)
	ctx := context.Background()
	env := workloadtest.Env("dbrig_oltp_bench", inst)
	if err := pointSelectWorkload(b, 1, 0, time.Second).Prepare(ctx, env); err != nil {
		b.Fatal(err)
	}
	if err := inst.CreateDatabase(ctx, "sbtest"); err != nil {
		b.Fatal(err)
	}
	login, _ := inst.UnixLogin("sbtest")
	sb := newSysbench(b, login)
	sb.run(b, "oltp_point_select", "prepare", "--tables=1", "--table-size=100000")
	d := benchSeconds * time.Second
	for b.Loop() {
		sb.pointSelect(b, 1, time.Second) // warm both tables into the buffer pool
		runDbrig(b, env, 1, 0, time.Second)
		var rows [][]string
		for _, n := range benchClients(b) {
			var ours, theirs samples
			for range benchRounds {
				theirs = append(theirs, sb.pointSelect(b, n, d))
				s, _ := runDbrig(b, env, n, 0, d)
				ours = append(ours, s)
			}
			rows = append(rows, comparison(b, "sysbench", n, ours, theirs))
		}
		printRows(b, fmt.Sprintf("clients\tdbrig tps\tsysbench tps\tratio\tdbrig µs CPU/tx\tsysbench µs CPU/tx\t   (medians of %d rounds of %d s)", benchRounds, benchSeconds), rows)
	}
}

// stall holds an exclusive lock on table for length, after wait: every
// lookup of the table waits for it, as behind a stalled server.
func stall(tb testing.TB, inst *postgres.Instance, db, table string, wait, length time.Duration) <-chan error {
	done := make(chan error, 1)
	go func() {
		time.Sleep(wait)
		done <- inst.Exec(context.Background(), db, "BEGIN", "LOCK TABLE "+table+" IN ACCESS EXCLUSIVE MODE",
			fmt.Sprintf("SELECT pg_sleep(%g)", length.Seconds()), "COMMIT")
	}()
	return done
}

// pgbenchLog runs pgbench -S -M prepared with a per-transaction log and
// returns the logged latencies and the transactions per second.
func pgbenchLog(tb testing.TB, inst *postgres.Instance, ci postgres.ConnInfo, clients int, d time.Duration, rate float64) (*measure.Histogram, float64) {
	tb.Helper()
	dir := tb.TempDir()
	args := []string{"-n", "-S", "-M", "prepared", "-c", strconv.Itoa(clients), "-j", strconv.Itoa(clients),
		"-T", strconv.Itoa(int(d.Seconds())), "-l", "--log-prefix=" + filepath.Join(dir, "log")}
	if rate > 0 {
		args = append(args, "-R", strconv.FormatFloat(rate, 'f', 0, 64))
	}
	pgbench(tb, inst, ci, dir, args...)
	logs, _ := filepath.Glob(filepath.Join(dir, "log.*"))
	h := measure.NewHistogram()
	for _, name := range logs {
		b, err := os.ReadFile(name)
		if err != nil {
			tb.Fatal(err)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			// client_id transaction_no time script_no time_epoch time_us [schedule_lag]
			fields := strings.Fields(line)
			if len(fields) < 6 {
				continue
			}
			us, _ := strconv.ParseInt(fields[2], 10, 64)
			h.Record(time.Duration(us) * time.Microsecond)
		}
	}
	return h, float64(h.Count()) / d.Seconds()
}

// BenchmarkStalledServer shows coordinated omission on a real server: in
// the middle of a 10 s run of one primary-key lookup per transaction with 4
// clients, the table is locked for one second, as if the server stalled.
// A closed loop (pgbench -S, dbrig without a rate) records one slow
// transaction per client; an open loop at 2,000 transactions a second
// (pgbench -R, dbrig --rate) records every transaction that arrived during
// the second, each with the time it waited. docs/load.md shows a run.
//
//	go test -run '^$' -bench StalledServer -benchtime 1x ./internal/workload/oltp/
func BenchmarkStalledServer(b *testing.B) {
	inst, env, ci := pointSelectServer(b, "stall")
	const clients, rate = 4, 2000.0
	d, at, length := 10*time.Second, 5*time.Second, time.Second
	for b.Loop() {
		var rows [][]string
		row := func(name string, h *measure.Histogram, tps float64) {
			over := h.CountAbove(100 * time.Millisecond)
			rows = append(rows, []string{name, fmt.Sprintf("%.0f", tps), h.Quantile(0.5).String(), h.Quantile(0.99).String(),
				h.Quantile(0.999).String(), h.Max().String(), strconv.FormatInt(over, 10), fmt.Sprintf("%.2f %%", 100*float64(over)/float64(h.Count()))})
		}
		for _, loop := range []struct {
			name string
			rate float64
		}{{"closed loop", 0}, {fmt.Sprintf("open loop, %.0f/s", rate), rate}} {
			done := stall(b, inst, "pgbench", "pgbench_accounts", at, length)
			h, tps := pgbenchLog(b, inst, ci, clients, d, loop.rate)
			if err := <-done; err != nil {
				b.Fatal(err)
			}
			tool := "pgbench -S"
			if loop.rate > 0 {
				tool += " -R"
			}
			row(tool+", "+loop.name, h, tps)

			w := pointSelectWorkload(b, clients, loop.rate, d)
			var res *load.Result
			w.live = &Live{Result: func(r *load.Result) { res = r }}
			done = stall(b, inst, env.Database, "customers", w.cfg.WarmUp+at, length)
			m, err := w.Run(context.Background(), env)
			if err != nil {
				b.Fatal(err)
			}
			if err := <-done; err != nil {
				b.Fatal(err)
			}
			row("dbrig, "+loop.name, res.Overall.Latency, m.Metrics["tps"])
		}
		printRows(b, fmt.Sprintf("%d clients, %s with the table locked for %s after %s\ttps\tp50\tp99\tp99.9\tmax\tover 100ms\tshare\t", clients, d, length, at), rows)
	}
}
