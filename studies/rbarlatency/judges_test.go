package rbarlatency

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/mariadb"
	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/monitor"
	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/workload"
	"github.com/dbrig/dbrig/internal/workload/rbar"
)

// point is one hand-made combination: three runs of the same metrics
// (spread ±1 % unless spread says), with the model the runner would have
// stored.
type point struct {
	exp, cost, net string
	rows           float64
	metrics, model map[string]float64
	serverCPU      float64 // the server's busy CPUs, when sampled
	spread         float64 // the runs' spread either side of the mean; 0 = 1 %
}

var rtts = map[string]float64{"unix": 0, "direct": 0, "lan-1g": 0.0002, "lan-2x1g": 0.0002, "infiniband": 0.00002, "rtt-1ms": 0.001, "rtt-77ms": 0.077}

// rates are the links' rates (each member's, for a bond).
var rates = map[string]float64{"lan-1g": 1e9, "lan-2x1g": 1e9, "infiniband": 40e9, "rtt-1ms": 1e9, "rtt-77ms": 1e9}

func runData(t *testing.T, pts ...point) *study.RunData {
	t.Helper()
	reg := study.NewRegistry(engine.NewRegistry(postgres.New(""), mariadb.New("")), []workload.Kind{rbar.Kind()}, Study())
	spec, err := study.Parse("rbar-latency.toml", file, reg)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := spec.Plan("quick")
	if err != nil {
		t.Fatal(err)
	}
	var results []workload.Result
	for _, p := range pts {
		mode := "link"
		if p.net == "unix" || p.net == "direct" {
			mode = p.net
		}
		combo := "experiment=" + p.exp + " net=" + p.net + " client_cost=" + p.cost
		sp := p.spread
		if sp == 0 {
			sp = 0.01
		}
		for run, f := range []float64{1 - sp, 1, 1 + sp} {
			m := map[string]float64{"rows": p.rows}
			for k, v := range p.metrics {
				m[k] = v * f
			}
			results = append(results, workload.Result{
				Key: combo + " #" + string(rune('1'+run)), Combo: combo, Run: run + 1,
				Values:  map[string]any{"experiment": p.exp, "net": p.net, "client_cost": p.cost},
				Params:  workload.Params{"experiment": p.exp, "client_cost": p.cost, "rows": int64(p.rows)},
				Links:   []workload.LinkResult{{Profile: p.net, Mode: mode, RTTSeconds: rtts[p.net], RateBitsPerS: rates[p.net]}},
				Metrics: m, Model: p.model, Monitor: monitorOf(p.serverCPU),
			})
		}
	}
	return &study.RunData{Spec: spec, Plan: plan, Results: results, Summaries: study.Summarize(results, plan.Repeat)}
}

func judged(t *testing.T, id string, rd *study.RunData) report.Finding {
	t.Helper()
	p, ok := rd.Spec.PublishedByID(id)
	if !ok {
		t.Fatalf("the study has no finding %q", id)
	}
	return Judges()[id](rd, p)
}

func sec(s float64) map[string]float64 { return map[string]float64{"seconds": s} }

func TestJudgesSayBothVerdicts(t *testing.T) {
	tests := []struct {
		id     string
		points []point
		want   report.Verdict
	}{
		{"server-side-no-network", []point{
			{exp: "server-loop", cost: fast, net: "unix", rows: 1e7, metrics: sec(0.50)},
			{exp: "server-loop", cost: fast, net: "rtt-77ms", rows: 1e7, metrics: sec(0.58)},
		}, report.Reproduced},
		{"server-side-no-network", []point{ // a round trip per thousand rows: the network decides
			{exp: "server-loop", cost: fast, net: "unix", rows: 1e7, metrics: sec(0.50)},
			{exp: "server-loop", cost: fast, net: "rtt-77ms", rows: 1e7, metrics: sec(770)},
		}, report.Differs},
		{"infiniband-stream", []point{
			{exp: "client-stream", cost: fast, net: "lan-1g", rows: 5e6, metrics: sec(4.0), model: sec(3.9)},
			{exp: "client-stream", cost: fast, net: "infiniband", rows: 5e6, metrics: sec(3.7), model: sec(3.6)},
		}, report.Reproduced},
		{"infiniband-stream", []point{
			{exp: "client-stream", cost: fast, net: "lan-1g", rows: 5e6, metrics: sec(4.0), model: sec(3.9)},
			{exp: "client-stream", cost: fast, net: "infiniband", rows: 5e6, metrics: sec(1.0), model: sec(1.1)},
		}, report.Differs},
		{"infiniband-resultsets", []point{
			{exp: "cursor-messages", cost: fast, net: "lan-1g", rows: 1e5, metrics: sec(2.0)},
			{exp: "cursor-messages", cost: fast, net: "infiniband", rows: 1e5, metrics: sec(1.97)},
		}, report.Reproduced},
		{"infiniband-resultsets", []point{
			{exp: "cursor-messages", cost: fast, net: "lan-1g", rows: 1e5, metrics: sec(2.0)},
			{exp: "cursor-messages", cost: fast, net: "infiniband", rows: 1e5, metrics: sec(2.8)},
		}, report.Differs},
		{"infiniband-resultsets", []point{ // slower by 5 %, beyond the runs' spread: was reproduced, sign unseen
			{exp: "cursor-messages", cost: fast, net: "lan-1g", rows: 1e5, metrics: sec(2.0)},
			{exp: "cursor-messages", cost: fast, net: "infiniband", rows: 1e5, metrics: sec(2.1)},
		}, report.Differs},
		{"infiniband-resultsets", []point{ // slower by 1 %, the runs overlap
			{exp: "cursor-messages", cost: fast, net: "lan-1g", rows: 1e5, metrics: sec(2.0)},
			{exp: "cursor-messages", cost: fast, net: "infiniband", rows: 1e5, metrics: sec(2.01)},
		}, report.WithinNoise},
		{"round-trip-per-row", []point{
			{exp: "client-row-by-row", cost: fast, net: "unix", rows: 2e4, metrics: map[string]float64{"us_per_row": 30}, model: map[string]float64{"us_per_row": 30}},
			{exp: "client-row-by-row", cost: fast, net: "rtt-77ms", rows: 20, metrics: map[string]float64{"us_per_row": 77200}, model: map[string]float64{"us_per_row": 77064}},
		}, report.Reproduced},
		{"round-trip-per-row", []point{
			{exp: "client-row-by-row", cost: fast, net: "unix", rows: 2e4, metrics: map[string]float64{"us_per_row": 30}, model: map[string]float64{"us_per_row": 30}},
			{exp: "client-row-by-row", cost: fast, net: "rtt-77ms", rows: 20, metrics: map[string]float64{"us_per_row": 160000}, model: map[string]float64{"us_per_row": 77064}},
		}, report.Differs},
		{"slow-client", []point{
			{exp: "cursor-messages", cost: fast, net: "lan-1g", rows: 1e5, metrics: map[string]float64{"us_per_row": 20}},
			{exp: "cursor-messages", cost: "25us", net: "lan-1g", rows: 4e4, metrics: map[string]float64{"us_per_row": 46}},
			{exp: "cursor-messages", cost: fast, net: "infiniband", rows: 1e5, metrics: map[string]float64{"us_per_row": 19.6}},
		}, report.NotMeasured}, // the client's cost is dbrig's own setting: it shows, and confirms nothing
		{"slow-client", []point{ // the client's 25 µs hardly shows: something else decides
			{exp: "cursor-messages", cost: fast, net: "lan-1g", rows: 1e5, metrics: map[string]float64{"us_per_row": 200}},
			{exp: "cursor-messages", cost: "25us", net: "lan-1g", rows: 4e4, metrics: map[string]float64{"us_per_row": 210}},
			{exp: "cursor-messages", cost: fast, net: "infiniband", rows: 1e5, metrics: map[string]float64{"us_per_row": 100}},
		}, report.Differs},
		{"wide-rows-1g", []point{
			{exp: "wide-rows", cost: fast, net: "direct", rows: 2e4, metrics: map[string]float64{"throughput_bps": 7e9}},
			{exp: "wide-rows", cost: fast, net: "lan-1g", rows: 2e4, metrics: map[string]float64{"throughput_bps": 0.98e9}, model: map[string]float64{"throughput_bps": 0.999e9}},
		}, report.Reproduced},
		{"wide-rows-1g", []point{
			{exp: "wide-rows", cost: fast, net: "direct", rows: 2e4, metrics: map[string]float64{"throughput_bps": 7e9}},
			{exp: "wide-rows", cost: fast, net: "lan-1g", rows: 2e4, metrics: map[string]float64{"throughput_bps": 0.4e9}, model: map[string]float64{"throughput_bps": 0.999e9}},
		}, report.Differs},
		{"wide-rows-consumer", []point{
			{exp: "wide-rows", cost: fast, net: "direct", rows: 2e4, metrics: map[string]float64{"throughput_bps": 7e9}},
			{exp: "wide-rows", cost: fast, net: "infiniband", rows: 2e4, metrics: map[string]float64{"throughput_bps": 6.5e9}},
		}, report.Reproduced},
		{"wide-rows-consumer", []point{
			{exp: "wide-rows", cost: fast, net: "direct", rows: 2e4, metrics: map[string]float64{"throughput_bps": 7e9}},
			{exp: "wide-rows", cost: fast, net: "infiniband", rows: 2e4, metrics: map[string]float64{"throughput_bps": 1.3e9}},
		}, report.Differs},
		{"wide-rows-consumer", []point{ // the server's one process was the bound without a link: was "the consumer decides"
			{exp: "wide-rows", cost: fast, net: "direct", rows: 2e4, metrics: map[string]float64{"throughput_bps": 7e9}, serverCPU: 0.98},
			{exp: "wide-rows", cost: fast, net: "infiniband", rows: 2e4, metrics: map[string]float64{"throughput_bps": 6.5e9}},
		}, report.NotMeasured},
		{"wide-rows-consumer", []point{ // the server had CPU to spare: the consumer decides
			{exp: "wide-rows", cost: fast, net: "direct", rows: 2e4, metrics: map[string]float64{"throughput_bps": 7e9}, serverCPU: 0.4},
			{exp: "wide-rows", cost: fast, net: "infiniband", rows: 2e4, metrics: map[string]float64{"throughput_bps": 6.5e9}},
		}, report.Reproduced},
	}
	for _, tt := range tests {
		t.Run(tt.id+"/"+string(tt.want), func(t *testing.T) {
			f := judged(t, tt.id, runData(t, tt.points...))
			if f.Verdict != tt.want {
				t.Errorf("verdict %q, want %q\nmeasured: %s\nwhy: %s", f.Verdict, tt.want, f.Measured, f.Why)
			}
			if f.Spread == "" {
				t.Errorf("no spread shown beside the verdict: %+v", f)
			}
		})
	}
}

// The bond's finding, each answer from hand-made wide-rows streams over one
// 1 Gbit/s member and over the 2 x 1 Gbit/s bond.
func TestBondJudgeSaysEachVerdict(t *testing.T) {
	wide := func(net string, bps, spread float64) point {
		return point{exp: "wide-rows", cost: fast, net: net, rows: 2e4, spread: spread,
			metrics: map[string]float64{"throughput_bps": bps}}
	}
	for _, tt := range []struct {
		name      string
		one, bond point
		want      report.Verdict
	}{
		{"the member's rate caps both", wide("lan-1g", 0.95e9, 0), wide("lan-2x1g", 0.96e9, 0), report.Reproduced},
		{"one connection beat one member", wide("lan-1g", 0.95e9, 0), wide("lan-2x1g", 1.9e9, 0), report.Differs},
		{"slower over the bond, beyond the runs' spread", wide("lan-1g", 0.95e9, 0), wide("lan-2x1g", 0.7e9, 0), report.Differs},
		{"slower over the bond, the runs overlap", wide("lan-1g", 0.95e9, 0.2), wide("lan-2x1g", 0.8e9, 0.2), report.WithinNoise},
		{"an end held the stream below the member's rate", wide("lan-1g", 0.5e9, 0), wide("lan-2x1g", 0.51e9, 0), report.NotMeasured},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := judged(t, "bond-one-connection", runData(t, tt.one, tt.bond))
			if f.Verdict != tt.want {
				t.Errorf("verdict %q, want %q\nmeasured: %s\nwhy: %s", f.Verdict, tt.want, f.Measured, f.Why)
			}
			if f.Spread == "" || !strings.Contains(f.Measured, "lan-2x1g") {
				t.Errorf("the finding shows no spread or no bond: %+v", f)
			}
		})
	}
}

// Quick and full add one combination each for the bond (three runs): the
// wide-rows stream of the fast client, the one the finding reads.
func TestQuickAndFullRunTheBondOnceOnWideRows(t *testing.T) {
	spec := runData(t).Spec
	for _, scale := range []string{"quick", "full"} {
		plan, err := spec.Plan(scale)
		if err != nil {
			t.Fatal(err)
		}
		var bond []string
		for _, c := range plan.Combos {
			if c.Values["net"] == "lan-2x1g" {
				bond = append(bond, c.Key)
			}
		}
		if len(bond) != 1 || !strings.Contains(bond[0], "experiment=wide-rows") || !strings.Contains(bond[0], "client_cost=0s") {
			t.Errorf("%s's bond combinations: %q, want one: wide-rows, client_cost 0s", scale, bond)
		}
	}
}

func TestJudgesWithoutPointsSayNotMeasured(t *testing.T) {
	rd := runData(t)
	for id := range Judges() {
		if f := judged(t, id, rd); f.Verdict != report.NotMeasured {
			t.Errorf("%s with no points: verdict %q", id, f.Verdict)
		}
	}
}

// onEngines makes run data of the same points on two engines, as a study
// that sweeps engine = ["postgres", "mariadb"] has: pg's points, then
// maria's.
func onEngines(t *testing.T, pg, maria []point) *study.RunData {
	t.Helper()
	rd := runData(t, append(append([]point{}, pg...), maria...)...)
	rd.Spec.SweepKeys = append([]string{"engine"}, rd.Spec.SweepKeys...)
	for i := range rd.Results {
		eng := "postgres"
		if i >= 3*len(pg) {
			eng = "mariadb"
		}
		rd.Results[i].Values["engine"] = eng
		rd.Results[i].Combo = "engine=" + eng + " " + rd.Results[i].Combo
		rd.Results[i].Key = "engine=" + eng + " " + rd.Results[i].Key
		rd.Results[i].Instances = []engine.InstanceConfig{{Name: "db", Engine: eng}}
	}
	rd.Summaries = study.Summarize(rd.Results, rd.Plan.Repeat)
	return rd
}

func TestJudgesReadEachEngine(t *testing.T) {
	rbr := func(net string, rows, got, model float64) point {
		return point{exp: "client-row-by-row", cost: fast, net: net, rows: rows,
			metrics: map[string]float64{"us_per_row": got}, model: map[string]float64{"us_per_row": model}}
	}
	good := []point{rbr("unix", 2e4, 30, 30), rbr("rtt-77ms", 20, 77200, 77064)}
	bad := []point{rbr("unix", 2e4, 40, 40), rbr("rtt-77ms", 20, 160000, 77074)}
	tests := []struct {
		name        string
		pg, maria   []point
		want        report.Verdict
		wantInWhy   []string
		wantMeasure []string
	}{
		{"both reproduce", good, good, report.Reproduced,
			[]string{"engine=postgres: reproduced", "engine=mariadb: reproduced"}, []string{"engine=postgres: ", "engine=mariadb: "}},
		{"one engine differs", good, bad, report.Differs,
			[]string{"engine=postgres: reproduced", "engine=mariadb: differs"}, []string{"engine=postgres: ", "engine=mariadb: "}},
		// MariaDB's point has no stored model: the judge cannot read it.
		{"only one engine measured it", good, []point{{exp: "client-row-by-row", cost: fast, net: "unix", rows: 2e4, metrics: map[string]float64{"us_per_row": 40}}}, report.Reproduced,
			[]string{"engine=postgres: "}, []string{"engine=postgres: "}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := judged(t, "round-trip-per-row", onEngines(t, tt.pg, tt.maria))
			if f.Verdict != tt.want {
				t.Errorf("verdict %q, want %q\nmeasured: %s\nwhy: %s", f.Verdict, tt.want, f.Measured, f.Why)
			}
			for _, w := range tt.wantInWhy {
				if !strings.Contains(f.Why, w) {
					t.Errorf("why lacks %q:\n%s", w, f.Why)
				}
			}
			for _, w := range tt.wantMeasure {
				if !strings.Contains(f.Measured, w) {
					t.Errorf("measured lacks %q:\n%s", w, f.Measured)
				}
			}
			if len(tt.wantMeasure) == 1 && strings.Contains(f.Measured+f.Why, "engine=mariadb") {
				t.Errorf("the finding names an engine that did not measure it:\nmeasured: %s\nwhy: %s", f.Measured, f.Why)
			}
		})
	}
}

// monitorOf is a monitor's series with the server busy cpu CPUs; none
// when cpu is 0 (not sampled).
func monitorOf(cpu float64) []monitor.Series {
	if cpu == 0 {
		return nil
	}
	return []monitor.Series{{Instance: "db", Engine: postgres.Name, Samples: []monitor.Sample{{CPU: cpu}, {CPU: cpu}}}}
}

// The probe with the idle loops runs on the server-loop points of exactly
// the paths where the spin row-by-row points read it (probe_spin), each
// of those paths' server-loop running before its spin points: the loops'
// start and stop cost every other point up to seconds on a busy host. A
// spin point reads the probe of its probeKey (engine, instance, client
// CPUs, both speeds, path), so both sides are paired by those.
func TestTheSpinProbeRunsWhereSpinPointsReadIt(t *testing.T) {
	spec := runData(t).Spec
	for _, scale := range []string{"quick", "full"} {
		plan, err := spec.Plan(scale)
		if err != nil {
			t.Fatal(err)
		}
		probing := map[string]int{} // probe key -> index of its probing server-loop
		for _, c := range plan.Combos {
			if c.Params.Bool("probe_spin") {
				probing[probeKeyOf(c)] = c.Index
			}
		}
		read := map[string]bool{}
		for _, c := range plan.Combos {
			if c.Values["idle"] != "spin" || c.Values["experiment"] != "client-row-by-row" {
				continue
			}
			key := probeKeyOf(c)
			read[key] = true
			if i, ok := probing[key]; !ok || i > c.Index {
				t.Errorf("%s: %s runs with no probe with the loops before it on its path, engine and speeds (probing server-loops: %v)", scale, c.Key, probing)
			}
		}
		for key := range probing {
			if !read[key] {
				t.Errorf("%s: the server-loop of %s probes with the loops, which no spin point reads", scale, key)
			}
		}
	}
}

// probeKeyOf is rbar's probeKey of a planned combination, from its values:
// what a point's probe is matched by.
func probeKeyOf(c *study.Combo) string {
	r := workload.Result{Params: c.Params, Client: c.Client, Instances: c.Instances}
	return fmt.Sprintf("%s|%s|%d|%s|%g|%g|%v", r.Instance().Engine, c.Params.String("instance"),
		c.Client.GOMAXPROCS, c.Client.CPUs, rbar.ClientSpeed(r), rbar.ServerSpeed(r), c.Values["net"])
}
