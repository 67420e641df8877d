package oltp_test

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/diagnose"
	"github.com/dbrig/dbrig/internal/workload"
	"github.com/dbrig/dbrig/internal/workload/oltp"
	"github.com/dbrig/dbrig/internal/workload/oltp/oltptest"
)

func TestPeakIsTheMeanOfTheTopFour(t *testing.T) {
	for _, tc := range []struct {
		tps  []float64
		want float64
		idx  []int
	}{
		{[]float64{1, 5, 3, 4, 2}, 3.5, []int{1, 2, 3, 4}},
		{[]float64{10, 20}, 20, []int{1}},
		{[]float64{7, 9, 9, 9, 9, 1}, 9, []int{1, 2, 3, 4}},
	} {
		got, idx := oltp.Peak(tc.tps)
		if got != tc.want || !slices.Equal(idx, tc.idx) {
			t.Errorf("Peak(%v) = %v, %v; want %v, %v", tc.tps, got, idx, tc.want, tc.idx)
		}
	}
	if v, idx := oltp.Peak(nil); !math.IsNaN(v) || idx != nil {
		t.Errorf("oltp.Peak(nil) = %v, %v", v, idx)
	}
}

// TestModelStoredWithEachPoint: each point's model is fitted on its
// curve's other points, never on itself: the first point, alone so far,
// has no figure and says why; the last point's on the four before it; a
// mismatched point's stall model on its full-duplex twin and its own
// stalls, beside its tps predicted before it ran.
func TestModelStoredWithEachPoint(t *testing.T) {
	results := oltptest.Results("transport-oltp", "10ms", oltptest.ClosedLoop("shop", "unix", 0.5, 10, 5000, oltptest.QuickUsers, nil))
	first, last := results[0], results[len(results)-1]
	if _, ok := first.Model["tps"]; ok || first.FitReason == "" {
		t.Errorf("first point: model %v (reason %q), want no figure and why", first.Model, first.FitReason)
	}
	// The last point's peak is the mean of the top 4 of the four before
	// it (952, 3810, 5000, 5000), its knee that peak × (0.5 + 10 ms).
	peak := (2*5000 + 40/0.0105 + 10/0.0105) / 4
	if math.Abs(last.Model[oltp.ModelPeak]-peak) > 1e-6 || math.Abs(last.Model[oltp.ModelKnee]-peak*0.0105) > 1e-6 {
		t.Errorf("last point: model %v, want peak %v, knee %v", last.Model, peak, peak*0.0105)
	}
	if !strings.Contains(last.Formula, "knee N* = X_peak × (R0 + Z) = 39 users") || last.ModelFrom(oltp.ModelPeak) != "fit" {
		t.Errorf("formula: %s", last.Formula)
	}
	// Its tps is the prediction stored before it ran, capped by the
	// server's capacity the points before it reached.
	if last.Model["tps"] != 5000 || last.ModelFrom("tps") != "predicted" {
		t.Errorf("last point's tps: %v, %s; want 5000 predicted", last.Model["tps"], last.ModelFrom("tps"))
	}

	results = oltptest.Results("duplex-mismatch", "0s", oltptest.Duplex(oltptest.DuplexOpts{TPSRatio: 0.3, MeanRatio: 1.6, Stalled: true, Over1s: 2, CPUMM: 0.5, ReportMM: 1}))
	for _, r := range results {
		if !oltp.Mismatched(r) || r.Params.String("mix") != "shop" || r.Params.Int("users") != 32 {
			continue
		}
		var full float64
		for _, o := range results {
			if !oltp.Mismatched(o) && o.Params.String("mix") == "shop" && o.Params.Int("users") == 32 {
				full = o.Metrics["mean_ms"]
			}
		}
		h := diagnose.DetectWith(r.Histograms["latency"], diagnose.Evidence{Users: 32, SecondMax: r.Series["max_ms"]}).HitShare
		want := 32 / ((full + h*200.2) / 1000)
		if math.Abs(r.Model[oltp.ModelStall]-want) > 1e-6 || r.ModelFrom("tps") != "predicted" || h == 0 {
			t.Errorf("stall model %v, want %v (h %v, full %v ms)", r.Model, want, h, full)
		}
		if !strings.Contains(r.Formula, "duplex mismatch: tps = N / (R_full + Z + h × RTO)") {
			t.Errorf("formula: %s", r.Formula)
		}
		return
	}
	t.Fatal("no mismatched shop point at 32 users")
}

// TestPredictFromThePointsBefore: before the point runs, its throughput
// is N / (R0 + Z) from the lightest load measured before, capped by the
// capacity of the points before it that saturated the server; the
// first point of a curve has none, and says why.
func TestPredictFromThePointsBefore(t *testing.T) {
	results := oltptest.Results("transport-oltp", "10ms", oltptest.ClosedLoop("shop", "unix", 0.5, 10, 5000, oltptest.QuickUsers, nil))
	at := func(users int) workload.Result {
		for _, r := range results {
			if r.Params.Int("users") == int64(users) {
				return r
			}
		}
		t.Fatalf("no point at %d users", users)
		return workload.Result{}
	}
	if p := oltp.Predict(at(10), nil); len(p.Metrics) != 0 || !strings.HasPrefix(p.Reason, "no prediction: first point") {
		t.Errorf("first point: %v, %q", p.Metrics, p.Reason)
	}
	light := oltp.Predict(at(40), results[:1])
	if want := 40 / 0.0105; math.Abs(light.Metrics["tps"]-want) > 1e-6 || !strings.Contains(light.Reason, "capacity is unknown") {
		t.Errorf("40 users after 10: %v (%q), want %v uncapped", light.Metrics["tps"], light.Reason, want)
	}
	// 70 and 110 users fell below 90 % of N / (R0 + Z): the load kept
	// 1.2 CPUs busy there, at 240 µs a transaction, the server's 5000/s.
	heavy := oltp.Predict(at(150), results[:4])
	if math.Abs(heavy.Metrics["tps"]-5000) > 1e-6 || !strings.Contains(heavy.Formula, "capacity C / D = 1.20 CPUs / 240 µs = 5000/s") {
		t.Errorf("150 users: %v, formula %q", heavy.Metrics["tps"], heavy.Formula)
	}
}

// TestPredictTakesTheThinkTimeTheUsersLived: on a busy machine a user's
// think time of 10 ms ends late (1.6 ms at load average 23 to 40), so the
// lightest point's users cycle in R0 + 11.6 ms; the prediction takes that
// cycle from the points before it (N0 / X0), not the time set, which
// judged the lightest point itself saturated and predicted its 719/s for
// 40 users where 2,881/s were measured. A repeat of the point's own
// combination never feeds its prediction.
func TestPredictTakesTheThinkTimeTheUsersLived(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		r0, lived     float64 // ms
		peak          float64
		users, before int
		want          float64
		reason        string // a part of what the prediction says it leaves out
	}{
		{"lived think as set", 2.3, 10, 5000, 40, 1, 40 / 0.0123, "capacity is unknown"},
		{"late wake-ups, below the knee", 2.3, 11.6, 5000, 40, 1, 40 / 0.0139, "capacity is unknown"},
		// The one saturated point, 110 users, kept 1.2 CPUs busy (oltptest's
		// 1.2 × tps / peak): what the machine left the load.
		{"late wake-ups, capped by the saturated points", 2.3, 11.6, 5000, 150, 4, 5000, "the CPUs the machine's other work leaves the load move"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			results := oltptest.Results("transport-oltp", "10ms", oltptest.ClosedLoop("shop", "unix", tc.r0, tc.lived, tc.peak, oltptest.QuickUsers, nil))
			var r workload.Result
			for _, o := range results {
				if o.Params.Int("users") == int64(tc.users) {
					r = o
				}
			}
			before := results[:tc.before]
			p := oltp.Predict(r, before)
			if got := p.Metrics["tps"]; math.Abs(got-tc.want) > 1e-6*tc.want {
				t.Errorf("%d users after %d points: %v, want %v (%s)", tc.users, tc.before, got, tc.want, p.Formula)
			}
			if !strings.Contains(p.Reason, tc.reason) {
				t.Errorf("reason %q, want it to say %q", p.Reason, tc.reason)
			}
			repeat := r
			repeat.Run, repeat.Metrics = 2, map[string]float64{"tps": 1, "mean_ms": 1000}
			if again := oltp.Predict(r, append(slices.Clone(before), repeat)); again.Metrics["tps"] != p.Metrics["tps"] {
				t.Errorf("a repeat of its own combination moved the prediction from %v to %v", p.Metrics["tps"], again.Metrics["tps"])
			}
		})
	}
}

// TestP99SaysWhyItHasNoModel: the 99th percentile, a headline figure, is
// left out of the report's share of figures predicted with the reason no
// model predicts it, rather than counted as a figure the model forgot.
func TestP99SaysWhyItHasNoModel(t *testing.T) {
	t.Parallel()
	spec, ok := oltp.Kind().Metric("p99_ms")
	if !ok || !spec.Headline || !strings.HasPrefix(spec.Unmodelled, "no model: ") {
		t.Errorf("p99_ms: headline %v, unmodelled %q; want a headline figure that says why it has no model", spec.Headline, spec.Unmodelled)
	}
}

// TestFitTakesTheThinkTimeTheUsersLived: the closed loop fitted on a
// curve (each point's figure held out of its own fit, the report's knee
// and its dashed lines) takes Z as the lightest point's users lived it,
// so its light-load line passes through that point.
func TestFitTakesTheThinkTimeTheUsersLived(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		set, lived float64 // ms
	}{
		{"as set", 10, 10},
		{"woken late", 10, 11.6},
		{"no think time", 0, 0.05},
	} {
		curve := []oltp.CurvePoint{{Users: 10, MeanMS: 2.3, TPS: 10 / ((2.3 + tc.lived) / 1000)}, {Users: 150, MeanMS: 20, TPS: 5000}}
		m := oltp.FitClosedLoop(curve, tc.set)
		if math.Abs(m.ThinkMS-tc.lived) > 1e-9 || math.Abs(m.TPS(10)-curve[0].TPS) > 1e-9 {
			t.Errorf("%s: Z = %v ms, tps at 10 users %v; want %v ms and the point's %v", tc.name, m.ThinkMS, m.TPS(10), tc.lived, curve[0].TPS)
		}
	}
}

// TestPredictFromTheSameLoadThroughAnotherLink: before a curve has points
// of its own to tell them, the same load through another link measured
// before it tells the users' cycle (the nearest link's lightest point) and
// the server's capacity: the CPUs the load kept busy at the latest points
// that saturated (of any link), over this curve's CPU per transaction (the
// server's and the client's); where the monitor saw no server CPU, the
// saturated throughput of the nearest curve that saturated.
func TestPredictFromTheSameLoadThroughAnotherLink(t *testing.T) {
	t.Parallel()
	// lan-1g: 10 / 14 ms = 714/s, saturated at 40 and 70 users at 2500/s;
	// unix: R0 1 ms, saturating at 4000/s from 70 users. oltptest gives a
	// point's server 1.2 × tps / peak CPUs: 0.48 ms a transaction on
	// lan-1g's saturated points, 0.3 ms on unix's.
	lan := oltptest.ClosedLoop("shop", "lan-1g", 4, 10, 2500, []int{10, 40, 70}, nil)
	unix := oltptest.ClosedLoop("shop", "unix", 1, 10, 4000, []int{10, 40, 70}, nil)
	lan10g := oltptest.ClosedLoop("shop", "lan-10g", 4, 10, 2500, []int{10}, nil)
	// A mismatched link's points are its stalls', no other link's cycle.
	stalled := oltptest.ClosedLoop("shop", "lan-1g+duplex-mismatch", 50, 10, 2500, []int{10}, nil)
	results := oltptest.Results("transport-oltp", "10ms", []oltptest.Point{unix[0], lan[0], stalled[0], lan10g[0], lan[1], unix[1], lan[2], unix[2]})
	for _, tc := range []struct {
		name     string
		at       int
		lan, uds float64 // the client's µs a transaction on lan-1g and unix
		noCPU    bool    // the monitor saw no server CPU
		want     float64
		formula  string
	}{
		{"first point", 0, 0, 0, false, 0, ""},
		// The first lan-1g point has unix's cycle, the only one before.
		{"first point through the only other link", 1, 0, 0, false, 10 / 0.011, "at 10 users through unix"},
		// lan-10g's first point takes lan-1g's (a link's proxy too), not
		// unix's, measured earlier, nor the mismatched link's, measured
		// later.
		{"first point through the nearest link", 3, 0, 0, false, 10 / 0.014, "at 10 users through lan-1g"},
		// 70 users on unix, whose own 40 did not saturate: the 1.2 CPUs
		// lan-1g's load kept busy at 40 and 70 users over unix's 0.3 ms a
		// transaction, under N / (R0 + Z) = 6364/s.
		{"capacity through another link", 7, 0, 0, false, 4000, "capacity C / D = 1.20 CPUs / 300 µs = 4000/s"},
		// The client spends 300 µs a transaction on lan-1g (its proxy),
		// 100 on unix: lan-1g's load kept 1.2 + 0.75 CPUs busy, and a
		// transaction costs 0.4 ms here.
		{"the link's client CPU", 7, 300, 100, false, 1.95 / 0.0004, "capacity C / D = 1.95 CPUs / 400 µs"},
		{"no server CPU seen", 7, 0, 0, true, 2500, "lan-1g's saturated points × its CPU per transaction over this curve's, the client's difference added (× 1.00)"},
	} {
		before := slices.Clone(results[:tc.at])
		for i := range before {
			m := maps.Clone(before[i].Metrics)
			m["client_cpu_us_per_tx"] = tc.uds
			if before[i].Link().Profile == "lan-1g" {
				m["client_cpu_us_per_tx"] = tc.lan
			}
			before[i].Metrics = m
			if tc.noCPU {
				before[i].Monitor = nil
			}
		}
		p := oltp.Predict(results[tc.at], before)
		if tc.want == 0 {
			if len(p.Metrics) != 0 || !strings.HasPrefix(p.Reason, "no prediction: first point") {
				t.Errorf("%s: predicted %v (%q) with nothing before it", tc.name, p.Metrics, p.Reason)
			}
			continue
		}
		if got := p.Metrics["tps"]; math.Abs(got-tc.want) > 1e-6*tc.want || !strings.Contains(p.Formula, tc.formula) {
			t.Errorf("%s: %v (%s), want %v, saying %q", tc.name, got, p.Formula, tc.want, tc.formula)
		}
	}
}

// TestPredictCapacityIsTheCPUsLeftNotADip: a point the machine's other
// work starved falls below its users' line with little CPU, and is no
// capacity: the server's capacity is the median of the CPUs the load kept
// busy at the latest three saturated points (of any link) over the CPU a
// transaction costs, where the curve's own saturated throughput took the
// dip (1850/s) for the capacity of every point after it.
func TestPredictCapacityIsTheCPUsLeftNotADip(t *testing.T) {
	t.Parallel()
	point := func(net string, users int, tps, cpu float64) oltptest.Point {
		return oltptest.Point{Mix: "shop", Net: net, Users: users, TPS: tps, MeanMS: 1000*float64(users)/tps - 10, CPU: cpu}
	}
	results := oltptest.Results("transport-oltp", "10ms", []oltptest.Point{
		point("unix", 10, 10/0.011, 0.25), point("lan-1g", 10, 10/0.014, 0.3), point("lan-10g", 10, 10/0.014, 0.3),
		// unix's 40 users starved (line 3636/s), then lan-1g's and lan-10g's
		// saturated at 2500/s (line 2857/s) with 1.3 and 1.25 CPUs.
		point("unix", 40, 1850, 0.46), point("lan-1g", 40, 2500, 1.3), point("lan-10g", 40, 2500, 1.25),
		point("unix", 70, 5000, 1.25),
	})
	p := oltp.Predict(results[6], results[:6])
	want := 1.25 / (0.46 / 1850)
	if got := p.Metrics["tps"]; math.Abs(got-want) > 1e-6*want || !strings.Contains(p.Formula, "latest 3 saturated points of the same load before it, 1.25, 1.30 and 0.46") {
		t.Errorf("70 users on unix: %v (%s), want %v", got, p.Formula, want)
	}
}

// TestPredictByTheHostsCPUs: a point whose load kept 90 % of the CPUs it
// may run on busy saturated the server, its throughput on the light-load
// line or not (no think time: 8 users at 4000/s, the server's 1.0 CPUs
// and the client's 225 µs a transaction, 1.9 CPUs); before any point
// saturated, those CPUs over the CPU a transaction costs cap the users'
// line, and leave it where there are more.
func TestPredictByTheHostsCPUs(t *testing.T) {
	t.Parallel()
	results := oltptest.Results("duplex-mismatch", "0s", []oltptest.Point{{Mix: "shop", Net: "lan-1g", Users: 8, TPS: 4000, MeanMS: 2, CPU: 1.0}})
	results[0].Metrics["client_cpu_us_per_tx"] = 225
	next := oltptest.Results("duplex-mismatch", "0s", []oltptest.Point{{Mix: "shop", Net: "lan-1g", Users: 32, TPS: 1, MeanMS: 1, CPU: 1}})[0]
	for _, tc := range []struct {
		name    string
		host    float64
		want    float64
		formula string // a part of what the prediction says
		reason  string // a part of what it says it leaves out
	}{
		{"the lightest point kept the host busy", 2, 1.9 / 0.000475, "C / D = 1.90 CPUs / 475 µs", "the CPUs the machine's other work leaves the load move"},
		{"the host's ceiling", 4, 4 / 0.000475, "capped by the CPUs' ceiling C / D = 4 CPUs / 475 µs", "the machine's other work keeps some of the CPUs the load may run on"},
		{"below the host's ceiling", 16, 32 / 0.002, "below the CPUs' ceiling C / D = 16 CPUs / 475 µs", "its capacity is unknown, and the throughput is capped by the users only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := next
			r.Probe = map[string]float64{"host_cpus": tc.host}
			p := oltp.Predict(r, results)
			if got := p.Metrics["tps"]; math.Abs(got-tc.want) > 1e-6*tc.want || !strings.Contains(p.Formula, tc.formula) {
				t.Errorf("32 users on %g CPUs: %v, want %v; formula %q, want it to say %q", tc.host, got, tc.want, p.Formula, tc.formula)
			}
			if !strings.Contains(p.Reason, tc.reason) {
				t.Errorf("32 users on %g CPUs: reason %q, want it to say %q", tc.host, p.Reason, tc.reason)
			}
		})
	}
}

// TestPredictByTheCPUsTheLoadMayRunOn: the ceiling before any point
// saturated is the CPUs dbrig may run on (64 online, 4 allowed), at most
// the server's pinned CPUs or its CPU cap, not the host's online CPUs
// (8 users at 4000/s cost 475 µs a transaction, 1.9 CPUs).
func TestPredictByTheCPUsTheLoadMayRunOn(t *testing.T) {
	t.Parallel()
	next := oltptest.Results("duplex-mismatch", "0s", []oltptest.Point{{Mix: "shop", Net: "lan-1g", Users: 32, TPS: 1, MeanMS: 1, CPU: 1}})[0]
	for _, tc := range []struct {
		name     string
		probe    map[string]float64
		pinned   string
		cpuSpeed float64
		want     float64 // the ceiling's CPUs
	}{
		{"64 online, 4 allowed", map[string]float64{"host_cpus": 64, "allowed_cpus": 4}, "", 0, 4},
		{"a result stored before the allowed CPUs", map[string]float64{"host_cpus": 4}, "", 0, 4},
		{"the server pinned to 3 of 16", map[string]float64{"allowed_cpus": 16}, "0-2", 0, 3},
		{"the server capped at 2.5 CPUs", map[string]float64{"allowed_cpus": 16}, "", 2.5, 2.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The point before runs on the same server: it is of the same curve.
			results := oltptest.Results("duplex-mismatch", "0s", []oltptest.Point{{Mix: "shop", Net: "lan-1g", Users: 8, TPS: 4000, MeanMS: 2, CPU: 1.0}})
			results[0].Metrics["client_cpu_us_per_tx"] = 225
			r := next
			r.Probe = tc.probe
			r.Instances = slices.Clone(next.Instances)
			for i := range r.Instances {
				r.Instances[i].CPUs, r.Instances[i].CPUSpeed = tc.pinned, tc.cpuSpeed
			}
			results[0].Instances = r.Instances
			p := oltp.Predict(r, results)
			want := tc.want / 0.000475
			if got := p.Metrics["tps"]; math.Abs(got-want) > 1e-6*want || !strings.Contains(p.Formula, fmt.Sprintf("capped by the CPUs' ceiling C / D = %g CPUs", tc.want)) {
				t.Errorf("32 users: %v, want %v on %g CPUs; formula %q", got, want, tc.want, p.Formula)
			}
		})
	}
}

// TestFitBelowTheLightestPoint: a point with fewer users than any other of
// its curve is fitted on the lightest one's line, unless that point's
// response took longer than the CPU a transaction cost there (it waited,
// for the CPUs at 40 users of a 120 ms query): then on the CPU a
// transaction cost, capped by the peak.
func TestFitBelowTheLightestPoint(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name            string
		tps, mean, cpus float64 // the lightest other point's, at 40 users
		users           int
		want            float64
		formula         string
	}{
		{"it waited: the CPU a transaction", 16, 2490, 1.92, 1, 1 / 0.13, "D = 120.0 ms"},
		{"it waited: capped by the peak", 16, 2490, 1.92, 10, 16, "tps = min(N / (D + Z), X_peak)"},
		{"no wait: its line", 3800, 0.3, 1.9, 10, 10 / (40 / 3800.0), "(the lightest load so far)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			think := 1000*40/tc.tps - tc.mean
			all := oltptest.Results("transport-oltp", "10ms", []oltptest.Point{
				{Mix: "reporting", Net: "unix", Users: 40, TPS: tc.tps, MeanMS: tc.mean, CPU: tc.cpus},
				{Mix: "reporting", Net: "unix", Users: tc.users, TPS: 1, MeanMS: 1, CPU: 1},
			})
			p := oltp.Model(all[1], all[:1])
			if got := p.Metrics["tps"]; math.Abs(got-tc.want) > 1e-9*tc.want || !strings.Contains(p.Formula, tc.formula) {
				t.Errorf("%d users (Z lived %.1f ms): %v, want %v; formula %q, want it to say %q", tc.users, think, got, tc.want, p.Formula, tc.formula)
			}
		})
	}
}

// TestPredictSaysTheUsersWaitedForLocks: where 5 % or more of the users
// of the curve's heaviest point so far waited on a lock in the server
// (PostgreSQL's Lock:* waits, MariaDB's InnoDB row lock waits), the
// prediction's reason says more users wait longer, a queue the CPUs'
// capacity leaves out; where fewer did, or they waited on anything else
// (the WAL's fsync, the client), it says nothing of it.
func TestPredictSaysTheUsersWaitedForLocks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		waits map[string]int // sessions by wait at 32 users
		says  bool
	}{
		{"2 of 32 waited on a row's transaction", map[string]int{"Lock:transactionid": 2}, true},
		{"2 of 32 waited on InnoDB row locks", map[string]int{"row lock": 2}, true},
		{"1 of 32 waited on a tuple", map[string]int{"Lock:tuple": 1, "IO:WALSync": 1}, false},
		{"20 of 32 waited on the WAL's fsync", map[string]int{"IO:WALSync": 20}, false},
		{"20 of 32 waited on the client", map[string]int{"Client:ClientWrite": 20}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			all := oltptest.Results("duplex-mismatch", "0s", []oltptest.Point{
				{Mix: "shop", Net: "lan-1g", Users: 8, TPS: 4000, MeanMS: 2, CPU: 1},
				{Mix: "shop", Net: "lan-1g", Users: 32, TPS: 6000, MeanMS: 5.3, CPU: 1},
				{Mix: "shop", Net: "lan-1g", Users: 128, TPS: 1, MeanMS: 1, CPU: 1},
			})
			for i := range all[1].Monitor[0].Samples {
				sample := &all[1].Monitor[0].Samples[i]
				sample.Waits = tc.waits
				for _, n := range tc.waits {
					sample.Waiting += n
				}
			}
			p := oltp.Predict(all[2], all[:2])
			if got := strings.Contains(p.Reason, "at 32 users, its most so far, "); got != tc.says || tc.says && !strings.Contains(p.Reason, "waited on locks in the server on average") {
				t.Errorf("reason %q: says the users waited %v, want %v", p.Reason, got, tc.says)
			}
		})
	}
}
