package rbarlatency

import (
	"fmt"
	"math"
	"strings"

	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/study"
)

// The seed's virtualized client paid 0.0025 to 0.03 ms more a row, "very
// similar in the 1 Gbps Ethernet case and the Infiniband example", which
// it put down to the network interface's virtualization. One mechanism of
// it is measurable here: a client that waits for the network lets its
// vCPU idle, and on a guest that halts an idle vCPU at once each wake-up
// is a VM exit. The same point with a busy loop on each CPU (client.idle
// "spin") takes those wake-ups away; the difference a row is theirs.
const seedVMLo, seedVMHi = 2.5, 30.0 // µs a row

// vmLinks are the links the quick and full scales run at spin.
var vmLinks = []string{"loopback", "lan-1g", "infiniband"}

// idleDiff is one link's time per row with the CPUs halting less that
// with a busy loop on each.
type idleDiff struct {
	net             string
	halt, spin, got float64 // µs a row: kept values and their difference
	lo, hi          float64 // the differences two runs could give
	verdict         report.Verdict
}

func (a *analysis) idleDiffs(exp string) []idleDiff {
	var out []idleDiff
	for _, net := range vmLinks {
		h, s := a.sum(exp, fast, net), a.sum(spinning(exp), fast, net)
		if h == nil || s == nil {
			continue
		}
		d := idleDiff{net: net, halt: h.Mean("us_per_row"), spin: s.Mean("us_per_row")}
		d.got = d.halt - d.spin
		hlo, hhi := study.RunRange(h.Stats["us_per_row"], false)
		slo, shi := study.RunRange(s.Stats["us_per_row"], false)
		d.lo, d.hi = hlo-shi, hhi-slo
		d.verdict = study.Band(d.lo, d.hi, seedVMLo, seedVMHi)
		if !math.IsNaN(d.got) {
			out = append(out, d)
		}
	}
	return out
}

func describeDiffs(diffs []idleDiff) string {
	var parts []string
	for _, d := range diffs {
		parts = append(parts, fmt.Sprintf("%s %+.1f µs/row (%.3g halting, %.3g spinning; runs %+.1f to %+.1f)", d.net, d.got, d.halt, d.spin, d.lo, d.hi))
	}
	return strings.Join(parts, ", ")
}

// judgeVMPenalty judges both halves of the finding: durations follow the
// processor's speed (speed.go), and the virtualized client's cost a row.
func (a *analysis) judgeVMPenalty(f *report.Finding, p study.Published) {
	a.judgeProcessorSpeed(f, p)
	part, spread, verdict, why := a.judgeVMClient()
	if part == "" {
		f.Why += " " + why
		return
	}
	if f.Verdict == report.NotMeasured {
		// The speed half's reason stays: it says why the server-side
		// penalty is not measured either.
		f.Measured, f.Spread, f.Verdict, f.Why = part, spread, verdict, why+" "+f.Why
		f.Model = vmModel
		return
	}
	f.Measured += "; " + part
	f.Spread += "; " + spread
	f.Model += "; " + vmModel
	f.Why += " " + why
	f.Verdict = worse(f.Verdict, verdict)
}

const vmModel = "the virtualized client: Δt/row = wake-ups a row × a halted vCPU's wake-up (a VM exit), 0 where the CPUs do not halt; the seed's 2.5 to 30 µs a row"

// worse is the verdict of two halves: differs over within noise over
// reproduced; a half not measured leaves the other's.
func worse(a, b report.Verdict) report.Verdict {
	for _, v := range []report.Verdict{report.Differs, report.WithinNoise, report.Reproduced} {
		if a == v || b == v {
			return v
		}
	}
	return a
}

// judgeVMClient judges the client's half on client-row-by-row with the
// CPUs halting and spinning. part is "" when it is not measured (why
// says why); verdict is NotMeasured when it is measured but is no
// virtualized client's penalty (this machine's CPUs do not halt).
func (a *analysis) judgeVMClient() (part, spread string, verdict report.Verdict, why string) {
	diffs := a.idleDiffs("client-row-by-row")
	if len(diffs) == 0 {
		return "", "", report.NotMeasured, "The virtualized client's per-row penalty (the seed's 0.0025 to 0.03 ms a row) is not measured: this run has no client-row-by-row point at idle = spin beside one at halt (the quick and full scales have them over loopback, lan-1g and infiniband)."
	}
	part = "client-row-by-row, the CPUs halting less a busy loop on each: " + describeDiffs(diffs)
	if streams := a.idleDiffs("client-stream"); len(streams) > 0 {
		part += "; client-stream: " + describeDiffs(streams)
	}
	spread = "each link's difference from the runs at halt against those at spin"
	idle := a.rd.Environment.CPUIdle
	if idle == nil || !idle.HaltsAtOnce() {
		facts := "not recorded"
		if idle != nil {
			facts = idle.String()
		}
		return part, spread, report.NotMeasured, fmt.Sprintf("This machine's idle CPUs do not halt at once (%s): the loops take no VM exit away, so the difference is not a virtualized client's penalty, and the seed's 0.0025 to 0.03 ms a row is not measured here (doctor's cpu.idle says how a machine's CPUs idle).", facts)
	}
	verdict = report.Reproduced
	for _, d := range diffs {
		verdict = worse(verdict, d.verdict)
	}
	const mechanism = "On this VM an idle vCPU halts at once (haltpoll, guest_halt_poll_ns 0) and each wake-up is a VM exit through the hypervisor; a busy loop on each CPU (client.idle = spin) keeps them awake, as dbrig changes no kernel setting."
	switch {
	case verdict == report.Reproduced:
		why = fmt.Sprintf("%s Without the wake-ups the row-by-row client took %.0f to %.0f µs less a row on every link, inside the seed's %.1f to %.0f µs and alike over the links, as the seed found over Ethernet and Infiniband: the halted vCPU's wake-up is one mechanism of the virtualized client's penalty.",
			mechanism, minGot(diffs), maxGot(diffs), seedVMLo, seedVMHi)
	case verdict == report.WithinNoise:
		why = fmt.Sprintf("%s The runs' differences fall on both sides of the seed's %.1f to %.0f µs a row: two runs of this study could say either.", mechanism, seedVMLo, seedVMHi)
	case maxGot(diffs) < seedVMLo:
		why = fmt.Sprintf("%s The loops saved %.0f to %.0f µs a row, under the seed's %.1f µs on some link: few wake-ups were left to save, as other work kept this machine's CPUs from idling (load average %s at the start on %d CPUs), and a loop the kernel must preempt at each wake-up adds its own delay.",
			mechanism, minGot(diffs), maxGot(diffs), seedVMLo, orUnknown(a.rd.Environment.LoadAverage), a.rd.Environment.CPUs)
	default:
		why = fmt.Sprintf("%s The differences, %.0f to %.0f µs a row, fall outside the seed's %.1f to %.0f µs on some link: this VM's wake-ups cost a round trip %s than the seed's virtualized network interface did, or other work on this machine moved the points (load average %s at the start).",
			mechanism, minGot(diffs), maxGot(diffs), seedVMLo, seedVMHi, moreOrLess(diffs), orUnknown(a.rd.Environment.LoadAverage))
	}
	return part, spread, verdict, why
}

func minGot(diffs []idleDiff) float64 {
	m := math.Inf(1)
	for _, d := range diffs {
		m = math.Min(m, d.got)
	}
	return m
}

func maxGot(diffs []idleDiff) float64 {
	m := math.Inf(-1)
	for _, d := range diffs {
		m = math.Max(m, d.got)
	}
	return m
}

func moreOrLess(diffs []idleDiff) string {
	if maxGot(diffs) > seedVMHi {
		return "more"
	}
	return "less"
}

func orUnknown(s string) string {
	if s == "" {
		return "not recorded"
	}
	return s
}
