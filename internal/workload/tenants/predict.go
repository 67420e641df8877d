package tenants

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/gonum/stat"

	"github.com/dbrig/dbrig/internal/workload"
)

// Predict is the closed loop before the point runs, from the points of the
// same engine measured before it:
//
//	TPM = min(N × 60 / (R0 + Z), 60 × C / D),  R = max(R0, N × 60 / TPM − Z)
//
// N and the think time are the point's parameters. R0 is the lowest mean
// response measured before it. D, the CPU time per transaction, and the
// timers' lateness added to the think time are the nearest earlier point's:
// the one whose setup (instances, their settings, CPUs, memory, WAL) differs
// least, then whose databases are closest; no physical law scales D from
// one setup to another (it falls as more connections share each group
// commit and each wake-up), so it is taken as it was measured. C is the
// CPUs the servers and the client kept busy, on average, at the earlier
// points whose throughput the CPU capped: on a machine shared with other
// work, what the others leave is the capacity; before any point
// saturated, the host's CPUs. R follows from the response time law.
func Predict(r workload.Result, before []workload.Result) workload.Prediction {
	n, think := float64(r.Params.Int("databases")), r.Params.Duration("think").Seconds()
	same := measuredOn(EngineOf(r), before)
	if n <= 0 || len(same) == 0 {
		return workload.Prediction{Reason: "no prediction: first point on its engine, and the response without queueing and the CPU per transaction are measured, not known before"}
	}
	r0 := math.Inf(1)
	for _, o := range same {
		r0 = min(r0, o.Metrics["response_ms"]/1000)
	}
	ref := nearest(r, same)
	z := think + ref.Metrics["think_lag_ms"]/1000
	capacity, from := cpusLeft(same, r0)
	m := closedLoop(n, r0, z, ref.Metrics["cpu_ms_per_tx"]/1000, capacity)
	response := max(r0, n*60/m.TPM-z)
	p := workload.Prediction{Metrics: map[string]float64{"tpm": m.TPM, "tpm_per_db": m.TPM / n, "response_ms": response * 1000}}
	p.Formula = fmt.Sprintf("closed loop before the point: TPM = N × 60 / (R0 + Z) = %.0f × 60 / (%s + %s) = %.0f, R0 the lowest response before it, Z the think time with the timers' lateness at %s", n, Millis(r0), Millis(z), m.ThinkTPM, nearestLabel(ref))
	if !math.IsNaN(m.CPUTPM) {
		p.Formula += fmt.Sprintf(", until the CPU saturates at 60 × C / D = 60 × %.2f CPUs (%s) / %s (the CPU per transaction there) = %.0f", m.C, from, Millis(m.D), m.CPUTPM)
	}
	p.Formula += fmt.Sprintf("; response R = max(R0, N × 60 / TPM − Z) = %s", Millis(response))
	p.Reason = predictReason(r, ref)
	return p
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

// saturatedShare is how far below its think-time line N × 60 / (R0 + Z) a
// point's TPM must fall for the CPU, not the connections, to have set it.
const saturatedShare = 0.9

// cpusLeft is the CPUs the servers and the client kept busy, on average,
// at the points the CPU capped (each judged against the lowest response
// R0), and where the figure came from; the host's CPUs before any did.
// The mean, not the latest: on the quick run at load average 3 to 23 the
// latest missed the TPM by a median of 18 % (p90 37 %), the mean by 14 %
// (p90 40 %), as the share the others left moved from point to point.
func cpusLeft(same []workload.Result, r0 float64) (float64, string) {
	var used []float64
	for _, o := range same {
		m := o.Metrics
		line := m["databases"] * 60 / (r0 + (m["think_ms"]+m["think_lag_ms"])/1000)
		if busy := m["server_cpus"] + m["client_cpus"]; m["tpm"] < saturatedShare*line && busy > 0 {
			used = append(used, busy)
		}
	}
	if len(used) == 0 {
		return same[len(same)-1].Metrics["host_cpus"], "the host's: no point before it saturated"
	}
	return stat.Mean(used, nil), fmt.Sprintf("busy on average at the points before it that the CPU capped, %d of them", len(used))
}

// nearest is the result whose setup differs from r's in the fewest
// respects, then whose databases are nearest (by ratio), then the latest.
func nearest(r workload.Result, same []workload.Result) workload.Result {
	want, n := setup(r), float64(r.Params.Int("databases"))
	best, bestDiff, bestGap := same[0], math.MaxInt, math.Inf(1)
	for _, o := range same {
		diff := differences(want, setup(o))
		gap := math.Abs(math.Log(o.Metrics["databases"] / n))
		if diff < bestDiff || diff == bestDiff && gap <= bestGap {
			best, bestDiff, bestGap = o, diff, gap
		}
	}
	return best
}

// nearestLabel names the nearest point in a formula.
func nearestLabel(ref workload.Result) string {
	return fmt.Sprintf("the nearest point before it (%.0f databases)", ref.Metrics["databases"])
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

// predictReason says what the prediction leaves out: the setup the CPU per
// transaction was not measured on, and the machine's other load.
func predictReason(r, ref workload.Result) string {
	want, have := setup(r), setup(ref)
	var differ []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if want[k] != have[k] {
			differ = append(differ, fmt.Sprintf("%s %q, not %q", k, want[k], have[k]))
		}
	}
	why := "the CPUs other processes leave the servers change from point to point on a shared machine, and near the knee waiting for a CPU lowers the TPM below both bounds"
	if len(differ) > 0 {
		why = "the CPU per transaction was measured on another setup (" + strings.Join(differ, ", ") + "); " + why
	}
	return why
}
