package tpch

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/gonum/stat"

	"github.com/dbrig/dbrig/internal/workload"
)

// The model is Amdahl's law: a query whose serial part is a fraction s of
// its serial time t1 takes
//
//	time(n) = t1 × (s + (1 − s) / n)
//
// on n processes. n is the processes that may work on a query (the degree's
// workers and the leader), but at most the CPUs the server has: three
// processes on two CPUs are two CPUs' worth of work. s is fitted per query
// by least squares on 1/speedup = time(n)/t1 against 1/n, over every degree
// of the same data measured so far, through (1, 1) where n = 1: one
// parameter, s = Σ(1−x)(y−x) / Σ(1−x)² with x = 1/n and y = 1/speedup. A
// negative s is a speedup above n (more processes also brought more cache);
// s above 1 is a query that parallel workers slowed down.

// FitAmdahl fits the serial fraction s to times measured at n processes,
// given the serial time t1. ok is false when no n above 1 was measured.
func FitAmdahl(ns, times []float64, t1 float64) (s float64, ok bool) {
	var xs, ys []float64
	for i, n := range ns {
		if n <= 1 || t1 <= 0 || math.IsNaN(times[i]) {
			continue
		}
		x, y := 1/n, times[i]/t1
		xs = append(xs, 1-x)
		ys = append(ys, y-x)
	}
	if len(xs) == 0 {
		return math.NaN(), false
	}
	_, beta := stat.LinearRegression(xs, ys, nil, true)
	return beta, true
}

// Amdahl is time(n) = t1 × (s + (1 − s) / n).
func Amdahl(t1, s, n float64) float64 { return t1 * (s + (1-s)/n) }

// SpeedupAt is Amdahl's speedup at n processes for a serial fraction s.
func SpeedupAt(s, n float64) float64 { return 1 / (s + (1-s)/n) }

// point is one result's place in a degree sweep.
type point struct {
	degree int
	n      float64 // effective processes
	r      workload.Result
}

// SweepKey is what the results of one degree sweep share: the workload's
// parameters but the degree, and the server.
func SweepKey(r workload.Result) string {
	p := maps.Clone(r.Params)
	delete(p, "degree")
	b, _ := json.Marshal(p)
	in := r.Instance()
	return string(b) + "|" + in.Engine + "|" + in.Target + "|" + in.CPUs
}

// EffectiveProcesses is n of the model for a result: the processes that may
// work on a query, at most the server's CPUs when dbrig knows them (its own
// instance: the CPUs it is pinned to, else the host's).
func EffectiveProcesses(r workload.Result) float64 {
	n := r.Metrics["processes"]
	if n == 0 {
		n = r.Metrics["degree"] + 1
	}
	if cpus := serverCPUs(r, r.Metrics["host_cpus"]); cpus > 0 && n > cpus {
		n = cpus
	}
	return max(n, 1)
}

// sweepOf returns the measured results of r's sweep in all, leaving r's
// own combination out: a degree's time is never fitted on itself.
func sweepOf(r workload.Result, all []workload.Result) []point {
	key := SweepKey(r)
	var out []point
	for _, o := range all {
		if o.Measured() && o.Combo != r.Combo && o.Metrics != nil && SweepKey(o) == key {
			out = append(out, point{degree: int(o.Metrics["degree"]), n: EffectiveProcesses(o), r: o})
		}
	}
	return out
}

// byDegree averages a metric over the results of each degree.
func byDegree(ps []point, metric string) (degrees []int, ns, means []float64) {
	sum, cnt, nOf := map[int]float64{}, map[int]int{}, map[int]float64{}
	for _, p := range ps {
		v, ok := p.r.Metrics[metric]
		if !ok || math.IsNaN(v) {
			continue
		}
		sum[p.degree] += v
		cnt[p.degree]++
		nOf[p.degree] = p.n
	}
	degrees = slices.Sorted(maps.Keys(sum))
	for _, d := range degrees {
		ns = append(ns, nOf[d])
		means = append(means, sum[d]/float64(cnt[d]))
	}
	return degrees, ns, means
}

// fitMetric fits s for one metric over a sweep: the serial time is the
// degree-0 mean.
func fitMetric(ps []point, metric string) (t1, s float64, ok bool) {
	degrees, ns, means := byDegree(ps, metric)
	if len(degrees) == 0 || degrees[0] != 0 {
		return 0, 0, false
	}
	t1 = means[0]
	s, ok = FitAmdahl(ns, means, t1)
	return t1, s, ok
}

// FractionName is the model's stored serial fraction of a metric.
func FractionName(metric string) string {
	return strings.TrimSuffix(strings.TrimSuffix(metric, "_ms"), "_s") + "_serial_fraction"
}

// Model fits Amdahl's law per query and for the total over the sweep's
// other degrees and stores, with each time, the fitted serial fraction: a
// degree's time is predicted from the others, and the serial time itself
// (degree 0) has no figure.
func Model(r workload.Result, all []workload.Result) workload.Prediction {
	if r.Metrics == nil {
		return workload.Prediction{}
	}
	ps := sweepOf(r, all)
	n := EffectiveProcesses(r)
	pred := workload.Prediction{Metrics: map[string]float64{}}
	var distinct []float64
	for _, p := range ps {
		if !slices.Contains(distinct, p.n) {
			distinct = append(distinct, p.n)
		}
	}
	metrics := []string{"total_s"}
	for q := 1; q <= NumQueries; q++ {
		metrics = append(metrics, MetricName(q))
	}
	for _, m := range metrics {
		if _, measured := r.Metrics[m]; !measured {
			continue
		}
		t1, s, ok := fitMetric(ps, m)
		if !ok {
			continue
		}
		pred.Metrics[m] = Amdahl(t1, s, n)
		pred.Metrics[FractionName(m)] = s
	}
	if len(pred.Metrics) == 0 {
		return workload.Prediction{Reason: "no figure: Amdahl needs the serial time (degree 0) and another degree above it, measured on other points"}
	}
	slices.Sort(distinct)
	pred.Metrics["amdahl_points"] = float64(len(distinct))
	var nList []string
	for _, d := range distinct {
		nList = append(nList, fmt.Sprintf("%g", d))
	}
	pred.Formula = fmt.Sprintf("time(n) = t1 × (s + (1 − s)/n) at n = %g; s fitted per query over n = %s (total: s = %.1f %%)",
		n, strings.Join(nList, ", "), 100*pred.Metrics["total_serial_fraction"])
	pred.Reason = amdahlReason
	return pred
}

// amdahlReason is what Amdahl's law leaves out, said where it misses.
const amdahlReason = "Amdahl's serial fraction is one number per query: a plan that changes with the degree, or cache that more processes bring, moves it"
