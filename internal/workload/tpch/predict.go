package tpch

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/idleloop"
	"github.com/dbrig/dbrig/internal/procstat"
	"github.com/dbrig/dbrig/internal/workload"
)

// The prediction, made before a point runs. A query's serial run did W =
// t0 × min(1, F0) CPU-seconds of work, t0 its time at degree 0 and F0 the
// CPUs the machine's other work left the server then (one process uses at
// most one). At the point's degree its serial part s runs on one process
// and the rest on its plan's n processes, each part at most as fast as
// the CPUs free now, F:
//
//	time = t0 × min(1, F0) × (s / min(1, F) + (1 − s) / min(n, F))
//
// Amdahl's law with n capped at the CPUs the other work leaves, which on a
// busy machine is what a degree gains or loses. F is probed just before
// the point (a busy thread pinned to each of the server's CPUs for a
// second: the scheduler shares the CPUs between sessions first, so F is
// the share a degree's processes would get). F0 is the same measure,
// probed before the serial point, and so is each parallel point's in the
// fit of s: the CPUs the other work left while the streams ran (from
// /proc/stat) say up to three times more than the probe of the same
// moment on a busy machine, so only a run without probes falls back to
// them. n is the workers the query's plan asks for at the point's degree
// and the leader, read from EXPLAIN just before the point. s is fitted on
// the parallel points before it, each set against its own free CPUs;
// before any parallel point, it is the plan's: the share of the plan's
// cost, counted as one process would spend it, outside its Gathers'
// parallel parts. The total is the sum of the queries'.

// probeSpin is how long the busy threads measure the free CPUs.
const probeSpin = time.Second

// minFree keeps a machine whose other work took every CPU from dividing by
// zero: the server still gets a scheduler's slice.
const minFree = 0.05

// Names of the probe's figures.
const probeFree = "free_cpus"

func probePlanWorkers(q int) string  { return fmt.Sprintf("q%02d_plan_workers", q) }
func probePlanFraction(q int) string { return fmt.Sprintf("q%02d_plan_serial_fraction", q) }

// Probe measures, just before a point, what its prediction needs of the
// moment: the CPUs the machine's other work leaves (not on a target, whose
// host is not this one) and, at a parallel degree, each query's plan.
func Probe(ctx context.Context, r workload.Result, env *workload.Env) (map[string]float64, error) {
	w, err := newWorkload(r.Params)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
	if r.Instance().Target == "" {
		cpus := pinnedCPUs(r)
		if cpus == nil {
			if cpus, err = idleloop.AllowedCPUs(); err != nil {
				return nil, err
			}
		}
		free, err := procstat.FreeCPUs(ctx, cpus, probeSpin)
		if err != nil {
			return nil, err
		}
		out[probeFree] = free
	}
	if w.(*tpch).degree == 0 {
		return out, nil
	}
	return out, w.(*tpch).probePlans(ctx, env, out)
}

// probePlans explains each query at the point's degree.
func (w *tpch) probePlans(ctx context.Context, env *workload.Env, out map[string]float64) error {
	ep, err := env.Conn(env.ClientSite, w.instance, env.Database)
	if err != nil {
		return err
	}
	queries, err := w.queriesFor(ep.Conn.Engine, w.sf, w.selected)
	if err != nil {
		return err
	}
	s, err := openSession(ctx, env.Engines, ep.Conn)
	if err != nil {
		return err
	}
	defer s.close(ctx)
	if !s.dialect.ParallelQuery {
		return nil
	}
	if _, _, err := w.settle(ctx, s); err != nil {
		return err
	}
	for _, q := range queries {
		shape, err := s.planShape(ctx, q.SQL)
		if err != nil {
			return fmt.Errorf("EXPLAIN %s: %w", q.Name(), err)
		}
		out[probePlanWorkers(q.N)] = float64(shape.Workers)
		out[probePlanFraction(q.N)] = shape.SerialFraction
	}
	return nil
}

// serverCPUs is how many CPUs the server may use: those it is pinned to,
// else the host's (as a point measured them); 0 when unknown (a target).
func serverCPUs(r workload.Result, host float64) float64 {
	if list := pinnedCPUs(r); list != nil {
		return float64(len(list))
	}
	if r.Instance().Target != "" {
		return 0
	}
	return host
}

// pinnedCPUs is the CPUs the server is pinned to; nil when it is not.
func pinnedCPUs(r workload.Result) []int {
	if in := r.Instance(); in.CPUs != "" {
		if list, err := engine.ParseCPUList(in.CPUs); err == nil && len(list) > 0 {
			return list
		}
	}
	return nil
}

// loadedSweep is what a prediction reads of the points before it.
type loadedSweep struct {
	cpus   float64 // the server's CPUs, 0 when unknown
	serial []point // degree 0
	others []point // the parallel degrees
	free0  float64 // the CPUs free at the serial points
}

// freeDuring is the CPUs free for a point: its probe's, F's own measure,
// so that F0 and the fit set like against like; else, in a run without
// probes, the CPUs the other work left while its streams ran; +Inf when
// neither was measured (no cap).
func (l loadedSweep) freeDuring(p point) float64 {
	if f, ok := p.r.Probe[probeFree]; ok {
		return max(f, minFree)
	}
	other, ok := p.r.Metrics["other_cpus"]
	if !ok || l.cpus <= 0 {
		return math.Inf(1)
	}
	return max(l.cpus-other, minFree)
}

// freeNow is the CPUs free just before the point: its probe's, else the
// latest point's before it.
func (l loadedSweep) freeNow(r workload.Result, before []point) (float64, string) {
	if f, ok := r.Probe[probeFree]; ok {
		return max(f, minFree), "probed just before the point"
	}
	if len(before) > 0 {
		return l.freeDuring(before[len(before)-1]), "the point before's (no probe of its own)"
	}
	return math.Inf(1), "not measured"
}

// Predict is the model above, before the point runs, from the points of
// its sweep measured before it and its probe; never from its own figures.
func Predict(r workload.Result, before []workload.Result) workload.Prediction {
	ps := sweepOf(r, before)
	l := loadedSweep{}
	for _, p := range ps {
		l.cpus = serverCPUs(r, p.r.Metrics["host_cpus"])
		if p.degree == 0 {
			l.serial = append(l.serial, p)
		} else {
			l.others = append(l.others, p)
		}
	}
	if len(l.serial) == 0 {
		return workload.Prediction{Reason: "no prediction: Amdahl needs the serial time (degree 0) measured before the point"}
	}
	var sum float64
	for _, p := range l.serial {
		sum += min(1, l.freeDuring(p))
	}
	l.free0 = sum / float64(len(l.serial))
	free, freeFrom := l.freeNow(r, ps)
	degree := int(r.Params.Int("degree"))
	pred := workload.Prediction{Metrics: map[string]float64{}}
	var total float64
	complete, used := true, map[string]int{}
	for q := 1; q <= NumQueries; q++ {
		t0 := serialMean(l.serial, MetricName(q))
		if t0 == 0 {
			continue
		}
		n := l.processes(r, q, degree)
		s, how := l.serialFraction(r, q, t0, n)
		if min(n, free) <= 1 {
			// One process's worth of CPU at most: the serial and the
			// parallel part run alike, whatever s.
			s, how = 1, "moot"
		}
		if how == "" {
			complete = false
			continue
		}
		used[how]++
		v := t0 * l.free0 * (s/min(1, free) + (1-s)/min(n, free))
		pred.Metrics[MetricName(q)] = v
		pred.Metrics[FractionName(MetricName(q))] = s
		total += v
	}
	if len(pred.Metrics) == 0 {
		return workload.Prediction{Reason: "no prediction: no query has a serial fraction yet (no parallel point before it, and no plan probed before it)"}
	}
	if complete {
		pred.Metrics["total_s"] = total / 1000
	}
	pred.Formula = fmt.Sprintf("time = t0 × min(1, F0) × (s/min(1, F) + (1 − s)/min(n, F)) per query, the total their sum; F = %.2f CPUs free (%s), F0 = %.2f at degree 0; n the plan's workers and the leader at degree %d, at most %g CPUs; s fitted on the parallel points before for %d queries, the plan's for %d, moot for %d (a serial plan or at most one CPU free)",
		free, freeFrom, l.free0, degree, l.cpus, used["fit"], used["plan"], used["moot"])
	pred.Reason = loadReason
	return pred
}

// loadReason is what the prediction leaves out, said where it misses.
const loadReason = "the CPUs free are probed for a second before the point: the machine's other work changes them while the streams run; a plan's cost is the planner's estimate, not its time"

// serialMean is a metric's mean over the serial points, 0 when none has it.
func serialMean(serial []point, metric string) float64 {
	_, _, means := byDegree(serial, metric)
	if len(means) == 0 {
		return 0
	}
	return means[0]
}

// processes is n for query q at the point's degree: its plan's workers
// and the leader, at most the server's CPUs. The plan is the probe's, else
// an earlier point's at the same degree, else the degree's own.
func (l loadedSweep) processes(r workload.Result, q, degree int) float64 {
	w, planned := r.Probe[probePlanWorkers(q)]
	if !planned {
		for _, p := range l.others {
			if pw, ok := p.r.Metrics[WorkersName(q)]; ok && p.degree == degree {
				w, planned = pw, true
			}
		}
	}
	return l.processesFor(degree, w, planned)
}

// processesFor is n at a degree: the plan's workers and the leader where
// the plan is known, else the degree's; at most the server's CPUs.
func (l loadedSweep) processesFor(degree int, workers float64, planned bool) float64 {
	n := float64(degree + 1)
	if planned {
		n = workers + 1
	}
	if l.cpus > 0 {
		n = min(n, l.cpus)
	}
	return max(n, 1)
}

// serialFraction is s for query q: fitted on the parallel points before
// the point, each against the CPUs free while it ran, where any of them
// tells (its plan ran in parallel with more than one process's worth of
// CPU free); else the probed plan's. how is "fit", "plan" or "" (none).
func (l loadedSweep) serialFraction(r workload.Result, q int, t0, n float64) (s float64, how string) {
	work := t0 * l.free0
	var num, den float64
	for _, p := range l.others {
		t, ok := p.r.Metrics[MetricName(q)]
		if !ok || work <= 0 {
			continue
		}
		w, planned := p.r.Metrics[WorkersName(q)]
		np := l.processesFor(p.degree, w, planned)
		f := l.freeDuring(p)
		a, b := 1/min(1, f), 1/min(np, f)
		if a-b < 0.05*a {
			continue // a serial plan, or no CPU beyond one free: says nothing of s
		}
		num += (a - b) * (t/work - b)
		den += (a - b) * (a - b)
	}
	if den > 0 {
		return min(max(num/den, 0), 1), "fit"
	}
	if v, ok := r.Probe[probePlanFraction(q)]; ok {
		return v, "plan"
	}
	return 0, ""
}
