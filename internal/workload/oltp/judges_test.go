package oltp

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/mariadb"
	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/measure"
	"github.com/dbrig/dbrig/internal/monitor"
	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/workload"
)

// builtIn parses a built-in study, whose published findings the judges
// read.
func builtIn(t *testing.T, name string) *study.Spec {
	t.Helper()
	b, ok := readStudy(name)
	if !ok {
		t.Fatalf("no built-in study %s", name)
	}
	reg := study.NewRegistry(engine.NewRegistry(postgres.New(""), mariadb.New("")), []workload.Kind{Kind()}, study.Builtin{Workload: "oltp", Judges: Judges(), Report: Report})
	spec, err := study.Parse("studies/"+name+".toml", b, reg)
	if err != nil {
		t.Fatal(err)
	}
	return spec
}

// handPoint is one hand-made point of a run.
type handPoint struct {
	mix, net string
	users    int
	rate     float64 // an open loop's arrivals per second (0: closed)
	tps      float64
	meanMS   float64
	errors   float64
	over     float64
	cpu      float64 // the server's CPUs, -1: not sampled
	hist     *measure.Histogram
	maxMS    []float64
	lost     *int64 // segments the link lost (nil: 500 on a mismatch, else 0)
}

// linkFor is the link a point's net gives.
func linkFor(net string) workload.LinkResult {
	switch net {
	case "unix", "direct":
		return workload.LinkResult{Name: "client-db", Mode: net, Profile: net}
	}
	l := workload.LinkResult{Name: "client-db", Mode: "link", Profile: net, RTTSeconds: 0.0002, RTOSeconds: 0.2002, RateBitsPerS: 1e9}
	if strings.Contains(net, "+duplex-mismatch") {
		l.Duplex, l.LostSegments, l.ForwardSegments = "mismatch", 500, 100_000
	}
	return l
}

// handRun builds a run's data from hand-made points, each result's model
// computed as the runner does (in order, from the results before it).
func handRun(t *testing.T, name string, think string, pts []handPoint) *study.RunData {
	t.Helper()
	spec := builtIn(t, name)
	plan, err := spec.Plan("quick")
	if err != nil {
		t.Fatal(err)
	}
	var all []workload.Result
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, p := range pts {
		combo := fmt.Sprintf("mix=%s net=%s users=%d rate=%g", p.mix, p.net, p.users, p.rate)
		r := workload.Result{Study: spec.Name, Key: combo + " #1", Combo: combo, Run: 1,
			Values:    map[string]any{"mix": p.mix, "net": p.net, "users": int64(p.users), "rate": p.rate},
			Params:    workload.Params{"mix": p.mix, "users": int64(p.users), "think": think, "keying": "0s", "rate": p.rate, "tx_limit": "30s", "scale_factor": 0.2},
			Instances: []engine.InstanceConfig{{Name: "db", Engine: "postgres", Site: "db"}},
			Links:     []workload.LinkResult{linkFor(p.net)},
			Started:   start.Add(time.Duration(i) * time.Minute),
			Seconds:   10,
			Metrics: map[string]float64{"tps": p.tps, "mean_ms": p.meanMS, "errors": p.errors, "over_limit": p.over,
				"users": float64(p.users)},
		}
		if p.hist != nil {
			r.Histograms = map[string]*measure.Histogram{"latency": p.hist}
		}
		if p.lost != nil {
			r.Links[0].LostSegments = *p.lost
		}
		if p.maxMS != nil {
			r.Series = map[string][]float64{"max_ms": p.maxMS}
		}
		if p.cpu >= 0 {
			r.Monitor = []monitor.Series{{Instance: "db", Engine: "postgres", Samples: []monitor.Sample{{At: 1, CPU: p.cpu}, {At: 2, CPU: p.cpu}}}}
		}
		pred := Model(r, all)
		r.Model, r.Formula = pred.Metrics, pred.Formula
		all = append(all, r)
	}
	return &study.RunData{Spec: spec, Plan: plan, Results: all, Summaries: study.Summarize(all, plan.Repeat),
		Environment: study.Environment{CPUs: 2}}
}

// closedLoop makes a curve's points on the closed-loop model: tps =
// min(users / (R0 + Z), peak) × shape(users).
func closedLoop(mix, net string, r0, think, peak float64, users []int, shape func(int) float64) []handPoint {
	var out []handPoint
	for _, n := range users {
		tps := math.Min(float64(n)/((r0+think)/1000), peak)
		if shape != nil {
			tps *= shape(n)
		}
		out = append(out, handPoint{mix: mix, net: net, users: n, tps: tps, meanMS: 1000*float64(n)/tps - think, cpu: 1.2 * tps / peak})
	}
	return out
}

var quickUsers = []int{10, 40, 70, 110, 150}

// transports makes the shop on every transport, with the unix socket's
// peak gain × lan-1g's and infiniband's wire gain × lan-1g's.
func transports(gain, wire float64) []handPoint {
	var pts []handPoint
	for _, net := range []struct {
		name string
		peak float64
	}{{"unix", 5000 * gain}, {"direct", 5000 * (1 + (gain-1)*0.6)}, {"lan-1g", 5000}, {"lan-10g", 5000 * (1 + (wire-1)*0.5)}, {"infiniband", 5000 * wire}} {
		pts = append(pts, closedLoop("shop", net.name, 0.5, 10, net.peak, quickUsers, nil)...)
	}
	return pts
}

// mixGains adds browse-only and reporting on the unix socket and lan-1g
// with the given gains of the unix socket.
func mixGains(pts []handPoint, lookups, report float64) []handPoint {
	pts = append(pts, closedLoop("browse-only", "unix", 0.4, 10, 6000*lookups, quickUsers, nil)...)
	pts = append(pts, closedLoop("browse-only", "lan-1g", 0.6, 10, 6000, quickUsers, nil)...)
	pts = append(pts, closedLoop("reporting", "unix", 20, 10, 90*report, quickUsers, nil)...)
	pts = append(pts, closedLoop("reporting", "lan-1g", 20.2, 10, 90, quickUsers, nil)...)
	return pts
}

// withFailures puts errors at the given users of a transport's shop.
func withFailures(pts []handPoint, net string, users ...int) []handPoint {
	for i := range pts {
		for _, u := range users {
			if pts[i].net == net && pts[i].mix == "shop" && pts[i].users == u {
				pts[i].errors, pts[i].over = 12, 2
			}
		}
	}
	return pts
}

func judge(t *testing.T, rd *study.RunData, id string) report.Finding {
	t.Helper()
	p, ok := rd.Spec.PublishedByID(id)
	if !ok {
		t.Fatalf("%s has no finding %q", rd.Spec.Name, id)
	}
	j, ok := Judges()[id]
	if !ok {
		t.Fatalf("no judge for %q", id)
	}
	return j(rd, p)
}

func TestTransportJudges(t *testing.T) {
	dip := func(n int) float64 { // throughput falls past 100 users
		if n > 100 {
			return 0.6
		}
		return 1
	}
	for _, tc := range []struct {
		name string
		id   string
		pts  []handPoint
		want report.Verdict
		says string
	}{
		{"the seed's gain", "thin-stack-gain", transports(1.375, 1.02), report.Reproduced, "+37.5 %"},
		{"a far larger gain", "thin-stack-gain", transports(2.5, 1.02), report.Differs, "more than 2 times the seed's"},
		{"no gain", "thin-stack-gain", transports(0.98, 1.02), report.Differs, "gains nothing"},
		{"stack, not wire", "cpu-not-wire", transports(1.4, 1.05), report.Reproduced, "at most half"},
		{"the wire gains as much", "cpu-not-wire", transports(1.4, 1.35), report.Differs, "the wire's speed matters"},
		{"lookups gain more", "lookups-gain-more", mixGains(transports(1.4, 1.05), 1.5, 1.02), report.Reproduced, "at least 5 points more"},
		{"the report gains more", "lookups-gain-more", mixGains(transports(1.4, 1.05), 1.1, 1.3), report.Differs, "not 5 points more"},
		{"saturated", "peak-at-saturation", transports(1.4, 1.05), report.Reproduced, "well below the closed loop's rising line"},
		{"still rising", "peak-at-saturation", closedLoop("shop", "lan-1g", 0.5, 10, 1e6, quickUsers, nil), report.Differs, "had not saturated"},
		{"falling", "peak-at-saturation", closedLoop("shop", "lan-1g", 0.5, 10, 5000, quickUsers, dip), report.Differs, "fell below 90 %"},
		{"GbE clean", "ethernet-clean", transports(1.4, 1.05), report.Reproduced, "5 points, no error"},
		{"GbE failing", "ethernet-clean", withFailures(transports(1.4, 1.05), "lan-1g", 110), report.Differs, "shop at 110 users: 12 errors"},
		{"thin stack clean", "thin-stack-failures", transports(1.4, 1.05), report.Differs, "never failed"},
		{"thin stack failing above 80", "thin-stack-failures", withFailures(transports(1.4, 1.05), "unix", 110, 150), report.Reproduced, "only above 80 users"},
		{"thin stack failing at 40", "thin-stack-failures", withFailures(transports(1.4, 1.05), "unix", 40, 150), report.Differs, "80 users or fewer too"},
		{"no infiniband", "cpu-not-wire", closedLoop("shop", "lan-1g", 0.5, 10, 5000, quickUsers, nil), report.NotMeasured, "infiniband"},
		{"no reporting", "lookups-gain-more", transports(1.4, 1.05), report.NotMeasured, "reporting"},
	} {
		t.Run(tc.id+"/"+tc.name, func(t *testing.T) {
			f := judge(t, handRun(t, "transport-oltp", "10ms", tc.pts), tc.id)
			if f.Verdict != tc.want || !strings.Contains(f.Measured+" "+f.Why, tc.says) {
				t.Errorf("verdict %q, want %q with %q;\nmeasured: %s\nmodel: %s\nwhy: %s", f.Verdict, tc.want, tc.says, f.Measured, f.Model, f.Why)
			}
		})
	}
}

// latency makes a distribution of n transactions of a healthy server
// around median, with hit of them stalled by whole timeouts (most once, a
// few twice, over1s beyond a second).
func latency(seed uint64, n int, median time.Duration, hit, over1s int) *measure.Histogram {
	rng := rand.New(rand.NewPCG(seed, 7))
	h := measure.NewHistogram()
	for range n {
		h.Record(time.Duration(float64(median) * math.Pow(4, rng.Float64()*2-1)))
	}
	rto := 200*time.Millisecond + 200*time.Microsecond
	for i := range hit {
		k := 1
		if i%10 == 0 {
			k = 2
		}
		h.Record(time.Duration(k)*rto + time.Duration(float64(median)*rng.Float64()))
	}
	for range over1s {
		h.Record(7*rto + median)
	}
	return h
}

// duplexOpts shape a hand-made duplex run.
type duplexOpts struct {
	tpsRatio    float64 // mismatch / full throughput at every users
	meanRatio   float64 // mismatch / full mean at the lightest load
	stalled     bool    // the mismatch's distributions carry the stalls
	stalledFrom int     // ... from this many users on (0: at every load)
	over1s      int     // transactions over 1 s at each mismatched point
	cleanHit    int     // stalls in the full-duplex points too
	cpuMM       float64 // the mismatched server's CPUs (full: 1.6); -1 not sampled
	reportMM    float64 // mismatch / full mean of the reporting query
	reportLost  int64   // segments the reporting query's mismatched link lost
	givenLoad   float64 // mismatch / full mean of an open loop at 500/s (0: none)
}

func duplexRun(t *testing.T, o duplexOpts) *study.RunData {
	var pts []handPoint
	users := []int{8, 32, 128}
	for _, mix := range []string{"shop", "point-select"} {
		for _, net := range []string{"lan-1g", "lan-1g+duplex-mismatch"} {
			for i, n := range users {
				tps := math.Min(float64(n)/0.0008, 9000)
				mean := 1000 * float64(n) / tps
				cpu := 1.6
				hist := latency(uint64(i), int(tps*2), time.Duration(mean*float64(time.Millisecond)), o.cleanHit, 0)
				maxMS := []float64{5, 6, 4, 5}
				if o.cleanHit > 0 {
					maxMS = []float64{205, 206, 204, 205}
				}
				if net != "lan-1g" {
					tps *= o.tpsRatio
					if i == 0 {
						mean *= o.meanRatio
					} else {
						mean /= o.tpsRatio
					}
					cpu = o.cpuMM
					hit := 0
					if o.stalled && n >= o.stalledFrom {
						hit = int(tps * 2 * 0.04)
					}
					hist = latency(uint64(i+10), int(tps*2), time.Duration(0.6*float64(time.Millisecond)), hit, o.over1s)
					maxMS = []float64{205, 410, 204, 205}
				}
				pts = append(pts, handPoint{mix: mix, net: net, users: n, tps: tps, meanMS: mean, cpu: cpu, hist: hist, maxMS: maxMS})
			}
			if o.givenLoad > 0 {
				mean, hist := 2.0, latency(30, 1000, 2*time.Millisecond, 0, 0)
				if net != "lan-1g" {
					mean *= o.givenLoad
					hist = latency(31, 1000, 2*time.Millisecond, 20, 0)
				}
				pts = append(pts, handPoint{mix: mix, net: net, users: 32, rate: 500, tps: 500, meanMS: mean, cpu: 0.3, hist: hist, maxMS: []float64{5, 205, 204}})
			}
		}
	}
	for _, net := range []string{"lan-1g", "lan-1g+duplex-mismatch"} {
		mean := 50.0
		if net != "lan-1g" {
			mean *= o.reportMM
		}
		lost := int64(0)
		if net != "lan-1g" {
			lost = o.reportLost
		}
		pts = append(pts, handPoint{mix: "reporting", net: net, users: 8, tps: 8 / (mean / 1000), meanMS: mean, cpu: 1.9,
			hist: latency(40, 1000, 50*time.Millisecond, 0, 0), maxMS: []float64{60, 70}, lost: &lost})
	}
	return handRun(t, "duplex-mismatch", "0s", pts)
}

func TestDuplexJudges(t *testing.T) {
	seedLike := duplexOpts{tpsRatio: 0.3, meanRatio: 1.6, stalled: true, over1s: 2, cpuMM: 0.5, reportMM: 1.02}
	with := func(f func(o *duplexOpts)) duplexOpts { o := seedLike; f(&o); return o }
	for _, tc := range []struct {
		name string
		id   string
		o    duplexOpts
		want report.Verdict
		says string
	}{
		{"collapse", "collapse", seedLike, report.Reproduced, "0.30x (the seed: 800 / 5,000 = 0.16x)"},
		{"no collapse", "collapse", with(func(o *duplexOpts) { o.tpsRatio = 0.8 }), report.Differs, "no collapse"},
		{"mildly worse", "mean-mildly-worse", seedLike, report.Reproduced, "The mean rose 1.60x"},
		{"much worse", "mean-mildly-worse", with(func(o *duplexOpts) { o.meanRatio = 5 }), report.Differs, "as bad as the throughput"},
		{"no worse", "mean-mildly-worse", with(func(o *duplexOpts) { o.meanRatio = 1 }), report.Differs, "barely shows"},
		{"mildly worse at a given load", "mean-mildly-worse", with(func(o *duplexOpts) { o.meanRatio, o.givenLoad = 5, 1.4 }), report.Reproduced, "at 500/s (open loop, 32 users) (a given load)"},
		{"much worse at a given load", "mean-mildly-worse", with(func(o *duplexOpts) { o.meanRatio, o.givenLoad = 1.4, 4 }), report.Differs, "4.00x"},
		{"the open loop is no collapse", "collapse", with(func(o *duplexOpts) { o.givenLoad = 1.4 }), report.Reproduced, "0.30x"},
		{"outliers", "outliers", seedLike, report.Reproduced, "and 6 took over 1 s"},
		{"none over a second", "outliers", with(func(o *duplexOpts) { o.over1s = 0 }), report.Differs, "none took over 1 s"},
		{"no stalls", "outliers", with(func(o *duplexOpts) { o.stalled, o.over1s = false, 0 }), report.Differs, "shows at 0 of the 3 mismatched loads"},
		{"stalls at some loads", "outliers", with(func(o *duplexOpts) { o.stalledFrom = 32 }), report.Reproduced, "2 of the 3 mismatched loads"},
		{"stalls at one load", "outliers", with(func(o *duplexOpts) { o.stalledFrom = 128 }), report.Differs, "shows at 1 of the 3"},
		{"stalls at full duplex too", "outliers", with(func(o *duplexOpts) { o.cleanHit = 500 }), report.Differs, "full-duplex link shows the same"},
		{"idle server", "server-idle", seedLike, report.Reproduced, "0.31x the CPU"},
		{"busy server", "server-idle", with(func(o *duplexOpts) { o.cpuMM = 1.5 }), report.Differs, "more than 0.6x"},
		{"not sampled", "server-idle", with(func(o *duplexOpts) { o.cpuMM = -1 }), report.NotMeasured, "not sampled"},
		{"report unaffected", "reporting-unaffected", seedLike, report.Reproduced, "lost 0.0 % of their time"},
		{"report unstalled on a noisy machine", "reporting-unaffected", with(func(o *duplexOpts) { o.reportMM = 0.7 }), report.Reproduced, "the machine's own load"},
		{"report stalled", "reporting-unaffected", with(func(o *duplexOpts) { o.reportMM, o.reportLost = 1.6, 40 }), report.Differs, "lost 10.0 % of their time to retransmissions, more than 10 %"},
	} {
		t.Run(tc.id+"/"+tc.name, func(t *testing.T) {
			f := judge(t, duplexRun(t, tc.o), tc.id)
			if f.Verdict != tc.want || !strings.Contains(f.Measured+" "+f.Why, tc.says) {
				t.Errorf("verdict %q, want %q with %q;\nmeasured: %s\nmodel: %s\nwhy: %s", f.Verdict, tc.want, tc.says, f.Measured, f.Model, f.Why)
			}
		})
	}
}

// TestEveryPublishedFindingHasAJudge: both studies' findings are judged
// by this workload (the parser refuses the study otherwise; this names
// the ids when one is removed).
func TestEveryPublishedFindingHasAJudge(t *testing.T) {
	for _, name := range []string{"transport-oltp", "duplex-mismatch"} {
		for _, p := range builtIn(t, name).Published {
			if _, ok := Judges()[p.ID]; !ok && p.NotMeasured == "" {
				t.Errorf("%s: no judge for %q", name, p.ID)
			}
		}
	}
}
