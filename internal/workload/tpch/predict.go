package tpch

import (
	"context"
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/workload"
)

// The prediction, made before a point runs. The scheduler gives every
// runnable thread of the machine an equal share of its C CPUs, so beside m
// threads of other work each of k server processes gets
//
//	φ(k) = min(1, C / (m + k))
//
// of a CPU, and a query whose serial part is a fraction s of its work W
// (CPU-seconds, one process's time on a CPU of its own) takes
//
//	time = W × (s / φ(1) + (1 − s) / (n × φ(n)))
//
// Amdahl's law with each process slowed to its share: on a quiet machine
// (m = 0) it is Amdahl's own; on a busy one a plan on n processes gets n
// shares where a serial plan gets one, which is what the runs measured (on
// two CPUs beside 5 to 16 other threads a parallel plan's processes took
// 1.6 to 2.7 times the CPU a serial plan's one did in the same point, by
// the server's CPU each second).
// m is measured on the point before: the other work's CPUs while its
// streams ran (other_cpus) over the share one of its processes got (the
// CPUs left to the server over the processes its queries kept busy, each
// query's plan's workers and the leader weighted by its time): a second's
// load just before the point moved threefold within a point on a busy
// machine, so the point before's minutes are the forecast. n is the workers the
// query's plan asks for at the point's degree and the leader, read from
// EXPLAIN just before the point, at most the CPUs. W is each earlier point's
// time where the query's plan ran on n processes too, over its own factor
// (a plan changes with the degree: Q4's parallel plan does a seventh of
// its serial plan's work), else degree 0's. s is the plan's (the share of
// its cost, counted as one process would spend it, outside its Gathers'
// parallel parts), else fitted on the parallel points before; moot on one
// process. The total is the sum of the queries'.

func probePlanWorkers(q int) string  { return fmt.Sprintf("q%02d_plan_workers", q) }
func probePlanFraction(q int) string { return fmt.Sprintf("q%02d_plan_serial_fraction", q) }

// Probe reads, just before a point at a parallel degree, what its
// prediction needs of the moment: each query's plan at that degree. The
// other work's load comes from the point before (other_cpus), not from
// the moment: a second's spin on every CPU cost each point a second of
// the machine and forecast its minutes worse.
func Probe(ctx context.Context, r workload.Result, env *workload.Env) (map[string]float64, error) {
	w, err := newWorkload(r.Params)
	if err != nil {
		return nil, err
	}
	out := map[string]float64{}
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
	points []point // the sweep's points before it, in the order they ran
	serial []point // degree 0
	others []point // the parallel degrees
}

// Predict is the model above, before the point runs, from the points of
// its sweep measured before it and its probe; never from its own figures.
func Predict(r workload.Result, before []workload.Result) workload.Prediction {
	l := loadedSweep{points: sweepOf(r, before)}
	for _, p := range l.points {
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
	now, nowFrom := l.contentionNow()
	degree := int(r.Params.Int("degree"))
	pred := workload.Prediction{Metrics: map[string]float64{}}
	var total float64
	complete, used := true, map[string]int{}
	for q := 1; q <= NumQueries; q++ {
		if len(l.withTime(q)) == 0 {
			continue // not in the stream
		}
		n := l.processes(r, q, degree)
		s, how := l.serialFraction(r, q, n)
		work, base := l.work(q, n, s)
		if how == "" || work == 0 {
			complete = false
			continue
		}
		used[how]++
		used[base]++
		v := work * now.factor(s, n)
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
	pred.Formula = fmt.Sprintf("time = W × (s/φ(1) + (1 − s)/(n × φ(n))) per query, the total their sum; φ(k) = min(1, C/(m + k)), one of k processes' share of C = %g CPUs beside m = %.1f threads of other work (%s); n the plan's workers and the leader at degree %d; W the work on the earlier points whose plan ran on as many processes for %d queries, degree 0's for %d; s the plan's for %d, fitted on the parallel points before for %d, moot for %d (one process)",
		l.cpus, now.threads, nowFrom, degree, used[baseSame], used[baseSerial], used["plan"], used["fit"], used["moot"])
	pred.Reason = l.loadReason()
	return pred
}

// loadReason is what the prediction leaves out, said where it misses: the
// load it forecast, beside which the report shows the point's own
// other_cpus.
func (l loadedSweep) loadReason() string {
	last := l.points[len(l.points)-1]
	forecast := "the other work was not measured"
	if other, ok := last.r.Metrics["other_cpus"]; ok {
		forecast = fmt.Sprintf("the other work is forecast as the point before's, %.2f of the %g CPUs", other, l.cpus)
	}
	return forecast + ": on a busy machine it changes while the streams run, and every query moves with it (the point's own is its other_cpus); the first parallel degree's plans are read from EXPLAIN, whose costs do not foresee a parallel plan that does less or more work than the serial one (Q4 a seventh, Q5 1.6 to 1.9 times at degree 1 on every run here)"
}

// contentionNow is the other work the point will run beside: the latest
// point's before it.
func (l loadedSweep) contentionNow() (contention, string) {
	last := l.points[len(l.points)-1]
	if c, ok := l.contentionDuring(last); ok {
		return c, fmt.Sprintf("measured on degree %d's point before, its other_cpus over the share its processes got", last.degree)
	}
	return contention{}, "not measured: no contention"
}

// contentionDuring is the other work a point ran beside: its CPUs over the
// share one of the server's processes got, the CPUs the other work left
// over the processes the point's queries kept busy. ok is false when the
// point did not measure the other work (a target's host is not ours).
func (l loadedSweep) contentionDuring(p point) (contention, bool) {
	other, ok := p.r.Metrics["other_cpus"]
	if !ok || l.cpus <= 0 {
		return contention{}, false
	}
	share := shareOf(l.cpus-other, l.busyProcesses(p))
	return contention{cpus: l.cpus, threads: other / share}, true
}

// busyProcesses is the processes a point's queries kept busy on average:
// each query's plan's workers and the leader, at most the CPUs, weighted
// by its time.
func (l loadedSweep) busyProcesses(p point) float64 {
	var sum, weighted float64
	for q := 1; q <= NumQueries; q++ {
		t, ok := p.r.Metrics[MetricName(q)]
		if !ok || math.IsNaN(t) {
			continue
		}
		sum += t
		weighted += t * l.processesAt(p, q)
	}
	if sum <= 0 {
		return 1
	}
	return weighted / sum
}

// processesAt is n for query q on an earlier point: its plan's workers
// and the leader, as the point recorded them.
func (l loadedSweep) processesAt(p point, q int) float64 {
	w, planned := p.r.Metrics[WorkersName(q)]
	return l.processesFor(p.degree, w, planned)
}

// withTime is the points that measured query q.
func (l loadedSweep) withTime(q int) []point {
	var out []point
	for _, p := range l.points {
		if t, ok := p.r.Metrics[MetricName(q)]; ok && !math.IsNaN(t) && t > 0 {
			out = append(out, p)
		}
	}
	return out
}

// Where a query's work W comes from.
const (
	baseSame   = "same"   // the earlier points whose plan ran on n processes
	baseSerial = "serial" // degree 0's
)

// work is W for query q on n processes at serial fraction s: the mean of
// what the earlier points where its plan ran on n processes too imply,
// each over its own factor; where none did, degree 0's (0 when none
// measured it).
func (l loadedSweep) work(q int, n, s float64) (float64, string) {
	var same, serial []float64
	for _, p := range l.withTime(q) {
		c, _ := l.contentionDuring(p)
		np := l.processesAt(p, q)
		w := p.r.Metrics[MetricName(q)] / c.factor(s, np)
		if np == n {
			same = append(same, w)
		}
		if p.degree == 0 {
			serial = append(serial, w)
		}
	}
	if len(same) > 0 {
		return stat.Mean(same, nil), baseSame
	}
	if len(serial) > 0 {
		return stat.Mean(serial, nil), baseSerial
	}
	return 0, ""
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

// serialFraction is s for query q on n processes: moot on one; else the
// plan's, probed before the point; else fitted on the parallel points
// before it, each against the other work it ran beside, where any of them
// tells (its plan ran on more processes than one). how is "moot", "plan",
// "fit" or "" (none).
func (l loadedSweep) serialFraction(r workload.Result, q int, n float64) (s float64, how string) {
	if n <= 1 {
		return 1, "moot"
	}
	if v, ok := r.Probe[probePlanFraction(q)]; ok {
		return v, "plan"
	}
	work, _ := l.work(q, 1, 1)
	var num, den float64
	for _, p := range l.others {
		t, ok := p.r.Metrics[MetricName(q)]
		np := l.processesAt(p, q)
		if !ok || work <= 0 || np <= 1 {
			continue
		}
		c, _ := l.contentionDuring(p)
		a, b := c.factor(1, np), c.factor(0, np)
		num += (a - b) * (t/work - b)
		den += (a - b) * (a - b)
	}
	if den > 0 {
		return min(max(num/den, 0), 1), "fit"
	}
	return 0, ""
}
