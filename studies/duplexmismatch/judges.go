package duplexmismatch

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/dbrig/dbrig/internal/diagnose"
	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/workload/oltp"
	"github.com/dbrig/dbrig/studies/loadoltp"
)

// The judges' tolerances, chosen before any run and said in each verdict.
const (
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

// Judges decide seed 002's duplex findings by the ids of
// duplex-mismatch.toml.
func Judges() map[string]study.Judge {
	return map[string]study.Judge{
		"collapse":             judgeCollapse,
		"mean-mildly-worse":    judgeMeanMildlyWorse,
		"outliers":             judgeOutliers,
		"server-idle":          judgeServerIdle,
		"reporting-unaffected": judgeReportingUnaffected,
	}
}

// oltpPairs are the duplex pairs of the small transactions' mixes, by
// mix and link ("shop on 1Gbit/s"): the closed loops by users, then the
// open loops by rate.
func oltpPairs(rd *study.RunData) (mixes []string, by map[string][]loadoltp.DuplexPair) {
	by = map[string][]loadoltp.DuplexPair{}
	for _, p := range loadoltp.DuplexPairs(rd) {
		if p.ReportQuery {
			continue
		}
		key := p.Mix + " on " + p.Wire
		if _, ok := by[key]; !ok {
			mixes = append(mixes, key)
		}
		by[key] = append(by[key], p)
	}
	for _, m := range mixes {
		slices.SortStableFunc(by[m], func(a, b loadoltp.DuplexPair) int {
			switch {
			case a.Open() != b.Open():
				if a.Open() {
					return 1
				}
				return -1
			case a.Rate != b.Rate:
				return cmpFloat(a.Rate, b.Rate)
			}
			return cmpFloat(a.Users, b.Users)
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
func closedLoops(ps []loadoltp.DuplexPair) []loadoltp.DuplexPair {
	var out []loadoltp.DuplexPair
	for _, x := range ps {
		if !x.Open() {
			out = append(out, x)
		}
	}
	return out
}

// perMix judges each OLTP mix with judge and merges the findings.
func perMix(rd *study.RunData, p study.Published, judge func([]loadoltp.DuplexPair) report.Finding) report.Finding {
	mixes, by := oltpPairs(rd)
	if len(mixes) == 0 {
		return study.NotMeasured(p, "Needs an OLTP mix on "+loadoltp.GbE+" and on "+loadoltp.GbE+"+duplex-mismatch at the same users.")
	}
	return study.JudgeEach(p, mixes, func(m string) string { return "mix " + m }, func(m string) report.Finding {
		f := judge(by[m])
		f.Published = p.Finding
		return f
	})
}

func judgeCollapse(rd *study.RunData, p study.Published) report.Finding {
	seed := p.Value
	if e, m := p.Figures["expected_tps"], p.Figures["mismatch_tps"]; e > 0 && m > 0 {
		seed = m / e
	}
	return perMix(rd, p, func(ps []loadoltp.DuplexPair) report.Finding {
		ps = closedLoops(ps)
		if len(ps) == 0 {
			return study.NotMeasured(p, "Needs a closed loop (the server driven as hard as its users can) at both duplex settings.")
		}
		bestF, bestM := ps[0], ps[0]
		for _, x := range ps {
			if x.Full.Mean("tps") > bestF.Full.Mean("tps") {
				bestF = x
			}
			if x.Mismatched.Mean("tps") > bestM.Mismatched.Mean("tps") {
				bestM = x
			}
		}
		ratio := bestM.Mismatched.Mean("tps") / bestF.Full.Mean("tps")
		f := report.Finding{
			Measured: fmt.Sprintf("best %s/s at full duplex (%g users), %s/s at a duplex mismatch (%g users): %.2fx (the seed: 800 / 5,000 = %.2fx)",
				oltp.FormatTPS(bestF.Full.Mean("tps")), bestF.Users, oltp.FormatTPS(bestM.Mismatched.Mean("tps")), bestM.Users, ratio, seed),
			Model:  stallModelLine(bestM),
			Spread: rd.Spread("tps", bestF.Full.Stats["tps"], bestM.Mismatched.Stats["tps"]),
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
func stallModelLine(x loadoltp.DuplexPair) string {
	m := x.Mismatched.Results[len(x.Mismatched.Results)-1].Model
	v, ok := m[oltp.ModelStall]
	if !ok {
		return "-"
	}
	return fmt.Sprintf("one RTO (%s) per hit transaction: users / (R_full + Z + h × RTO) = %g / (%s + %s + %.2f %% × %s) = %s/s at %g users (measured %s/s)",
		oltp.FormatMS(m[oltp.ModelRTO]), x.Users, oltp.FormatMS(m[oltp.ModelFullMean]), oltp.FormatMS(oltp.ThinkMS(x.Mismatched.Params)), 100*m[oltp.ModelHitShare], oltp.FormatMS(m[oltp.ModelRTO]), oltp.FormatTPS(v), x.Users, oltp.FormatTPS(x.Mismatched.Mean("tps")))
}

func judgeMeanMildlyWorse(rd *study.RunData, p study.Published) report.Finding {
	return perMix(rd, p, func(ps []loadoltp.DuplexPair) report.Finding {
		// The seed's "given load": an open loop's fixed rate when the run
		// has one, else the lightest closed loop.
		x, which := ps[0], "the lightest load"
		if last := ps[len(ps)-1]; last.Open() {
			x, which = last, "a given load"
		}
		r := x.Mismatched.Mean("mean_ms") / x.Full.Mean("mean_ms")
		hf, hm := x.Full.Histograms["latency"], x.Mismatched.Histograms["latency"]
		f := report.Finding{
			Measured: fmt.Sprintf("at %s (%s): mean %s at full duplex, %s at a mismatch (%.2fx); median %s and %s, p99 %s and %s; throughput %.2fx",
				x.Load(), which, oltp.FormatMS(x.Full.Mean("mean_ms")), oltp.FormatMS(x.Mismatched.Mean("mean_ms")), r, loadoltp.Quantile(hf, 0.5), loadoltp.Quantile(hm, 0.5), loadoltp.Quantile(hf, 0.99), loadoltp.Quantile(hm, 0.99),
				x.Mismatched.Mean("tps")/x.Full.Mean("tps")),
			Model:  "the mean is the median's few milliseconds plus h × RTO: a few stalled transactions in a hundred add a few milliseconds to the mean and nothing to the median, all to the tail",
			Spread: rd.Spread("mean_ms", x.Full.Stats["mean_ms"], x.Mismatched.Stats["mean_ms"]),
		}
		switch {
		case r >= mildLo && r < mildHi:
			f.Verdict = report.Reproduced
			f.Why = fmt.Sprintf("The mean rose %.2fx (the seed: about 1.3x to 1.7x), between %.2fx and %.0fx: worse, not five or six times worse, while the tail went from %s to %s.", r, mildLo, mildHi, loadoltp.Quantile(hf, 0.99), loadoltp.Quantile(hm, 0.99))
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
	return perMix(rd, p, func(ps []loadoltp.DuplexPair) report.Finding {
		var flagged, missed, cleanFlagged []string
		var over1s, over200 int64
		var share []string
		for _, x := range ps {
			for _, d := range loadoltp.Stalls(x.Mismatched) {
				over200 += d.Over200ms
				if d.Found {
					over1s += d.Over1s // a saturated server's own tail is not a stall
					flagged = append(flagged, x.Load())
					share = append(share, fmt.Sprintf("%.1f %% at %s (clusters at %s × %s)", 100*d.HitShare, x.Load(), diagnose.Multiples(d.Clusters), oltp.FormatMS(float64(d.Spacing)/float64(time.Millisecond))))
				} else {
					missed = append(missed, fmt.Sprintf("%s: %s", x.Load(), d.Why))
				}
			}
			for _, d := range loadoltp.Stalls(x.Full) {
				if d.Found {
					cleanFlagged = append(cleanFlagged, x.Load())
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
	return perMix(rd, p, func(ps []loadoltp.DuplexPair) report.Finding {
		ps = closedLoops(ps)
		if len(ps) == 0 {
			return study.NotMeasured(p, "Needs a closed loop at both duplex settings.")
		}
		x := ps[len(ps)-1] // the heaviest load
		cf, cm := study.ServerCPU(x.Full), study.ServerCPU(x.Mismatched)
		lo := ps[0]
		growth := fmt.Sprintf("from %g to %g users the throughput went %s to %s/s at full duplex, %s to %s/s at a mismatch",
			lo.Users, x.Users, oltp.FormatTPS(lo.Full.Mean("tps")), oltp.FormatTPS(x.Full.Mean("tps")), oltp.FormatTPS(lo.Mismatched.Mean("tps")), oltp.FormatTPS(x.Mismatched.Mean("tps")))
		if math.IsNaN(cf) || math.IsNaN(cm) || cf == 0 {
			f := study.NotMeasured(p, "The server's CPU was not sampled (a server dbrig did not start, or no monitoring samples).")
			f.Measured = growth
			return f
		}
		f := report.Finding{Measured: fmt.Sprintf("at %g users the server used %.2f CPUs at full duplex, %.2f at a mismatch (%.2fx); %s", x.Users, cf, cm, cm/cf, growth),
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

func judgeReportingUnaffected(rd *study.RunData, p study.Published) report.Finding {
	var reports []loadoltp.DuplexPair
	for _, x := range loadoltp.DuplexPairs(rd) {
		if x.ReportQuery {
			reports = append(reports, x)
		}
	}
	if len(reports) == 0 {
		return study.NotMeasured(p, "Needs the reporting mix on "+loadoltp.GbE+" and on "+loadoltp.GbE+"+duplex-mismatch at the same users.")
	}
	return study.JudgeEach(p, reports, func(x loadoltp.DuplexPair) string { return "on " + x.Wire },
		func(x loadoltp.DuplexPair) report.Finding { return judgeReport(rd, p, x) })
}

// judgeReport judges one reporting pair.
func judgeReport(rd *study.RunData, p study.Published, x loadoltp.DuplexPair) report.Finding {
	r := x.Mismatched.Mean("mean_ms") / x.Full.Mean("mean_ms")
	share, lost := loadoltp.StalledShare(x.Mismatched)
	measured := fmt.Sprintf("the reporting query at %g users: %d segments lost, its users waited out timeouts %.1f %% of their time; mean %s at full duplex, %s at a mismatch (%.2fx)",
		x.Users, lost, 100*share, oltp.FormatMS(x.Full.Mean("mean_ms")), oltp.FormatMS(x.Mismatched.Mean("mean_ms")), r)
	_, by := oltpPairs(rd)
	var contrast []string
	for _, ps := range by {
		for _, o := range ps {
			if o.Users == x.Users && !o.Open() && o.Wire == x.Wire {
				sh, _ := loadoltp.StalledShare(o.Mismatched)
				contrast = append(contrast, fmt.Sprintf("%s %.1f %% (mean %.2fx)", o.Mix, 100*sh, o.Mismatched.Mean("mean_ms")/o.Full.Mean("mean_ms")))
			}
		}
	}
	slices.Sort(contrast)
	if len(contrast) > 0 {
		measured += "; the small transactions at the same users: " + strings.Join(contrast, ", ")
	}
	f := report.Finding{Published: p.Finding, Measured: measured, Spread: rd.Spread("mean_ms", x.Full.Stats["mean_ms"], x.Mismatched.Stats["mean_ms"]),
		Model: "each lost segment stalls one user one RTO: the users' time stalled = lost × RTO / (users × the point's time). Collisions need both ends sending at once: a report is one request and one answer per long query, so the client seldom sends while the server does"}
	stalls := fmt.Sprintf("The report's users lost %.1f %% of their time to retransmissions", 100*share)
	full, mm := x.Full.Stats["mean_ms"], x.Mismatched.Stats["mean_ms"]
	switch {
	case share > reportBand:
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("%s, more than %.0f %%.", stalls, 100*reportBand)
	case math.Abs(r-1) <= reportBand:
		f.Verdict = report.Reproduced
		f.Why = fmt.Sprintf("%s (at most %.0f %%) and its mean stayed within ±%.0f %%: the report barely notices the mismatch.", stalls, 100*reportBand, 100*reportBand)
	case len(full.Runs) < 2 || len(mm.Runs) < 2 || !study.Separated(full, mm):
		// The stalls do not explain the move; only runs that do not
		// overlap could say it is not the machine's own noise.
		f.Verdict = report.WithinNoise
		f.Why = fmt.Sprintf("%s (at most %.0f %%), but its mean moved %s, beyond ±%.0f %%, by what the timeouts do not explain, and the two points' runs cannot tell that move from the machine's own noise (a single run each, or runs that overlap).", stalls, 100*reportBand, study.FormatPercent(100*(r-1)), 100*reportBand)
	default:
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("%s (at most %.0f %%), yet its mean moved %s, beyond ±%.0f %% and beyond the runs' spread: the report felt a difference the timeouts do not explain.", stalls, 100*reportBand, study.FormatPercent(100*(r-1)), 100*reportBand)
	}
	return f
}
