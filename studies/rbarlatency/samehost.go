package rbarlatency

import (
	"fmt"
	"math"
	"strings"

	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/study"
)

// The seed's "moving the client to the server is not always the best
// option if the server itself is not fast enough" compares a client on
// the server's own host with one on a machine of its own, at a fast and at
// a slow server. Here the same host is the unix socket with the client and
// the server at the same cpu_speed, each under a quota of its own (a host
// whose every core runs at that speed: the seed's one-thread client and
// MAXDOP 1 server each ran on a core of their own); the client's own
// machine is lan-1g, the seed's Ethernet, at the client's own speed.
const (
	sameHostNet, ownMachineNet = "unix", "lan-1g"
	// moveTolerance is the gain of moving the client onto the slow server
	// that still says "no better": two points of different paths run
	// apart on a shared machine differ by that much with nothing changed.
	moveTolerance = 0.10
	// slowHost is how much slower than uncapped the same host at half a
	// core must run a row for the run to hold a slow server at all: the
	// model's 2x where an end's CPU sets the rate, less a shared
	// machine's noise. Where other work already keeps both ends under
	// half a core, the quota binds on nothing and the host is not slow.
	slowHost = 1.25
)

// moveExps are the seed's two experiments it drew the finding from: one
// big result set, and a result set per row.
var moveExps = []string{"client-stream", "cursor-messages"}

// moveGain is what moving the client onto the server's host gained at one
// server speed: the time per row from the client's own machine over the
// time per row on the server's host.
type moveGain struct {
	remote, same float64 // µs per row, kept values
	got, lo, hi  float64 // the kept values' ratio, and the ratios two runs could give
}

func gainOf(remote, same *study.Summary) moveGain {
	g := moveGain{remote: remote.Mean("us_per_row"), same: same.Mean("us_per_row")}
	g.got = g.remote / g.same
	g.lo, g.hi = study.RatioRange(remote.Stats["us_per_row"], same.Stats["us_per_row"])
	return g
}

// clientMove is one experiment's gains at the fast server (uncapped, the
// remote client at half a core) and at the slow one (half a core, the
// remote client uncapped), and the model's figures beside them.
type clientMove struct {
	exp                  string
	fast, slow           moveGain
	modelFast, modelSlow float64 // the slow server's is the model's upper bound
	// hostSlowdown is the same host's time per row at half a core over
	// its time uncapped.
	hostSlowdown float64
	verdict      report.Verdict
}

func (a *analysis) clientMove(exp string) (clientMove, bool) {
	sameFast, remoteFast := a.sum(exp, fast, sameHostNet), a.sum(atClientSpeed(exp, halfSpeed), fast, ownMachineNet)
	sameSlow, remoteSlow := a.sum(atClientSpeed(atSpeed(exp, halfSpeed), halfSpeed), fast, sameHostNet), a.sum(atSpeed(exp, halfSpeed), fast, ownMachineNet)
	if sameFast == nil || remoteFast == nil || sameSlow == nil || remoteSlow == nil {
		return clientMove{}, false
	}
	m := clientMove{exp: exp, fast: gainOf(remoteFast, sameFast), slow: gainOf(remoteSlow, sameSlow)}
	m.hostSlowdown = m.slow.same / m.fast.same
	m.modelFast, m.modelSlow = a.moveModel(exp)
	m.verdict = moveVerdict(m.fast, m.slow)
	return m, !math.IsNaN(m.fast.got) && !math.IsNaN(m.slow.got)
}

// moveModel is the model's gains from the run's own points at full speed:
// a stream's ends overlap, so a row takes max(s_server/v_server,
// s_client/v_client, the link's time per row). The unix socket's time t_u
// is the slower end's, taken as the client's (the rows' consumer rate
// bounds these streams, as the model's samples find), and lan-1g's t_l is
// max(t_u, the link's). Moving onto the fast server turns max(2 t_u, t_l)
// into t_u; onto the slow one, max(2 s_server, t_u, t_l) into 2 t_u, which
// is at most max(1, t_l / 2 t_u).
func (a *analysis) moveModel(exp string) (gainFast, gainSlowAtMost float64) {
	tu, tl := a.mean(exp, fast, sameHostNet, "us_per_row"), a.mean(exp, fast, ownMachineNet, "us_per_row")
	return max(2*tu, tl) / tu, max(1, tl/(2*tu))
}

// moveVerdict: reproduced when the move gains more at the fast server
// than at the slow one and gains at most moveTolerance at the slow one,
// each in every pair of runs; differs when every pair says otherwise of
// either; within noise when the runs fall on both sides.
func moveVerdict(fastGain, slowGain moveGain) report.Verdict {
	larger := report.WithinNoise
	switch {
	case fastGain.lo > slowGain.hi:
		larger = report.Reproduced
	case fastGain.hi <= slowGain.lo:
		larger = report.Differs
	}
	atSlow := study.Band(slowGain.lo, slowGain.hi, 0, 1+moveTolerance)
	return worse(larger, atSlow)
}

const sameHostEmulation = "The same host is the unix socket with the client and the server at the same cpu_speed, each under a CFS quota of its own (a host whose every core runs at that speed: the seed's one-thread client and MAXDOP 1 server each had a core); the client's own machine is lan-1g at the client's own speed. A quota gives part of each 100 ms period at full clock: it slows a process only while it would use more than its share."

func (a *analysis) judgeSameHost(f *report.Finding, _ study.Published) {
	var moves, unslowed []clientMove
	for _, exp := range moveExps {
		m, ok := a.clientMove(exp)
		switch {
		case !ok:
		case m.hostSlowdown < slowHost:
			unslowed = append(unslowed, m)
		default:
			moves = append(moves, m)
		}
	}
	if len(moves)+len(unslowed) == 0 {
		f.Why = fmt.Sprintf("This run lacks the points that move the client: %s on %s with the client and the server at the same cpu_speed (none, and %g), and over %s with the client at %g beside an uncapped server, and uncapped beside a server at %g (the quick and full scales have them; the smoke scale, a machine without a writable cpu cgroup, and a --target skip them).",
			strings.Join(moveExps, " and "), sameHostNet, halfSpeed, ownMachineNet, halfSpeed, halfSpeed)
		return
	}
	var measured, spread, model []string
	for _, m := range append(moves, unslowed...) {
		measured = append(measured, describeMove(m))
		spread = append(spread, fmt.Sprintf("%s: the runs give gains from %s to %s at the fast server, %s to %s at the slow one", m.exp,
			study.FormatTimes(m.fast.lo), study.FormatTimes(m.fast.hi), study.FormatTimes(m.slow.lo), study.FormatTimes(m.slow.hi)))
		model = append(model, fmt.Sprintf("%s %s at the fast server, at most %s at the slow one", m.exp, study.FormatTimes(m.modelFast), study.FormatTimes(m.modelSlow)))
	}
	f.Measured = strings.Join(measured, "; ")
	f.Spread = strings.Join(spread, "; ")
	f.Model = "gain = t/row from the client's own machine over t/row on the server's host, t/row = max(s_server / server speed, s_client / client speed, the link's time per row) from the full-speed points: " + strings.Join(model, "; ")
	if len(moves) == 0 {
		f.Verdict = report.NotMeasured
		f.Why = fmt.Sprintf("The quota did not make the same host slow: at cpu_speed %g on %s a row took under %s its uncapped time, so other work on this machine already held both ends under half a core and the run has no slow server to move the client onto. %s", halfSpeed, sameHostNet, study.FormatTimes(slowHost), sameHostEmulation)
		return
	}
	f.Verdict = report.Reproduced
	for _, m := range moves {
		f.Verdict = worse(f.Verdict, m.verdict)
	}
	f.Why = sameHostWhy(f.Verdict)
	for _, m := range unslowed {
		f.Why += fmt.Sprintf(" %s is left out: at cpu_speed %g its same host ran a row in under %s its uncapped time, no slow server.", m.exp, halfSpeed, study.FormatTimes(slowHost))
	}
	f.Why += " " + sameHostEmulation
}

func describeMove(m clientMove) string {
	return fmt.Sprintf("%s: at the fast server %.3g µs/row from a client at cpu_speed %g over %s, %.3g on the same host: moving gains %s; at the server at cpu_speed %g %.3g µs/row from an uncapped client over %s, %.3g on the same host at %g (%s its uncapped time): %s",
		m.exp, m.fast.remote, halfSpeed, ownMachineNet, m.fast.same, study.FormatTimes(m.fast.got), halfSpeed, m.slow.remote, ownMachineNet, m.slow.same, halfSpeed, study.FormatTimes(m.hostSlowdown), study.FormatTimes(m.slow.got))
}

func sameHostWhy(v report.Verdict) string {
	bound := study.FormatTimes(1 + moveTolerance)
	switch v {
	case report.Reproduced:
		return fmt.Sprintf("Moving the client onto the server gained more at the fast server than at the slow one, where it gained at most %s: the client on the server's host runs at the host's speed, so the move pays only where the host is faster than the client's own machine, as in the seed.", bound)
	case report.WithinNoise:
		return fmt.Sprintf("The runs fall on both sides of a bound (a larger gain at the fast server than at the slow one, at most %s at the slow one): two runs of this study could say either.", bound)
	}
	return fmt.Sprintf("Moving the client did not gain more at the fast server than at the slow one, or gained more than %s at the slow one, in every pair of runs: here the client's time per row did not follow its host's speed (a quota slows a process only past its share, and other work on this machine takes its CPUs).", bound)
}
