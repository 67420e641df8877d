package tpch

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/workload"
)

// sweepPoint is a hand-made point of a two-CPU sweep: times are Q1's and
// Q2's (ms), other the CPUs other work took while it ran (-1: the point
// before it runs, with no metrics).
func sweepPoint(degree int, q1, q2, other float64, workers ...float64) workload.Result {
	r := workload.Result{Combo: fmt.Sprintf("degree=%d", degree), Key: fmt.Sprintf("degree=%d #1", degree), Run: 1,
		Params:    workload.Params{"degree": int64(degree), "scale_factor": 0.3, "instance": "db"},
		Instances: []engine.InstanceConfig{{Name: "db", Engine: "postgres"}},
	}
	if other < 0 {
		return r
	}
	r.Metrics = map[string]float64{"degree": float64(degree), "host_cpus": 2, "other_cpus": other,
		MetricName(1): q1, MetricName(2): q2, "total_s": (q1 + q2) / 1000}
	for i, w := range workers {
		r.Metrics[WorkersName(i+1)] = w
	}
	return r
}

// planProbe is a probe's figures: Q1's and Q2's plans as (workers, serial
// fraction) pairs.
func planProbe(plans ...[2]float64) map[string]float64 {
	p := map[string]float64{}
	for i, pl := range plans {
		p[probePlanWorkers(i+1)], p[probePlanFraction(i+1)] = pl[0], pl[1]
	}
	return p
}

// TestContention: each of k processes gets φ(k) = min(1, C / (m + k)), a
// whole CPU while the threads fit the CPUs; Amdahl's factor slows each
// part by its processes' share; a point's share is its free CPUs over its
// busy processes, at most one, at least the floor.
func TestContention(t *testing.T) {
	t.Parallel()
	quiet, busy := contention{cpus: 2}, contention{cpus: 2, threads: 3}
	for _, tc := range []struct {
		name      string
		got, want float64
	}{
		{"quiet: a process gets a CPU", quiet.share(2), 1},
		{"busy: two processes beside three threads get two fifths each", busy.share(2), 0.4},
		{"unknown CPUs: no contention", contention{threads: 9}.share(1), 1},
		{"quiet Amdahl", quiet.factor(0.2, 2), 0.2 + 0.8/2},
		{"busy Amdahl", busy.factor(0.2, 2), 0.2/0.5 + 0.8/(2*0.4)},
		{"a serial plan: s is moot", busy.factor(0.7, 1), 2},
		{"free CPUs beyond the busy processes", shareOf(1.5, 1), 1},
		{"free CPUs shared by the busy processes", shareOf(0.6, 1.5), 0.4},
		{"fewer busy than one counts as one", shareOf(0.3, 0.5), 0.3},
		{"no CPU free: the floor", shareOf(-0.1, 1), minShare},
	} {
		if math.Abs(tc.got-tc.want) > 1e-12 {
			t.Errorf("%s: %v, want %v", tc.name, tc.got, tc.want)
		}
	}
}

// TestPredictTheFirstParallelDegree: degree 1, with only the serial degree
// before it, is predicted from each query's plan probed before it: a
// parallel plan by its serial fraction on its processes, a serial plan as
// the serial time; the total is their sum. Beside other work each process
// gets its share: half a CPU left at degree 0 is three threads of other
// work, and a parallel plan's two processes get two fifths of a CPU each.
func TestPredictTheFirstParallelDegree(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		other0 float64
		q1, q2 float64
	}{
		{"a quiet machine", 0, 1000 * (0.2 + 0.8/2), 500},
		{"the other work left half a CPU", 1.5, 1000 * 0.5 * (0.2/0.5 + 0.8/(2*0.4)), 500},
	} {
		r := sweepPoint(1, 0, 0, -1)
		r.Probe = planProbe([2]float64{1, 0.2}, [2]float64{0, 1})
		p := Predict(r, []workload.Result{sweepPoint(0, 1000, 500, tc.other0, 0, 0)})
		q1, q2 := p.Metrics[MetricName(1)], p.Metrics[MetricName(2)]
		if math.Abs(q1-tc.q1) > 1e-9 || math.Abs(q2-tc.q2) > 1e-9 || math.Abs(p.Metrics["total_s"]-(tc.q1+tc.q2)/1000) > 1e-12 {
			t.Errorf("%s: Q1 %v, Q2 %v, total %v; want %v, %v and their sum (%s)", tc.name, q1, q2, p.Metrics["total_s"], tc.q1, tc.q2, p.Formula)
		}
	}
}

// TestPredictTakesTheWorkOfTheSamePlan: a query's work is the earlier
// points' where its plan ran on as many processes, whatever degree 0's
// serial plan took (degree 1's parallel Q1 did a seventh of its work);
// where its plan ran on fewer, degree 0's, taken to n by s.
func TestPredictTakesTheWorkOfTheSamePlan(t *testing.T) {
	t.Parallel()
	serial := sweepPoint(0, 7000, 500, 0, 0, 0)
	r := sweepPoint(2, 0, 0, -1)
	r.Probe = planProbe([2]float64{2, 0.1}, [2]float64{2, 0.2})
	p := Predict(r, []workload.Result{serial, sweepPoint(1, 1000, 500, 0, 1, 0)})
	if got, want := p.Metrics[MetricName(1)], 1000.0; math.Abs(got-want) > 1e-9 {
		t.Errorf("Q1 ran on two processes at degree 1: %v, want its time there %v", got, want)
	}
	if got, want := p.Metrics[MetricName(2)], 500*(0.2+0.8/2); math.Abs(got-want) > 1e-9 {
		t.Errorf("Q2's plan was serial at degree 1: %v, want degree 0's taken to two processes %v", got, want)
	}
	if want := "as many processes for 1 queries, degree 0's for 1"; !strings.Contains(p.Formula, want) {
		t.Errorf("formula %q; want it to say %q", p.Formula, want)
	}
}

// TestPredictForecastsThePointBeforesLoad: the other work is the point
// before's, its other_cpus over the share its busy processes got: degree
// 1's Q1 kept two processes busy for 600 of its 1100 ms while the other
// work took 1.5 CPUs, and the reason names that forecast.
func TestPredictForecastsThePointBeforesLoad(t *testing.T) {
	t.Parallel()
	r := sweepPoint(2, 0, 0, -1)
	r.Probe = planProbe([2]float64{2, 0}, [2]float64{0, 1})
	p := Predict(r, []workload.Result{sweepPoint(0, 1000, 500, 0, 0, 0), sweepPoint(1, 600, 500, 1.5, 1, 0)})
	busy := (600*2 + 500*1) / 1100.0
	m := 1.5 / (0.5 / busy)
	c := contention{cpus: 2, threads: m}
	// Q2's serial plan did its work on a CPU of its own at degree 0 and
	// on its share at degree 1.
	work := (500 + 500*c.share(1)) / 2
	if got, want := p.Metrics[MetricName(2)], work/c.share(1); math.Abs(got-want) > 1e-9 {
		t.Errorf("Q2 (serial plan): %v, want %v beside %.2f threads", got, want, m)
	}
	if want := fmt.Sprintf("m = %.1f threads", m); !strings.Contains(p.Formula, want) {
		t.Errorf("formula %q; want it to say %q", p.Formula, want)
	}
	if want := "forecast as the point before's, 1.50 of the 2 CPUs: on a busy machine"; !strings.Contains(p.Reason, want) {
		t.Errorf("reason %q; want it to say %q", p.Reason, want)
	}
}

// TestPredictFitsSWithoutAPlan: a run whose probe read no plan fits s on
// the parallel points before, each against the other work it ran beside;
// with no parallel point before, a parallel plan has no figure.
func TestPredictFitsSWithoutAPlan(t *testing.T) {
	t.Parallel()
	serial := sweepPoint(0, 1000, 500, 0, 0, 0)
	r := sweepPoint(3, 0, 0, -1)
	cpus := []engine.InstanceConfig{{Name: "db", Engine: "postgres", CPUs: "0-3"}}
	r.Instances, serial.Instances = cpus, cpus
	// Degree 1 ran on a quiet machine: Q1's 600 ms on two processes is
	// s = 0.2, which on four is 1000 × (0.2 + 0.8/4).
	degree1 := sweepPoint(1, 600, 500, 0, 1, 0)
	degree1.Instances = cpus
	p := Predict(r, []workload.Result{serial, degree1})
	if got, want := p.Metrics[MetricName(1)], 1000*(0.2+0.8/4); math.Abs(got-want) > 1e-9 {
		t.Errorf("s fitted on degree 1: Q1 %v, want %v (%s)", got, want, p.Formula)
	}
	if _, ok := p.Metrics[MetricName(2)]; ok {
		t.Errorf("Q2 ran serial plans only: no s, yet a figure %v", p.Metrics[MetricName(2)])
	}
	if _, ok := p.Metrics["total_s"]; ok {
		t.Error("a total without every query's figure")
	}
}

// TestPredictNeverReadsItsOwnFigures: the point's own metrics, had it
// any, change nothing: the runner predicts before the point runs, and a
// replay must do the same.
func TestPredictNeverReadsItsOwnFigures(t *testing.T) {
	t.Parallel()
	before := []workload.Result{sweepPoint(0, 1000, 500, 0.5, 0, 0)}
	blank := sweepPoint(1, 0, 0, -1)
	blank.Probe = planProbe([2]float64{1, 0.3}, [2]float64{1, 0.6})
	measured := sweepPoint(1, 1, 1, 1.9, 1, 1)
	measured.Probe = blank.Probe
	a, b := Predict(blank, before), Predict(measured, before)
	if fmt.Sprint(a.Metrics) != fmt.Sprint(b.Metrics) || a.Formula != b.Formula {
		t.Errorf("the point's own figures moved its prediction:\n%v %s\n%v %s", a.Metrics, a.Formula, b.Metrics, b.Formula)
	}
}

// TestParsePlanShape: a Gather's part is costed per participant, so on
// one process it costs the child's cost times PostgreSQL's parallel
// divisor (1.7 for one worker and the leader); what lies outside every
// Gather is the serial fraction.
func TestParsePlanShape(t *testing.T) {
	t.Parallel()
	parallel := `[{"Plan": {"Node Type": "Aggregate", "Total Cost": 2000, "Plans": [
		{"Node Type": "Gather", "Total Cost": 1900, "Workers Planned": 1, "Plans": [
			{"Node Type": "Aggregate", "Total Cost": 1000, "Plans": [{"Node Type": "Seq Scan", "Total Cost": 900}]}]}]}}]`
	shape, err := ParsePlanShape([]byte(parallel))
	if want := (2000.0 - 1000) / (2000 - 1000 + 1700); err != nil || shape.Workers != 1 || math.Abs(shape.SerialFraction-want) > 1e-12 {
		t.Errorf("parallel plan: %+v, %v; want 1 worker, s = %v", shape, err, want)
	}
	shape, err = ParsePlanShape([]byte(`[{"Plan": {"Node Type": "Seq Scan", "Total Cost": 10}}]`))
	if err != nil || shape.Workers != 0 || shape.SerialFraction != 1 {
		t.Errorf("serial plan: %+v, %v; want no worker, s = 1", shape, err)
	}
	if _, err := ParsePlanShape([]byte(`[]`)); err == nil {
		t.Error("no plan read as a shape")
	}
}

// TestProbeDoesNotSpin: before the serial degree the probe has nothing to
// read (no plan to probe), and it no longer spins a thread on every CPU
// for a second to measure the CPUs free: it returns no figure.
func TestProbeDoesNotSpin(t *testing.T) {
	t.Parallel()
	r := sweepPoint(0, 0, 0, -1)
	got, err := Probe(context.Background(), r, nil)
	if err != nil || len(got) != 0 {
		t.Errorf("probe before degree 0: %v, %v; want no figure", got, err)
	}
}
