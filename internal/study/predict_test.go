package study

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
	"github.com/dbrig/dbrig/internal/workload"
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
// configured) and keep its figures as the point's model.
func TestPredictionStoredBeforeThePointRuns(t *testing.T) {
	k := pingKind()
	k.Name, k.Model = "predicted", nil
	k.Predict = func(r workload.Result, before []workload.Result) workload.Prediction {
		m := map[string]float64{"before": float64(len(before)), "had_metrics": float64(len(r.Metrics))}
		if len(r.Links) > 0 {
			m["rtt_s"] = r.Links[0].RTTSeconds
		}
		return workload.Prediction{Metrics: m, Formula: "what Predict saw"}
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
		if r.Model["before"] != float64(i) || r.Model["had_metrics"] != 0 || r.Formula != "what Predict saw" || r.Metrics["queries"] != 1 {
			t.Errorf("point %s: model %v (%q), metrics %v; want %d points before it and none of its own metrics", r.Key, r.Model, r.Formula, r.Metrics, i)
		}
	}
	if rtt := res[1].Model["rtt_s"]; rtt <= 0 || rtt != res[1].Links[0].RTTSeconds {
		t.Errorf("lan-1g: Predict saw an RTT of %v s, the link had %v s", rtt, res[1].Links[0].RTTSeconds)
	}
}
