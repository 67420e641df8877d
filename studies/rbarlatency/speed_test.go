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

// atSpeeds is a run of the server-side experiments on the unix socket at
// cpu_speed 1 and 0.5, each run's time per row as given, beside an
// uncapped point the other findings read.
func atSpeeds(t *testing.T, full, half []float64) *study.RunData {
	t.Helper()
	rd := runData(t)
	add := func(exp, speed string, cpu float64, perRow []float64) {
		combo := fmt.Sprintf("experiment=%s net=unix client_cost=0s server_speed=%s", exp, speed)
		for run, us := range perRow {
			rd.Results = append(rd.Results, workload.Result{
				Key: fmt.Sprintf("%s #%d", combo, run+1), Combo: combo, Run: run + 1,
				Values:    map[string]any{"experiment": exp, "net": "unix", "client_cost": fast, "server_speed": speed},
				Params:    workload.Params{"experiment": exp, "client_cost": fast, "rows": int64(1e6), "instance": "db"},
				Instances: []engine.InstanceConfig{{Name: "db", Engine: "postgres", CPUSpeed: cpu}},
				Links:     []workload.LinkResult{{Profile: "unix", Mode: "unix"}},
				Metrics:   map[string]float64{"rows": 1e6, "us_per_row": us, "seconds": us},
			})
		}
	}
	for _, exp := range []string{"server-loop", "server-cursor"} {
		add(exp, "none", 0, full)
		add(exp, "1", 1, full)
		add(exp, "0.5", 0.5, half)
	}
	rd.Summaries = study.Summarize(rd.Results, rd.Plan.Repeat)
	return rd
}

// The frequency half of vm-penalty: the ratio of time per row at half and
// whole speed against 1/speed's 2.0, every run's ratio inside ±25 %, none,
// or some.
func TestProcessorSpeedFindingSaysEachVerdict(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		full, half []float64
		want       report.Verdict
		why        string
	}{
		{"twice the time at half the speed", []float64{1.0, 1.01, 1.02}, []float64{1.98, 2.0, 2.04}, report.Reproduced, "every run took twice as long per row"},
		{"the quota changed nothing", []float64{1.0, 1.01, 1.02}, []float64{1.0, 1.02, 1.03}, report.Differs, "did not follow 1/speed within ±25 %"},
		{"runs on both sides of the band", []float64{0.7, 1.0, 1.3}, []float64{1.9, 2.0, 2.1}, report.WithinNoise, "two runs of this study could say either"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := judged(t, "vm-penalty", atSpeeds(t, tt.full, tt.half))
			if f.Verdict != tt.want || !strings.Contains(f.Why, tt.why) {
				t.Errorf("verdict %s, why %q\nwant %s with %q", f.Verdict, f.Why, tt.want, tt.why)
			}
			for _, want := range []string{"server-loop", "server-cursor", "at cpu_speed 0.5"} {
				if !strings.Contains(f.Measured, want) {
					t.Errorf("measured %q does not say %q", f.Measured, want)
				}
			}
			// The emulation is said to be one, and the VM half not measured.
			if !strings.Contains(f.Why, "lowers no clock frequency") || !strings.Contains(f.Why, "VM penalty") {
				t.Errorf("why %q does not state the emulation and the unmeasured VM penalty", f.Why)
			}
		})
	}
}

// Without points at the two speeds the finding is not measured and says
// why; the uncapped points stay the other findings' alone.
func TestProcessorSpeedNotMeasuredWithoutSpeedPoints(t *testing.T) {
	t.Parallel()
	rd := runData(t, point{exp: "server-loop", cost: fast, net: "unix", rows: 1e7, metrics: sec(0.5)})
	f := judged(t, "vm-penalty", rd)
	if f.Verdict != report.NotMeasured || !strings.Contains(f.Why, "no server-side point at cpu_speed 1 and 0.5") {
		t.Errorf("verdict %s, why %q; want not measured, saying which points are missing", f.Verdict, f.Why)
	}
	withSpeeds := atSpeeds(t, []float64{0.5, 0.5, 0.5}, []float64{1, 1, 1})
	a := newAnalysis(withSpeeds)
	if len(a.facets) != 1 {
		t.Errorf("the server's speed made facets %q of the other findings", a.facets)
	}
}

// clientAtSpeeds is the seed's slow-client comparison on an emulated
// client: cursor-messages over lan-1g with the client at cpu_speed 1 and
// 0.5 (the model stored at 1.0 and 1.8 s), and an uncapped client over
// lan-1g and infiniband at the given times per row.
func clientAtSpeeds(t *testing.T, full, half []float64, lan, ib float64) *study.RunData {
	t.Helper()
	rd := runData(t,
		point{exp: "cursor-messages", cost: fast, net: "lan-1g", rows: 1e5, metrics: map[string]float64{"us_per_row": lan}},
		point{exp: "cursor-messages", cost: fast, net: "infiniband", rows: 1e5, metrics: map[string]float64{"us_per_row": ib}})
	add := func(speed string, cpu float64, perRow []float64, model float64) {
		combo := "experiment=cursor-messages net=lan-1g client_cost=0s client_speed=" + speed
		for run, us := range perRow {
			rd.Results = append(rd.Results, workload.Result{
				Key: fmt.Sprintf("%s #%d", combo, run+1), Combo: combo, Run: run + 1,
				Values:  map[string]any{"experiment": "cursor-messages", "net": "lan-1g", "client_cost": fast, "client_speed": speed},
				Params:  workload.Params{"experiment": "cursor-messages", "client_cost": fast, "rows": int64(4e4), "instance": "db"},
				Client:  workload.ResolvedClient{GOMAXPROCS: 1, CPUSpeed: cpu},
				Links:   []workload.LinkResult{{Profile: "lan-1g", Mode: "link", RTTSeconds: 0.0002}},
				Metrics: map[string]float64{"rows": 4e4, "us_per_row": us, "seconds": us * 4e4 / 1e6},
				Model:   map[string]float64{"seconds": model},
			})
		}
	}
	add("1", 1, full, 1.0)
	add("0.5", 0.5, half, 1.8)
	rd.Summaries = study.Summarize(rd.Results, rd.Plan.Repeat)
	return rd
}

// The slow-client finding on a client given half a core: its time per row
// against the model's ratio (1.8x here), and against a 40x faster link.
func TestSlowClientSpeedSaysEachVerdict(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		full, half []float64
		ib         float64
		want       report.Verdict
		why        string
	}{
		{"the model's ratio, more than the link", []float64{20, 20.2, 20.4}, []float64{36, 36.4, 36.8}, 19.6, report.Reproduced, "the client's speed at absorbing rows decides"},
		{"no slower at half a core", []float64{20, 20.2, 20.4}, []float64{20, 20.4, 20.8}, 19.6, report.Differs, "did not take the model's 1.80x as long"},
		{"the link decides as much", []float64{20, 20.2, 20.4}, []float64{36, 36.4, 36.8}, 2, report.Differs, "the link decides as much as the client"},
		{"runs on both sides", []float64{14, 20, 26}, []float64{35, 36, 37}, 19.6, report.WithinNoise, "two runs of this study could say either"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := judged(t, "slow-client", clientAtSpeeds(t, tt.full, tt.half, 20, tt.ib))
			if f.Verdict != tt.want || !strings.Contains(f.Why, tt.why) {
				t.Errorf("verdict %s, why %q\nwant %s with %q", f.Verdict, f.Why, tt.want, tt.why)
			}
			if !strings.Contains(f.Measured, "with the client at cpu_speed 0.5 against 1") || !strings.Contains(f.Why, "not a slower clock") {
				t.Errorf("measured %q, why %q: want the emulated client named as one", f.Measured, f.Why)
			}
		})
	}
}
