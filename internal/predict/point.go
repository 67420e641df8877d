package predict

import (
	"fmt"
	"maps"
	"math"
	"time"

	"github.com/dbrig/dbrig/internal/link"
	"github.com/dbrig/dbrig/internal/units"
	"github.com/dbrig/dbrig/internal/workload"
)

// loadParams are the parameters that set how hard a load drives the
// server, not what one transaction costs: a calibration at other values
// of them still describes the point.
var loadParams = map[string]bool{"users": true, "think": true, "think_distribution": true, "keying": true,
	"rate": true, "arrival": true, "max_in_flight": true, "ramp_up": true, "warm_up": true, "duration": true}

// ForPoint predicts a point before it runs, for a workload kind's Predict:
// see Point. No prediction when the point has no impaired link or no
// calibration ran before it.
func ForPoint(r workload.Result, before []workload.Result) workload.Prediction {
	pp, ok := Point(r, before)
	if !ok {
		return workload.Prediction{}
	}
	m := map[string]float64{TPSMetric: pp.TPS}
	if pp.Response < time.Duration(math.MaxInt64) {
		m["mean_ms"] = float64(pp.Response) / float64(time.Millisecond)
	}
	return workload.Prediction{Metrics: m, Formula: pp.Formula}
}

// PointEstimate is a point's prediction and how it was made.
type PointEstimate struct {
	Estimate
	Calibration Calibration
	Link        link.Config
	// Formula says it in a line, for the report.
	Formula string
}

// Point predicts a point from the points measured before it on an
// unimpaired path (no link, or a link that changes nothing) with the same
// parameters but the load's: it takes the per-transaction figures of the
// one with the fewest users and the capacity of the one with the most, the
// turn overhead of one through another delaying link (delayedPoint), and
// puts them through the point's first link at its users and think time
// (or its rate). False when the point has no impaired link or no such
// point ran before it.
func Point(r workload.Result, before []workload.Result) (PointEstimate, bool) {
	l := r.Link()
	cfg := linkConfig(l)
	if l.Mode != "link" || !cfg.Impaired() {
		return PointEstimate{}, false
	}
	fewest, most := calibrationPoints(r, before)
	if fewest == nil {
		return PointEstimate{}, false
	}
	cal, _ := FromMetrics(fewest.Metrics, 0)
	cal.Capacity, cal.CapacityUsers = most.Metrics[TPSMetric], int(most.Metrics[UsersMetric])
	from := fewest.Key
	d := delayedPoint(r, before, float64(r.Params.Int("users")))
	if d == nil {
		d = delayedPoint(r, before, fewest.Metrics[UsersMetric])
	}
	if d != nil {
		cal = cal.WithDelayed(time.Duration(d.Metrics[WaitMetric]*float64(time.Millisecond)), linkConfig(d.Link()))
		from += " and " + d.Key
	}
	var e Estimate
	if rate := r.Params.Float("rate"); rate > 0 {
		e = Open(cal, cfg, rate)
	} else {
		e = Closed(cal, cfg, int(r.Params.Int("users")), r.Params.Duration("think"))
	}
	return PointEstimate{Estimate: e, Calibration: cal, Link: cfg, Formula: formula(cal, cfg, e, from, most.Key)}, true
}

// calibrationPoints are the unimpaired points before r of its
// parameters at the fewest and the most users.
func calibrationPoints(r workload.Result, before []workload.Result) (fewest, most *workload.Result) {
	for i := range before {
		b := &before[i]
		if !b.Measured() || !unimpaired(b.Link()) || !sameCost(b.Params, r.Params) {
			continue
		}
		if _, ok := FromMetrics(b.Metrics, 0); !ok {
			continue
		}
		if fewest == nil || b.Metrics[UsersMetric] <= fewest.Metrics[UsersMetric] {
			fewest = b
		}
		if most == nil || b.Metrics[UsersMetric] >= most.Metrics[UsersMetric] {
			most = b
		}
	}
	return fewest, most
}

// delayedPoint is the latest point before r of its parameters at users
// (r's own, else the calibration's fewest: the more users, the more of
// them wake at once)
// through a link of another configuration that delays but loses nothing:
// what a round trip costs beyond its RTT. Never r's own configuration (a
// repeat of r), which would make the prediction a fit.
func delayedPoint(r workload.Result, before []workload.Result, users float64) *workload.Result {
	own := linkConfig(r.Link())
	for i := len(before) - 1; i >= 0; i-- {
		b := &before[i]
		l := b.Link()
		if b.Measured() && l.Mode == "link" && linkConfig(l).RTT > 0 && linkConfig(l) != own && l.Duplex == "" && l.LostSegments == 0 &&
			b.Metrics[UsersMetric] == users && sameCost(b.Params, r.Params) {
			if _, ok := FromMetrics(b.Metrics, 0); ok {
				return b
			}
		}
	}
	return nil
}

// formula says how the prediction was made, for the report.
func formula(cal Calibration, cfg link.Config, e Estimate, from, capacityFrom string) string {
	p := e.Parts
	return fmt.Sprintf("predicted before the point ran: %.2f round trips × (%s + %s) + server %s + client %s + serialization %s + window stalls %s = %s a transaction; "+
		"capacity %.0f tps at %d users (%s); %s dominates; calibrated on %s",
		cal.RoundTrips, units.FormatDuration(cfg.EffectiveRTT()), units.FormatDuration(cal.TurnOverhead), units.FormatDuration(p.Server), units.FormatDuration(p.Client),
		units.FormatDuration(p.Serialization), units.FormatDuration(p.WindowStalls), units.FormatDuration(p.Sum()),
		cal.Capacity, cal.CapacityUsers, capacityFrom, e.Dominant, from)
}

// linkConfig is the model's part of a link as a result records it.
func linkConfig(l workload.LinkResult) link.Config {
	return link.Config{RTT: time.Duration(l.RTTSeconds * 1e9), Rate: units.Rate(l.RateBitsPerS), Window: units.Size(l.WindowBytes), SendBuffer: units.Size(l.SendBufferBytes)}
}

// unimpaired reports whether a point's path added nothing to its
// transactions: no link, or one with no delay, rate or window.
func unimpaired(l workload.LinkResult) bool {
	return l.Mode != "link" || !linkConfig(l).Impaired() && l.Duplex == "" && l.LostSegments == 0
}

// sameCost reports whether two points' parameters differ only in the
// load's.
func sameCost(a, b workload.Params) bool {
	strip := func(p workload.Params) workload.Params {
		out := maps.Clone(p)
		maps.DeleteFunc(out, func(k string, _ any) bool { return loadParams[k] })
		return out
	}
	return maps.EqualFunc(strip(a), strip(b), func(x, y any) bool { return x == y })
}
