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

	"github.com/dbrig/dbrig/internal/benchgoal"
	"github.com/dbrig/dbrig/internal/engine/postgres"
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
// Target: ratio >= 1.0 for both scripts at every client count, each
// printed as a goal (internal/benchgoal).

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

// benchScripts are the built-ins compared (DBRIG_BENCH_SCRIPTS, a
// comma-separated list, picks some).
func benchScripts() []string {
	if v := os.Getenv("DBRIG_BENCH_SCRIPTS"); v != "" {
		return strings.Split(v, ",")
	}
	return []string{"select-only", "tpcb-like"}
}

const (
	benchRounds  = 5
	benchSeconds = 3
)

type sample struct {
	tps      float64
	cpuPerTx time.Duration
	// switchesPerTx are the client's context switches (voluntary and
	// involuntary) per transaction.
	switchesPerTx float64
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

// usage is a process's CPU time and context switches.
type usage struct {
	cpu      time.Duration
	switches int64
}

func (u usage) minus(o usage) usage {
	return usage{cpu: u.cpu - o.cpu, switches: u.switches - o.switches}
}

func rusage(tb testing.TB, who int) usage {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		tb.Fatal(err)
	}
	return usage{cpu: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), switches: ru.Nvcsw + ru.Nivcsw}
}

func processCPU(tb testing.TB) usage { return rusage(tb, syscall.RUSAGE_SELF) }

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
	used := processCPU(b).minus(before)
	if err != nil {
		b.Fatal(err)
	}
	if m.Metrics["errors"] > 0 {
		b.Fatalf("dbrig %s: %v errors: %q", script, m.Metrics["errors"], m.Notes)
	}
	ops := res.Overall.Ops + res.WarmUpOps + res.AfterEnd.Count()
	ops = max(ops, 1)
	return sample{tps: m.Metrics["tps"], cpuPerTx: used.cpu / time.Duration(ops), switchesPerTx: float64(used.switches) / float64(ops)}
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
	used := childCPU(b)
	n = max(n, 1)
	return sample{tps: v, cpuPerTx: used.cpu / time.Duration(n), switchesPerTx: float64(used.switches) / float64(n)}
}

// childCPU is the CPU time of the children waited for since the last
// call (pgbench's, just ended).
var lastChildCPU usage

func childCPU(tb testing.TB) usage {
	total := rusage(tb, syscall.RUSAGE_CHILDREN)
	d := total.minus(lastChildCPU)
	lastChildCPU = total
	return d
}

// BenchmarkScriptVsPgbench compares dbrig's script runner with pgbench on
// select-only and tpcb-like (see the comment at the top of the file).
func BenchmarkScriptVsPgbench(b *testing.B) {
	const db = "pgbench"
	inst, _ := pgbenchServer(b, "bench", db)
	env := workloadtest.Env(db, inst)
	d := benchSeconds * time.Second
	childCPU(b)
	for b.Loop() {
		var rows [][]string
		for _, script := range benchScripts() {
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
				csw := func(x sample) float64 { return x.switchesPerTx }
				ratio := ours.median(tps) / theirs.median(tps)
				rows = append(rows, []string{script, strconv.Itoa(n), fmt.Sprintf("%.0f", ours.median(tps)), fmt.Sprintf("%.0f", theirs.median(tps)),
					fmt.Sprintf("%.2f", ratio), fmt.Sprintf("%.1f", ours.median(cpu)), fmt.Sprintf("%.1f", theirs.median(cpu)),
					fmt.Sprintf("%.2f", ours.median(csw)), fmt.Sprintf("%.2f", theirs.median(csw))})
				b.ReportMetric(ratio, fmt.Sprintf("ratio-%s-%d", script, n))
				name := fmt.Sprintf("script-%s-%d-clients", script, n)
				benchgoal.Print(b, benchgoal.AtLeast(name, fmt.Sprintf("%.0ftps", ours.median(tps)), fmt.Sprintf("%.0ftps", theirs.median(tps)), ratio, 1.0))
				benchgoal.Where(b, name, "client CPU per transaction: %.1f us dbrig, %.1f us pgbench; context switches per transaction: %.2f dbrig, %.2f pgbench",
					ours.median(cpu), theirs.median(cpu), ours.median(csw), theirs.median(csw))
			}
		}
		var sb strings.Builder
		tw := tabwriter.NewWriter(&sb, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "script\tclients\tdbrig tps\tpgbench tps\tratio\tdbrig µs CPU/tx\tpgbench µs CPU/tx\tdbrig switches/tx\tpgbench switches/tx\t   (medians of %d rounds of %d s, -M prepared)\n", benchRounds, benchSeconds)
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
