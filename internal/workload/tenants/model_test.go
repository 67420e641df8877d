package tenants

import (
	"math"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/workload"
)

func result(metrics map[string]float64) workload.Result {
	return workload.Result{Metrics: metrics, Instances: []engine.InstanceConfig{{Name: "db-1", Engine: "postgres"}}}
}

func TestModelIsTheClosedLoopUntilTheCPUSaturates(t *testing.T) {
	light := result(map[string]float64{"databases": 10, "think_ms": 18, "response_ms": 2, "cpu_ms_per_tx": 1, "host_cpus": 2, "other_cpus": 0})
	heavy := result(map[string]float64{"databases": 100, "think_ms": 18, "response_ms": 30, "cpu_ms_per_tx": 1.2, "host_cpus": 2, "other_cpus": 0.5})
	for _, tc := range []struct {
		name     string
		r        workload.Result
		all      []workload.Result
		tpm      float64
		resource string
	}{
		// 10 × 60 / 20 ms = 30,000; the CPUs allow 60 × 2 / 1 ms = 120,000.
		{"light", light, nil, 30000, "no resource saturates"},
		// R0 = 2 ms from the light point: 100 × 60 / 20 ms = 300,000; the
		// 2 CPUs allow 60 × 2 / 1.2 ms = 100,000 (other processes' load
		// is not the model's).
		{"heavy", heavy, []workload.Result{light}, 100000, "the CPU is the resource that limits"},
	} {
		p := Model(tc.r, tc.all)
		if math.Abs(p.Metrics["tpm"]-tc.tpm) > 1 || math.Abs(p.Metrics["tpm_per_db"]-tc.tpm/tc.r.Metrics["databases"]) > 0.01 {
			t.Errorf("%s: model %v, want tpm %v", tc.name, p.Metrics, tc.tpm)
		}
		if !strings.Contains(p.Formula, tc.resource) {
			t.Errorf("%s: formula %q does not say %q", tc.name, p.Formula, tc.resource)
		}
	}
	// Another engine's faster responses are not this engine's R0.
	maria := light
	maria.Instances = []engine.InstanceConfig{{Engine: "mariadb"}}
	maria.Metrics = map[string]float64{"databases": 10, "think_ms": 18, "response_ms": 0.1}
	if p := Model(heavy, []workload.Result{maria}); math.Abs(p.Metrics["tpm"]-100000) > 1 {
		t.Errorf("with a MariaDB point before it: %v", p.Metrics)
	}
	// Without the CPU's figures (a target) the loop alone.
	target := result(map[string]float64{"databases": 10, "think_ms": 18, "response_ms": 2})
	if p := Model(target, nil); math.Abs(p.Metrics["tpm"]-30000) > 1 || strings.Contains(p.Formula, "CPU") {
		t.Errorf("target: %v %q", p.Metrics, p.Formula)
	}
	if p := Model(result(map[string]float64{}), nil); p.Metrics != nil {
		t.Errorf("no figures: %v", p)
	}
}
