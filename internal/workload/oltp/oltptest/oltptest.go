// Package oltptest makes hand-made results of the oltp workload for tests:
// points on the closed-loop model's curve, latency distributions with
// retransmission stalls, a duplex-mismatch run, each result with its model
// computed as the runner does. The model's tests and the tests of the
// studies that judge and report the workload's runs read the same points.
package oltptest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/measure"
	"github.com/dbrig/dbrig/internal/monitor"
	"github.com/dbrig/dbrig/internal/workload"
	"github.com/dbrig/dbrig/internal/workload/oltp"
)

// Point is one hand-made point of a run.
type Point struct {
	Mix, Net string
	Users    int
	Rate     float64 // an open loop's arrivals per second (0: closed)
	TPS      float64
	MeanMS   float64
	Errors   float64
	Over     float64
	CPU      float64 // the server's CPUs, -1: not sampled
	Hist     *measure.Histogram
	MaxMS    []float64
	Lost     *int64 // segments the link lost (nil: 500 on a mismatch, else 0)
}

// LinkFor is the link a point's net gives.
func LinkFor(net string) workload.LinkResult {
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

// Results are a run of study's hand-made points with think time think,
// each result's model computed as the runner does (in order: the
// prediction from the results before it, the fit from the other
// combinations' before it).
func Results(study, think string, pts []Point) []workload.Result {
	var all []workload.Result
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, p := range pts {
		combo := fmt.Sprintf("mix=%s net=%s users=%d rate=%g", p.Mix, p.Net, p.Users, p.Rate)
		r := workload.Result{Study: study, Key: combo + " #1", Combo: combo, Run: 1,
			Values:    map[string]any{"mix": p.Mix, "net": p.Net, "users": int64(p.Users), "rate": p.Rate},
			Params:    workload.Params{"instance": "db", "mix": p.Mix, "users": int64(p.Users), "think": think, "keying": "0s", "rate": p.Rate, "tx_limit": "30s", "scale_factor": 0.2},
			Instances: []engine.InstanceConfig{{Name: "db", Engine: "postgres", Site: "db"}},
			Links:     []workload.LinkResult{LinkFor(p.Net)},
			Started:   start.Add(time.Duration(i) * time.Minute),
			Seconds:   10,
			Metrics: map[string]float64{"tps": p.TPS, "mean_ms": p.MeanMS, "errors": p.Errors, "over_limit": p.Over,
				"users": float64(p.Users)},
		}
		if p.Hist != nil {
			r.Histograms = map[string]*measure.Histogram{"latency": p.Hist}
		}
		if p.Lost != nil {
			r.Links[0].LostSegments = *p.Lost
		}
		if p.MaxMS != nil {
			r.Series = map[string][]float64{"max_ms": p.MaxMS}
		}
		if p.CPU >= 0 {
			r.Monitor = []monitor.Series{{Instance: "db", Engine: "postgres", Samples: []monitor.Sample{{At: 1, CPU: p.CPU}, {At: 2, CPU: p.CPU}}}}
		}
		// The CPUs dbrig may run on as the probe records them, so that a
		// prediction does not change with the machine the test runs on.
		r.Probe = map[string]float64{"allowed_cpus": 2}
		pred := oltp.Predict(r, all)
		r.SetModel(pred, oltp.Model(r, workload.OtherCombinations(r, all)))
		all = append(all, r)
	}
	return all
}

// QuickUsers are the users of transport-oltp's quick scale.
var QuickUsers = []int{10, 40, 70, 110, 150}

// ClosedLoop makes a curve's points on the closed-loop model: tps =
// min(users / (R0 + Z), peak) × shape(users).
func ClosedLoop(mix, net string, r0, think, peak float64, users []int, shape func(int) float64) []Point {
	var out []Point
	for _, n := range users {
		tps := math.Min(float64(n)/((r0+think)/1000), peak)
		if shape != nil {
			tps *= shape(n)
		}
		out = append(out, Point{Mix: mix, Net: net, Users: n, TPS: tps, MeanMS: 1000*float64(n)/tps - think, CPU: 1.2 * tps / peak})
	}
	return out
}

// Latency makes a distribution of n transactions of a healthy server
// around median, with hit of them stalled by whole timeouts (most once, a
// few twice, over1s beyond a second).
func Latency(seed uint64, n int, median time.Duration, hit, over1s int) *measure.Histogram {
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

// DuplexOpts shape a hand-made duplex run.
type DuplexOpts struct {
	TPSRatio    float64 // mismatch / full throughput at every users
	MeanRatio   float64 // mismatch / full mean at the lightest load
	Stalled     bool    // the mismatch's distributions carry the stalls
	StalledFrom int     // ... from this many users on (0: at every load)
	Over1s      int     // transactions over 1 s at each mismatched point
	CleanHit    int     // stalls in the full-duplex points too
	CPUMM       float64 // the mismatched server's CPUs (full: 1.6); -1 not sampled
	ReportMM    float64 // mismatch / full mean of the reporting query
	ReportLost  int64   // segments the reporting query's mismatched link lost
	GivenLoad   float64 // mismatch / full mean of an open loop at 500/s (0: none)
}

// Duplex makes duplex-mismatch's points (think time 0s): the shop and
// point-select at 8, 32 and 128 users (and an open loop at 500/s with
// GivenLoad) on lan-1g and lan-1g+duplex-mismatch, and the reporting
// query at 8 users on both.
func Duplex(o DuplexOpts) []Point {
	var pts []Point
	for _, mix := range []string{"shop", "point-select"} {
		for _, net := range []string{"lan-1g", "lan-1g+duplex-mismatch"} {
			pts = append(pts, duplexCurve(o, mix, net)...)
			if o.GivenLoad > 0 {
				mean, hist := 2.0, Latency(30, 1000, 2*time.Millisecond, 0, 0)
				if net != "lan-1g" {
					mean *= o.GivenLoad
					hist = Latency(31, 1000, 2*time.Millisecond, 20, 0)
				}
				pts = append(pts, Point{Mix: mix, Net: net, Users: 32, Rate: 500, TPS: 500, MeanMS: mean, CPU: 0.3, Hist: hist, MaxMS: []float64{5, 205, 204}})
			}
		}
	}
	for _, net := range []string{"lan-1g", "lan-1g+duplex-mismatch"} {
		mean := 50.0
		if net != "lan-1g" {
			mean *= o.ReportMM
		}
		lost := int64(0)
		if net != "lan-1g" {
			lost = o.ReportLost
		}
		pts = append(pts, Point{Mix: "reporting", Net: net, Users: 8, TPS: 8 / (mean / 1000), MeanMS: mean, CPU: 1.9,
			Hist: Latency(40, 1000, 50*time.Millisecond, 0, 0), MaxMS: []float64{60, 70}, Lost: &lost})
	}
	return pts
}

// duplexCurve is a mix's closed loops on one net of Duplex.
func duplexCurve(o DuplexOpts, mix, net string) []Point {
	var pts []Point
	for i, n := range []int{8, 32, 128} {
		tps := math.Min(float64(n)/0.0008, 9000)
		mean := 1000 * float64(n) / tps
		cpu := 1.6
		hist := Latency(uint64(i), int(tps*2), time.Duration(mean*float64(time.Millisecond)), o.CleanHit, 0)
		maxMS := []float64{5, 6, 4, 5}
		if o.CleanHit > 0 {
			maxMS = []float64{205, 206, 204, 205}
		}
		if net != "lan-1g" {
			tps *= o.TPSRatio
			if i == 0 {
				mean *= o.MeanRatio
			} else {
				mean /= o.TPSRatio
			}
			cpu = o.CPUMM
			hit := 0
			if o.Stalled && n >= o.StalledFrom {
				hit = int(tps * 2 * 0.04)
			}
			hist = Latency(uint64(i+10), int(tps*2), time.Duration(0.6*float64(time.Millisecond)), hit, o.Over1s)
			maxMS = []float64{205, 410, 204, 205}
		}
		pts = append(pts, Point{Mix: mix, Net: net, Users: n, TPS: tps, MeanMS: mean, CPU: cpu, Hist: hist, MaxMS: maxMS})
	}
	return pts
}
