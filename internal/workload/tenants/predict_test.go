package tenants

import (
	"math"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/workload"
)

// measured is a point of n databases on one PostgreSQL instance with the
// settings given, its figures as the workload records them.
func measured(key string, n int, settings map[string]string, m map[string]float64) workload.Result {
	m["databases"], m["think_ms"], m["host_cpus"] = float64(n), 18, 2
	return workload.Result{Key: key, Combo: key, Params: params(n, map[string]any{"think": "18ms"}), Metrics: m,
		Instances: []engine.InstanceConfig{{Name: "db-1", Engine: "postgres", Settings: settings}}}
}

// planned is a point as the runner hands it to Predict: nothing measured.
func planned(n int, settings map[string]string) workload.Result {
	r := measured("planned", n, settings, map[string]float64{})
	r.Metrics = nil
	return r
}

var (
	flushOn  = map[string]string{"synchronous_commit": "1"}
	flushOff = map[string]string{"synchronous_commit": "0"}
	// light ran below the knee: 10 × 60 / (2 ms + 18 ms + 2 ms) = 27,273.
	light = measured("light", 10, flushOn, map[string]float64{"tpm": 27000, "response_ms": 2, "think_lag_ms": 2,
		"cpu_ms_per_tx": 0.6, "server_cpus": 0.2, "client_cpus": 0.07})
	// busy ran into the CPU: far below 100 × 60 / (2 ms + 21 ms) = 260,870,
	// with 1.0 + 0.2 CPUs busy.
	busy = measured("busy", 100, flushOn, map[string]float64{"tpm": 180000, "response_ms": 12, "think_lag_ms": 3,
		"cpu_ms_per_tx": 0.4, "server_cpus": 1.0, "client_cpus": 0.2})
	// async committed without waiting: its CPU per transaction is its own.
	async = measured("async", 100, flushOff, map[string]float64{"tpm": 200000, "response_ms": 9, "think_lag_ms": 3,
		"cpu_ms_per_tx": 0.3, "server_cpus": 0.9, "client_cpus": 0.1})
)

func TestPredictIsTheClosedLoopOfThePointsBefore(t *testing.T) {
	for _, tc := range []struct {
		name      string
		r         workload.Result
		before    []workload.Result
		tpm, resp float64
		formula   string
	}{
		// R0 2 ms, Z = 18 ms + light's 2 ms of lateness: 50 × 60 / 22 ms
		// = 136,364; the host's 2 CPUs (nothing saturated yet) / light's
		// 0.6 ms allow 200,000.
		{"think-bound", planned(50, flushOn), []workload.Result{light}, 136364, 2, "the host's: no point before it saturated"},
		// 100 databases: busy (same setup, same databases) gives D = 0.4
		// ms and Z = 21 ms; it saturated with 1.2 CPUs busy, so 60 × 1.2
		// / 0.4 ms = 180,000 under the loop's 260,870; R = 100 × 60 /
		// 180,000 − 21 ms = 12.33 ms.
		{"CPU-bound", planned(100, flushOn), []workload.Result{light, busy}, 180000, 12.333, "1.20 CPUs (busy on average at the points before it that the CPU capped, 1 of them"},
		// Commits that do not wait take async's D and lateness (its setup,
		// though busy is later), and the CPUs busy on average where the
		// CPU capped, async's 1.0 and busy's 1.2: 60 × 1.1 / 0.3 ms =
		// 220,000; R = 100 × 60 / 220,000 − 21 ms = 6.27 ms.
		{"nearest setup", planned(100, flushOff), []workload.Result{light, async, busy}, 220000, 6.2727, "/ 300 µs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Predict(tc.r, tc.before)
			if math.Abs(p.Metrics["tpm"]-tc.tpm) > 1 || math.Abs(p.Metrics["tpm_per_db"]-tc.tpm/float64(tc.r.Params.Int("databases"))) > 0.01 {
				t.Errorf("tpm %v, want %.0f", p.Metrics, tc.tpm)
			}
			if math.Abs(p.Metrics["response_ms"]-tc.resp) > 0.01 {
				t.Errorf("response %.3f ms, want %.3f", p.Metrics["response_ms"], tc.resp)
			}
			if !strings.Contains(p.Formula, tc.formula) {
				t.Errorf("formula %q does not say %q", p.Formula, tc.formula)
			}
		})
	}
}

func TestPredictNeedsAPointOfItsEngineBefore(t *testing.T) {
	maria := light
	maria.Instances = []engine.InstanceConfig{{Name: "db-1", Engine: "mariadb"}}
	for name, before := range map[string][]workload.Result{"first": nil, "another engine's": {maria}} {
		p := Predict(planned(50, flushOn), before)
		if p.Metrics != nil || !strings.Contains(p.Reason, "first point on its engine") {
			t.Errorf("%s point before: %v, reason %q", name, p.Metrics, p.Reason)
		}
	}
	// A point on another setup says which respect its CPU per transaction
	// was not measured on.
	if p := Predict(planned(100, flushOff), []workload.Result{light, busy}); !strings.Contains(p.Reason, `setting synchronous_commit "0", not "1"`) {
		t.Errorf("reason %q does not name the setting that differs", p.Reason)
	}
}

func TestThePointsOwnFigureNeverEntersItsPrediction(t *testing.T) {
	predict := Kind().Predict
	if predict == nil {
		t.Fatal("the kind predicts nothing before a point runs")
	}
	var preds []workload.Prediction
	for _, v := range []float64{1, 1e3} {
		// The point's own figures, and an earlier run of its combination
		// that measured the same, set apart by v.
		own := measured("own", 100, flushOn, map[string]float64{"tpm": 1000 * v, "response_ms": v, "think_lag_ms": v,
			"cpu_ms_per_tx": v, "server_cpus": v, "client_cpus": v})
		preds = append(preds, predict(own, []workload.Result{light, busy}))
	}
	if preds[0].Formula != preds[1].Formula || preds[0].Metrics["tpm"] != preds[1].Metrics["tpm"] || !(preds[0].Metrics["tpm"] > 0) {
		t.Errorf("predicted %v and %v as the point measured 1 and 1000: its own figure entered", preds[0].Metrics, preds[1].Metrics)
	}
}
