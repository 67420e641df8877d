package rbarlatency

import (
	"fmt"
	"math"
	"strings"

	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/study"
)

// The seed's "durations follow the processor's maximum frequency" is
// judged on the server-side experiments at two cpu_speed values: a CFS
// quota gives the server that many cores' worth of CPU time, an emulated
// processor of that speed, and a row's time follows 1/speed.
const (
	fullSpeed, halfSpeed = 1.0, 0.5
	// speedTolerance is how far each run's ratio may stray from the
	// model's and still reproduce it: a quarter, beyond the few percent a
	// quota's accounting gives (one 100 ms period in a point of seconds)
	// and inside what a busy 2-core machine moves a point's time by.
	speedTolerance = 0.25
)

// vmPenaltyNotMeasured is why the finding's server-side half stays
// unmeasured (the client's half is judged in vm.go).
const vmPenaltyNotMeasured = "The seed's VM penalty on the server-side loop (5-10 %) and cursor (about 30 %) is not measured: neither makes a round trip, so it is not a halted vCPU's wake-up but what virtualization costs inside the server (VM exits, nested paging, virtual timers and devices), which a CPU quota does not reproduce (a quota slows every instruction alike), and a run has no physical machine beside a virtual one."

// speedRatio is one experiment's time per row at half against full speed.
type speedRatio struct {
	exp                string
	full, half         float64 // µs per row, kept values
	got, lo, hi, model float64
	verdict            report.Verdict
}

func (a *analysis) speedRatio(exp string) (speedRatio, bool) {
	for _, net := range a.links {
		sf, sh := a.sum(atSpeed(exp, fullSpeed), fast, net), a.sum(atSpeed(exp, halfSpeed), fast, net)
		if sf == nil || sh == nil {
			continue
		}
		r := speedRatio{exp: exp, full: sf.Mean("us_per_row"), half: sh.Mean("us_per_row"), model: fullSpeed / halfSpeed}
		r.got = r.half / r.full
		// Each run at half speed against each at full: the ratios two
		// runs of this study could give.
		r.lo, r.hi = study.RatioRange(sh.Stats["us_per_row"], sf.Stats["us_per_row"])
		r.verdict = study.Band(r.lo, r.hi, r.model*(1-speedTolerance), r.model*(1+speedTolerance))
		return r, !math.IsNaN(r.got)
	}
	return speedRatio{}, false
}

func (a *analysis) judgeProcessorSpeed(f *report.Finding, _ study.Published) {
	var ratios []speedRatio
	for _, exp := range []string{"server-loop", "server-cursor"} {
		if r, ok := a.speedRatio(exp); ok {
			ratios = append(ratios, r)
		}
	}
	if len(ratios) == 0 {
		f.Why = fmt.Sprintf("This run has no server-side point at cpu_speed %g and %g (the quick and full scales have them; a machine without a writable cpu cgroup, or a --target, skips them). %s", fullSpeed, halfSpeed, vmPenaltyNotMeasured)
		return
	}
	var measured, spread []string
	f.Verdict = report.Reproduced
	for _, r := range ratios {
		measured = append(measured, fmt.Sprintf("%s: %.3g µs/row at cpu_speed %g, %.3g µs/row at cpu_speed %g: %s as long", r.exp, r.full, fullSpeed, r.half, halfSpeed, study.FormatTimes(r.got)))
		spread = append(spread, fmt.Sprintf("%s: the runs give ratios from %s to %s", r.exp, study.FormatTimes(r.lo), study.FormatTimes(r.hi)))
		switch {
		case r.verdict == report.Differs:
			f.Verdict = report.Differs
		case r.verdict == report.WithinNoise && f.Verdict == report.Reproduced:
			f.Verdict = report.WithinNoise
		}
	}
	f.Measured = strings.Join(measured, "; ")
	f.Spread = strings.Join(spread, "; ")
	f.Model = fmt.Sprintf("t/row ∝ 1/cpu_speed: %s (reproduced within ±%.0f %%)", study.FormatTimes(fullSpeed/halfSpeed), speedTolerance*100)
	emulation := fmt.Sprintf("cpu_speed %g gives the server %g of a core's time in each 100 ms period (a CFS quota), an emulated processor of that speed; it lowers no clock frequency.", halfSpeed, halfSpeed)
	switch f.Verdict {
	case report.Reproduced:
		f.Why = "Work that runs inside the server follows the processor's speed: at half the CPU time every run took twice as long per row, as 1/speed predicts. " + emulation + " " + vmPenaltyNotMeasured
	case report.WithinNoise:
		f.Why = fmt.Sprintf("The runs' ratios fall on both sides of the model's band (%s ± %.0f %%): two runs of this study could say either. %s %s", study.FormatTimes(fullSpeed/halfSpeed), speedTolerance*100, emulation, vmPenaltyNotMeasured)
	default:
		f.Why = fmt.Sprintf("The time per row did not follow 1/speed within ±%.0f %%: at cpu_speed %g the server got less than its quota allows when other work kept this machine's CPUs busy (the host's load is in the environment), or the work was not bound by the server's CPU. %s %s", speedTolerance*100, fullSpeed, emulation, vmPenaltyNotMeasured)
	}
}

// clientSpeedRatio is the seed's slow-client comparison on an emulated
// client: cursor-messages over lan-1g with the client at cpu_speed 0.5
// against 1, beside the model's ratio (the consumer rate follows the
// client's speed, the link's rate and RTT do not).
func (a *analysis) clientSpeedRatio() (speedRatio, bool) {
	const exp, net = "cursor-messages", "lan-1g"
	sf, sh := a.sum(atClientSpeed(exp, fullSpeed), fast, net), a.sum(atClientSpeed(exp, halfSpeed), fast, net)
	if sf == nil || sh == nil {
		return speedRatio{}, false
	}
	r := speedRatio{exp: exp, full: sf.Mean("us_per_row"), half: sh.Mean("us_per_row")}
	r.got = r.half / r.full
	r.model = storedModel(sh, "seconds") / sh.Mean("rows") / (storedModel(sf, "seconds") / sf.Mean("rows"))
	r.lo, r.hi = study.RatioRange(sh.Stats["us_per_row"], sf.Stats["us_per_row"])
	r.verdict = study.Band(r.lo, r.hi, r.model*(1-speedTolerance), r.model*(1+speedTolerance))
	return r, !math.IsNaN(r.got) && !math.IsNaN(r.model)
}

// judgeSlowClientSpeed judges the slow-client finding on a client given
// half a core: the seed's slow client decided the duration more than a
// 40x faster link did, and the emulated one's time per row follows the
// model's ratio.
func (a *analysis) judgeSlowClientSpeed(f *report.Finding, r speedRatio, linkEffect float64) {
	part := fmt.Sprintf("cursor-messages over lan-1g with the client at cpu_speed %g against %g: %.3g against %.3g µs/row, %s as long (the runs: %s to %s)",
		halfSpeed, fullSpeed, r.half, r.full, study.FormatTimes(r.got), study.FormatTimes(r.lo), study.FormatTimes(r.hi))
	if f.Measured != "" && f.Measured != "-" {
		part += "; " + f.Measured
	}
	f.Measured = part
	if f.Spread == "" {
		f.Spread = fmt.Sprintf("the runs give ratios from %s to %s", study.FormatTimes(r.lo), study.FormatTimes(r.hi))
	}
	f.Model = fmt.Sprintf("t/row = RTT + s_server + s_client / client speed, a stream slowed as far as the client's CPU per row exceeds its quota: %s at half speed (within ±%.0f %%)", study.FormatTimes(r.model), speedTolerance*100)
	clientEffect := (r.got - 1) * 100
	emulation := fmt.Sprintf("The slower client is emulated by a CFS quota of %g of a core's time in each 100 ms period, not a slower clock.", halfSpeed)
	switch {
	case r.verdict == report.Differs:
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("The client at half speed did not take the model's %s as long within ±%.0f %%: something other than the client's CPU, or other work on this machine, set the time. %s", study.FormatTimes(r.model), speedTolerance*100, emulation)
	case r.verdict == report.WithinNoise:
		f.Verdict = report.WithinNoise
		f.Why = fmt.Sprintf("The runs' ratios fall on both sides of the model's band (%s ± %.0f %%): two runs of this study could say either. %s", study.FormatTimes(r.model), speedTolerance*100, emulation)
	case !math.IsNaN(linkEffect) && clientEffect <= math.Abs(linkEffect):
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("The slower client changed the time by %.0f %%, no more than a 40x faster link did (%s): here the link decides as much as the client. %s", clientEffect, study.FormatPercent(linkEffect), emulation)
	default:
		f.Verdict = report.Reproduced
		f.Why = fmt.Sprintf("A client with half the CPU took %s as long per row, as the model predicts, and moved the total more than a 40x faster link: the client's speed at absorbing rows decides, as in the seed (1.71x). %s", study.FormatTimes(r.got), emulation)
	}
}
