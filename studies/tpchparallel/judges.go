package tpchparallel

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"gonum.org/v1/gonum/stat"

	"github.com/dbrig/dbrig/internal/measure"
	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/workload/tpch"
)

// The tolerances of the judges, chosen before any measurement and said in
// each verdict.
const (
	// speedupShare: our total speedup must reach this share of the seed's
	// at the same number of processes (the seed's Amdahl fit predicts it).
	speedupShare = 0.8
	// gainFloor: a query "runs faster" in parallel when it gains at least
	// 10 %, beyond a busy machine's noise.
	gainFloor = 1.1
	// scaleShare: the share of queries that must run faster.
	scaleShare = 0.9
	// fractionTolerance: our median serial fraction within 10 points of
	// the seed's (at n = 2, ±5 % on one time moves s by 10 points).
	fractionTolerance = 0.10
	// rankFloor: the rank correlation of our serial fractions with the
	// seed's that says the same queries scale worst (one-sided p < 0.05
	// for 22 queries).
	rankFloor = 0.4
	// slowerBy: a query "got slower" at a higher degree beyond 10 %.
	slowerBy = 1.1
	// busyGuard: other processes' CPUs while the streams ran from which a
	// query that did not gain may have lost to the machine, not the degree
	// (half of one of this machine's two CPUs).
	busyGuard = 0.5
	// seedSlower: the queries the seed saw slower from 8 to 16 threads.
	seedSlower = 3
)

// Judges decide the seed's findings, by their ids in tpch-parallel.toml.
func Judges() map[string]study.Judge {
	return map[string]study.Judge{
		"total-speedup":         judgeTotalSpeedup,
		"queries-scale":         judgeQueriesScale,
		"amdahl-fraction":       judgeAmdahlFraction,
		"which-queries-scale":   judgeWhichQueries,
		"slower-at-high-degree": judgeSlowerAtHighDegree,
	}
}

// mainSweep is the sweep the judges read: the one with the most degrees,
// with its serial degree and at least one parallel one.
func mainSweep(rd *study.RunData, p study.Published) (*sweep, *report.Finding) {
	sws := analyze(rd)
	if len(sws) == 0 {
		f := study.NotMeasured(p, "No point of this run was measured.")
		return nil, &f
	}
	sw := sws[0]
	if _, ok := sw.serial(); !ok {
		f := study.NotMeasured(p, "Speedups are against the serial degree 0, which this run did not measure.")
		return nil, &f
	}
	if len(sw.parallel()) == 0 {
		f := study.NotMeasured(p, "This run measured no degree with more than one process (a parallel degree on a server with more than one CPU).")
		return nil, &f
	}
	return sw, nil
}

func judgeTotalSpeedup(rd *study.RunData, p study.Published) report.Finding {
	sw, nm := mainSweep(rd, p)
	if nm != nil {
		return *nm
	}
	seed, _ := seedOf(rd.Spec)
	seedS, ok := seed.fit(0)
	if !ok {
		return study.NotMeasured(p, "The study publishes no totals by MAXDOP (total_maxdop1 ... figures) to compare with.")
	}
	serial, _ := sw.serial()
	var parts []string
	parts = append(parts, fmt.Sprintf("%s at degree 0", secs(serial.mean("total_s"))))
	monotone := true
	prev := serial
	for _, l := range sw.parallel() {
		sp := sw.speedup(l, "total_s")
		parts = append(parts, fmt.Sprintf("%s at %s (%s)", secs(l.mean("total_s")), levelName(l), study.FormatTimes(sp)))
		if l.n > prev.n && l.mean("total_s") > prev.mean("total_s")*1.05 {
			monotone = false
		}
		if l.n > prev.n {
			prev = l
		}
	}
	top, _ := sw.top()
	got := sw.speedup(top, "total_s")
	want := tpch.SpeedupAt(seedS, top.n)
	f := report.Finding{
		Published: p.Finding,
		Measured:  fmt.Sprintf("scale factor %s: %s", tpch.FormatScale(sw.sf), strings.Join(parts, ", ")),
		Model: fmt.Sprintf("Amdahl with the seed's totals' serial fraction (%s): %s at n = %g; fitted here: s = %s",
			pct(seedS), study.FormatTimes(want), top.n, pct(sw.fraction("total_s"))),
	}
	switch {
	case got > top.n*1.1:
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("A speedup of %s on %g processes is more than the processes can give: the serial and the parallel points ran under different loads, so this run cannot tell how the stream scales.%s Rerun on a quieter machine.",
			study.FormatTimes(got), top.n, loads(sw))
	case !monotone:
		f.Verdict = report.Differs
		f.Why = "The total did not fall as processes were added: a degree with more processes took more than 5 % longer than one with fewer (see the table)."
	case got >= speedupShare*want:
		f.Verdict = report.Reproduced
		f.Why = fmt.Sprintf("At n = %g the total ran %s faster than serially, at least %.0f %% of the %s the seed's own scaling predicts at the same n: the stream scales nearly linearly here too.",
			top.n, study.FormatTimes(got), 100*speedupShare, study.FormatTimes(want))
	default:
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("At n = %g the total ran %s faster, under %.0f %% of the %s the seed's scaling predicts: %s",
			top.n, study.FormatTimes(got), 100*speedupShare, study.FormatTimes(want), serialQueries(sw, top))
	}
	if got <= top.n*1.1 {
		f.Why += sw.busy()
	}
	return f
}

// loads says how much CPU other processes took during each degree, when
// measured.
func loads(sw *sweep) string {
	var parts []string
	for _, l := range sw.levels {
		if v := l.mean("other_cpus"); !math.IsNaN(v) {
			parts = append(parts, fmt.Sprintf("%.2f CPUs at degree %d", v, l.degree))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " Other processes on this host took " + strings.Join(parts, ", ") + "."
}

// serialQueries names the queries whose plans asked for no worker at a
// level: they cannot gain from the degree.
func serialQueries(sw *sweep, l level) string {
	var none []string
	for _, q := range sw.queries() {
		if l.mean(tpch.WorkersName(q)) == 0 {
			none = append(none, fmt.Sprintf("Q%d", q))
		}
	}
	if len(none) == 0 {
		return "every plan asked for parallel workers, so the workers' own costs and this machine's other load are what is missing."
	}
	return fmt.Sprintf("PostgreSQL planned no parallel worker for %s at this degree, so those ran serially.", strings.Join(none, ", "))
}

func judgeQueriesScale(rd *study.RunData, p study.Published) report.Finding {
	sw, nm := mainSweep(rd, p)
	if nm != nil {
		return *nm
	}
	first := sw.parallel()[0]
	qs := sw.queries()
	var faster int
	var slow []string
	lo, hi := math.Inf(1), math.Inf(-1)
	var loQ, hiQ int
	var impossible []string
	for _, q := range qs {
		sp := sw.speedup(first, tpch.MetricName(q))
		switch {
		case sp > first.n*1.1:
			// More than the processes can give: the two points ran
			// under different loads, so the gain is not the degree's.
			impossible = append(impossible, fmt.Sprintf("Q%d %s", q, study.FormatTimes(sp)))
		case sp >= gainFloor:
			faster++
		default:
			slow = append(slow, fmt.Sprintf("Q%d %s (%g workers planned)", q, study.FormatTimes(sp), first.mean(tpch.WorkersName(q))))
		}
		if sp < lo {
			lo, loQ = sp, q
		}
		if sp > hi {
			hi, hiQ = sp, q
		}
	}
	seed, _ := seedOf(rd.Spec)
	model := "-"
	var preds []float64
	for _, q := range qs {
		if s, ok := seed.fit(q); ok {
			preds = append(preds, tpch.SpeedupAt(s, first.n))
		}
	}
	if len(preds) > 0 {
		model = fmt.Sprintf("the seed's per-query fits predict %s to %s at n = %g", study.FormatTimes(slices.Min(preds)), study.FormatTimes(slices.Max(preds)), first.n)
	}
	f := report.Finding{
		Published: p.Finding,
		Measured: fmt.Sprintf("%s: %d of %d queries at least %.0f %% faster than serially; from %s (Q%d) to %s (Q%d)",
			levelName(first), faster, len(qs), 100*(gainFloor-1), study.FormatTimes(lo), loQ, study.FormatTimes(hi), hiQ),
		Model: model,
	}
	need := int(math.Ceil(scaleShare * float64(len(qs))))
	serial, _ := sw.serial()
	other := max(serial.mean("other_cpus"), first.mean("other_cpus")) // NaN when not measured
	switch {
	case faster >= need:
		f.Verdict = report.Reproduced
		f.Why = fmt.Sprintf("%d of %d queries gained at least %.0f %% at the first parallel degree (%.0f %% needed)", faster, len(qs), 100*(gainFloor-1), 100*scaleShare)
		if len(slow) > 0 {
			f.Why += "; not: " + strings.Join(slow, ", ")
		}
		f.Why += "."
	case faster+len(impossible) >= need:
		f.Verdict = report.WithinNoise
		f.Why = fmt.Sprintf("%d of %d queries gained at least %.0f %%, and %s more than %g processes can give: the serial and the parallel points ran under different loads, so this run cannot tell how those scale.%s", faster, len(qs), 100*(gainFloor-1), strings.Join(impossible, ", "), first.n, loads(sw))
	case other >= busyGuard:
		f.Verdict = report.WithinNoise
		f.Why = fmt.Sprintf("Only %d of %d queries gained at least %.0f %% (%d needed), but other processes on this host took %.1f CPUs while the streams ran: the machine's load, not the degree, may have held back %s.", faster, len(qs), 100*(gainFloor-1), need, other, strings.Join(slow, ", "))
	default:
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("Only %d of %d queries gained at least %.0f %% (%d needed); not: %s.", faster, len(qs), 100*(gainFloor-1), need, strings.Join(slow, ", "))
	}
	if f.Verdict != report.WithinNoise {
		f.Why += sw.busy()
	}
	return f
}

// fractions are our stored serial fractions and the seed's, for the
// queries both have.
func fractions(rd *study.RunData, sw *sweep) (qs []int, ours, seeds []float64) {
	seed, _ := seedOf(rd.Spec)
	for _, q := range sw.queries() {
		o := sw.fraction(tpch.MetricName(q))
		s, ok := seed.fit(q)
		if math.IsNaN(o) || !ok {
			continue
		}
		qs = append(qs, q)
		ours = append(ours, o)
		seeds = append(seeds, s)
	}
	return qs, ours, seeds
}

func judgeAmdahlFraction(rd *study.RunData, p study.Published) report.Finding {
	sw, nm := mainSweep(rd, p)
	if nm != nil {
		return *nm
	}
	qs, ours, seeds := fractions(rd, sw)
	if len(qs) == 0 {
		return study.NotMeasured(p, "No query has both a fitted serial fraction here and the seed's times by MAXDOP.")
	}
	mo, ms := measure.Median(ours), measure.Median(seeds)
	f := report.Finding{
		Published: p.Finding,
		Measured:  fmt.Sprintf("median serial fraction of %d queries: %s (from %s to %s); total: %s", len(qs), pct(mo), pct(slices.Min(ours)), pct(slices.Max(ours)), pct(sw.fraction("total_s"))),
		Model:     fmt.Sprintf("the seed's times fitted the same way: median %s", pct(ms)),
	}
	if math.Abs(mo-ms) <= fractionTolerance {
		f.Verdict = report.Reproduced
		f.Why = fmt.Sprintf("Our median serial fraction is within %.0f points of the seed's: most of each query's work divides among the processes.", 100*fractionTolerance)
	} else {
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("Our median serial fraction is %.0f points from the seed's (more than %.0f): %s", 100*math.Abs(mo-ms), 100*fractionTolerance, serialQueries(sw, sw.parallel()[0]))
	}
	return f
}

// ranks turns values into ranks (1 = smallest; ties share their mean rank).
func ranks(vs []float64) []float64 {
	idx := make([]int, len(vs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case vs[a] < vs[b]:
			return -1
		case vs[a] > vs[b]:
			return 1
		}
		return 0
	})
	out := make([]float64, len(vs))
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && vs[idx[j+1]] == vs[idx[i]] {
			j++
		}
		r := float64(i+j)/2 + 1
		for k := i; k <= j; k++ {
			out[idx[k]] = r
		}
		i = j + 1
	}
	return out
}

// worst names the k queries with the largest fractions.
func worst(qs []int, fs []float64, k int) string {
	idx := make([]int, len(qs))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case fs[a] > fs[b]:
			return -1
		case fs[a] < fs[b]:
			return 1
		}
		return 0
	})
	var out []string
	for _, i := range idx[:min(k, len(idx))] {
		out = append(out, fmt.Sprintf("Q%d (%s)", qs[i], pct(fs[i])))
	}
	return strings.Join(out, ", ")
}

func judgeWhichQueries(rd *study.RunData, p study.Published) report.Finding {
	sw, nm := mainSweep(rd, p)
	if nm != nil {
		return *nm
	}
	qs, ours, seeds := fractions(rd, sw)
	if len(qs) < 5 {
		return study.NotMeasured(p, "Ranking needs the serial fractions of at least 5 queries both here and in the seed.")
	}
	rho := stat.Correlation(ranks(ours), ranks(seeds), nil)
	f := report.Finding{
		Published: p.Finding,
		Measured:  fmt.Sprintf("largest serial fractions here: %s; rank correlation with the seed's over %d queries: %.2f", worst(qs, ours, 7), len(qs), rho),
		Model:     fmt.Sprintf("the seed's largest: %s", worst(qs, seeds, 7)),
	}
	if math.IsNaN(rho) {
		f.Verdict = report.Differs
		f.Why = "Every query has the same serial fraction here or in the seed, so there is no order to compare."
		return f
	}
	if rho >= rankFloor {
		f.Verdict = report.Reproduced
		f.Why = fmt.Sprintf("The queries rank alike: Spearman's rank correlation %.2f is at least %.1f, so the queries that scale worst there scale worst here.", rho, rankFloor)
	} else {
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("The queries rank differently (Spearman's rank correlation %.2f, under %.1f): which queries scale depends on the engine's plans and on the scale factor, and PostgreSQL parallelizes other parts of these queries than SQL Server did.", rho, rankFloor)
	}
	return f
}

func judgeSlowerAtHighDegree(rd *study.RunData, p study.Published) report.Finding {
	sws := analyze(rd)
	if len(sws) == 0 {
		return study.NotMeasured(p, "No point of this run was measured.")
	}
	sw := sws[0]
	// The two highest distinct process counts of 8 or more.
	var high []level
	for _, l := range sw.levels {
		if l.n < 8 {
			continue
		}
		if len(high) > 0 && high[len(high)-1].n == l.n {
			continue
		}
		high = append(high, l)
	}
	if len(high) < 2 {
		most := 0.0
		for _, l := range sw.levels {
			most = max(most, l.n)
		}
		return study.NotMeasured(p, fmt.Sprintf("Needs two degrees of at least 8 processes each within the server's CPUs (the seed went from 8 to 16 threads); this run reached n = %g.", most))
	}
	a, b := high[len(high)-2], high[len(high)-1]
	var slower []string
	clear := 0
	for _, q := range sw.queries() {
		name := tpch.MetricName(q)
		ta, tb := a.mean(name), b.mean(name)
		if tb > ta*slowerBy {
			slower = append(slower, fmt.Sprintf("Q%d (%s → %s ms)", q, ms(ta), ms(tb)))
			sa, sb := a.sum.Stats[name], b.sum.Stats[name]
			if len(sa.Runs) >= 2 && len(sb.Runs) >= 2 && study.Separated(sa, sb) {
				clear++
			}
		}
	}
	f := report.Finding{Published: p.Finding, Model: "Amdahl's law never predicts a slowdown: time(n) falls with n for any s ≤ 1"}
	f.Measured = fmt.Sprintf("from %s to %s: no query took more than %.0f %% longer", levelName(a), levelName(b), 100*(slowerBy-1))
	if len(slower) > 0 {
		f.Measured = fmt.Sprintf("from %s to %s: %s; %d of them beyond their runs' spread", levelName(a), levelName(b), strings.Join(slower, ", "), clear)
	}
	// The seed saw three queries slower; one or two of 22 beyond 10 % is
	// what a busy machine's noise gives, and a slowdown counts only where
	// the two degrees' runs do not overlap.
	switch {
	case clear >= seedSlower:
		f.Verdict = report.Reproduced
		f.Why = fmt.Sprintf("%d queries took more than %.0f %% longer with more processes, beyond their runs' spread: their workers cost more than they divide.", clear, 100*(slowerBy-1))
	case len(slower) >= seedSlower:
		f.Verdict = report.WithinNoise
		f.Why = fmt.Sprintf("%d queries took more than %.0f %% longer with more processes, but only %d beyond their runs' spread (one run per degree cannot say: a copy of the study with [repeat] runs = 3 can).", len(slower), 100*(slowerBy-1), clear)
	case len(slower) > 0:
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("Only %d of %d queries took more than %.0f %% longer with more processes, where the seed saw %d: one or two such queries are what this machine's noise gives.", len(slower), len(sw.queries()), 100*(slowerBy-1), seedSlower)
	default:
		f.Verdict = report.Differs
		f.Why = "No query got slower with more processes here."
	}
	return f
}
