package oltp

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/dbrig/dbrig/internal/diagnose"
	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/units"
)

// The judges' tolerances, chosen before any run and said in each verdict.
const (
	// gainFactor: a gain "of the seed's size" is within a factor of two of
	// it (+18.75 % to +75 % for the seed's +37.5 %).
	gainFactor = 2.0
	// wireShare: a faster wire on the same stack gains at most half what
	// the thinner stack gains, when the gain is the stack's.
	wireShare = 0.5
	// minStackGain: below 10 % a thinner stack gains nothing a busy
	// 2-core machine can tell from noise.
	minStackGain = 10.0
	// lookupMargin: the lookups' gain beats the heavy work's by at least 5
	// points of percent.
	lookupMargin = 5.0
	// nearPeak: a point "at or near peak" has at least 90 % of it.
	nearPeak = 0.9
	// seedUsersLimit: the seed's VI product failed above 80 users.
	seedUsersLimit = 80
	// collapseRatio: throughput at most halved is a collapse (the seed's
	// was to 0.16).
	collapseRatio = 0.5
	// mildLo, mildHi: a mean "only mildly worse" rose by more than 5 % and
	// less than 3 times (the seed's: 1.3 to 1.7 times; "not five or six
	// times worse").
	mildLo, mildHi = 1.05, 3.0
	// idleShare: the mismatched server uses at most 60 % of the CPU it
	// uses at full duplex at the same users.
	idleShare = 0.6
	// reportBand: a reporting query "barely notices" when its mean stays
	// within ±10 %.
	reportBand = 0.10
)

// Judges are the findings a study of this workload may cite: seed 001's
// (transport-oltp) and seed 002's duplex note (duplex-mismatch).
func Judges() map[string]study.Judge {
	return map[string]study.Judge{
		"thin-stack-gain":      judgeThinStackGain,
		"cpu-not-wire":         judgeCPUNotWire,
		"lookups-gain-more":    judgeLookupsGainMore,
		"peak-at-saturation":   judgePeakAtSaturation,
		"ethernet-clean":       judgeEthernetClean,
		"thin-stack-failures":  judgeThinStackFailures,
		"collapse":             judgeCollapse,
		"mean-mildly-worse":    judgeMeanMildlyWorse,
		"outliers":             judgeOutliers,
		"server-idle":          judgeServerIdle,
		"reporting-unaffected": judgeReportingUnaffected,
	}
}

func notMeasured(p study.Published, why string) report.Finding {
	return report.Finding{Published: p.Finding, Measured: "-", Model: "-", Verdict: report.NotMeasured, Why: why}
}

// thin is the transport that stands for seed 001's VI adapters: the unix
// socket, no TCP/IP at all.
const thin = "unix"

// mainMix is the mix the seed's application matches: the shop, else the
// run's first.
func mainMix(cs []*curve) string {
	mixes := mixesOf(cs)
	if slices.Contains(mixes, "shop") || len(mixes) == 0 {
		return "shop"
	}
	return mixes[0]
}

// peakLine says a curve's peak and where it came from: "9,120/s (users
// 70, 110, 150)".
func peakLine(c *curve) string {
	v, top := c.peak()
	return fmt.Sprintf("%s/s (users %s)", formatTPS(v), usersList(top))
}

// topSpread says how far the points a peak averages lie apart: the
// spread the seed's rule smooths.
func topSpread(cs ...*curve) string {
	var parts []string
	for _, c := range cs {
		_, top := c.peak()
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, s := range top {
			for _, v := range s.Stats["tps"].Runs {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
		parts = append(parts, fmt.Sprintf("%s %s to %s/s", c.transport, formatTPS(lo), formatTPS(hi)))
	}
	return "the points each peak averages: " + strings.Join(parts, "; ")
}

// otherGains lists every transport's gain over GbE in a mix but thin's
// and GbE's own.
func otherGains(cs []*curve, mix string) string {
	var parts []string
	for _, c := range cs {
		if c.mix != mix || c.mismatch || c.transport == thin || c.transport == gbe {
			continue
		}
		if g, ok := gainOverGbE(cs, mix, c.transport); ok {
			parts = append(parts, fmt.Sprintf("%s %s", c.transport, study.FormatPercent(g)))
		}
	}
	return strings.Join(parts, ", ")
}

func kneeLine(cs ...*curve) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, fmt.Sprintf("%s at %.0f users (X_peak %s/s, R0 %s)", c.transport, c.model.Knee, formatTPS(c.model.Peak), fmtMS(c.model.BaseMS)))
	}
	return "closed-loop knees: " + strings.Join(parts, "; ")
}

func judgeThinStackGain(rd *study.RunData, p study.Published) report.Finding {
	cs := curvesOf(rd)
	mix := mainMix(cs)
	t, g := transportCurve(cs, mix, thin), transportCurve(cs, mix, gbe)
	if t == nil || g == nil {
		return notMeasured(p, fmt.Sprintf("The gain needs mix %s on both the unix socket (the thin stack) and %s (Gigabit Ethernet); this run has not both.", mix, gbe))
	}
	gain, _ := gainOverGbE(cs, mix, thin)
	measured := fmt.Sprintf("mix %s: peak %s on the unix socket against %s on %s: %s", mix, peakLine(t), peakLine(g), gbe, study.FormatPercent(gain))
	if o := otherGains(cs, mix); o != "" {
		measured += "; over " + gbe + " also " + o
	}
	f := report.Finding{Published: p.Finding, Measured: measured, Model: kneeLine(t, g), Spread: topSpread(t, g)}
	seed := p.Value
	if seed == 0 {
		seed = 37.5
	}
	stack := ""
	if dc := transportCurve(cs, mix, "direct"); dc != nil {
		d, _ := gainOverGbE(cs, mix, "direct")
		pt, _ := t.peak()
		pd, _ := dc.peak()
		stack = fmt.Sprintf(" Loopback TCP (the kernel's stack without a wire) reaches %s over %s; the unix socket's gain over it alone is %s.",
			study.FormatPercent(d), gbe, study.FormatPercent(study.Gain(pt, pd)))
	}
	switch {
	case gain >= seed/gainFactor && gain <= seed*gainFactor:
		f.Verdict = report.Reproduced
		f.Why = fmt.Sprintf("The thin stack's peak is %s above Gigabit Ethernet's, a gain of the seed's size (within a factor of %g of %s).%s",
			study.FormatPercent(gain), gainFactor, study.FormatPercent(seed), stack)
	case gain > seed*gainFactor:
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("The thin stack gains %s, more than %g times the seed's %s: the emulated Gigabit Ethernet link is a proxy in dbrig's process on the server's own two cores, which costs more CPU per message than a network adapter's driver did, so the server loses more to it.%s",
			study.FormatPercent(gain), gainFactor, study.FormatPercent(seed), stack)
	case gain > 0:
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("The thin stack gains %s, less than half the seed's %s.%s", study.FormatPercent(gain), study.FormatPercent(seed), stack)
	default:
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("The thin stack gains nothing here (%s).%s", study.FormatPercent(gain), stack)
	}
	return f
}

func judgeCPUNotWire(rd *study.RunData, p study.Published) report.Finding {
	cs := curvesOf(rd)
	mix := mainMix(cs)
	t, g, w := transportCurve(cs, mix, thin), transportCurve(cs, mix, gbe), transportCurve(cs, mix, "infiniband")
	if t == nil || g == nil || w == nil {
		return notMeasured(p, fmt.Sprintf("Telling the stack from the wire needs mix %s on the unix socket, %s and infiniband (a wire 40 times faster on the same stack); this run has not all three.", mix, gbe))
	}
	gt, _ := gainOverGbE(cs, mix, thin)
	gw, _ := gainOverGbE(cs, mix, "infiniband")
	measured := fmt.Sprintf("mix %s, gains over %s: the thinner stack (unix socket) %s, the faster wire (infiniband: 40 Gbit/s, 20 µs round trip, the same TCP stack and proxy) %s", mix, gbe, study.FormatPercent(gt), study.FormatPercent(gw))
	if o := otherGains(cs, mix); o != "" {
		measured += " (every transport: " + o + ")"
	}
	cpuT, cpuG, cpuW := serverCPUAtPeak(t), serverCPUAtPeak(g), serverCPUAtPeak(w)
	if !math.IsNaN(cpuT) && !math.IsNaN(cpuG) {
		measured += fmt.Sprintf("; the server's CPUs at the peak: %.2f on the unix socket, %.2f on %s", cpuT, cpuG, gbe)
		if !math.IsNaN(cpuW) {
			measured += fmt.Sprintf(", %.2f on infiniband", cpuW)
		}
	}
	f := report.Finding{Published: p.Finding, Measured: measured, Spread: topSpread(t, g, w),
		Model: "at saturation the closed loop's peak is what the CPUs give the server; the wire's round trip only moves the knee: " + kneeLine(t, g, w)}
	switch {
	case gt < minStackGain:
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("The thinner stack gains only %s (under %.0f %%), too little to say where a gain comes from.", study.FormatPercent(gt), minStackGain)
	case gw <= wireShare*gt:
		f.Verdict = report.Reproduced
		f.Why = fmt.Sprintf("A wire 40 times faster gains %s, at most half the thinner stack's %s: at saturation the throughput is set by the CPU each transaction costs, and the stack is where the transport spends it.",
			study.FormatPercent(gw), study.FormatPercent(gt))
	default:
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("The faster wire gains %s, more than half the thinner stack's %s: the wire's speed matters here too.", study.FormatPercent(gw), study.FormatPercent(gt))
	}
	return f
}

// serverCPUAtPeak is the server's CPUs during the points a curve's peak
// averages.
func serverCPUAtPeak(c *curve) float64 {
	_, top := c.peak()
	return serverCPU(top...)
}

// lookupMix and heavyMix are the two kinds of work seed 001 set apart:
// simple lookups returning relatively large results, and work the server
// does hard for a small result.
const (
	lookupMix = "browse-only"
	heavyMix  = "reporting"
)

func judgeLookupsGainMore(rd *study.RunData, p study.Published) report.Finding {
	cs := curvesOf(rd)
	gl, okL := gainOverGbE(cs, lookupMix, thin)
	gh, okH := gainOverGbE(cs, heavyMix, thin)
	if !okL || !okH {
		return notMeasured(p, fmt.Sprintf("Needs the mixes %s (lookups returning 20 rows) and %s (a report the server works hard on for a row per category) on both the unix socket and %s.", lookupMix, heavyMix, gbe))
	}
	lt, lg := transportCurve(cs, lookupMix, thin), transportCurve(cs, lookupMix, gbe)
	ht, hg := transportCurve(cs, heavyMix, thin), transportCurve(cs, heavyMix, gbe)
	measured := fmt.Sprintf("gain of the unix socket over %s: %s %s (peaks %s and %s), %s %s (peaks %s and %s)", gbe,
		lookupMix, study.FormatPercent(gl), peakLine(lt), peakLine(lg), heavyMix, study.FormatPercent(gh), peakLine(ht), peakLine(hg))
	for _, mix := range mixesOf(cs) {
		if mix == lookupMix || mix == heavyMix {
			continue
		}
		if g, ok := gainOverGbE(cs, mix, thin); ok {
			measured += fmt.Sprintf("; %s %s", mix, study.FormatPercent(g))
		}
	}
	f := report.Finding{Published: p.Finding, Measured: measured, Spread: topSpread(lt, lg) + "; " + topSpread(ht, hg),
		Model: fmt.Sprintf("a transport costs CPU per message: the lookups spend %s of server time per transaction on the unix socket (R0), the report %s, so the same cost per message weighs more on the lookups", fmtMS(lt.model.BaseMS), fmtMS(ht.model.BaseMS))}
	if gl >= gh+lookupMargin {
		f.Verdict = report.Reproduced
		f.Why = fmt.Sprintf("The lookups gain %s from the thinner stack, the report %s: at least %.0f points more, as the seed found.", study.FormatPercent(gl), study.FormatPercent(gh), lookupMargin)
	} else {
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("The lookups gain %s, the report %s: not %.0f points more.", study.FormatPercent(gl), study.FormatPercent(gh), lookupMargin)
	}
	return f
}

func judgePeakAtSaturation(rd *study.RunData, p study.Published) report.Finding {
	cs := curvesOf(rd)
	mix := mainMix(cs)
	var parts, low, notBent []string
	var cpus []string
	checked := 0
	for _, c := range cs {
		if c.mix != mix || c.mismatch || len(c.points) < 3 {
			continue
		}
		checked++
		peak, _ := c.peak()
		last := c.last()
		share := last.Mean("tps") / peak
		parts = append(parts, fmt.Sprintf("%s %s/s at %d users, %.0f %% of its peak (knee at %.0f users)", c.transport, formatTPS(last.Mean("tps")), last.Params.Int("users"), 100*share, c.model.Knee))
		if share < nearPeak {
			low = append(low, c.transport)
		}
		// Saturated: the last point lies below the rising asymptote, users
		// / (R0 + Z), by more than the noise; on it, users still bring
		// throughput.
		if rising := last.Params.Float("users") / ((c.model.BaseMS + c.model.ThinkMS) / 1000); last.Mean("tps") >= nearPeak*rising {
			notBent = append(notBent, c.transport)
		}
		if v := serverCPUAtPeak(c); !math.IsNaN(v) {
			cpus = append(cpus, fmt.Sprintf("%s %.2f", c.transport, v))
		}
	}
	if checked == 0 {
		return notMeasured(p, "Needs at least three load levels of one transport.")
	}
	measured := "at the highest load: " + strings.Join(parts, "; ")
	if len(cpus) > 0 {
		measured += fmt.Sprintf("; the server's CPUs at the peak: %s (of %d on this machine, shared with the users and the links)", strings.Join(cpus, ", "), rd.Environment.CPUs)
	}
	f := report.Finding{Published: p.Finding, Measured: measured,
		Model: "closed loop: tps = min(users / (R0 + Z), X_peak); beyond the knee more users add only waiting"}
	switch {
	case len(low) > 0:
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("At the highest load %s fell below %.0f %% of the peak: throughput dropped as users were added, beyond saturation.", strings.Join(low, ", "), 100*nearPeak)
	case len(notBent) > 0:
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("%s had not saturated: at the most users measured the throughput is still %.0f %% or more of users / (R0 + Z), the closed loop's rising line.", strings.Join(notBent, ", "), 100*nearPeak)
	default:
		f.Verdict = report.Reproduced
		f.Why = fmt.Sprintf("Every transport's highest load ran at %.0f %% or more of its peak and well below the closed loop's rising line: the server was saturated, as in the seed.", 100*nearPeak)
	}
	return f
}

// failures lists a transport's points with errors or transactions over
// the limit, in every mix.
func failures(cs []*curve, transport string) (bad []string, below, above, points int) {
	for _, c := range cs {
		if c.transport != transport || c.mismatch {
			continue
		}
		for _, s := range c.points {
			points++
			e, o := s.Mean("errors"), s.Mean("over_limit")
			if e > 0 || o > 0 {
				bad = append(bad, fmt.Sprintf("%s at %d users: %.0f errors, %.0f over the limit", c.mix, s.Params.Int("users"), e, o))
				if s.Params.Int("users") > seedUsersLimit {
					above++
				} else {
					below++
				}
			}
		}
	}
	return bad, below, above, points
}

func judgeEthernetClean(rd *study.RunData, p study.Published) report.Finding {
	cs := curvesOf(rd)
	bad, _, _, points := failures(cs, gbe)
	if points == 0 {
		return notMeasured(p, "No point ran on "+gbe+".")
	}
	limit := "the transaction limit"
	for _, c := range cs {
		if c.transport == gbe {
			limit = units.FormatDuration(c.points[0].Params.Duration("tx_limit"))
		}
	}
	f := report.Finding{Published: p.Finding, Model: "-"}
	if len(bad) == 0 {
		f.Verdict = report.Reproduced
		f.Measured = fmt.Sprintf("%s: %d points, no error and no transaction over %s", gbe, points, limit)
		f.Why = "Gigabit Ethernet (the emulated lan-1g link) ran every load level cleanly, as in the seed."
		return f
	}
	f.Verdict = report.Differs
	f.Measured = gbe + ": " + strings.Join(bad, "; ")
	f.Why = fmt.Sprintf("%d of %d points on %s had errors or transactions over %s (the report's transactions table classifies the errors).", len(bad), points, gbe, limit)
	return f
}

func judgeThinStackFailures(rd *study.RunData, p study.Published) report.Finding {
	cs := curvesOf(rd)
	bad, below, above, points := failures(cs, thin)
	if points == 0 {
		return notMeasured(p, "No point ran on the unix socket.")
	}
	maxUsers := int64(0)
	for _, c := range cs {
		if c.transport == thin {
			maxUsers = max(maxUsers, c.last().Params.Int("users"))
		}
	}
	f := report.Finding{Published: p.Finding, Model: "-"}
	switch {
	case len(bad) == 0:
		f.Verdict = report.Differs
		f.Measured = fmt.Sprintf("unix socket: %d points up to %d users, no error and no transaction over the limit", points, maxUsers)
		f.Why = "The thin stack here never failed: the seed's failures came from two products (a cLAN switch that reset its links, a ServerNet II module that crashed IIS), not from a thinner stack as such. This sweep is the stress test the seed recommends, and it counts every error and every transaction over the limit."
	case above > 0 && below == 0:
		f.Verdict = report.Reproduced
		f.Measured = "unix socket: " + strings.Join(bad, "; ")
		f.Why = fmt.Sprintf("The thin stack failed only above %d users, as the seed's product did.", seedUsersLimit)
	default:
		f.Verdict = report.Differs
		f.Measured = "unix socket: " + strings.Join(bad, "; ")
		f.Why = fmt.Sprintf("The thin stack failed at %d users or fewer too, not only above them as in the seed.", seedUsersLimit)
	}
	return f
}

// oltpPairs are the duplex pairs of the small transactions' mixes, by
// mix and link ("shop on 1Gbit/s"): the closed loops by users, then the
// open loops by rate.
func oltpPairs(rd *study.RunData) (mixes []string, by map[string][]duplexPair) {
	by = map[string][]duplexPair{}
	for _, p := range duplexPairs(rd) {
		if p.reportQuery {
			continue
		}
		key := p.mix + " on " + p.wire
		if _, ok := by[key]; !ok {
			mixes = append(mixes, key)
		}
		by[key] = append(by[key], p)
	}
	for _, m := range mixes {
		slices.SortStableFunc(by[m], func(a, b duplexPair) int {
			switch {
			case a.open() != b.open():
				if a.open() {
					return 1
				}
				return -1
			case a.rate != b.rate:
				return cmpFloat(a.rate, b.rate)
			}
			return cmpFloat(a.users, b.users)
		})
	}
	return mixes, by
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// closedLoops keeps the pairs that ran a closed loop.
func closedLoops(ps []duplexPair) []duplexPair {
	var out []duplexPair
	for _, x := range ps {
		if !x.open() {
			out = append(out, x)
		}
	}
	return out
}

// perMix judges each OLTP mix with judge and merges the findings.
func perMix(rd *study.RunData, p study.Published, judge func([]duplexPair) report.Finding) report.Finding {
	mixes, by := oltpPairs(rd)
	if len(mixes) == 0 {
		return notMeasured(p, "Needs an OLTP mix on "+gbe+" and on "+gbe+"+duplex-mismatch at the same users.")
	}
	var labels []string
	var each []report.Finding
	for _, m := range mixes {
		f := judge(by[m])
		f.Published = p.Finding
		labels = append(labels, "mix "+m)
		each = append(each, f)
	}
	return study.MergeFindings(p, labels, each)
}

func judgeCollapse(rd *study.RunData, p study.Published) report.Finding {
	seed := p.Value
	if e, m := p.Figures["expected_tps"], p.Figures["mismatch_tps"]; e > 0 && m > 0 {
		seed = m / e
	}
	return perMix(rd, p, func(ps []duplexPair) report.Finding {
		ps = closedLoops(ps)
		if len(ps) == 0 {
			return notMeasured(p, "Needs a closed loop (the server driven as hard as its users can) at both duplex settings.")
		}
		bestF, bestM := ps[0], ps[0]
		for _, x := range ps {
			if x.full.Mean("tps") > bestF.full.Mean("tps") {
				bestF = x
			}
			if x.mm.Mean("tps") > bestM.mm.Mean("tps") {
				bestM = x
			}
		}
		ratio := bestM.mm.Mean("tps") / bestF.full.Mean("tps")
		f := report.Finding{
			Measured: fmt.Sprintf("best %s/s at full duplex (%g users), %s/s at a duplex mismatch (%g users): %.2fx (the seed: 800 / 5,000 = %.2fx)",
				formatTPS(bestF.full.Mean("tps")), bestF.users, formatTPS(bestM.mm.Mean("tps")), bestM.users, ratio, seed),
			Model:  stallModelLine(bestM),
			Spread: rd.Spread("tps", bestF.full.Stats["tps"], bestM.mm.Stats["tps"]),
		}
		if ratio <= collapseRatio {
			f.Verdict = report.Reproduced
			f.Why = fmt.Sprintf("The mismatch cut the best throughput to %.2fx of full duplex's (a collapse: at most %.1fx), the seed's to %.2fx.", ratio, collapseRatio, seed)
		} else {
			f.Verdict = report.Differs
			f.Why = fmt.Sprintf("The mismatch kept %.2fx of full duplex's best throughput: more than %.1fx, no collapse (the seed: %.2fx).", ratio, collapseRatio, seed)
		}
		return f
	})
}

// stallModelLine says the stall model's prediction at a pair's users.
func stallModelLine(x duplexPair) string {
	m := x.mm.Results[len(x.mm.Results)-1].Model
	v, ok := m[modelStall]
	if !ok {
		return "-"
	}
	return fmt.Sprintf("one RTO (%s) per hit transaction: users / (R_full + Z + h × RTO) = %g / (%s + %s + %.2f %% × %s) = %s/s at %g users (measured %s/s)",
		fmtMS(m[modelRTO]), x.users, fmtMS(m[modelFullMean]), fmtMS(thinkMS(x.mm.Params)), 100*m[modelHitShare], fmtMS(m[modelRTO]), formatTPS(v), x.users, formatTPS(x.mm.Mean("tps")))
}

func judgeMeanMildlyWorse(rd *study.RunData, p study.Published) report.Finding {
	return perMix(rd, p, func(ps []duplexPair) report.Finding {
		// The seed's "given load": an open loop's fixed rate when the run
		// has one, else the lightest closed loop.
		x, which := ps[0], "the lightest load"
		if last := ps[len(ps)-1]; last.open() {
			x, which = last, "a given load"
		}
		r := x.mm.Mean("mean_ms") / x.full.Mean("mean_ms")
		hf, hm := x.full.Histograms["latency"], x.mm.Histograms["latency"]
		f := report.Finding{
			Measured: fmt.Sprintf("at %s (%s): mean %s at full duplex, %s at a mismatch (%.2fx); median %s and %s, p99 %s and %s; throughput %.2fx",
				x.load(), which, fmtMS(x.full.Mean("mean_ms")), fmtMS(x.mm.Mean("mean_ms")), r, quantile(hf, 0.5), quantile(hm, 0.5), quantile(hf, 0.99), quantile(hm, 0.99),
				x.mm.Mean("tps")/x.full.Mean("tps")),
			Model:  "the mean is the median's few milliseconds plus h × RTO: a few stalled transactions in a hundred add a few milliseconds to the mean and nothing to the median, all to the tail",
			Spread: rd.Spread("mean_ms", x.full.Stats["mean_ms"], x.mm.Stats["mean_ms"]),
		}
		switch {
		case r >= mildLo && r < mildHi:
			f.Verdict = report.Reproduced
			f.Why = fmt.Sprintf("The mean rose %.2fx (the seed: about 1.3x to 1.7x), between %.2fx and %.0fx: worse, not five or six times worse, while the tail went from %s to %s.", r, mildLo, mildHi, quantile(hf, 0.99), quantile(hm, 0.99))
		case r < mildLo:
			f.Verdict = report.Differs
			f.Why = fmt.Sprintf("The mean rose only %.2fx (under %.2fx): at this load the mismatch barely shows in the mean.", r, mildLo)
		default:
			f.Verdict = report.Differs
			f.Why = fmt.Sprintf("The mean rose %.2fx, %.0fx or more: as bad as the throughput, not mildly worse.", r, mildHi)
		}
		return f
	})
}

func judgeOutliers(rd *study.RunData, p study.Published) report.Finding {
	return perMix(rd, p, func(ps []duplexPair) report.Finding {
		var flagged, missed, cleanFlagged []string
		var over1s, over200 int64
		var share []string
		for _, x := range ps {
			for _, d := range stalls(x.mm) {
				over200 += d.Over200ms
				if d.Found {
					over1s += d.Over1s // a saturated server's own tail is not a stall
					flagged = append(flagged, x.load())
					share = append(share, fmt.Sprintf("%.1f %% at %s (clusters at %s × %s)", 100*d.HitShare, x.load(), diagnose.Multiples(d.Clusters), fmtMS(ms(d.Spacing))))
				} else {
					missed = append(missed, fmt.Sprintf("%s: %s", x.load(), d.Why))
				}
			}
			for _, d := range stalls(x.full) {
				if d.Found {
					cleanFlagged = append(cleanFlagged, x.load())
				}
			}
		}
		f := report.Finding{Model: "a late collision costs its segment one retransmission timeout (RTT + 200 ms), doubling when the retransmission collides too: clusters at whole multiples of the RTO"}
		f.Measured = fmt.Sprintf("at a duplex mismatch: %d transactions of 200 ms or more; stalled: %s; %d over 1 s where stalled", over200, orNone(strings.Join(share, "; ")), over1s)
		if len(cleanFlagged) == 0 {
			f.Measured += "; at full duplex: no cluster"
		} else {
			f.Measured += "; at full duplex a cluster at " + strings.Join(cleanFlagged, ", ")
		}
		if len(missed) > 0 {
			f.Measured += "; no signature at " + strings.Join(missed, "; ")
		}
		switch {
		case len(flagged) == 0 || len(flagged) < len(missed):
			f.Verdict = report.Differs
			f.Why = fmt.Sprintf("The stall signature shows at %d of the %d mismatched loads: at the others the timeouts are hidden in a saturated server's own tail, or too rare to count.", len(flagged), len(flagged)+len(missed))
		case len(cleanFlagged) > 0:
			f.Verdict = report.Differs
			f.Why = "The full-duplex link shows the same signature, so it is not the mismatch's."
		case over1s == 0:
			f.Verdict = report.Differs
			f.Why = "The mismatch's transactions cluster from 200 ms on, but none took over 1 s in this run (the seed: occasionally well over 1,000 ms): it needs a segment lost three times running, or more round trips hit."
		default:
			f.Verdict = report.Reproduced
			f.Why = fmt.Sprintf("%d of the %d mismatched loads have transactions stalled from 200 ms on (dbrig diagnose's signature) while the median stays a few milliseconds, and %d took over 1 s; full duplex has none.", len(flagged), len(flagged)+len(missed), over1s)
			if len(missed) > 0 {
				f.Why += " At the others the timeouts hide in a saturated server's own tail."
			}
		}
		return f
	})
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func judgeServerIdle(rd *study.RunData, p study.Published) report.Finding {
	return perMix(rd, p, func(ps []duplexPair) report.Finding {
		ps = closedLoops(ps)
		if len(ps) == 0 {
			return notMeasured(p, "Needs a closed loop at both duplex settings.")
		}
		x := ps[len(ps)-1] // the heaviest load
		cf, cm := serverCPU(x.full), serverCPU(x.mm)
		lo := ps[0]
		growth := fmt.Sprintf("from %g to %g users the throughput went %s to %s/s at full duplex, %s to %s/s at a mismatch",
			lo.users, x.users, formatTPS(lo.full.Mean("tps")), formatTPS(x.full.Mean("tps")), formatTPS(lo.mm.Mean("tps")), formatTPS(x.mm.Mean("tps")))
		if math.IsNaN(cf) || math.IsNaN(cm) || cf == 0 {
			f := notMeasured(p, "The server's CPU was not sampled (a server dbrig did not start, or no monitoring samples).")
			f.Measured = growth
			return f
		}
		f := report.Finding{Measured: fmt.Sprintf("at %g users the server used %.2f CPUs at full duplex, %.2f at a mismatch (%.2fx); %s", x.users, cf, cm, cm/cf, growth),
			Model: "a user waiting out a retransmission timeout asks nothing of the server: the server's work follows the throughput, not the users"}
		if cm <= idleShare*cf {
			f.Verdict = report.Reproduced
			f.Why = fmt.Sprintf("Driven as hard, the mismatched server used %.2fx the CPU (at most %.1fx): its users were waiting on the network, not on it.", cm/cf, idleShare)
		} else {
			f.Verdict = report.Differs
			f.Why = fmt.Sprintf("The mismatched server used %.2fx the CPU of the full-duplex one, more than %.1fx.", cm/cf, idleShare)
		}
		return f
	})
}

// stalledShare is the share of a combination's users' time spent waiting
// out retransmission timeouts: each segment its link lost stalls one
// user for at least one RTO, over the users' time of the whole point
// (warm-up included, as the link's count is).
func stalledShare(s *study.Summary) (share float64, lost int64) {
	var stalled, userTime float64
	for _, r := range s.Results {
		l := study.LinkOf(r)
		lost += l.LostSegments
		stalled += float64(l.LostSegments) * l.RTOSeconds
		userTime += r.Params.Float("users") * r.Seconds
	}
	if userTime == 0 {
		return 0, lost
	}
	return stalled / userTime, lost
}

func judgeReportingUnaffected(rd *study.RunData, p study.Published) report.Finding {
	var labels []string
	var each []report.Finding
	for _, x := range duplexPairs(rd) {
		if x.reportQuery {
			labels = append(labels, "on "+x.wire)
			each = append(each, judgeReport(rd, p, x))
		}
	}
	if len(each) == 0 {
		return notMeasured(p, "Needs the reporting mix on "+gbe+" and on "+gbe+"+duplex-mismatch at the same users.")
	}
	return study.MergeFindings(p, labels, each)
}

// judgeReport judges one reporting pair.
func judgeReport(rd *study.RunData, p study.Published, x duplexPair) report.Finding {
	r := x.mm.Mean("mean_ms") / x.full.Mean("mean_ms")
	share, lost := stalledShare(x.mm)
	measured := fmt.Sprintf("the reporting query at %g users: %d segments lost, its users waited out timeouts %.1f %% of their time; mean %s at full duplex, %s at a mismatch (%.2fx)",
		x.users, lost, 100*share, fmtMS(x.full.Mean("mean_ms")), fmtMS(x.mm.Mean("mean_ms")), r)
	_, by := oltpPairs(rd)
	var contrast []string
	for _, ps := range by {
		for _, o := range ps {
			if o.users == x.users && !o.open() && o.wire == x.wire {
				sh, _ := stalledShare(o.mm)
				contrast = append(contrast, fmt.Sprintf("%s %.1f %% (mean %.2fx)", o.mix, 100*sh, o.mm.Mean("mean_ms")/o.full.Mean("mean_ms")))
			}
		}
	}
	slices.Sort(contrast)
	if len(contrast) > 0 {
		measured += "; the small transactions at the same users: " + strings.Join(contrast, ", ")
	}
	f := report.Finding{Published: p.Finding, Measured: measured, Spread: rd.Spread("mean_ms", x.full.Stats["mean_ms"], x.mm.Stats["mean_ms"]),
		Model: "each lost segment stalls one user one RTO: the users' time stalled = lost × RTO / (users × the point's time). Collisions need both ends sending at once: a report is one request and one answer per long query, so the client seldom sends while the server does"}
	move := ""
	if math.Abs(r-1) > reportBand {
		move = fmt.Sprintf(" Its mean moved %s, beyond ±%.0f %%, by what the timeouts do not explain: the machine's own load between the two points (the spread of a single run each).", study.FormatPercent(100*(r-1)), 100*reportBand)
	}
	if share <= reportBand {
		f.Verdict = report.Reproduced
		f.Why = fmt.Sprintf("The report's users lost %.1f %% of their time to retransmissions (at most %.0f %%): the report barely notices the mismatch.%s", 100*share, 100*reportBand, move)
	} else {
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("The report's users lost %.1f %% of their time to retransmissions, more than %.0f %%.%s", 100*share, 100*reportBand, move)
	}
	return f
}
