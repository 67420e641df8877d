package rbar

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/dbrig/dbrig/internal/idleloop"
	"github.com/dbrig/dbrig/internal/measure"
	"github.com/dbrig/dbrig/internal/workload"
)

// The model of seed 004, per experiment:
//
//	server-loop, server-cursor:  t = rows × s_server / speed + RTT
//	client-row-by-row:           t_row = round trip + s_row / client speed
//	                             round trip = the path's probed round trip, else RTT + request/response bytes × 8 / rate
//	client-stream, wide-rows,
//	cursor-messages:             throughput = min(rate, window / RTT, consumer rate, server pace)
//	                             t = bytes × 8 / throughput + RTT
//	                             consumer rate = the reference's (at a capped client, at most a
//	                             row's bits × client speed / the reference client's CPU per row;
//	                             without that figure, the reference's × client speed), or
//	                             a row's bytes / (the sample's time per row + client_cost / client speed)
//	                             server pace (a capped server) = its transport's whole-core sample's rate × server speed
//
// A stream's consumer rate is the fastest other path's of its transport
// (the unix socket, or TCP); a transport's first stream point, which has
// none, takes its own path's: the server-loop points, which run first on
// every path, sample each stream on the unix socket and direct TCP before
// their statement (takeSamples), in the process placement of the points
// after them, where the other transport's rate missed by up to 2.75x
// (cursor-messages on the unix socket fitted from direct TCP), since each
// path costs each message its own wake-ups (the fastest of the path's
// samples: see sampleOf). The first server-cursor point of
// a path takes the cursor's sample there; a server-side point with no
// other path of its rows takes its own path at other rows; a row-by-row
// point with no reference of its client cost takes one of another cost,
// the difference added per row (on the same path, its rows as they ran),
// and with none at all its path's probed round trip and its client cost.
// Only the study's very first point has nothing before it.
//
// The per-row costs are taken from the fastest path
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
// A server-side point's cost per row is the median of every other path's
// of its rows (the statement makes one round trip, so every path measures
// the same server); a reference's own figure is the median of its runs.
// The server-side experiments are fitted on the same row count, since
// their fixed costs do not scale with rows, and run on one backend, bound
// by its CPU: at a cpu_speed (a CFS quota of that many cores' worth) a row
// takes 1/speed of its time at a whole core, so a capped point is
// predicted from its reference at another speed; a stream from a capped
// server is bounded by its pace at a whole core, slowed by the cap
// (cappedServerPace). The client's speed likewise divides its per-row
// cost in row-by-row work: the whole per-row cost fitted on the reference
// is taken for the client's, an upper bound where the server's share of
// it does not slow down with the client. In a stream, a capped client
// slows the rows only where its own CPU per row, as the reference's
// thread measured it, no longer fits in its quota (referenceConsumer).
//
// A row-by-row point's round trip is its path's as the server-side points
// probed it before (ProbeMetric: trivial round trips before their
// statement, in the same process placement; ProbeSpinMetric, the same
// with the idle loops running, for a point whose CPUs spin), and s_row is the reference's
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
func groupKey(r workload.Result) string { return groupKeyOf(r, true, true) }

// groupKeyOf is groupKey, with the client's per-row cost and the
// server-side row count left out where withCost or withRows is false.
func groupKeyOf(r workload.Result, withCost, withRows bool) string {
	exp := r.Params.String("experiment")
	rows := int64(0)
	if withRows && (exp == "server-loop" || exp == "server-cursor") {
		rows = r.Params.Int("rows")
	}
	cost := "any"
	if withCost {
		cost = r.Params.String("client_cost")
	}
	transport := "tcp"
	if linkOf(r).Mode == "unix" {
		transport = "unix"
	}
	// How the CPUs idle is part of the path: a busy loop on each CPU takes
	// the halted vCPUs' wake-ups out of every round trip (client.idle).
	return fmt.Sprintf("%s|%s|%s|%s|%d|%s|%s|%s|%d|%s", r.Instance().Engine, exp, r.Params.String("row_by_row"),
		cost, r.Client.GOMAXPROCS, r.Client.CPUs, r.Client.Idle, r.Params.String("instance"), rows, transport)
}

// anyCost is groupKey whatever the client's per-row cost: a row-by-row
// point's reference at another cost, the difference added per row.
func anyCost(r workload.Result) string { return groupKeyOf(r, false, true) }

// anyRows is groupKey whatever the server-side row count, on the same
// path: a server-side point's last resort, its fixed costs then spread
// over other rows.
func anyRows(r workload.Result) string {
	return groupKeyOf(r, true, false) + "|" + profileName(linkOf(r))
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
	switch r.Params.String("experiment") {
	case "server-loop", "server-cursor":
		return serverSide(r, ref, all)
	case "client-row-by-row":
		return rowByRow(r, ref, all)
	case "client-stream", "wide-rows", "cursor-messages":
		return stream(r, ref, all)
	}
	return workload.Prediction{}
}

// noFigure is the reason of a point that nothing measured before it
// predicts.
const noFigure = "no figure: no other link of the same engine, experiment and client measured, and no sample of the experiment on its path"

// serverSide predicts a server-side point: its rows at the per-row cost
// of the fastest other path of the same rows, else the cursor sample of
// its own path (server-cursor), else the same path at other rows.
func serverSide(r workload.Result, ref, all []workload.Result) workload.Prediction {
	rows, rtt := r.Metrics["rows"], linkOf(r).RTTSeconds
	speed := ServerSpeed(r)
	var s float64
	var from string
	if sample, ok := sampleOf(r, all, "us_per_row"); len(ref) == 0 && ok && r.Params.String("experiment") == "server-cursor" {
		// The sample ran at this path's server speed (probeKey).
		s, speed, from = sample*1e-6, 1, " (the cursor's sample on "+profileName(linkOf(r))+")"
	} else {
		if len(ref) == 0 {
			ref = reference(r, all, anyRows)
		}
		if len(ref) == 0 {
			return workload.Prediction{Reason: noFigure}
		}
		refSpeed := ServerSpeed(ref[0])
		s = serverCostPerRow(ref)
		from = speedTerm(speed, refSpeed, "server") + " (costs from " + profileName(linkOf(ref[0])) + ")"
		if paths := otherPaths(r, all, anyTransport); len(paths) > 1 {
			s, refSpeed = pooledServerCost(paths), 1
			from = speedTerm(speed, refSpeed, "server") + fmt.Sprintf(" (the median cost of %d other paths)", len(paths))
		}
	}
	t := rows*s/speed + rtt
	return workload.Prediction{
		Metrics: map[string]float64{"seconds": t, "us_per_row": t / rows * 1e6},
		Formula: fmt.Sprintf("t = rows × %.3g µs%s + RTT", s*1e6, from),
		Reason:  missReason("server", r),
	}
}

// serverCostPerRow is a server-side reference's time per row at a whole
// core: its median time less the one round trip, over its rows, times
// the speed it ran at.
func serverCostPerRow(ref []workload.Result) float64 {
	return (medianMetric(ref, "seconds") - linkOf(ref[0]).RTTSeconds) / medianMetric(ref, "rows") * ServerSpeed(ref[0])
}

// otherPaths are the measured results of each other combination of r's
// group (by key) among all, one slice per combination.
func otherPaths(r workload.Result, all []workload.Result, key func(workload.Result) string) [][]workload.Result {
	k := key(r)
	byCombo := map[string][]workload.Result{}
	var order []string
	for _, o := range all {
		if !o.OK() || o.Combo == r.Combo || o.Metrics == nil || key(o) != k {
			continue
		}
		if _, seen := byCombo[o.Combo]; !seen {
			order = append(order, o.Combo)
		}
		byCombo[o.Combo] = append(byCombo[o.Combo], o)
	}
	out := make([][]workload.Result, 0, len(order))
	for _, c := range order {
		out = append(out, byCombo[c])
	}
	return out
}

// pooledServerCost is the median of the paths' server-side costs per row
// at a whole core: a server-side statement makes one round trip whatever
// its rows, so every path measures the same server's cost, and on a
// shared host one path's three runs spread by up to 1.8x (the quiet demo
// of 2026-11-27 14:51: server-cursor through loopback 0.47 to 0.71 µs a
// row), where the fastest path alone carried its spread into every link.
func pooledServerCost(paths [][]workload.Result) float64 {
	costs := make([]float64, 0, len(paths))
	for _, p := range paths {
		costs = append(costs, serverCostPerRow(p))
	}
	return measure.Median(costs)
}

// stream predicts a stream: the bytes at the least of the link's rate, its
// window over its RTT and the consumer's rate, plus one RTT. The consumer's
// rate is the fastest other path's of the same client and transport, else
// the sample of the same experiment on the point's own path (see
// takeSamples) with the client's per-row cost added, else the fastest
// path's of the other transport.
func stream(r workload.Result, ref, all []workload.Result) workload.Prediction {
	l := linkOf(r)
	rtt := l.RTTSeconds
	var consumer float64
	var from string
	reason := missReason("stream", r)
	if !sameTransport(r, ref) {
		consumer, from = sampledConsumer(r, all)
	}
	if consumer == 0 {
		if len(ref) == 0 {
			return workload.Prediction{Reason: noFigure}
		}
		consumer, from = referenceConsumer(r, ref)
		reason = missReason("stream-reference", r)
	}
	rate, limit := consumer, "the client's consumer rate"
	if pace, paceFrom := cappedServerPace(r, ref, all); pace > 0 && pace < rate {
		rate, limit = pace, "the capped server's pace ("+paceFrom+")"
	}
	if l.RateBitsPerS > 0 && l.RateBitsPerS < rate {
		rate, limit = l.RateBitsPerS, "the link's rate"
	}
	if l.InFlightBytes() > 0 && rtt > 0 {
		if w := float64(l.InFlightBytes()) * 8 / rtt; w < rate {
			rate, limit = w, "window / RTT"
		}
	}
	bytes, rows := r.Metrics["wire_bytes"], r.Metrics["rows"]
	t := bytes*8/rate + rtt
	return workload.Prediction{
		Metrics: map[string]float64{"throughput_bps": bytes * 8 / t, "seconds": t, "us_per_row": t / rows * 1e6},
		Formula: fmt.Sprintf("t = bytes / min(rate, window/RTT, consumer %.3g Gbit/s) + RTT: limited by %s (%s)", consumer/1e9, limit, from),
		Reason:  reason,
	}
}

// cappedServerPace is the rate (bits per second) at which r's server,
// capped below a whole core (cpu_speed), can send r's stream, and what it
// came from; 0 where the server is uncapped or the reference ran at its
// speed. A stream's server works on every row too, and a quota of half a
// core halves its pace, which the uncapped reference's consumer rate does
// not show: client-stream over lan-1g from a server at 0.5 took 0.17 and
// 0.27 µs a row in the quiet runs of 2026-11-27 17:23 and 16:52, where
// the uncapped reference through loopback streamed at 0.14 and 0.16.
// The pace is the fastest sample of the experiment from a server at a
// whole core, on a path that bypasses the link, slowed by the cap: the
// whole of that sample's row taken for the server's, an upper bound as
// the client's cost per row is. A server pays its transport's send on
// every message, more on TCP than on a unix socket, so a point over TCP
// takes the samples on direct TCP (the unix socket's only where there is
// none): cursor-messages over lan-1g from a server at 0.5 took 10.2 to
// 14.7 µs a row in the four quiet runs of 2026-11-27 that ran it, 1.7 to
// 2.6x the unix socket's sample halved, 0.75 to 1.38x direct TCP's. A
// point on the unix socket takes either, each an upper bound of its
// server's time. A sample at the capped speed itself is not taken: it
// lasts about one period of the quota (100 ms), which it may spend within
// one period's budget (the samples at 0.5 of 16:52: 0.165 to 0.240 µs a
// row, the point 0.267).
func cappedServerPace(r workload.Result, ref, all []workload.Result) (float64, string) {
	speed := ServerSpeed(r)
	if speed >= 1 || (len(ref) > 0 && ServerSpeed(ref[0]) == speed) {
		return 0, ""
	}
	overTCP := linkOf(r).Mode != "unix"
	us, perRow, path := fastestWholeCoreSample(r, all, overTCP)
	if perRow == 0 && overTCP {
		us, perRow, path = fastestWholeCoreSample(r, all, false)
	}
	if perRow == 0 {
		return 0, ""
	}
	return perRow * 8 * speed / (us * 1e-6), fmt.Sprintf("the sample on %s, %.3g µs a row at a whole core / server cpu_speed %g", path, us, speed)
}

// fastestWholeCoreSample is the fastest sample of r's experiment (µs a
// row and bytes a row) that a server at a whole core took (see
// wholeCoreServer), on direct TCP only where tcpOnly is set, and its
// path; no bytes where there is none.
func fastestWholeCoreSample(r workload.Result, all []workload.Result, tcpOnly bool) (us, perRow float64, path string) {
	exp := r.Params.String("experiment")
	us = math.Inf(1)
	for _, o := range all {
		t, b := o.Metrics[SampleMetric(exp, "us_per_row")], o.Metrics[SampleMetric(exp, "bytes_per_row")]
		if !o.Measured() || o.Combo == r.Combo || t <= 0 || b <= 0 || !wholeCoreServer(r, o) || t >= us {
			continue
		}
		if tcpOnly && linkOf(o).Mode == "unix" {
			continue
		}
		us, perRow, path = t, b, profileName(linkOf(o))
	}
	return us, perRow, path
}

// wholeCoreServer reports whether o ran r's server at a whole core, with
// CPUs idling as r's and a client no slower than r's: a sample of its
// stream there bounds the server's time per row, not a slower consumer's.
func wholeCoreServer(r, o workload.Result) bool {
	return o.Instance().Engine == r.Instance().Engine && o.Params.String("instance") == r.Params.String("instance") &&
		ServerSpeed(o) == 1 && ClientSpeed(o) >= ClientSpeed(r) && o.Client.Idle == r.Client.Idle &&
		o.Client.GOMAXPROCS == r.Client.GOMAXPROCS && o.Client.CPUs == r.Client.CPUs
}

// referenceConsumer is the consumer rate (bits per second) r's client
// takes from its reference's stream, and what it came from. At the
// reference's client speed it is the reference's rate. A client capped
// below it (cpu_speed, a CFS quota) slows the stream only where the
// client's own CPU per row, as the reference's thread measured it
// (ClientCPUMetric), no longer fits in the quota: the rest of each row is
// the server's, the link's and their wake-ups, which a quota on the
// client does not lengthen (cursor-messages over lan-1g from the client
// at 0.5 streamed 1.0 to 2.4x as fast as the model that halved the
// whole row, in the quiet runs of 2026-11-27). Without that figure (runs
// before it was recorded), or from a capped reference, the whole row is
// taken for the client's, an upper bound.
func referenceConsumer(r workload.Result, ref []workload.Result) (float64, string) {
	rate := medianMetric(ref, "throughput_bps")
	speed, refSpeed := ClientSpeed(r), ClientSpeed(ref[0])
	from := "costs from " + profileName(linkOf(ref[0]))
	if speed == refSpeed {
		return rate, from
	}
	cpu := medianMetric(ref, ClientCPUMetric) * 1e-6
	if !(cpu > 0) || refSpeed < 1 || speed > refSpeed {
		return rate / refSpeed * speed, from + speedTerm(speed, refSpeed, "client")
	}
	bitsPerRow := medianMetric(ref, "wire_bytes") / medianMetric(ref, "rows") * 8
	if quota := bitsPerRow * speed / cpu; quota < rate {
		return quota, from + fmt.Sprintf(": the client's %.3g µs of CPU a row%s", cpu*1e6, speedTerm(speed, refSpeed, "client"))
	}
	return rate, from + fmt.Sprintf(", whose client's %.3g µs of CPU a row fits in client cpu_speed %g", cpu*1e6, speed)
}

// sameTransport reports whether r's reference ran on r's transport (the
// unix socket, or TCP): a sample of r's own path stands in only for a
// reference of another transport, since a reference's stream ran as
// long as r's, where a sample's tens of milliseconds through a link
// moved by up to 5x from its point on a busy host (wide-rows over lan-1g,
// 2026-11-27, load average 10).
func sameTransport(r workload.Result, ref []workload.Result) bool {
	return len(ref) > 0 && (linkOf(ref[0]).Mode == "unix") == (linkOf(r).Mode == "unix")
}

// sampledConsumer is the consumer's rate (bits per second) that the
// samples of r's experiment on its path give, with r's per-row client cost
// added to the sample's time per row, and what it came from; 0 without a
// sample.
func sampledConsumer(r workload.Result, all []workload.Result) (float64, string) {
	us, ok := sampleOf(r, all, "us_per_row")
	perRow, okBytes := sampleOf(r, all, "bytes_per_row")
	if !ok || !okBytes || us <= 0 {
		return 0, ""
	}
	cost := clientCost(r) / ClientSpeed(r)
	return perRow * 8 / (us*1e-6 + cost), fmt.Sprintf("the sample on %s, %.3g µs a row%s", profileName(linkOf(r)), us, costTerm(cost))
}

// clientCost is the CPU time, in seconds, the point's client spends on each
// row (client_cost).
func clientCost(r workload.Result) float64 {
	return r.Params.Duration("client_cost").Seconds()
}

// costTerm is the formula's client cost per row, where there is one.
func costTerm(cost float64) string {
	if cost == 0 {
		return ""
	}
	return fmt.Sprintf(" + the client's %.3g µs", cost*1e6)
}

// rowByRow predicts a row-by-row point: one round trip of its path per
// row, plus the client's and the server's time on the row beyond a round
// trip, fitted on the reference (of the same client cost, else of another,
// the difference added). Where the server-side points probed both paths,
// the round trip is the probe's (see probeOf); else it is the link's RTT,
// and the reference's cost beyond its own RTT is taken for the path's too.
// With no reference, a row is the path's probed round trip and the
// client's cost.
func rowByRow(r workload.Result, ref, all []workload.Result) workload.Prediction {
	l := linkOf(r)
	speed, cost := ClientSpeed(r), clientCost(r)
	if len(ref) == 0 {
		ref = reference(r, all, anyCost)
	}
	probe, probed := probeOf(r, all)
	if len(ref) == 0 {
		if !probed {
			return workload.Prediction{Reason: noFigure}
		}
		perRow := probe + cost/speed
		return workload.Prediction{
			Metrics: map[string]float64{"us_per_row": perRow * 1e6, "rows_per_s": 1 / perRow},
			Formula: fmt.Sprintf("t/row = %s's probed round trip %.1f µs%s%s", profileName(l), probe*1e6, costTerm(cost), speedTerm(speed, 1, "client")),
			Reason:  missReason("row-by-row", r),
		}
	}
	refLink := linkOf(ref[0])
	refSpeed := ClientSpeed(ref[0])
	roundTrip := l.RTTSeconds + serialization(l)
	refRoundTrip := refLink.RTTSeconds + serialization(refLink)
	formula := "t/row = RTT + %.3g µs%s (costs from %s)"
	refProbe, refProbed := probeOf(ref[0], all)
	switch {
	case profileName(refLink) == profileName(l):
		// The same path at another client cost: its rows as they ran,
		// whatever a probe says of their round trips.
		roundTrip, refRoundTrip = 0, 0
		formula = "t/row = %.3g µs%s (the rows on %s at the client's cost)"
	case probed && refProbed:
		roundTrip, refRoundTrip = probe, refProbe
		formula = fmt.Sprintf("t/row = %s's probed round trip %.1f µs", profileName(l), probe*1e6) + " + %.3g µs%s (the row beyond a probed round trip on %s)"
	}
	// A row pays at least its path's round trip and the client's cost:
	// where the reference's row took less than its own path's round trip,
	// the round trips disagree with it (a probe's few thousand trips
	// against its seconds on a busy host), and the rest of the client's
	// and the server's time on the row is left out rather than taken
	// negative.
	base := max(0, (medianMetric(ref, "us_per_row")*1e-6-refRoundTrip)*refSpeed-clientCost(ref[0]))
	s := base + cost
	perRow := roundTrip + s/speed
	return workload.Prediction{
		Metrics: map[string]float64{"us_per_row": perRow * 1e6, "rows_per_s": 1 / perRow},
		Formula: fmt.Sprintf(formula, s*1e6, speedTerm(speed, refSpeed, "client"), profileName(refLink)),
		Reason:  missReason("row-by-row", r),
	}
}

// probeOf is the median round trip, in seconds, that the server-side
// points of r's path, engine, instance, client and speeds among all probed
// in r's idle mode (see probeFigures), and whether any did: a probe lasts
// milliseconds, and another process's burst of CPU in one moves a mean by
// tens of percent. A row-by-row point never probes: its own figure never
// enters its round trip.
func probeOf(r workload.Result, all []workload.Result) (float64, bool) {
	vs := probeFigures(r, all)
	if len(vs) == 0 {
		return 0, false
	}
	return measure.Median(vs) * 1e-6, true
}

// probeFigures are the round trips (µs) the other points of r's path
// probed with its CPUs idling as r's do (client.idle): a halting point
// takes the plain probes of halting points; a spinning one the probes
// with the loops (ProbeSpinMetric) and the plain probes of spinning
// points, which ran with the loops too. The loops spare each round trip
// the halted vCPUs' wake-ups (the quiet demo of 2026-11-27: 82.7 against
// 135 µs a row over loopback), so a probe of the other mode would carry
// that difference into the row.
func probeFigures(r workload.Result, all []workload.Result) []float64 {
	spin := r.Client.Idle == idleloop.Spin
	var vs []float64
	for _, o := range pathResults(r, all) {
		if v := o.Metrics[ProbeMetric]; v > 0 && (o.Client.Idle == idleloop.Spin) == spin {
			vs = append(vs, v)
		}
		if v := o.Metrics[ProbeSpinMetric]; v > 0 && spin {
			vs = append(vs, v)
		}
	}
	return vs
}

// sampleOf is the fastest of the samples of r's experiment (SampleMetric)
// that the server-loop points of r's path took, and whether any did. A
// sample lasts tens of milliseconds: another process's burst or a wake-up
// on a halted vCPU is a large share of it and only ever slows it, where
// the point's runs last seconds (the quiet demo of 2026-11-27 14:51: the
// unix socket's six samples of cursor-messages 2.52 to 4.29 µs a row,
// the point 2.51; their median missed it by +48 %).
func sampleOf(r workload.Result, all []workload.Result, what string) (float64, bool) {
	vs := pathFigures(r, all, SampleMetric(r.Params.String("experiment"), what))
	if len(vs) == 0 {
		return 0, false
	}
	return slices.Min(vs), true
}

// pathFigures are a metric's values over the measured points of r's path
// (probeKey) whose CPUs idled as r's (client.idle: a sample with the
// loops spinning is another path's), leaving r's own combination out.
func pathFigures(r workload.Result, all []workload.Result, metric string) []float64 {
	var vs []float64
	for _, o := range pathResults(r, all) {
		if v, ok := o.Metrics[metric]; ok && v > 0 && o.Client.Idle == r.Client.Idle {
			vs = append(vs, v)
		}
	}
	return vs
}

// pathResults are the measured points of r's path (probeKey) among all,
// leaving r's own combination out: a figure of the point's own runs never
// predicts it.
func pathResults(r workload.Result, all []workload.Result) []workload.Result {
	key := probeKey(r)
	var out []workload.Result
	for _, o := range all {
		if o.Measured() && o.Combo != r.Combo && probeKey(o) == key {
			out = append(out, o)
		}
	}
	return out
}

// probeKey is what a probe shares with the row-by-row points it predicts:
// the path, the server and the client, as they ran, whatever their CPUs'
// idle mode, which probeFigures and pathFigures match.
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
// the row's size in the wide-rows experiment), else its sample's, since
// only the run measures them; the costs come from the points measured
// before it.
func Predict(r workload.Result, before []workload.Result) workload.Prediction {
	rows := float64(r.Params.Int("rows"))
	inputs := r
	inputs.Metrics = map[string]float64{"rows": rows}
	if perRow := bytesPerRow(r, before); perRow > 0 {
		inputs.Metrics["wire_bytes"] = perRow * rows
	}
	p := Model(inputs, before)
	if len(p.Metrics) == 0 {
		p.Reason = "no prediction: no other link of the same engine, experiment and client measured before it, and no sample of the experiment on its path"
	}
	return p
}

// bytesPerRow is a stream's protocol bytes per row before it runs: the
// reference's, else its path's sample's, scaled by the row's size in the
// wide-rows experiment.
func bytesPerRow(r workload.Result, before []workload.Result) float64 {
	var perRow float64
	var size int64
	if ref := Reference(r, before); len(ref) > 0 {
		perRow, size = medianMetric(ref, "wire_bytes")/medianMetric(ref, "rows"), ref[0].Params.Int("row_bytes")
	} else if v, ok := sampleOf(r, before, "bytes_per_row"); ok {
		perRow, size = v, sampleRowBytes(r, before)
	}
	if r.Params.String("experiment") == "wide-rows" && size > 0 && r.Params.Int("row_bytes") > 0 {
		perRow *= float64(r.Params.Int("row_bytes")) / float64(size)
	}
	return perRow
}

// sampleRowBytes is the row size of the wide-rows samples on r's path.
func sampleRowBytes(r workload.Result, before []workload.Result) int64 {
	key := probeKey(r)
	for _, o := range before {
		if _, ok := o.Metrics[SampleMetric("wide-rows", "bytes_per_row")]; ok && probeKey(o) == key {
			return o.Params.Int("row_bytes")
		}
	}
	return 0
}

// missReason is what the model leaves out, said beside its figure where
// it misses, and where a point like r missed the same way in most quiet
// runs, what those runs measured of it (knownMiss).
func missReason(kind string, r workload.Result) string {
	reason := modelReason(kind)
	if known := knownMiss(kind, r); known != "" {
		return reason + "; " + known
	}
	return reason
}

// modelReason is what each kind of prediction leaves out.
func modelReason(kind string) string {
	switch kind {
	case "server":
		return "the server's per-row cost is the reference path's (or its path's cursor sample); the client's and the link's costs are one round trip"
	case "row-by-row":
		return "each row pays one round trip of its path (probed by the server-side points, else the RTT) plus the reference path's per-row cost beyond its round trip; a busy host or a slower client adds to it"
	case "stream":
		return "a stream is bounded by min(rate, window / RTT, the consumer rate its path's sample measured before it): the sample lasts tens of milliseconds, and other work on the host during it or during the point moves either"
	}
	return "a stream is bounded by min(rate, window / RTT, the fastest other path's consumer rate, a capped client's CPU per row over its quota, a capped server's whole-core pace times its cap): a consumer slower here than there is not, nor the link's relay taking CPU from the client and the server where the link's rate and the consumer's are near"
}

// quietRuns opens each knownMiss: what one machine measured, not a law of
// every host.
const quietRuns = "the quiet rbar-latency demos of 2026-11-27 on the study's demo machine measured (docs/studies/rbar-latency.md): "

// demoStudy is the study whose demos knownMiss reports.
const demoStudy = "rbar-latency"

// knownMiss is what the five quiet demos of 2026-11-27 (14:51, 16:52,
// 17:23, 20:20, 20:50) measured where their points of r's kind missed
// with the same sign in most of them, replayed with this model; "" for
// the others. Each sentence is given only to a point of that study with
// the experiment, speed and path it names: the runs measured nothing of
// the others. A cause the model could take from a figure measured before
// the point is in the model instead.
func knownMiss(kind string, r workload.Result) string {
	if r.Study != demoStudy {
		return ""
	}
	exp, path := r.Params.String("experiment"), linkOf(r).Profile
	if path == "" {
		path = linkOf(r).Mode
	}
	switch {
	case kind == "server" && exp == "server-cursor" && ServerSpeed(r) == 0.5 && path == "unix":
		return quietRuns + "server-cursor at 0.5 on the unix socket took 1.2 to 2.7x its whole-core time a row, where the cap gives 2x: a statement of one or two quota periods (100 ms) runs partly within one period's budget, and the host's speed moved"
	case kind == "server" && exp == "server-loop" && path == "unix":
		return quietRuns + "server-loop on the unix socket ran a row at one of two speeds about 1.5x apart, each for seconds (about 40 or about 60 ns a row at a whole core), which the reference's runs need not share"
	case kind == "row-by-row" && exp == "client-row-by-row" && r.Client.Idle == idleloop.Spin && path == "loopback":
		return quietRuns + "the probe with the idle loops, started just before it, took 1.30 to 1.50x the spinning rows' round trip over loopback (0.99 to 1.96x over lan-1g and infiniband)"
	case kind == "stream" && exp == "wide-rows" && (path == "unix" || path == "direct"):
		return quietRuns + "the first wide-rows points took 1.2 to 1.7x their path's fastest sample a row on the unix socket (0.9 to 1.6x on direct TCP): that sample is the fastest of up to six of 2,000 rows, about 10 ms each"
	case kind == "stream-reference" && exp == "cursor-messages" && linkOf(r).Mode == "link":
		return quietRuns + "a stream of notices through the link ran in two regimes, stretches of 8 to 22 KB per 10 ms in the link's series beside stretches near 150 KB, and one point's three runs spread up to 5.7x (infiniband at 20:50: 7.0, 21.2 and 40.0 µs a notice), which no other path's rate foresees"
	}
	return ""
}
