package tpch

import (
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

// planProbe is a probe's figures: the free CPUs, and Q1's and Q2's plans
// as (workers, serial fraction) pairs.
func planProbe(free float64, plans ...[2]float64) map[string]float64 {
	p := map[string]float64{probeFree: free}
	for i, pl := range plans {
		p[probePlanWorkers(i+1)], p[probePlanFraction(i+1)] = pl[0], pl[1]
	}
	return p
}

// TestPredictTheFirstParallelDegree: degree 1, with only the serial degree
// before it, is predicted from each query's plan probed before it: a
// parallel plan by its serial fraction on its processes, a serial plan as
// the serial time; the total is their sum. The free CPUs cap n: with a
// quarter of a CPU free, no plan gains, and the serial time itself grows
// by the CPUs it had over those it has now.
func TestPredictTheFirstParallelDegree(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name           string
		other0, freeAt float64
		q1, q2         float64
	}{
		{"a quiet machine", 0, 2, 1000 * (0.2 + 0.8/2), 500},
		{"the other work leaves a quarter of a CPU", 0, 0.25, 1000 / 0.25, 500 / 0.25},
		{"it left half a CPU at degree 0, the whole machine now", 1.5, 2, 1000 * 0.5 * (0.2 + 0.8/2), 500 * 0.5},
	} {
		r := sweepPoint(1, 0, 0, -1)
		r.Probe = planProbe(tc.freeAt, [2]float64{1, 0.2}, [2]float64{0, 1})
		p := Predict(r, []workload.Result{sweepPoint(0, 1000, 500, tc.other0, 0, 0)})
		q1, q2 := p.Metrics[MetricName(1)], p.Metrics[MetricName(2)]
		if math.Abs(q1-tc.q1) > 1e-9 || math.Abs(q2-tc.q2) > 1e-9 || math.Abs(p.Metrics["total_s"]-(tc.q1+tc.q2)/1000) > 1e-12 {
			t.Errorf("%s: Q1 %v, Q2 %v, total %v; want %v, %v and their sum", tc.name, q1, q2, p.Metrics["total_s"], tc.q1, tc.q2)
		}
	}
}

// TestPredictFitsSOnTheLoadedPoints: a later degree's serial fraction is
// fitted on the parallel points before it, each against the CPUs free
// while it ran; a point that had one CPU or less free says nothing of s,
// and the plan's fraction stands.
func TestPredictFitsSOnTheLoadedPoints(t *testing.T) {
	t.Parallel()
	serial := sweepPoint(0, 1000, 500, 0, 0, 0)
	r := sweepPoint(2, 0, 0, -1)
	r.Probe = planProbe(2, [2]float64{2, 0.9}, [2]float64{2, 0.9})
	// Degree 1 ran on both CPUs: Q1 took 1000 × (0.2 + 0.8/2), Q2 its
	// serial time with a serial plan.
	quiet := Predict(r, []workload.Result{serial, sweepPoint(1, 600, 500, 0, 1, 0)})
	if got, want := quiet.Metrics[MetricName(1)], 600.0; math.Abs(got-want) > 1e-9 {
		t.Errorf("s fitted on a quiet degree 1: Q1 %v, want %v (s = 0.2 on n = 2)", got, want)
	}
	if got, want := quiet.Metrics[MetricName(2)], 1000*(0.9+0.1/2)*0.5; math.Abs(got-want) > 1e-9 {
		t.Errorf("a serial plan before says nothing of s: Q2 %v, want the plan's %v", got, want)
	}
	// Degree 1 ran with one CPU free: whatever it measured, the plan's s.
	busy := Predict(r, []workload.Result{serial, sweepPoint(1, 3000, 900, 1, 1, 0)})
	if got, want := busy.Metrics[MetricName(1)], 1000*(0.9+0.1/2); math.Abs(got-want) > 1e-9 {
		t.Errorf("s after a degree with one CPU free: Q1 %v, want the plan's %v", got, want)
	}
}

// TestPredictNeverReadsItsOwnFigures: the point's own metrics, had it
// any, change nothing: the runner predicts before the point runs, and a
// replay must do the same.
func TestPredictNeverReadsItsOwnFigures(t *testing.T) {
	t.Parallel()
	before := []workload.Result{sweepPoint(0, 1000, 500, 0.5, 0, 0)}
	blank := sweepPoint(1, 0, 0, -1)
	blank.Probe = planProbe(1.5, [2]float64{1, 0.3}, [2]float64{1, 0.6})
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

// probed is a hand-made point with a probe of the CPUs free before it.
func probed(r workload.Result, free float64) workload.Result {
	r.Probe = planProbe(free)
	return r
}

// TestPredictSetsLikeAgainstLike: F0 and the fit's free CPUs are each
// point's probe, the measure F is, where the point has one; other_cpus
// only where it has none. The probe before degree 0 found half a CPU
// free where other_cpus left two.
func TestPredictSetsLikeAgainstLike(t *testing.T) {
	t.Parallel()
	degree1 := sweepPoint(1, 0, 0, -1)
	degree1.Probe = planProbe(0.5, [2]float64{1, 0.2}, [2]float64{0, 1})
	degree2 := sweepPoint(2, 0, 0, -1)
	degree2.Probe = planProbe(2, [2]float64{2, 0.9}, [2]float64{2, 0.9})
	for _, tc := range []struct {
		name   string
		r      workload.Result
		before []workload.Result
		q1, q2 float64
	}{
		{"F0 is degree 0's probe, as F is the point's: the same half CPU, the same time",
			degree1, []workload.Result{probed(sweepPoint(0, 1000, 500, 0, 0, 0), 0.5)}, 1000, 500},
		{"no probe at degree 0: F0 is what other_cpus left",
			degree1, []workload.Result{sweepPoint(0, 1000, 500, 1.5, 0, 0)}, 1000, 500},
		{"no probe at degree 0, other_cpus left two CPUs: the work is the serial time's",
			degree1, []workload.Result{sweepPoint(0, 1000, 500, 0, 0, 0)}, 2000, 1000},
		// Degree 1 ran with other_cpus at one CPU, but its probe found
		// both free: Q1's 600 ms on two CPUs fits s = 0.2, not the plan's
		// 0.9; Q2's serial plan says nothing of s.
		{"the fit reads each parallel point's probe",
			degree2, []workload.Result{probed(sweepPoint(0, 1000, 500, 0, 0, 0), 2), probed(sweepPoint(1, 600, 500, 1, 1, 0), 2)},
			600, 1000 * (0.9 + 0.1/2) * 0.5},
	} {
		p := Predict(tc.r, tc.before)
		q1, q2 := p.Metrics[MetricName(1)], p.Metrics[MetricName(2)]
		if math.Abs(q1-tc.q1) > 1e-9 || math.Abs(q2-tc.q2) > 1e-9 {
			t.Errorf("%s: Q1 %v, Q2 %v; want %v, %v (%s)", tc.name, q1, q2, tc.q1, tc.q2, p.Formula)
		}
	}
}

// TestPredictSaysASerialPlanIsMoot: a serial plan (n = 1) on a quiet
// machine is counted moot beside the points with at most one CPU free,
// and the formula says both.
func TestPredictSaysASerialPlanIsMoot(t *testing.T) {
	t.Parallel()
	r := sweepPoint(1, 0, 0, -1)
	r.Probe = planProbe(2, [2]float64{1, 0.2}, [2]float64{0, 1})
	p := Predict(r, []workload.Result{sweepPoint(0, 1000, 500, 0, 0, 0)})
	if want := "the plan's for 1, moot for 1 (a serial plan or at most one CPU free)"; !strings.Contains(p.Formula, want) {
		t.Errorf("formula %q; want it to say %q", p.Formula, want)
	}
}
