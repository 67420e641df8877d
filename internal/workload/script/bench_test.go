package script

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
	"github.com/dbrig/dbrig/internal/load"
	"github.com/dbrig/dbrig/internal/workload"
	"github.com/dbrig/dbrig/internal/workload/workloadtest"
)

// The script runner must not be what is measured. BenchmarkScriptVsPgbench
// runs pgbench's select-only and tpcb-like with dbrig and with pgbench 15
// (-M prepared, one thread per client, the same length) on one server
// through the same unix socket, at 1, 2, 4 and 8 clients, alternating
// rounds so that a disturbance of the shared machine falls on both, and
// prints each one's throughput (median of the rounds), the ratio, and
// each client's CPU time per transaction.
//
//	make bench-script   # go test -run '^$' -bench ScriptVsPgbench -benchtime 1x -timeout 30m ./internal/workload/script/
//
// Target: ratio >= 1.0 for both scripts at every client count.

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

const (
	benchRounds  = 5
	benchSeconds = 3
)

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

func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchDbrig runs a built-in under dbrig's runner: the workload's Run, as
// a study's point runs it.
func benchDbrig(b *testing.B, env *workload.Env, script string, clients int, d time.Duration) sample {
	b.Helper()
	p := testParams(b, workload.Params{"script": script, "protocol": Prepared, "users": int64(clients),
		"duration": d.String(), "warm_up": "500ms"})
	w, err := newWorkload(p)
	if err != nil {
		b.Fatal(err)
	}
	var res *load.Result
	w.live = &Live{Result: func(r *load.Result) { res = r }}
	before := processCPU(b)
	m, err := w.Run(context.Background(), env)
	cpu := processCPU(b) - before
	if err != nil {
		b.Fatal(err)
	}
	if m.Metrics["errors"] > 0 {
		b.Fatalf("dbrig %s: %v errors: %q", script, m.Metrics["errors"], m.Notes)
	}
	ops := res.Overall.Ops + res.WarmUpOps + res.AfterEnd.Count()
	return sample{tps: m.Metrics["tps"], cpuPerTx: cpu / time.Duration(max(ops, 1))}
}

var (
	pgbenchTPS = regexp.MustCompile(`tps = ([0-9.]+) \(without initial connection time\)`)
	pgbenchTx  = regexp.MustCompile(`number of transactions actually processed: ([0-9]+)`)
)

// benchPgbench runs pgbench -M prepared with one thread per client.
func benchPgbench(b *testing.B, inst *postgres.Instance, db, script string, clients int, d time.Duration) sample {
	b.Helper()
	out, errOut, err := runPgbench(b, inst, db, b.TempDir(), "-n", "-b", script, "-M", "prepared", "-c", strconv.Itoa(clients),
		"-j", strconv.Itoa(clients), "-T", strconv.Itoa(int(d.Seconds())))
	if err != nil {
		b.Fatalf("pgbench: %v\n%s%s", err, out, errOut)
	}
	tps, tx := pgbenchTPS.FindStringSubmatch(out), pgbenchTx.FindStringSubmatch(out)
	if tps == nil || tx == nil {
		b.Fatalf("no tps in pgbench's output:\n%s", out)
	}
	v, _ := strconv.ParseFloat(tps[1], 64)
	n, _ := strconv.ParseInt(tx[1], 10, 64)
	return sample{tps: v, cpuPerTx: childCPU(b) / time.Duration(max(n, 1))}
}

// childCPU is the CPU time of the children waited for since the last
// call (pgbench's, just ended).
var lastChildCPU time.Duration

func childCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		tb.Fatal(err)
	}
	total := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	d := total - lastChildCPU
	lastChildCPU = total
	return d
}

// BenchmarkScriptVsPgbench compares dbrig's script runner with pgbench on
// select-only and tpcb-like (see the comment at the top of the file).
func BenchmarkScriptVsPgbench(b *testing.B) {
	inst := pgtest.Start(b, "bench", nil)
	const db = "pgbench"
	if err := inst.CreateDatabase(context.Background(), db); err != nil {
		b.Fatal(err)
	}
	login, _ := inst.UnixLogin(db)
	if err := Init(context.Background(), login, 1, nil); err != nil {
		b.Fatal(err)
	}
	env := workloadtest.Env(db, inst)
	d := benchSeconds * time.Second
	childCPU(b)
	for b.Loop() {
		var rows [][]string
		for _, script := range []string{"select-only", "tpcb-like"} {
			benchPgbench(b, inst, db, script, 1, time.Second) // warm the tables into the cache
			benchDbrig(b, env, script, 1, time.Second)
			for _, n := range benchClients(b) {
				var ours, theirs samples
				for range benchRounds {
					theirs = append(theirs, benchPgbench(b, inst, db, script, n, d))
					ours = append(ours, benchDbrig(b, env, script, n, d))
				}
				tps := func(x sample) float64 { return x.tps }
				cpu := func(x sample) float64 { return float64(x.cpuPerTx) / float64(time.Microsecond) }
				ratio := ours.median(tps) / theirs.median(tps)
				rows = append(rows, []string{script, strconv.Itoa(n), fmt.Sprintf("%.0f", ours.median(tps)), fmt.Sprintf("%.0f", theirs.median(tps)),
					fmt.Sprintf("%.2f", ratio), fmt.Sprintf("%.1f", ours.median(cpu)), fmt.Sprintf("%.1f", theirs.median(cpu))})
				b.ReportMetric(ratio, fmt.Sprintf("ratio-%s-%d", script, n))
			}
		}
		var sb strings.Builder
		tw := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "script\tclients\tdbrig tps\tpgbench tps\tratio\tdbrig µs CPU/tx\tpgbench µs CPU/tx\t   (medians of %d rounds of %d s, -M prepared)\n", benchRounds, benchSeconds)
		for _, r := range rows {
			fmt.Fprintln(tw, strings.Join(r, "\t")+"\t")
		}
		tw.Flush()
		if load, err := os.ReadFile("/proc/loadavg"); err == nil {
			fmt.Fprintf(&sb, "load average: %s", load)
		}
		fmt.Print(sb.String())
		b.Log("\n" + sb.String())
	}
}
