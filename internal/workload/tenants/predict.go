package tenants

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/dbrig/dbrig/internal/topology"
	"github.com/dbrig/dbrig/internal/workload"
)

// Predict is the closed loop with the CPU's queue, before the point runs,
// from the points of the same engine measured before it. Each connection's
// cycle is its think time Z, the timers' lateness L and the response R, so
// (Little's law) the loop runs X = N / (Z + L + R) transactions a second,
// which keep U = X × D / C of the host's CPUs busy. Waiting for a CPU
// stretches what a transaction and a timer's wake-up take by 1 / (1 − U),
// the open queue's law, so
//
//	R = (Sr + w × Sf) / (1 − U),  L = SL / (1 − U),  X = N / (Z + L + R)
//
// solved together: R and the TPM come from one state, never apart. Sr is
// the reads' response without the queue (their mean response × (1 − U) at
// the nearest earlier point: the setup that differs least, then the
// databases closest, then the differing values closest), SL the timers' lateness likewise, D its CPU per
// transaction as measured (no law carries it from one setup to another),
// C the host's CPUs. w is the mix's share of writes and Sf what a write
// takes beyond a read without the queue: its wait for the log's flush and
// its own work, at the nearest earlier point whose commits wait as this
// point's do. Commits that do not wait for the flush (synchronous_commit
// off, innodb_flush_log_at_trx_commit 0 or 2) or whose log is on tmpfs (a
// flush is a copy in memory) wait for no disk: before any such point ran,
// Sf is 0. On the quick run stored at consolidation-20261128-030306 the
// law held below the knee: the whole response × (1 − U) was 0.72 ms at 10
// databases and 0.69 ms at 50.
func Predict(r workload.Result, before []workload.Result) workload.Prediction {
	n, think := float64(r.Params.Int("databases")), r.Params.Duration("think").Seconds()
	same := measuredOn(EngineOf(r), before)
	if n <= 0 || len(same) == 0 {
		return workload.Prediction{Reason: "no prediction: first point on its engine, and the response without queueing and the CPU per transaction are measured, not known before"}
	}
	ref := nearest(r, same)
	q := queueOf(ref)
	flush, flushFrom := writesBeyond(r, same)
	q.sf = flush.sf
	loop := q.solve(n, think)
	p := workload.Prediction{Metrics: map[string]float64{"tpm": loop.x * 60, "tpm_per_db": loop.x * 60 / n, "response_ms": loop.r * 1000}}
	p.Formula = fmt.Sprintf("closed loop with the CPU's queue: X = N / (Z + L + R), U = X × D / C, R = (Sr + w × Sf) / (1 − U), L = SL / (1 − U); "+
		"nearest: %s; Sr = %s (the reads' response %s × (1 − %.2f)), SL = %s, D = %s, C = %.0f CPUs; Sf = %s (%s); w = %.2f; "+
		"solved: U = %.2f, R = %s, L = %s, TPM = %.0f × 60 / (%s + %s + %s) = %.0f",
		nearestLabel(ref), Millis(q.sr), Millis(q.reads), q.u, Millis(q.sl), Millis(q.d), q.c, Millis(q.sf), flushFrom, writeShareOfMix,
		loop.u, Millis(loop.r), Millis(loop.l), n, Millis(think), Millis(loop.l), Millis(loop.r), loop.x*60)
	p.Reason = predictReason(r, ref)
	return p
}

// queue is a point's transactions without the CPU's queue: what the law
// divides by 1 − U.
type queue struct {
	reads, u float64 // the reads' mean response and the own CPU share, measured
	sr, sf   float64 // a read's response and a write's extra, queue removed
	sl       float64 // the timers' lateness, queue removed
	d, c     float64 // CPU seconds a transaction, the host's CPUs
}

// maxShare bounds a measured CPU share, so that removing the queue from a
// point that kept every CPU busy leaves some of its response.
const maxShare = 0.95

// queueOf is a measured point's queue removed: its CPU share U is what its
// servers and the client kept busy. Other processes' work is not the
// law's: on the stored quick run the baseline's points with 0.14 to 0.64
// CPUs of it had responses of 4.0 to 4.9 ms in no order of it, and on
// another the one-instance points with the least (0.02, 0.03 CPUs) had
// the slowest reads with the queue removed (an idle virtual CPU halts, and
// a wake-up pays for it, is a likely reason).
func queueOf(o workload.Result) queue {
	m := o.Metrics
	q := queue{d: m["cpu_ms_per_tx"] / 1000, c: m["host_cpus"]}
	if q.c > 0 {
		q.u = min(maxShare, (m["server_cpus"]+m["client_cpus"])/q.c)
	}
	reads, writes := familyMeans(o)
	q.reads = reads
	q.sr = reads * (1 - q.u)
	q.sf = max(0, writes-reads) * (1 - q.u)
	q.sl = m["think_lag_ms"] / 1000 * (1 - q.u)
	return q
}

// loopState is the closed loop's solution: throughput (a second), CPU
// share, response and lateness (seconds).
type loopState struct{ x, u, r, l float64 }

// solve finds the CPU share U at which the loop's throughput keeps U of
// the CPUs busy: U − X(U) × D / C rises with U from below 0 at U = 0 to 1
// as U nears 1, so bisection finds its one root.
func (q queue) solve(n, think float64) loopState {
	at := func(u float64) loopState {
		s := loopState{u: u, r: (q.sr + writeShareOfMix*q.sf) / (1 - u), l: q.sl / (1 - u)}
		s.x = n / (think + s.l + s.r)
		return s
	}
	if q.d <= 0 || q.c <= 0 {
		return at(0)
	}
	lo, hi := 0.0, 1.0
	for range 60 {
		mid := (lo + hi) / 2
		if s := at(mid); s.x*q.d/q.c > mid {
			lo = mid
		} else {
			hi = mid
		}
	}
	return at((lo + hi) / 2)
}

// writeShareOfMix is the mix's share of writes (writeShare), a constant
// of the workload.
var writeShareOfMix = writeShare()

// writeShare is the mix's share of writes.
func writeShare() float64 {
	var w, all float64
	for _, f := range families {
		all += float64(f.weight)
		if f.write {
			w += float64(f.weight)
		}
	}
	return w / all
}

// familyMeans is a point's mean response of its reads and of its writes
// (seconds), from each family's distribution; the whole mean for both
// where the families were not kept.
func familyMeans(o workload.Result) (reads, writes float64) {
	var sum, count [2]float64
	for _, f := range families {
		h := o.Histograms["response/"+f.name]
		if h == nil || h.Count() == 0 {
			continue
		}
		i := 0
		if f.write {
			i = 1
		}
		sum[i] += h.Mean().Seconds() * float64(h.Count())
		count[i] += float64(h.Count())
	}
	if count[0] == 0 || count[1] == 0 {
		all := o.Metrics["response_ms"] / 1000
		return all, all
	}
	return sum[0] / count[0], sum[1] / count[1]
}

// writesBeyond is what a write takes beyond a read at the nearest earlier
// point whose commits wait for a disk as r's would, queue removed, and
// where it came from; none for commits that wait for no disk before any
// such point ran.
func writesBeyond(r workload.Result, same []workload.Result) (queue, string) {
	want := flushWaits(r, false, same)
	var like []workload.Result
	for _, o := range same {
		if flushWaits(o, true, nil) == want {
			like = append(like, o)
		}
	}
	if len(like) == 0 {
		if !want {
			return queue{}, "its commits wait for no disk, and no point before it measured what a write then adds"
		}
		like = same
	}
	o := nearest(r, like)
	return queueOf(o), fmt.Sprintf("a write's response beyond a read's × (1 − U) at %s", nearestLabel(o))
}

// flushWaits is whether a point's commits wait for the log to reach a
// disk: as the server read them back where measured is set and the point
// recorded them, else as its settings and its log's directory say (on
// tmpfs as the latest of before with that directory recorded it).
func flushWaits(r workload.Result, measured bool, before []workload.Result) bool {
	if v, ok := r.Metrics["commit_waits_flush"]; measured && ok {
		return v == 1 && r.Metrics["wal_tmpfs"] != 1
	}
	if len(r.Instances) == 0 {
		return true
	}
	in := r.Instances[0]
	if v, ok := in.Settings["synchronous_commit"]; ok && topology.SameSetting(v, "off") {
		return false
	}
	if v, ok := in.Settings["innodb_flush_log_at_trx_commit"]; ok && v != "1" {
		return false
	}
	return !walOnTmpfs(in.WALDir, before)
}

// walOnTmpfs is whether a log's directory is on tmpfs: as the latest
// point of before with that directory recorded it when it ran, else as
// this host says now. The record is the run's own host: a replay
// elsewhere, or a server on another site, sees another filesystem here.
func walOnTmpfs(dir string, before []workload.Result) bool {
	if dir == "" {
		return false
	}
	for i := len(before) - 1; i >= 0; i-- {
		o := before[i]
		if v, ok := o.Metrics["wal_tmpfs"]; ok && len(o.Instances) > 0 && o.Instances[0].WALDir == dir {
			return v == 1
		}
	}
	return onTmpfs(dir)
}

// onTmpfs is whether dir is on tmpfs on this host.
func onTmpfs(dir string) bool {
	var fs unix.Statfs_t
	return dir != "" && unix.Statfs(dir, &fs) == nil && fs.Type == unix.TMPFS_MAGIC
}

// measuredOn are the results of an engine with a response and a throughput.
func measuredOn(eng string, results []workload.Result) []workload.Result {
	var out []workload.Result
	for _, o := range results {
		if o.Measured() && EngineOf(o) == eng && o.Metrics["response_ms"] > 0 && o.Metrics["tpm"] > 0 && o.Metrics["databases"] > 0 {
			out = append(out, o)
		}
	}
	return out
}

// nearest is the result whose setup differs from r's in the fewest
// respects, then whose databases are nearest (by ratio), then whose
// differing values are nearest (by ratio: 2 GB of buffers is nearer 128 MB
// than 16 MB, which makes backends write dirty pages themselves), then the
// latest.
func nearest(r workload.Result, same []workload.Result) workload.Result {
	want, n := setup(r), float64(r.Params.Int("databases"))
	best, bestDiff, bestGap, bestDist := same[0], math.MaxInt, math.Inf(1), math.Inf(1)
	for _, o := range same {
		have := setup(o)
		diff, dist := differences(want, have), valueDistance(want, have)
		gap := math.Abs(math.Log(o.Metrics["databases"] / n))
		if diff < bestDiff || diff == bestDiff && (gap < bestGap || gap == bestGap && dist <= bestDist) {
			best, bestDiff, bestGap, bestDist = o, diff, gap, dist
		}
	}
	return best
}

// nearestLabel names an earlier point in a formula: by its combination,
// which says its setup, where it has one.
func nearestLabel(ref workload.Result) string {
	if ref.Combo != "" {
		return fmt.Sprintf("the point before it at %.0f databases (%s)", ref.Metrics["databases"], ref.Combo)
	}
	return fmt.Sprintf("the point before it at %.0f databases", ref.Metrics["databases"])
}

// setup is what a point's CPU per transaction may depend on besides its
// databases: its other parameters and its instances' configuration.
func setup(r workload.Result) map[string]string {
	s := map[string]string{"instances": fmt.Sprint(len(r.Instances))}
	for k, v := range r.Params {
		switch k {
		case "databases", "warm_up", "duration", "parallel":
		default:
			s["param "+k] = fmt.Sprint(v)
		}
	}
	if len(r.Instances) > 0 {
		in := r.Instances[0]
		s["cpus"], s["memory"], s["cpu_speed"] = in.CPUs, fmt.Sprint(in.Memory), fmt.Sprint(in.CPUSpeed)
		s["wal_dir"], s["data_disk"], s["wal_disk"] = in.WALDir, in.DataDisk, in.WALDisk
		for k, v := range in.Settings {
			s["setting "+k] = v
		}
	}
	return s
}

// differences counts the respects in which two setups differ.
func differences(a, b map[string]string) int {
	diff := 0
	for k := range a {
		if a[k] != b[k] {
			diff++
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			diff++
		}
	}
	return diff
}

// valueDistance sums, over the respects in which two setups hold numbers
// of the same unit that differ, the logarithm of their ratio.
func valueDistance(a, b map[string]string) float64 {
	dist := 0.0
	for k, av := range a {
		bv, ok := b[k]
		if !ok || av == bv {
			continue
		}
		x, xu, xok := magnitude(av)
		y, yu, yok := magnitude(bv)
		if xok && yok && xu == yu && x > 0 && y > 0 {
			dist += math.Abs(math.Log(x / y))
		}
	}
	return dist
}

// magnitude is a setting's value as a number and its unit, a size in
// bytes whatever unit it is written in ("131072kB" and "128MB":
// 134217728, "bytes"), else as numberOf splits it.
func magnitude(v string) (float64, string, bool) {
	if b, ok := topology.SettingBytes(v); ok {
		return b, "bytes", true
	}
	return numberOf(v)
}

// numberOf splits a setting's value into its number and its unit
// ("131072kB": 131072, "kB").
func numberOf(v string) (float64, string, bool) {
	i := strings.IndexFunc(v, func(c rune) bool { return (c < '0' || c > '9') && c != '.' })
	if i < 0 {
		i = len(v)
	}
	x, err := strconv.ParseFloat(v[:i], 64)
	return x, v[i:], err == nil
}

// predictReason says what the prediction leaves out: the setup and the
// databases its reads, lateness and CPU per transaction were not measured
// at, and the machine's other load.
func predictReason(r, ref workload.Result) string {
	want, have := setup(r), setup(ref)
	var differ []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if want[k] != have[k] {
			differ = append(differ, fmt.Sprintf("%s %q, not %q", k, want[k], have[k]))
		}
	}
	why := "other processes' CPU on a shared machine is not in the law, and a burst of it during the point (a build beside the run) lengthens every wake-up"
	if n := float64(r.Params.Int("databases")); n != ref.Metrics["databases"] {
		why = fmt.Sprintf("the CPU per transaction was measured at %.0f databases, not %.0f (it falls as more connections share each log flush), and the 1 / (1 − U) law is an open queue's, which the closed loop's knee need not follow; ", ref.Metrics["databases"], n) + why
	}
	if len(differ) > 0 {
		why = "the reads' response and the CPU per transaction were measured on another setup (" + strings.Join(differ, ", ") + "); " + why
	}
	return why
}
