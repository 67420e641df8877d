package rbar

import (
	"fmt"
	"math"
	"strings"

	"github.com/dbrig/dbrig/internal/measure"
	"github.com/dbrig/dbrig/internal/workload"
)

// The model of seed 004, per experiment:
//
//	server-loop, server-cursor:  t = rows × s_server / speed + RTT
//	client-row-by-row:           t_row = round trip + s_row / client speed
//	                             round trip = the path's probed round trip, else RTT + request/response bytes × 8 / rate
//	client-stream, wide-rows:    throughput = min(rate, window / RTT, consumer rate × client speed)
//	                             t = bytes × 8 / throughput + RTT
//
// The per-row costs and the consumer rate are taken from the fastest path
// of the same engine, transport, experiment and client among the other
// combinations (a PostgreSQL point never predicts a MariaDB one, and a
// point never predicts itself: the fastest path's own figure comes from
// the next fastest; a reference's figure is the median of its runs, as
// the report keeps the middle of three). A point through the emulated link is predicted from
// the fastest other link (the loopback profile: the proxy without
// impairment), since the proxy's per-message cost is part of every link,
// else from direct loopback TCP, whose TCP stack's cost is part of every
// network path; direct TCP from direct TCP; the unix socket from itself;
// and a path with no other of its transport from the other transport.
// The server-side experiments are fitted on the same row count, since
// their fixed costs do not scale with rows, and run on one backend, bound
// by its CPU: at a cpu_speed (a CFS quota of that many cores' worth) a row
// takes 1/speed of its time at a whole core, so a capped point is
// predicted from its reference at another speed. The client's speed
// likewise divides its per-row cost in row-by-row work and multiplies its
// consumer rate in a stream: the whole per-row cost fitted on the
// reference is taken for the client's, an upper bound where the server's
// share of it does not slow down with the client.
//
// A row-by-row point's round trip is its path's as the server-side points
// probed it before (ProbeMetric: trivial round trips after their
// statement, in the same process placement), and s_row is the reference's
// time per row beyond its own path's probed round trip. An RTT does not
// say what a round trip costs through the emulated link: its relay, in
// dbrig's process, wakes the client's and the server's processes on other
// CPUs (about 96 µs a round trip in the quick run of 2026-11-27, where
// the link benchmark in one process measures 14-18 µs), and a delay hides
// part of that, since the link stamps an arrival in the kernel before its
// reader wakes. Without a probe of both paths, the round trip is the RTT
// and serialization, and the reference's cost beyond its RTT is taken for
// the path's.

// roundTripBytes are the protocol bytes of one row-by-row exchange on the
// wire (request and response of a FETCH or a prepared SELECT), for the
// serialization term.
const roundTripBytes = 180

// linkOf returns the result's link (the first one: the rbar study has one).
func linkOf(r workload.Result) workload.LinkResult {
	if len(r.Links) == 0 {
		return workload.LinkResult{Mode: "unix"}
	}
	return r.Links[0]
}

// SpeedRank orders links from fastest: unix, direct TCP, then by RTT. The
// model fits on the fastest; the study's report draws the links in this
// order.
func SpeedRank(l workload.LinkResult) float64 {
	switch l.Mode {
	case "unix":
		return -2
	case "direct":
		return -1
	}
	return l.RTTSeconds
}

// groupKey is what a point shares with its reference on the fastest link:
// the same engine, experiment, client and transport (unix socket or TCP),
// whatever the link and, but for server-side work, the row count.
func groupKey(r workload.Result) string {
	exp := r.Params.String("experiment")
	rows := int64(0)
	if exp == "server-loop" || exp == "server-cursor" {
		rows = r.Params.Int("rows")
	}
	transport := "tcp"
	if linkOf(r).Mode == "unix" {
		transport = "unix"
	}
	return fmt.Sprintf("%s|%s|%s|%s|%d|%s|%s|%d|%s", r.Instance().Engine, exp, r.Params.String("row_by_row"),
		r.Params.String("client_cost"), r.Client.GOMAXPROCS, r.Client.CPUs, r.Params.String("instance"), rows, transport)
}

// Reference finds the results of the fastest path among all for r's
// group, leaving out r's own combination: the point is never its own
// reference, so its figure is a prediction from another path (see the
// top of this file for the order the paths are tried in).
func Reference(r workload.Result, all []workload.Result) []workload.Result {
	// A path through the emulated link pays the proxy's per-message cost
	// beside the TCP stack's: its reference is the fastest other link
	// (the loopback profile, without impairment) before direct TCP.
	for _, key := range []func(workload.Result) string{sameMode, groupKey, anyTransport} {
		if ref := reference(r, all, key); len(ref) > 0 {
			return ref
		}
	}
	return nil
}

// sameMode is groupKey with the path's mode: unix, direct or link.
func sameMode(r workload.Result) string { return groupKey(r) + "|" + linkOf(r).Mode }

// anyTransport is groupKey without the transport.
func anyTransport(r workload.Result) string {
	k := groupKey(r)
	return k[:strings.LastIndexByte(k, '|')]
}

func reference(r workload.Result, all []workload.Result, groupKey func(workload.Result) string) []workload.Result {
	key := groupKey(r)
	best := math.Inf(1)
	var bestCombo string
	for _, o := range all {
		if !o.OK() || o.Combo == r.Combo || groupKey(o) != key || o.Metrics == nil {
			continue
		}
		if rank := SpeedRank(linkOf(o)); rank < best {
			best, bestCombo = rank, o.Combo
		}
	}
	var ref []workload.Result
	for _, o := range all {
		if o.OK() && o.Combo == bestCombo && o.Metrics != nil {
			ref = append(ref, o)
		}
	}
	return ref
}

// medianMetric is the median of a metric over rs's runs: the report keeps
// the middle of three runs (the study drops the fastest and the slowest),
// and one disturbed run of a reference on a shared machine would move a
// mean by tens of percent.
func medianMetric(rs []workload.Result, name string) float64 {
	var vs []float64
	for _, r := range rs {
		if v, ok := r.Metrics[name]; ok {
			vs = append(vs, v)
		}
	}
	return measure.Median(vs)
}

// Model predicts a point's time per row or throughput; see the top of
// this file.
func Model(r workload.Result, all []workload.Result) workload.Prediction {
	if r.Metrics == nil {
		return workload.Prediction{}
	}
	ref := Reference(r, all)
	if len(ref) == 0 {
		return workload.Prediction{Reason: "no figure: no other link of the same engine, experiment and client measured"}
	}
	l := linkOf(r)
	refLink := linkOf(ref[0])
	rtt, refRTT := l.RTTSeconds, refLink.RTTSeconds
	rows := r.Metrics["rows"]
	fit := " (costs from " + profileName(refLink) + ")"
	switch r.Params.String("experiment") {
	case "server-loop", "server-cursor":
		s := (medianMetric(ref, "seconds") - refRTT) / medianMetric(ref, "rows") * ServerSpeed(ref[0])
		speed := ServerSpeed(r)
		t := rows*s/speed + rtt
		return workload.Prediction{
			Metrics: map[string]float64{"seconds": t, "us_per_row": t / rows * 1e6},
			Formula: fmt.Sprintf("t = rows × %.3g µs%s + RTT%s", s*1e6, speedTerm(speed, ServerSpeed(ref[0]), "server"), fit),
			Reason:  missReason("server"),
		}
	case "client-row-by-row":
		return rowByRow(r, ref, all)
	case "client-stream", "wide-rows", "cursor-messages":
		consumer := medianMetric(ref, "throughput_bps") / ClientSpeed(ref[0]) * ClientSpeed(r)
		rate, limit := consumer, "the client's consumer rate"
		if l.RateBitsPerS > 0 && l.RateBitsPerS < rate {
			rate, limit = l.RateBitsPerS, "the link's rate"
		}
		if l.InFlightBytes() > 0 && rtt > 0 {
			if w := float64(l.InFlightBytes()) * 8 / rtt; w < rate {
				rate, limit = w, "window / RTT"
			}
		}
		bytes := r.Metrics["wire_bytes"]
		t := bytes*8/rate + rtt
		return workload.Prediction{
			Metrics: map[string]float64{"throughput_bps": bytes * 8 / t, "seconds": t, "us_per_row": t / rows * 1e6},
			Formula: fmt.Sprintf("t = bytes / min(rate, window/RTT, consumer %.3g Gbit/s) + RTT: limited by %s%s", consumer/1e9, limit, fit),
			Reason:  missReason("stream"),
		}
	}
	return workload.Prediction{}
}

// rowByRow predicts a row-by-row point: one round trip of its path per
// row, plus the client's and the server's time on the row beyond a round
// trip, fitted on the reference. Where the server-side points probed both
// paths, the round trip is the probe's (see probeOf); else it is the
// link's RTT, and the reference's cost beyond its own RTT is taken for the
// path's too.
func rowByRow(r workload.Result, ref, all []workload.Result) workload.Prediction {
	l, refLink := linkOf(r), linkOf(ref[0])
	speed, refSpeed := ClientSpeed(r), ClientSpeed(ref[0])
	roundTrip := l.RTTSeconds + serialization(l)
	refRoundTrip := refLink.RTTSeconds + serialization(refLink)
	formula := "t/row = RTT + %.3g µs%s (costs from %s)"
	probe, probed := probeOf(r, all)
	refProbe, refProbed := probeOf(ref[0], all)
	if probed && refProbed {
		roundTrip, refRoundTrip = probe, refProbe
		formula = fmt.Sprintf("t/row = %s's probed round trip %.1f µs", profileName(l), probe*1e6) + " + %.3g µs%s (the row beyond a probed round trip on %s)"
	}
	// A row pays at least its path's round trip: where the reference's row
	// took less than its own path's round trip, the round trips disagree
	// with it (a probe's few thousand trips against its seconds on a busy
	// host), and the client's and the server's time on the row is left out
	// rather than taken negative.
	s := max(0, (medianMetric(ref, "us_per_row")*1e-6-refRoundTrip)*refSpeed)
	perRow := roundTrip + s/speed
	return workload.Prediction{
		Metrics: map[string]float64{"us_per_row": perRow * 1e6, "rows_per_s": 1 / perRow},
		Formula: fmt.Sprintf(formula, s*1e6, speedTerm(speed, refSpeed, "client"), profileName(refLink)),
		Reason:  missReason("row-by-row"),
	}
}

// probeOf is the median round trip, in seconds, that the server-side
// points of r's path, engine, instance, client and speeds among all probed
// (see ProbeMetric), and whether any did: a probe lasts milliseconds, and
// another process's burst of CPU in one moves a mean by tens of percent.
// A row-by-row point never probes: its own figure never enters its round
// trip.
func probeOf(r workload.Result, all []workload.Result) (float64, bool) {
	key := probeKey(r)
	var probes []float64
	for _, o := range all {
		if v, ok := o.Metrics[ProbeMetric]; ok && o.Measured() && v > 0 && probeKey(o) == key {
			probes = append(probes, v)
		}
	}
	if len(probes) == 0 {
		return 0, false
	}
	return measure.Median(probes) * 1e-6, true
}

// probeKey is what a probe shares with the row-by-row points it predicts:
// the path, the server and the client, as they ran.
func probeKey(r workload.Result) string {
	l := linkOf(r)
	return fmt.Sprintf("%s|%s|%d|%s|%g|%g|%s|%s", r.Instance().Engine, r.Params.String("instance"),
		r.Client.GOMAXPROCS, r.Client.CPUs, ClientSpeed(r), ServerSpeed(r), l.Mode, profileName(l))
}

// profileName names a link as a formula does: its profile, or its mode
// where it has none (unix, direct).
func profileName(l workload.LinkResult) string {
	if l.Profile != "" {
		return l.Profile
	}
	return l.Mode
}

func serialization(l workload.LinkResult) float64 {
	if l.RateBitsPerS <= 0 {
		return 0
	}
	return roundTripBytes * 8 / l.RateBitsPerS
}

// speedTerm is the formula's division by a capped speed, shown where the
// point or its reference ran capped.
func speedTerm(speed, refSpeed float64, whose string) string {
	if speed == 1 && refSpeed == 1 {
		return ""
	}
	return fmt.Sprintf(" / %s cpu_speed %g", whose, speed)
}

// ClientSpeed is the cores' worth of CPU time the point's client had: its
// cpu_speed, and a whole core when uncapped or capped above one (the
// study's client consumes rows on one thread).
func ClientSpeed(r workload.Result) float64 {
	if s := r.Client.CPUSpeed; s > 0 && s < 1 {
		return s
	}
	return 1
}

// ServerSpeed is the cores' worth of CPU time the point's server gave the
// one backend that runs a server-side loop: its cpu_speed, and a whole core
// when uncapped or capped above one (one backend uses one core at most).
func ServerSpeed(r workload.Result) float64 {
	if s := r.Instance().CPUSpeed; s > 0 && s < 1 {
		return s
	}
	return 1
}

// Predict is the model before the point runs: the rows are its parameter,
// and a stream's protocol bytes the reference's bytes per row (scaled by
// the row's size in the wide-rows experiment), since only the run measures
// them; the costs come from the fastest other link measured before it.
func Predict(r workload.Result, before []workload.Result) workload.Prediction {
	ref := Reference(r, before)
	if len(ref) == 0 {
		return workload.Prediction{Reason: "no prediction: no other link of the same engine, experiment and client measured before it"}
	}
	rows := float64(r.Params.Int("rows"))
	inputs := r
	inputs.Metrics = map[string]float64{"rows": rows}
	if perRow := medianMetric(ref, "wire_bytes") / medianMetric(ref, "rows"); perRow > 0 {
		if r.Params.String("experiment") == "wide-rows" {
			if refSize, size := float64(ref[0].Params.Int("row_bytes")), float64(r.Params.Int("row_bytes")); refSize > 0 && size > 0 {
				perRow *= size / refSize
			}
		}
		inputs.Metrics["wire_bytes"] = perRow * rows
	}
	return Model(inputs, before)
}

// missReason is what the model leaves out, said beside its figure where
// it misses.
func missReason(kind string) string {
	switch kind {
	case "server":
		return "the server's per-row cost is the reference path's; the client's and the link's costs are one round trip"
	case "row-by-row":
		return "each row pays one round trip of its path (probed by the server-side points, else the RTT) plus the reference path's per-row cost beyond its round trip; a busy host or a slower client adds to it"
	}
	return "a stream is bounded by min(rate, window / RTT, the reference's consumer rate): a consumer slower here than on the reference is not"
}
