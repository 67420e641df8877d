package rbarlatency

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/workload"
)

// moveRuns are each run's time per row (µs) of the four points
// same-host-fast-only reads.
type moveRuns struct {
	fastRemote, fastSame, slowRemote, slowSame []float64
}

// clientMoves is a run of both stream experiments at the points that move
// the client: uncapped on the unix socket and over lan-1g (the model's
// parts), the client at cpu_speed 0.5 over lan-1g, and the server at 0.5
// over lan-1g and with the client at 0.5 on the unix socket.
func clientMoves(t *testing.T, r moveRuns) *study.RunData {
	t.Helper()
	rd := runData(t)
	add := func(exp, net, server, client string, perRow []float64) {
		speed := func(v string) float64 {
			if v == "0.5" {
				return halfSpeed
			}
			return 0
		}
		mode := "link"
		if net == "unix" {
			mode = "unix"
		}
		combo := fmt.Sprintf("experiment=%s net=%s client_cost=0s server_speed=%s client_speed=%s", exp, net, server, client)
		for run, us := range perRow {
			rd.Results = append(rd.Results, workload.Result{
				Key: fmt.Sprintf("%s #%d", combo, run+1), Combo: combo, Run: run + 1,
				Values:    map[string]any{"experiment": exp, "net": net, "client_cost": fast, "server_speed": server, "client_speed": client},
				Params:    workload.Params{"experiment": exp, "client_cost": fast, "rows": int64(1e6), "instance": "db"},
				Instances: []engine.InstanceConfig{{Name: "db", Engine: "postgres", CPUSpeed: speed(server)}},
				Client:    workload.ResolvedClient{GOMAXPROCS: 1, CPUSpeed: speed(client)},
				Links:     []workload.LinkResult{{Profile: net, Mode: mode, RTTSeconds: rtts[net], RateBitsPerS: rates[net]}},
				Metrics:   map[string]float64{"rows": 1e6, "us_per_row": us, "seconds": us},
			})
		}
	}
	for _, exp := range moveExps {
		add(exp, "unix", "none", "none", r.fastSame)
		add(exp, "lan-1g", "none", "none", []float64{0.17, 0.17, 0.17})
		add(exp, "lan-1g", "none", "0.5", r.fastRemote)
		add(exp, "lan-1g", "0.5", "none", r.slowRemote)
		add(exp, "unix", "0.5", "0.5", r.slowSame)
	}
	rd.Summaries = study.Summarize(rd.Results, rd.Plan.Repeat)
	return rd
}

// The gain of moving the client onto the server, at a fast and at a slow
// server: larger at the fast one and at most 1.10x at the slow one in
// every pair of runs, the opposite in every pair, or runs on both sides.
func TestSameHostFindingSaysEachVerdict(t *testing.T) {
	t.Parallel()
	same, slowSame := []float64{0.100, 0.101, 0.102}, []float64{0.200, 0.201, 0.202}
	tests := []struct {
		name string
		runs moveRuns
		want report.Verdict
		why  string
	}{
		{"the move pays at the fast server only", moveRuns{[]float64{0.200, 0.202, 0.204}, same, []float64{0.190, 0.195, 0.200}, slowSame},
			report.Reproduced, "gained more at the fast server than at the slow one, where it gained at most 1.10x"},
		{"the move pays at the slow server too", moveRuns{[]float64{0.200, 0.202, 0.204}, same, []float64{0.300, 0.303, 0.306}, slowSame},
			report.Differs, "gained more than 1.10x at the slow one"},
		{"the move hurts at the fast server", moveRuns{[]float64{0.080, 0.081, 0.082}, same, []float64{0.190, 0.195, 0.200}, slowSame},
			report.Differs, "did not gain more at the fast server"},
		{"the slow server's runs on both sides of 1.10x", moveRuns{[]float64{0.200, 0.202, 0.204}, same, []float64{0.180, 0.220, 0.260}, slowSame},
			report.WithinNoise, "two runs of this study could say either"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := judged(t, "same-host-fast-only", clientMoves(t, tt.runs))
			if f.Verdict != tt.want || !strings.Contains(f.Why, tt.why) {
				t.Errorf("verdict %s, why %q\nwant %s with %q\nmeasured: %s", f.Verdict, f.Why, tt.want, tt.why, f.Measured)
			}
			for _, want := range []string{"client-stream: at the fast server", "cursor-messages: at the fast server", "at cpu_speed 0.5"} {
				if !strings.Contains(f.Measured, want) {
					t.Errorf("measured %q does not say %q", f.Measured, want)
				}
			}
			// The model from the uncapped points: 0.17 over lan-1g against
			// 0.101 on the socket, max(2 × 0.101, 0.17) / 0.101.
			if !strings.Contains(f.Model, "client-stream 2.00x at the fast server, at most 1.00x at the slow one") {
				t.Errorf("model %q lacks the gains from the full-speed points", f.Model)
			}
			if !strings.Contains(f.Why, "each under a CFS quota of its own") || f.Spread == "" {
				t.Errorf("why %q, spread %q: want the emulation named and the runs' spread", f.Why, f.Spread)
			}
		})
	}
}

// Without the capped points (the smoke scale, a --target), or where the
// quota did not slow the same host, the finding is not measured and says
// why; the capped points are no facet of the other findings.
func TestSameHostNotMeasuredWithoutItsPoints(t *testing.T) {
	t.Parallel()
	rd := runData(t,
		point{exp: "client-stream", cost: fast, net: "unix", rows: 2e4, metrics: map[string]float64{"us_per_row": 0.1}},
		point{exp: "client-stream", cost: fast, net: "lan-1g", rows: 2e4, metrics: map[string]float64{"us_per_row": 0.17}})
	f := judged(t, "same-host-fast-only", rd)
	if f.Verdict != report.NotMeasured || !strings.Contains(f.Why, "lacks the points that move the client") {
		t.Errorf("verdict %s, why %q; want not measured, naming the points", f.Verdict, f.Why)
	}
	// The quota bound on nothing: the same host at half a core ran as
	// fast as uncapped, so the run holds no slow server.
	unslowed := clientMoves(t, moveRuns{[]float64{0.2, 0.2, 0.2}, []float64{0.1, 0.1, 0.1}, []float64{0.1, 0.1, 0.1}, []float64{0.11, 0.11, 0.11}})
	if f := judged(t, "same-host-fast-only", unslowed); f.Verdict != report.NotMeasured || !strings.Contains(f.Why, "did not make the same host slow") || !strings.Contains(f.Measured, "1.10x its uncapped time") {
		t.Errorf("verdict %s, why %q, measured %q; want not measured: no slow host", f.Verdict, f.Why, f.Measured)
	}
	moves := clientMoves(t, moveRuns{[]float64{0.2, 0.2, 0.2}, []float64{0.1, 0.1, 0.1}, []float64{0.2, 0.2, 0.2}, []float64{0.2, 0.2, 0.2}})
	if a := newAnalysis(moves); len(a.facets) != 1 {
		t.Errorf("the speeds made facets %q of the other findings", a.facets)
	}
}

// Quick and full run the four points of each stream the finding reads;
// smoke, which the suite runs, none.
func TestQuickAndFullMoveTheClient(t *testing.T) {
	t.Parallel()
	spec := runData(t).Spec
	want := []string{
		"net=unix client_cost=0s server_speed=none client_speed=none idle=halt",
		"net=lan-1g client_cost=0s server_speed=none client_speed=0.5 idle=halt",
		"net=lan-1g client_cost=0s server_speed=0.5 client_speed=none idle=halt",
		"net=unix client_cost=0s server_speed=0.5 client_speed=0.5 idle=halt",
	}
	for _, scale := range []string{"quick", "full", "smoke"} {
		plan, err := spec.Plan(scale)
		if err != nil {
			t.Fatal(err)
		}
		keys := map[string]bool{}
		for _, c := range plan.Combos {
			keys[c.Key] = true
		}
		for _, exp := range moveExps {
			for _, w := range want[1:] {
				if has := keys["experiment="+exp+" "+w]; has != (scale != "smoke") {
					t.Errorf("%s: experiment=%s %s planned %v", scale, exp, w, has)
				}
			}
			if scale != "smoke" && !keys["experiment="+exp+" "+want[0]] {
				t.Errorf("%s lacks the fast same-host point of %s", scale, exp)
			}
		}
	}
}
