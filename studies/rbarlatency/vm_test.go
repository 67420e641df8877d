package rbarlatency

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/doctor"
	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/workload"
)

// idleRun is client-row-by-row over loopback, lan-1g and infiniband with
// the CPUs halting (halt µs a row) and with a busy loop on each (spin),
// each run 1 % either side, on a machine whose CPUs idle as idle says.
func idleRun(t *testing.T, halt, spin float64, idle doctor.CPUIdle) *study.RunData {
	t.Helper()
	rd := runData(t)
	for _, net := range vmLinks {
		for _, mode := range []string{"halt", "spin"} {
			us, client := halt, workload.ResolvedClient{Site: "client", GOMAXPROCS: 1}
			if mode == "spin" {
				us, client.Idle = spin, "spin"
			}
			combo := fmt.Sprintf("experiment=client-row-by-row net=%s client_cost=0s idle=%s", net, mode)
			for run, f := range []float64{0.99, 1, 1.01} {
				r := workload.Result{
					Key: fmt.Sprintf("%s #%d", combo, run+1), Combo: combo, Run: run + 1,
					Values:  map[string]any{"experiment": "client-row-by-row", "net": net, "client_cost": fast, "idle": mode},
					Params:  workload.Params{"experiment": "client-row-by-row", "client_cost": fast, "rows": int64(5000)},
					Client:  client,
					Links:   []workload.LinkResult{{Profile: net, Mode: "link", RTTSeconds: rtts[net]}},
					Metrics: map[string]float64{"rows": 5000, "us_per_row": us * f, "seconds": us * f * 5000 / 1e6},
				}
				if mode == "spin" {
					r.IdleLoops = &workload.IdleLoops{CPUs: "0-1", Count: 2, CPUSeconds: 1}
				}
				rd.Results = append(rd.Results, r)
			}
		}
	}
	rd.Summaries = study.Summarize(rd.Results, rd.Plan.Repeat)
	rd.Environment.CPUIdle = &idle
	return rd
}

var haltsAtOnce = doctor.CPUIdle{Driver: "haltpoll", Governor: "haltpoll", HaltPollNs: 0}

// The virtualized client's half of vm-penalty: the time a row the halted
// vCPUs' wake-ups cost, against the seed's 2.5 to 30 µs, both ways; on a
// machine whose CPUs do not halt it is said to be no VM's penalty.
func TestVMPenaltyJudgesTheWakeUpsBothWays(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		halt, spin float64
		idle       doctor.CPUIdle
		want       report.Verdict
		why        string
	}{
		{"the seed's penalty", 250, 240, haltsAtOnce, report.Reproduced, "inside the seed's 2.5 to 30 µs"},
		{"far more than the seed's", 400, 250, haltsAtOnce, report.Differs, "this VM's wake-ups cost a round trip more"},
		{"nothing saved", 50, 50, haltsAtOnce, report.Differs, "few wake-ups were left to save"},
		{"runs across a bound", 250, 220, haltsAtOnce, report.WithinNoise, "two runs of this study could say either"},
		{"CPUs that poll first", 250, 249, doctor.CPUIdle{Driver: "haltpoll", HaltPollNs: 200000}, report.NotMeasured, "do not halt at once (haltpoll: an idle vCPU polls up to 200 µs"},
		{"no cpuidle", 250, 249, doctor.CPUIdle{HaltPollNs: -1}, report.NotMeasured, "do not halt at once (no cpuidle interface)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := judged(t, "vm-penalty", idleRun(t, tt.halt, tt.spin, tt.idle))
			if f.Verdict != tt.want || !strings.Contains(f.Why, tt.why) {
				t.Errorf("verdict %s, why %q\nwant %s with %q", f.Verdict, f.Why, tt.want, tt.why)
			}
			if !strings.Contains(f.Measured, "lan-1g") || !strings.Contains(f.Measured, "infiniband") {
				t.Errorf("measured %q does not give each link", f.Measured)
			}
			// The server-side half stays unmeasured, with its reason.
			if !strings.Contains(f.Why, "neither makes a round trip") {
				t.Errorf("why %q does not say why the server-side penalty is not measured", f.Why)
			}
		})
	}
}

// The spinning points are vm-penalty's alone: the other findings read the
// halting CPUs' points, and no facet is made of them.
func TestSpinningPointsAreNoFacet(t *testing.T) {
	t.Parallel()
	rd := idleRun(t, 250, 240, haltsAtOnce)
	a := newAnalysis(rd)
	if len(a.facets) != 1 {
		t.Errorf("idle made facets %q of the other findings", a.facets)
	}
	if got := a.mean("client-row-by-row", fast, "lan-1g", "us_per_row"); got != 250 {
		t.Errorf("the other findings read %v µs a row over lan-1g, want the halting CPUs' 250", got)
	}
}
