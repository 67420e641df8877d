package oltp

import (
	"context"
	"fmt"
	"slices"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/idleloop"
	"github.com/dbrig/dbrig/internal/measure"
	"github.com/dbrig/dbrig/internal/workload"
)

// The server's capacity at a point is the CPUs the machine leaves the
// load then over the CPU one transaction costs: C / D (the utilization
// law). C moves with the machine's other work, so it is taken from the
// points nearest in time: the median of what the load (the servers and
// the client, where the links' proxies run) kept busy at the latest
// recentSaturated points before it, of the same load through any link,
// that their server saturated. D is the curve's own at the most users it
// measured before (a transaction costs less as more users share each
// wake-up), its nearest sibling's before it has any. Taken from one curve's
// saturated throughput instead, the capacity was a dip's whenever other
// work had starved that point: on a quick run at load average 12 to 87
// the unix socket's 40 users fell to 1,850/s and 70 and 110 users were
// predicted there for 5,175/s and 5,220/s measured.
//
// A point whose load kept busyShare of the load's CPUs busy saturated the
// server whatever its throughput against the light-load line: with no
// think time (duplex-mismatch) or a heavy query (the reporting mix) the
// lightest point itself saturates, and its line predicted 4 times its own
// throughput at 4 times the users. Before any point saturated, the load's
// CPUs are the ceiling: the load cannot keep more busy than it may run on.
// The load's CPUs are those dbrig may run on (its affinity: taskset or a
// cpuset may allow 2 of 64 online), which a server not pinned inherits,
// capped by the server's pinned CPUs or CPU cap, as TPC-H's are.

// probeAllowedCPUs is the probe's key for the CPUs dbrig may run on.
const probeAllowedCPUs = "allowed_cpus"

// probeHostCPUs is the key the probe wrote before it recorded
// probeAllowedCPUs: the host's online CPUs, read from stored results.
const probeHostCPUs = "host_cpus"

// busyShare is the share of the load's CPUs a point's load must keep busy
// to have saturated the server: the CPUs' counters and the machine's
// other work leave a saturated load a little short of all of them.
const busyShare = 0.9

// recentSaturated is how many of the latest saturated points C is the
// median of: one point the machine starved is not the machine's state.
const recentSaturated = 3

// cpuCapacity is a point's capacity by the CPUs, and what it came from.
type cpuCapacity struct {
	tps    float64
	cpus   []float64 // what the load kept busy at the recent saturated points, latest first
	demand float64   // D, CPU seconds a transaction
	whose  string    // where D was measured
	host   bool      // no point saturated before it: C is the load's CPUs
}

// Probe records the CPUs dbrig may run on just before a point runs: with
// the server's pinned CPUs or cap, the ceiling of what its load can keep
// busy.
func Probe(context.Context, workload.Result, *workload.Env) (map[string]float64, error) {
	allowed, err := idleloop.AllowedCPUs()
	if err != nil {
		return nil, err
	}
	return map[string]float64{probeAllowedCPUs: float64(len(allowed))}, nil
}

// loadCPUs is the CPUs r's load may keep busy: those dbrig might run on
// as the probe saw them before r (a result stored before the probe
// recorded them: the host's online CPUs it recorded, else this machine's,
// a replay running where the run did), at most the server's pinned CPUs
// or its CPU cap; 0 on a target, whose host is not this one.
func loadCPUs(r workload.Result) float64 {
	in := r.Instance()
	if in.Target != "" {
		return 0
	}
	cpus := r.Probe[probeAllowedCPUs]
	if cpus <= 0 {
		cpus = r.Probe[probeHostCPUs]
	}
	if cpus <= 0 {
		if allowed, err := idleloop.AllowedCPUs(); err == nil {
			cpus = float64(len(allowed))
		}
	}
	if list, err := engine.ParseCPUList(in.CPUs); in.CPUs != "" && err == nil && len(list) > 0 {
		cpus = min(cpus, float64(len(list)))
	}
	if in.CPUSpeed > 0 {
		cpus = min(cpus, in.CPUSpeed)
	}
	return cpus
}

// cpusUsed is the CPUs a point's load kept busy: its servers' (the
// monitor's) and the client's; 0 when the monitor saw no server CPU.
func cpusUsed(o workload.Result) float64 {
	server := serverCPU(o)
	if server <= 0 {
		return 0
	}
	return server + o.Metrics["client_cpu_us_per_tx"]/1e6*o.Metrics["tps"]
}

// capacityByCPUs is r's capacity C / D; false when no saturated point
// before it had its CPU seen, or no point of its curve or a sibling's a D.
func capacityByCPUs(r workload.Result, before []workload.Result, own []CurvePoint, sibs []sibling) (cpuCapacity, bool) {
	key, host := siblingKey(r), loadCPUs(r)
	var m cpuCapacity
	for i := len(before) - 1; i >= 0 && len(m.cpus) < recentSaturated; i-- {
		o := before[i]
		if !o.Measured() || o.Combo == r.Combo || o.Params.Float("rate") > 0 || Mismatched(o) || siblingKey(o) != key {
			continue
		}
		if u := cpusUsed(o); u > 0 && (u >= busyShare*host || saturatedAt(o, before)) {
			m.cpus = append(m.cpus, u)
		}
	}
	d, whose, ok := demandOf(own, sibs, r.Params.Float("users"))
	if len(m.cpus) == 0 && host > 0 {
		m.cpus, m.host = []float64{host}, true
	}
	if !ok || len(m.cpus) == 0 {
		return cpuCapacity{}, false
	}
	m.demand, m.whose = d, whose
	m.tps = measure.Median(slices.Clone(m.cpus)) / d
	return m, true
}

// saturatedAt reports whether o's throughput fell below saturatedShare of
// its curve's light-load line (its lightest point's cycle), by
// saturatedPoints' own threshold.
func saturatedAt(o workload.Result, all []workload.Result) bool {
	curve := wholeCurveOf(o, all)
	if len(curve) == 0 || curve[0].TPS <= 0 {
		return false
	}
	cycle := 1000 * curve[0].Users / curve[0].TPS
	point := CurvePoint{Users: o.Params.Float("users"), TPS: o.Metrics["tps"]}
	return len(saturatedPoints([]CurvePoint{point}, cycle)) > 0
}

// demandOf is the CPU seconds one transaction of r's curve costs at n
// users: at the most users it measured before r, scaled as the nearest
// sibling's that measured both fell or rose from there to n (a transaction
// costs less as more users share each wake-up, whatever the link); the
// nearest sibling's own at n (or its most users) before the curve has a
// point.
func demandOf(own []CurvePoint, sibs []sibling, n float64) (float64, string, bool) {
	d, at, ok := heaviestDemand(own)
	if !ok {
		for _, s := range sibs {
			if dn, ok := demandAt(s.curve, n); ok {
				return dn, fmt.Sprintf("%s's at %g users", s.link, n), true
			}
			if d, at, ok := heaviestDemand(s.curve); ok {
				return d, fmt.Sprintf("%s's at %g users, its most", s.link, at), true
			}
		}
		return 0, "", false
	}
	if at == n {
		return d, fmt.Sprintf("this curve's at %g users", n), true
	}
	for _, s := range sibs {
		from, ok1 := demandAt(s.curve, at)
		to, ok2 := demandAt(s.curve, n)
		if ok1 && ok2 {
			return d * to / from, fmt.Sprintf("this curve's at %g users × the change of %s's from %g to %g users (%.2f)", at, s.link, at, n, to/from), true
		}
	}
	return d, fmt.Sprintf("this curve's at %g users, its most", at), true
}

// heaviestDemand is the CPU per transaction at the most users of a curve
// that the monitor saw, and those users.
func heaviestDemand(curve []CurvePoint) (float64, float64, bool) {
	for i := len(curve) - 1; i >= 0; i-- {
		if d := cpuPerTx(curve[i]); d > 0 {
			return d, curve[i].Users, true
		}
	}
	return 0, 0, false
}

// demandAt is a curve's CPU per transaction at n users.
func demandAt(curve []CurvePoint, n float64) (float64, bool) {
	for _, c := range curve {
		if d := cpuPerTx(c); c.Users == n && d > 0 {
			return d, true
		}
	}
	return 0, false
}

// capByCPUs caps a prediction by the capacity by the CPUs; false when
// there is none.
func capByCPUs(pred workload.Prediction, r workload.Result, before []workload.Result, own []CurvePoint, sibs []sibling) (workload.Prediction, bool) {
	m, ok := capacityByCPUs(r, before, own, sibs)
	if !ok {
		return pred, false
	}
	if m.host {
		pred, capped := capByHost(pred, m)
		if capped {
			pred = capByOtherMix(pred, r, before, own)
		}
		return pred, capped
	}
	pred.Metrics["tps"] = min(pred.Metrics["tps"], m.tps)
	pred.Formula += fmt.Sprintf(", capped by the server's capacity C / D = %.2f CPUs / %s = %s/s (C the median of the CPUs the load kept busy at the latest %d saturated points of the same load before it, %s; D the CPU a transaction costs, the server's and the client's, %s): tps = %s/s",
		measure.Median(slices.Clone(m.cpus)), FormatMS(1000*m.demand), FormatTPS(m.tps), len(m.cpus), cpuList(m.cpus), m.whose, FormatTPS(pred.Metrics["tps"]))
	pred.Reason = kneeReason + "; the CPUs the machine's other work leaves the load move between the points before it and this one, and a transaction's CPU with the users and the machine's load"
	return capByOtherMix(pred, r, before, own), true
}

// capByHost caps a prediction by the load's CPUs over D, before any point
// of its load saturated the server; false, with the ceiling in its
// formula, where the users' line is below it: the prediction goes on as
// one no capacity caps.
func capByHost(pred workload.Prediction, m cpuCapacity) (workload.Prediction, bool) {
	if m.tps >= pred.Metrics["tps"] {
		pred.Formula += fmt.Sprintf(", below the CPUs' ceiling C / D = %g CPUs / %s = %s/s (D %s)", m.cpus[0], FormatMS(1000*m.demand), FormatTPS(m.tps), m.whose)
		return pred, false
	}
	pred.Metrics["tps"] = m.tps
	pred.Formula += fmt.Sprintf(", capped by the CPUs' ceiling C / D = %g CPUs / %s = %s/s (no point of the same load before it saturated the server; D the CPU a transaction costs, the server's and the client's, %s)",
		m.cpus[0], FormatMS(1000*m.demand), FormatTPS(m.tps), m.whose)
	pred.Reason = kneeReason + "; no point before it saturated the server: the machine's other work keeps some of the CPUs the load may run on, and a transaction costs less CPU as more users share each wake-up"
	return pred, true
}

// cpuList writes CPUs latest first: "1.32, 1.26 and 1.12".
func cpuList(cpus []float64) string {
	s := ""
	for i, c := range cpus {
		switch {
		case i == 0:
		case i == len(cpus)-1:
			s += " and "
		default:
			s += ", "
		}
		s += fmt.Sprintf("%.2f", c)
	}
	return s
}
