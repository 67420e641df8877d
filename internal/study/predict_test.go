package study

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
	"github.com/dbrig/dbrig/internal/workload"
	"github.com/dbrig/dbrig/internal/workload/script"
)

const predictedSpec = `name = "predicted"
title = "predicted"
[[instance]]
name = "db"
engine = "postgres"
settings = { fsync = "off" }
[[link]]
between = ["client", "db"]
profile = "${net}"
[workload]
kind = "predicted"
[sweep]
net = ["unix", "lan-1g"]
[repeat]
runs = 1
`

// TestPredictionStoredBeforeThePointRuns runs a kind whose Predict says
// what it saw: the runner must call it before the workload runs (no
// metrics of the point yet, the points before it only, the point's link
// configured, its probe taken on the running servers and kept in the
// result) and keep its figures as the point's model.
func TestPredictionStoredBeforeThePointRuns(t *testing.T) {
	k := pingKind()
	k.Name, k.Model = "predicted", nil
	k.Predict = func(r workload.Result, before []workload.Result) workload.Prediction {
		m := map[string]float64{"before": float64(len(before)), "had_metrics": float64(len(r.Metrics)), "probed": r.Probe["probed"]}
		if len(r.Links) > 0 {
			m["rtt_s"] = r.Links[0].RTTSeconds
		}
		return workload.Prediction{Metrics: m, Formula: "what Predict saw"}
	}
	k.Probe = func(_ context.Context, r workload.Result, env *workload.Env) (map[string]float64, error) {
		if len(r.Metrics) != 0 || env.Instance("db") == nil {
			return map[string]float64{"probed": -1}, nil
		}
		return map[string]float64{"probed": 1}, nil
	}
	reg := NewRegistry(engine.NewRegistry(postgres.New(os.Getenv("DBRIG_PG_BIN"))), []workload.Kind{k})
	s, err := Parse("predicted.toml", []byte(predictedSpec), reg)
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Plan("")
	if err != nil {
		t.Fatal(err)
	}
	pgtest.Binaries(t)
	base, dir := pgtest.BaseDir(t), t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	r := &Runner{Plan: p, Registry: reg, Dir: dir, BaseDir: base, ClientCommand: []string{os.Args[0]}, Version: "test"}
	if _, err := r.Run(ctx); err != nil {
		t.Fatal(err)
	}
	pgtest.WaitNoServers(t, base, 10*time.Second)
	res, err := ReadResults(dir)
	if err != nil || len(res) != 2 {
		t.Fatalf("results: %d, %v", len(res), err)
	}
	for i, r := range res {
		if r.Model["before"] != float64(i) || r.Model["had_metrics"] != 0 || r.Formula != "what Predict saw" || r.Metrics["queries"] != 1 ||
			r.Model["probed"] != 1 || r.Probe["probed"] != 1 {
			t.Errorf("point %s: model %v (%q), metrics %v; want %d points before it and none of its own metrics", r.Key, r.Model, r.Formula, r.Metrics, i)
		}
	}
	if rtt := res[1].Model["rtt_s"]; rtt <= 0 || rtt != res[1].Links[0].RTTSeconds {
		t.Errorf("lan-1g: Predict saw an RTT of %v s, the link had %v s", rtt, res[1].Links[0].RTTSeconds)
	}
}

const scriptSpec = `name = "predicted-script"
title = "tpcb-like through a link"
[[instance]]
name = "db"
engine = "postgres"
settings = { fsync = "off", synchronous_commit = "off" }
[[link]]
between = ["client", "db"]
profile = "loopback"
rtt = "${rtt}"
[workload]
kind = "script"
script = "tpcb-like"
protocol = "prepared"
init = true
users = 1
warm_up = "500ms"
duration = "2s"
[sweep]
rtt = ["0ms", "5ms"]
[repeat]
runs = 1
`

// TestScriptPointPredictedFromTheUnimpairedOne runs the script workload
// without delay, then through 5 ms: the second point carries the model's
// tps, made from the first before it ran, beside its measured tps.
func TestScriptPointPredictedFromTheUnimpairedOne(t *testing.T) {
	reg := NewRegistry(engine.NewRegistry(postgres.New(os.Getenv("DBRIG_PG_BIN"))), []workload.Kind{script.Kind()})
	s, err := Parse("predicted-script.toml", []byte(scriptSpec), reg)
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Plan("")
	if err != nil {
		t.Fatal(err)
	}
	pgtest.Binaries(t)
	base, dir := pgtest.BaseDir(t), t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	r := &Runner{Plan: p, Registry: reg, Dir: dir, BaseDir: base, ClientCommand: []string{os.Args[0]}, Version: "test"}
	if _, err := r.Run(ctx); err != nil {
		t.Fatal(err)
	}
	pgtest.WaitNoServers(t, base, 10*time.Second)
	res, err := ReadResults(dir)
	if err != nil || len(res) != 2 {
		t.Fatalf("results: %d, %v", len(res), err)
	}
	if res[0].Model != nil {
		t.Errorf("the unimpaired point has a model: %v", res[0].Model)
	}
	m := res[1].Model
	if m["tps"] <= 0 || m["tps"] > 1/(7*0.005) || !strings.Contains(res[1].Formula, "calibrated on "+res[0].Key) {
		t.Errorf("5 ms: model %v, %q; want at most %.1f tps from %s", m, res[1].Formula, 1/(7*0.005), res[0].Key)
	}
	t.Logf("%s: measured %.1f tps, model %.1f: %s", res[1].Key, res[1].Metrics["tps"], m["tps"], res[1].Formula)
}
