package oltp_test

import (
	"maps"
	"math"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/monitor"
	"github.com/dbrig/dbrig/internal/workload"
	"github.com/dbrig/dbrig/internal/workload/oltp"
	"github.com/dbrig/dbrig/internal/workload/oltp/oltptest"
)

// duplexPoint is a closed loop of the shop at users through lan-1g at
// rate bits/s, mismatched or not, that carried 2 client segments and 700
// server bytes a transaction and lost lost segments in 10 s measured; its
// link also carried a warm-up of 2 s and 0.5 s of transactions ending in
// the grace period, as a point's link does.
func duplexPoint(users int, rate float64, mismatched bool, tps float64, lost int64) workload.Result {
	return mixPoint("shop", users, rate, mismatched, tps, lost)
}

// mixPoint is duplexPoint's of another mix.
func mixPoint(mix string, users int, rate float64, mismatched bool, tps float64, lost int64) workload.Result {
	net := "lan-1g"
	if mismatched {
		net += "+duplex-mismatch"
	}
	r := oltptest.Results("duplex-mismatch", "0s", []oltptest.Point{{Mix: mix, Net: net, Users: users, TPS: tps, MeanMS: 1000 * float64(users) / tps, CPU: -1}})[0]
	l := &r.Links[0]
	tx := int64(tps * 12.5)
	l.RateBitsPerS, l.ForwardSegments, l.ReverseBytes, l.LostSegments = rate, 2*tx, 700*tx, lost*125/100
	r.Metrics["measured_s"], r.Metrics["warm_up_tx"], r.Metrics["after_end"] = 10, tps*2, tps*0.5
	return r
}

// withShadow is p whose full-duplex link counted shadow client segments
// started while a server frame was on the air.
func withShadow(p workload.Result, shadow int64) workload.Result {
	p.Links = []workload.LinkResult{p.Links[0]}
	p.Links[0].ShadowCollisions = &shadow
	return p
}

// withoutWarmUpCount is p as stored before warm_up_tx was recorded: its
// link's 12.5 s of 10 ms intervals stand for what it carried.
func withoutWarmUpCount(p workload.Result) workload.Result {
	p.Metrics = maps.Clone(p.Metrics)
	delete(p.Metrics, "warm_up_tx")
	p.Links = []workload.LinkResult{p.Links[0]}
	p.Links[0].SeriesSeconds, p.Links[0].ForwardSeries = 0.01, make([]int64, 1250)
	return p
}

// TestPredictMismatchedFromItsTwinAndTheCollisions: a mismatched point is
// predicted before it runs from its full-duplex twin's cycle and the
// collisions its server's frames cause (k × f × b × 8 / rate × RTO a
// transaction a second, k 1 before any mismatched point, then the median
// of the mismatched points of other combinations before it, every mix's,
// never its own combination's other runs); without a twin it says why,
// and with k 1 that no point measured k. Its own figures (its
// throughput, its lost segments) never enter its prediction.
func TestPredictMismatchedFromItsTwinAndTheCollisions(t *testing.T) {
	t.Parallel()
	const rate, rto = 100e6, 0.2002
	// 8 users at 2000/s at full duplex: a cycle of 4 ms.
	twin := duplexPoint(8, rate, false, 2000, 0)
	// 1000/s mismatched at 100 Mbit/s, 2 segments and 700 bytes each:
	// the overlap alone loses 2 × 700 × 8 / 1e8 × 1000 = 0.112 of a
	// segment a transaction; 560 lost of 10,000 transactions is half that.
	earlier := duplexPoint(32, rate, true, 1000, 560)
	// k = 2 for point-select and 0.125 for this combination's earlier run.
	otherMix := mixPoint("point-select", 32, rate, true, 1000, 2240)
	ownRun := duplexPoint(8, rate, true, 2000, 560)
	solve := func(k float64) float64 {
		a, c := k*2*700*8/rate*rto, 8/2000.0
		return (math.Sqrt(c*c+4*a*8) - c) / (2 * a)
	}
	for _, tc := range []struct {
		name   string
		before []workload.Result
		want   float64
		says   string
		noK    bool // the reason says no point before it measured k
	}{
		{"no twin", nil, 0, "no prediction: its full-duplex twin", false},
		{"the overlap alone", []workload.Result{twin}, solve(1), "k = 1.00 (the frames' overlap alone", true},
		{"k from the points before", []workload.Result{earlier, twin}, solve(0.5), "k = 0.50 (the median of the 1 mismatched points of other combinations before it)", false},
		{"stored without the warm-up's count", []workload.Result{withoutWarmUpCount(earlier), withoutWarmUpCount(twin)}, solve(0.5), "k = 0.50", false},
		{"every mix's, not its own combination's", []workload.Result{otherMix, ownRun, earlier, twin}, solve(1.25), "k = 1.25 (the median of the 2 mismatched points of other combinations", false},
		{"never its own combination's runs", []workload.Result{ownRun, twin}, solve(1), "k = 1.00 (the frames' overlap alone", true},
		// The twin's link counted 2,800 client segments started under a
		// server frame: 0.112 a transaction over the overlap's 0.224.
		{"the twin's own overlap", []workload.Result{withShadow(twin, 2800)}, solve(0.5), "k = 0.50 (its twin's own timing", false},
		{"the points before first", []workload.Result{earlier, withShadow(twin, 5600)}, solve(0.5), "k = 0.50 (the median of the 1", false},
		{"a twin that counted none", []workload.Result{withShadow(twin, 0)}, solve(1), "k = 1.00 (the frames' overlap alone", true},
	} {
		r := duplexPoint(8, rate, true, 1500, 99)
		p := oltp.Predict(r, tc.before)
		if tc.want == 0 {
			if len(p.Metrics) != 0 || !strings.HasPrefix(p.Reason, tc.says) {
				t.Errorf("%s: %v (%q), want no figure and why", tc.name, p.Metrics, p.Reason)
			}
			continue
		}
		if got := p.Metrics["tps"]; math.Abs(got-tc.want) > 1e-9*tc.want || !strings.Contains(p.Formula, tc.says) {
			t.Errorf("%s: %v (%s), want %v saying %q", tc.name, got, p.Formula, tc.want, tc.says)
		}
		if noK := strings.HasPrefix(p.Reason, "no mismatched point before it measured k"); noK != tc.noK {
			t.Errorf("%s: reason %q, want it to say no point measured k: %v", tc.name, p.Reason, tc.noK)
		}
		// The point as the runner sees it before it runs: no figure, no
		// traffic; the prediction is the same.
		blank := r
		blank.Metrics, blank.Links = nil, []workload.LinkResult{r.Links[0]}
		blank.Links[0].LostSegments, blank.Links[0].ForwardSegments, blank.Links[0].ReverseBytes = 0, 0, 0
		if again := oltp.Predict(blank, tc.before); !maps.Equal(again.Metrics, p.Metrics) {
			t.Errorf("%s: its own figures moved the prediction from %v to %v", tc.name, p.Metrics, again.Metrics)
		}
	}
}

// TestPredictMismatchedRTOWithoutTheLinks: a result stored without its
// link's RTO charges a lost segment the link's RTT plus Linux's minimum
// RTO, not a fixed 200.2 ms whatever the RTT.
func TestPredictMismatchedRTOWithoutTheLinks(t *testing.T) {
	t.Parallel()
	const rate, rtt = 100e6, 0.02
	withRTT := func(p workload.Result) workload.Result {
		p.Links = []workload.LinkResult{p.Links[0]}
		p.Links[0].RTTSeconds, p.Links[0].RTOSeconds = rtt, 0
		return p
	}
	twin := withRTT(duplexPoint(8, rate, false, 2000, 0))
	r := withRTT(duplexPoint(8, rate, true, 1500, 99))
	a, c := 2*700*8/rate*(rtt+0.2), 8/2000.0
	want := (math.Sqrt(c*c+4*a*8) - c) / (2 * a)
	p := oltp.Predict(r, []workload.Result{twin})
	if got := p.Metrics["tps"]; math.Abs(got-want) > 1e-9*want || !strings.Contains(p.Formula, "RTO 220.0 ms") {
		t.Errorf("%v (%s), want %v charging 220 ms", got, p.Formula, want)
	}
}

// TestPredictMismatchedSaysWhatItLeavesOut: a mismatched point's reason
// says how far the k of the points before it spread (0.5 and 2, the
// shop's and point-select's at 32 users), and that its twin's users waited
// on row locks (8 sessions of 32), where a stalled holder keeps the others
// waiting and the stalls are added to the twin's whole cycle, queue and
// all (32 users at 2400/s below the line of 8 users at 2000/s), a queue
// the stalls shorten on a quiet machine; a queue without lock waits the
// model takes in (the users not stalled run at the curve's throughput for
// as many), and none of it where the twin is its curve's lightest point,
// with no lock waits, after a single k.
func TestPredictMismatchedSaysWhatItLeavesOut(t *testing.T) {
	t.Parallel()
	const rate = 100e6
	light := duplexPoint(8, rate, false, 2000, 0)
	queued := duplexPoint(32, rate, false, 2400, 0)
	locked := queued
	locked.Monitor = []monitor.Series{{Instance: "db", Engine: "postgres", Samples: []monitor.Sample{
		{At: 1, Sessions: 32, Waiting: 8, Waits: map[string]int{"Lock:transactionid": 8}, CPU: -1},
		{At: 2, Sessions: 32, Waiting: 8, Waits: map[string]int{"Lock:transactionid": 8}, CPU: -1}}}}
	shopK := duplexPoint(128, rate, true, 1000, 560)                 // k = 0.5
	selectK := mixPoint("point-select", 128, rate, true, 1000, 2240) // k = 2
	for _, tc := range []struct {
		name   string
		users  int
		before []workload.Result
		says   []string
		not    []string
	}{
		{"the lightest, one k", 8, []workload.Result{shopK, light}, nil,
			[]string{"spread", "queued", "row locks"}},
		{"ks spread, a queue the model takes in", 32, []workload.Result{shopK, selectK, light, queued},
			[]string{"the k of the points before it spread from 0.50 to 2.00"}, []string{"queued for the server", "row locks"}},
		{"row locks", 32, []workload.Result{shopK, light, locked},
			[]string{"its twin's users waited on row locks (8.0 sessions of 32 on average)", "queued for the server"}, []string{"spread"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := oltp.Predict(duplexPoint(tc.users, rate, true, 1000, 99), tc.before)
			for _, s := range tc.says {
				if !strings.Contains(p.Reason, s) {
					t.Errorf("reason %q, want it to say %q", p.Reason, s)
				}
			}
			for _, s := range tc.not {
				if strings.Contains(p.Reason, s) {
					t.Errorf("reason %q, want it not to say %q", p.Reason, s)
				}
			}
		})
	}
}

// TestPredictMismatchedStalledUsersLeaveTheCPUs: where the twin's users
// queued for the server (8 users at 2000/s, 32 at 2400/s), the users a
// stall holds leave the CPUs to the others, so the point is predicted
// faster than with the stalls added to the twin's whole cycle, and no
// faster than the twin; with its users waiting on row locks, a stalled
// holder keeps others waiting, and the stalls go on the whole cycle.
func TestPredictMismatchedStalledUsersLeaveTheCPUs(t *testing.T) {
	t.Parallel()
	const rate, rto = 100e6, 0.2002
	light := duplexPoint(8, rate, false, 2000, 0)
	queued := duplexPoint(32, rate, false, 2400, 0)
	locked := queued
	locked.Monitor = []monitor.Series{{Instance: "db", Engine: "postgres", Samples: []monitor.Sample{
		{At: 1, Sessions: 32, Waiting: 8, Waits: map[string]int{"Lock:transactionid": 8}, CPU: -1}}}}
	earlier := duplexPoint(128, rate, true, 1000, 560) // k = 0.5
	a, c := 0.5*2*700*8/rate*rto, 32/2400.0
	wholeCycle := (math.Sqrt(c*c+4*a*32) - c) / (2 * a)
	r := duplexPoint(32, rate, true, 1000, 99)

	p := oltp.Predict(r, []workload.Result{earlier, light, queued})
	if got := p.Metrics["tps"]; got <= 1.01*wholeCycle || got > 2400 || !strings.Contains(p.Formula, "the users not stalled run at the full-duplex curve's throughput") {
		t.Errorf("a queue without lock waits: %v (%s), want above %v (the stalls on the whole cycle) and at most 2400", got, p.Formula, wholeCycle)
	}
	p = oltp.Predict(r, []workload.Result{earlier, light, locked})
	if got := p.Metrics["tps"]; math.Abs(got-wholeCycle) > 1e-6*wholeCycle || !strings.Contains(p.Formula, "added to the twin's whole cycle") {
		t.Errorf("lock waits: %v (%s), want %v, the stalls on the whole cycle", got, p.Formula, wholeCycle)
	}
}
