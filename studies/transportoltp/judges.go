package transportoltp

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/dbrig/dbrig/internal/load"
	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/units"
	"github.com/dbrig/dbrig/internal/workload/oltp"
	"github.com/dbrig/dbrig/studies/loadoltp"
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
)

// Judges decide seed 001's findings by the ids of transport-oltp.toml.
func Judges() map[string]study.Judge {
	return map[string]study.Judge{
		"thin-stack-gain":     judgeThinStackGain,
		"cpu-not-wire":        judgeCPUNotWire,
		"lookups-gain-more":   judgeLookupsGainMore,
		"peak-at-saturation":  judgePeakAtSaturation,
		"ethernet-clean":      judgeEthernetClean,
		"thin-stack-failures": judgeThinStackFailures,
	}
}

// thin is the transport that stands for seed 001's VI adapters: the unix
// socket, no TCP/IP at all.
const thin = "unix"

// mainMix is the mix the seed's application matches: the shop, else the
// run's first.
func mainMix(cs []*loadoltp.Curve) string {
	mixes := loadoltp.Mixes(cs)
	if slices.Contains(mixes, "shop") || len(mixes) == 0 {
		return "shop"
	}
	return mixes[0]
}

// peakLine says a curve's peak and where it came from: "9,120/s (users
// 70, 110, 150)".
func peakLine(c *loadoltp.Curve) string {
	v, top := c.Peak()
	return fmt.Sprintf("%s/s (users %s)", oltp.FormatTPS(v), loadoltp.UsersList(top))
}

// topSpread says how far the points a peak averages lie apart: the
// spread the seed's rule smooths.
func topSpread(cs ...*loadoltp.Curve) string {
	var parts []string
	for _, c := range cs {
		_, top := c.Peak()
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, s := range top {
			for _, v := range s.Stats["tps"].Runs {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
		parts = append(parts, fmt.Sprintf("%s %s to %s/s", c.Transport, oltp.FormatTPS(lo), oltp.FormatTPS(hi)))
	}
	return "the points each peak averages: " + strings.Join(parts, "; ")
}

// otherGains lists every transport's gain over GbE in a mix but thin's
// and GbE's own.
func otherGains(cs []*loadoltp.Curve, mix string) string {
	var parts []string
	for _, c := range cs {
		if c.Mix != mix || c.Mismatch || c.Transport == thin || c.Transport == loadoltp.GbE {
			continue
		}
		if g, ok := loadoltp.GainOverGbE(cs, mix, c.Transport); ok {
			parts = append(parts, fmt.Sprintf("%s %s", c.Transport, study.FormatPercent(g)))
		}
	}
	return strings.Join(parts, ", ")
}

func kneeLine(cs ...*loadoltp.Curve) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, fmt.Sprintf("%s at %.0f users (X_peak %s/s, R0 %s)", c.Transport, c.Model.Knee, oltp.FormatTPS(c.Model.Peak), oltp.FormatMS(c.Model.BaseMS)))
	}
	return "closed-loop knees: " + strings.Join(parts, "; ")
}

func judgeThinStackGain(rd *study.RunData, p study.Published) report.Finding {
	cs := loadoltp.Curves(rd)
	mix := mainMix(cs)
	t, g := loadoltp.TransportCurve(cs, mix, thin), loadoltp.TransportCurve(cs, mix, loadoltp.GbE)
	if t == nil || g == nil {
		return study.NotMeasured(p, fmt.Sprintf("The gain needs mix %s on both the unix socket (the thin stack) and %s (Gigabit Ethernet); this run has not both.", mix, loadoltp.GbE))
	}
	gain, _ := loadoltp.GainOverGbE(cs, mix, thin)
	measured := fmt.Sprintf("mix %s: peak %s on the unix socket against %s on %s: %s", mix, peakLine(t), peakLine(g), loadoltp.GbE, study.FormatPercent(gain))
	if o := otherGains(cs, mix); o != "" {
		measured += "; over " + loadoltp.GbE + " also " + o
	}
	f := report.Finding{Published: p.Finding, Measured: measured, Model: kneeLine(t, g), Spread: topSpread(t, g)}
	seed := p.Value
	if seed == 0 {
		seed = 37.5
	}
	stack := ""
	if dc := loadoltp.TransportCurve(cs, mix, "direct"); dc != nil {
		d, _ := loadoltp.GainOverGbE(cs, mix, "direct")
		pt, _ := t.Peak()
		pd, _ := dc.Peak()
		stack = fmt.Sprintf(" Loopback TCP (the kernel's stack without a wire) reaches %s over %s; the unix socket's gain over it alone is %s.",
			study.FormatPercent(d), loadoltp.GbE, study.FormatPercent(study.Gain(pt, pd)))
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
	cs := loadoltp.Curves(rd)
	mix := mainMix(cs)
	t, g, w := loadoltp.TransportCurve(cs, mix, thin), loadoltp.TransportCurve(cs, mix, loadoltp.GbE), loadoltp.TransportCurve(cs, mix, "infiniband")
	if t == nil || g == nil || w == nil {
		return study.NotMeasured(p, fmt.Sprintf("Telling the stack from the wire needs mix %s on the unix socket, %s and infiniband (a wire 40 times faster on the same stack); this run has not all three.", mix, loadoltp.GbE))
	}
	gt, _ := loadoltp.GainOverGbE(cs, mix, thin)
	gw, _ := loadoltp.GainOverGbE(cs, mix, "infiniband")
	measured := fmt.Sprintf("mix %s, gains over %s: the thinner stack (unix socket) %s, the faster wire (infiniband: 40 Gbit/s, 20 µs round trip, the same TCP stack and proxy) %s", mix, loadoltp.GbE, study.FormatPercent(gt), study.FormatPercent(gw))
	if o := otherGains(cs, mix); o != "" {
		measured += " (every transport: " + o + ")"
	}
	cpuT, cpuG, cpuW := serverCPUAtPeak(t), serverCPUAtPeak(g), serverCPUAtPeak(w)
	if !math.IsNaN(cpuT) && !math.IsNaN(cpuG) {
		measured += fmt.Sprintf("; the server's CPUs at the peak: %.2f on the unix socket, %.2f on %s", cpuT, cpuG, loadoltp.GbE)
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
func serverCPUAtPeak(c *loadoltp.Curve) float64 {
	_, top := c.Peak()
	return study.ServerCPU(top...)
}

// lookupMix and heavyMix are the two kinds of work seed 001 set apart:
// simple lookups returning relatively large results, and work the server
// does hard for a small result.
const (
	lookupMix = "browse-only"
	heavyMix  = "reporting"
)

func judgeLookupsGainMore(rd *study.RunData, p study.Published) report.Finding {
	cs := loadoltp.Curves(rd)
	gl, okL := loadoltp.GainOverGbE(cs, lookupMix, thin)
	gh, okH := loadoltp.GainOverGbE(cs, heavyMix, thin)
	if !okL || !okH {
		return study.NotMeasured(p, fmt.Sprintf("Needs the mixes %s (lookups returning 20 rows) and %s (a report the server works hard on for a row per category) on both the unix socket and %s.", lookupMix, heavyMix, loadoltp.GbE))
	}
	lt, lg := loadoltp.TransportCurve(cs, lookupMix, thin), loadoltp.TransportCurve(cs, lookupMix, loadoltp.GbE)
	ht, hg := loadoltp.TransportCurve(cs, heavyMix, thin), loadoltp.TransportCurve(cs, heavyMix, loadoltp.GbE)
	measured := fmt.Sprintf("gain of the unix socket over %s: %s %s (peaks %s and %s), %s %s (peaks %s and %s)", loadoltp.GbE,
		lookupMix, study.FormatPercent(gl), peakLine(lt), peakLine(lg), heavyMix, study.FormatPercent(gh), peakLine(ht), peakLine(hg))
	for _, mix := range loadoltp.Mixes(cs) {
		if mix == lookupMix || mix == heavyMix {
			continue
		}
		if g, ok := loadoltp.GainOverGbE(cs, mix, thin); ok {
			measured += fmt.Sprintf("; %s %s", mix, study.FormatPercent(g))
		}
	}
	f := report.Finding{Published: p.Finding, Measured: measured, Spread: topSpread(lt, lg) + "; " + topSpread(ht, hg),
		Model: fmt.Sprintf("a transport costs CPU per message: the lookups spend %s of server time per transaction on the unix socket (R0), the report %s, so the same cost per message weighs more on the lookups", oltp.FormatMS(lt.Model.BaseMS), oltp.FormatMS(ht.Model.BaseMS))}
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
	cs := loadoltp.Curves(rd)
	mix := mainMix(cs)
	var parts, low, notBent []string
	var cpus []string
	checked := 0
	for _, c := range cs {
		if c.Mix != mix || c.Mismatch || len(c.Points) < 3 {
			continue
		}
		checked++
		peak, _ := c.Peak()
		last := c.Last()
		share := last.Mean("tps") / peak
		parts = append(parts, fmt.Sprintf("%s %s/s at %d users, %.0f %% of its peak (knee at %.0f users)", c.Transport, oltp.FormatTPS(last.Mean("tps")), last.Params.Int("users"), 100*share, c.Model.Knee))
		if share < nearPeak {
			low = append(low, c.Transport)
		}
		// Saturated: the last point lies below the rising asymptote, users
		// / (R0 + Z), by more than the noise; on it, users still bring
		// throughput.
		if rising := last.Params.Float("users") / ((c.Model.BaseMS + c.Model.ThinkMS) / 1000); last.Mean("tps") >= nearPeak*rising {
			notBent = append(notBent, c.Transport)
		}
		if v := serverCPUAtPeak(c); !math.IsNaN(v) {
			cpus = append(cpus, fmt.Sprintf("%s %.2f", c.Transport, v))
		}
	}
	if checked == 0 {
		return study.NotMeasured(p, "Needs at least three load levels of one transport.")
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
func failures(cs []*loadoltp.Curve, transport string) (bad []string, below, above, points int) {
	for _, c := range cs {
		if c.Transport != transport || c.Mismatch {
			continue
		}
		for _, s := range c.Points {
			points++
			e, o := s.Mean("errors"), s.Mean("over_limit")
			if e > 0 || o > 0 {
				bad = append(bad, fmt.Sprintf("%s at %d users: %.0f errors, %.0f over the limit", c.Mix, s.Params.Int("users"), e, o))
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
	cs := loadoltp.Curves(rd)
	bad, _, _, points := failures(cs, loadoltp.GbE)
	if points == 0 {
		return study.NotMeasured(p, "No point ran on "+loadoltp.GbE+".")
	}
	limit := "the transaction limit"
	for _, c := range cs {
		if c.Transport == loadoltp.GbE {
			limit = units.FormatDuration(c.Points[0].Params.Duration("tx_limit"))
		}
	}
	f := report.Finding{Published: p.Finding, Model: "-"}
	if len(bad) == 0 {
		f.Verdict = report.Reproduced
		f.Measured = fmt.Sprintf("%s: %d points, no error and no transaction over %s", loadoltp.GbE, points, limit)
		f.Why = "Gigabit Ethernet (the emulated lan-1g link) ran every load level cleanly, as in the seed."
		if window, txLimit := observable(cs); window < txLimit {
			// A point ends its transactions a grace after its measured
			// interval: none can last the limit, so none can exceed it.
			f.Measured = fmt.Sprintf("%s: %d points, no error; no transaction could have lasted %s (a point's transactions end at most %s after its start: warm-up, measured interval and the %s grace), so that half is not measured", loadoltp.GbE, points, limit, units.FormatDuration(window), units.FormatDuration(load.DefaultGrace))
			f.Why = fmt.Sprintf("Gigabit Ethernet (the emulated lan-1g link) ran every load level without an error, as in the seed; the seed's other half, no transaction over %s, needs points longer than this scale's (--full).", limit)
		}
		return f
	}
	f.Verdict = report.Differs
	f.Measured = loadoltp.GbE + ": " + strings.Join(bad, "; ")
	f.Why = fmt.Sprintf("%d of %d points on %s had errors or transactions over %s (the report's transactions table classifies the errors).", len(bad), points, loadoltp.GbE, limit)
	return f
}

func judgeThinStackFailures(rd *study.RunData, p study.Published) report.Finding {
	cs := loadoltp.Curves(rd)
	bad, below, above, points := failures(cs, thin)
	if points == 0 {
		return study.NotMeasured(p, "No point ran on the unix socket.")
	}
	maxUsers := int64(0)
	for _, c := range cs {
		if c.Transport == thin {
			maxUsers = max(maxUsers, c.Last().Params.Int("users"))
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

// observable is the longest a transaction of the shortest Gigabit Ethernet
// point could have lasted (its warm-up, measured interval and the load's
// grace at the end), and the points' transaction limit.
func observable(cs []*loadoltp.Curve) (window, txLimit time.Duration) {
	window = time.Duration(math.MaxInt64)
	for _, c := range cs {
		if c.Transport != loadoltp.GbE {
			continue
		}
		for _, pt := range c.Points {
			window = min(window, pt.Params.Duration("warm_up")+pt.Params.Duration("duration")+load.DefaultGrace)
			txLimit = max(txLimit, pt.Params.Duration("tx_limit"))
		}
	}
	return window, txLimit
}
