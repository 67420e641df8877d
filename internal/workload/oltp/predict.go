package oltp

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/stat"

	"github.com/dbrig/dbrig/internal/workload"
)

// A curve's points before a point tell its light-load line and, once one
// saturated, its capacity. Before that, its sibling curves (the same load
// through another link, measured before it) tell them: the users through
// the nearest link lived a cycle close to its own, and the server's
// capacity is the CPU the machine leaves the load, which serves a
// transport in proportion to what one of its transactions costs (the
// server's CPU and the client's, where the link's proxy runs).

// siblingKey is what a point shares with the points of its sibling curves:
// its curve's key without its links.
func siblingKey(r workload.Result) string {
	r.Links = nil
	return CurveKey(r, false)
}

// sibling is one sibling curve's points before a point, and its link.
type sibling struct {
	curve []CurvePoint
	link  string
	mode  string
	rtt   float64
}

// siblingsOf are r's sibling curves measured before it, nearest link
// first: the same mode (the unix socket, direct TCP, a link's proxy), then
// the nearest round trip, then the latest measured.
func siblingsOf(r workload.Result, before []workload.Result) []sibling {
	key, own := siblingKey(r), CurveKey(r, false)
	var out []sibling
	seen := map[string]bool{}
	for _, o := range before {
		ck := CurveKey(o, false)
		// A mismatched link's throughput is its stalls': neither the
		// users' cycle nor the server's capacity. A curve seen already
		// is the same curve (its key holds its links and settings).
		if seen[ck] || !o.Measured() || o.Params.Float("rate") > 0 || Mismatched(o) || ck == own || siblingKey(o) != key {
			continue
		}
		seen[ck] = true
		l := o.Link()
		// A result of no combination: curveOf leaves none of the
		// sibling's points out.
		out = append(out, sibling{curve: wholeCurveOf(o, before), link: l.Profile, mode: l.Mode, rtt: l.RTTSeconds})
	}
	l := r.Link()
	nearer := func(a, b sibling) bool {
		if (a.mode == l.Mode) != (b.mode == l.Mode) {
			return a.mode == l.Mode
		}
		return math.Abs(a.rtt-l.RTTSeconds) < math.Abs(b.rtt-l.RTTSeconds)
	}
	for i := 1; i < len(out); i++ { // stable: the latest first among equals
		for j := i; j > 0 && !nearer(out[j-1], out[j]); j-- {
			out[j-1], out[j] = out[j], out[j-1]
		}
	}
	return out
}

// cpuPerTx is the CPU seconds one transaction of a curve point cost the
// server and the client together (0 when the monitor saw no server CPU).
func cpuPerTx(c CurvePoint) float64 {
	if c.ServerCPU <= 0 || c.TPS <= 0 {
		return 0
	}
	return c.ServerCPU/c.TPS + c.ClientUSPerTx/1e6
}

// scaledCapacity is a sibling's capacity (seed 001's top-4 mean of its
// saturated points) in r's curve's terms. The CPUs the load got there, C,
// served transactions of D CPU seconds each (the server's and the
// client's); the same statements cost the server the same whatever the
// link, and what the link changes is the client's CPU per transaction
// (its process runs the link's proxy): this curve's D is the sibling's
// plus the difference of the client's, both at the most users both curves
// measured, and its capacity C / D. ok is false when the sibling has no
// saturated point.
func scaledCapacity(s sibling, own []CurvePoint) (capacity, ratio float64, ok bool) {
	if len(s.curve) == 0 {
		return 0, 0, false
	}
	cycle := 1000 * s.curve[0].Users / s.curve[0].TPS // N0 / X0
	var saturated, demand []float64
	for _, c := range saturatedPoints(s.curve, cycle) {
		saturated = append(saturated, c.TPS)
		if d := cpuPerTx(c); d > 0 {
			demand = append(demand, d)
		}
	}
	if len(saturated) == 0 {
		return 0, 0, false
	}
	capacity, _ = Peak(saturated)
	if len(demand) == 0 {
		return capacity, 1, true
	}
	d := stat.Mean(demand, nil)
	for i := len(own) - 1; i >= 0; i-- {
		for _, c := range s.curve {
			if c.Users != own[i].Users {
				continue
			}
			if mine := d + (own[i].ClientUSPerTx-c.ClientUSPerTx)/1e6; mine > 0 {
				return capacity * d / mine, d / mine, true
			}
		}
	}
	return capacity, 1, true
}

// siblingCapacity is the capacity the nearest sibling with a saturated
// point gives r's curve, and a formula's words for it.
func siblingCapacity(sibs []sibling, own []CurvePoint) (float64, string, bool) {
	for _, s := range sibs {
		if capacity, ratio, ok := scaledCapacity(s, own); ok {
			return capacity, fmt.Sprintf("%s's saturated points × its CPU per transaction over this curve's, the client's difference added (× %.2f)", s.link, ratio), true
		}
	}
	return 0, "", false
}
