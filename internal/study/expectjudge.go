package study

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/dbrig/dbrig/internal/measure"
	"github.com/dbrig/dbrig/internal/report"
)

// ExpectOutcome is an expectation judged on a run.
type ExpectOutcome struct {
	Verdict report.Verdict
	// Points are the combinations the expectation reads, in the plan's
	// order, each judged on its own.
	Points []ExpectPoint
	// Why says the verdict in words.
	Why string
}

// ExpectPoint is one combination's figure: the value the repeat rule
// keeps and the runs' range (for a ratio, its worst and best case from
// the ranges of both combinations), judged against the bound.
type ExpectPoint struct {
	Combo   string
	Values  map[string]any
	Verdict report.Verdict
	// Kept, Low and High are set unless the point is not measured.
	Kept, Low, High float64
	Runs            int
	// Missing says why the point is not measured.
	Missing string
	// Of and To are a ratio's two sides; ToCombo is the second's key.
	Of, To  Stat
	ToCombo string
}

// Pass reports whether the expectation holds: reproduced at every
// combination it reads. Within noise and not measured are no pass.
func (o ExpectOutcome) Pass() bool { return o.Verdict == report.Reproduced }

// Judge decides the expectation from a run's results. Each combination is
// judged from the spread of its runs: reproduced only when every run is on
// the right side of the bound, differs when every run is on the wrong
// side, within noise when the bound falls inside the runs' range. The
// expectation is reproduced only when it is at every combination it reads.
func (e *Expectation) Judge(rd *RunData) ExpectOutcome {
	bySummary := map[string]*Summary{}
	for _, sm := range rd.Summaries {
		bySummary[sm.Combo] = sm
	}
	var out ExpectOutcome
	for _, c := range rd.Plan.Combos {
		if matches(e.At, c.Values) {
			out.Points = append(out.Points, e.judgePoint(rd, c, bySummary))
		}
	}
	out.Verdict, out.Why = e.decide(out.Points)
	return out
}

func (e *Expectation) judgePoint(rd *RunData, c *Combo, bySummary map[string]*Summary) ExpectPoint {
	p := ExpectPoint{Combo: c.Key, Values: c.Values, Verdict: report.NotMeasured}
	st, missing := e.metric.stat(bySummary[c.Key], rd.Plan.Repeat)
	if missing != "" {
		p.Missing = missing
		return p
	}
	if e.RatioTo != nil {
		other := ratioPartner(rd.Plan, c, e.RatioTo)
		if other == nil {
			p.Missing = fmt.Sprintf("the plan has no combination with %s beside it", describeMatch(e.RatioTo))
			return p
		}
		den, missing := e.metric.stat(bySummary[other.Key], rd.Plan.Repeat)
		if missing != "" {
			p.Missing = missing + " at " + other.Key
			return p
		}
		p.Of, p.To, p.ToCombo = st, den, other.Key
		if st, p.Missing = ratioStat(st, den); p.Missing != "" {
			return p
		}
	}
	p.Kept, p.Low, p.High, p.Runs = st.Mean, st.Min, st.Max, len(st.Runs)
	p.Verdict = e.bound.verdict(st.Min, st.Max)
	return p
}

// ratioPartner is the combination whose sweep values are c's with those
// of ratio_to in their place.
func ratioPartner(plan *Plan, c *Combo, ratioTo map[string]any) *Combo {
	want := maps.Clone(c.Values)
	maps.Copy(want, ratioTo)
	for _, other := range plan.Combos {
		if len(other.Values) == len(want) && matches(want, other.Values) {
			return other
		}
	}
	return nil
}

// ratioStat is the ratio of two combinations' figures: the kept values'
// ratio, and the range from the worst to the best case of their runs.
func ratioStat(num, den Stat) (Stat, string) {
	if den.Max <= 0 {
		return Stat{}, "the combination ratio_to names measured 0: no ratio"
	}
	st := Stat{Min: num.Min / den.Max, Max: math.Inf(1), Mean: math.NaN(), Runs: num.Runs}
	if den.Min > 0 {
		st.Max = num.Max / den.Min
	}
	if den.Mean > 0 {
		st.Mean = num.Mean / den.Mean
	}
	return st, ""
}

// stat reads the metric at one combination: a declared metric's runs as
// the repeat rule combines them; a distribution's statistic in each run
// that recorded it, the kept value from the distribution merged over the
// kept runs, as the report's distributions are.
func (m metricRef) stat(sm *Summary, rule RepeatSpec) (Stat, string) {
	if sm == nil {
		return Stat{}, "not measured: its points failed, were skipped or have not run"
	}
	if !m.dist {
		st, ok := sm.Stats[m.name]
		if !ok || len(st.Runs) == 0 {
			return Stat{}, "no run measured " + m.name
		}
		return st, ""
	}
	var runs []float64
	recorded := map[string]bool{}
	for _, r := range sm.Results {
		for name := range r.Histograms {
			recorded[name] = true
		}
		if h := r.Histograms[m.name]; h != nil && h.Count() > 0 {
			runs = append(runs, m.histogramFigure(h))
		}
	}
	if len(runs) == 0 {
		names := strings.Join(slices.Sorted(maps.Keys(recorded)), ", ")
		if names == "" {
			names = "none"
		}
		return Stat{}, fmt.Sprintf("no run recorded a distribution named %s (they recorded: %s)", m.name, names)
	}
	st := Trim(runs, rule)
	if h := sm.Histograms[m.name]; h != nil && h.Count() > 0 {
		st.Mean = m.histogramFigure(h)
	}
	return st, ""
}

// histogramFigure is the metric's statistic of one distribution, in ms.
func (m metricRef) histogramFigure(h *measure.Histogram) float64 {
	var d time.Duration
	switch m.q {
	case 0:
		d = h.Mean()
	case 1:
		d = h.Max()
	default:
		d = h.Quantile(m.q)
	}
	return float64(d) / float64(time.Millisecond)
}

// decide is the expectation's verdict from its points': differs when it
// fails at any, within noise when a bound falls inside a range, not
// measured when a point has no figure, reproduced only when every point
// holds it.
func (e *Expectation) decide(points []ExpectPoint) (report.Verdict, string) {
	if len(points) == 0 {
		return report.NotMeasured, fmt.Sprintf("The plan has no combination with %s.", describeMatch(e.At))
	}
	by := map[report.Verdict][]ExpectPoint{}
	for _, p := range points {
		by[p.Verdict] = append(by[p.Verdict], p)
	}
	verdict := report.Reproduced
	var whys []string
	if ps := by[report.Differs]; len(ps) > 0 {
		verdict = report.Differs
		whys = append(whys, fmt.Sprintf("Every run is on the wrong side of %s at %s.", e.boundText(), e.pointList(ps)))
	}
	if ps := by[report.WithinNoise]; len(ps) > 0 {
		if verdict == report.Reproduced {
			verdict = report.WithinNoise
		}
		whys = append(whys, fmt.Sprintf("The bound %s falls inside the runs' range at %s: some runs hold it and some do not, which is within noise and no pass.", e.boundText(), e.pointList(ps)))
	}
	if ps := by[report.NotMeasured]; len(ps) > 0 {
		if verdict == report.Reproduced {
			verdict = report.NotMeasured
		}
		whys = append(whys, missingReasons(ps)...)
	}
	if verdict == report.Reproduced {
		whys = append(whys, fmt.Sprintf("Every run holds %s at %s.", e.boundText(), e.pointList(points)))
	}
	return verdict, strings.Join(whys, " ")
}

// boundText is the bound as the verdict's words say it: "≤ 50ms", "≤ 3.00x".
func (e *Expectation) boundText() string { return e.bound.symbol() + " " + e.Format(e.bound.value) }

// pointList names points with their runs' ranges, a few of them.
func (e *Expectation) pointList(ps []ExpectPoint) string {
	const most = 6
	var parts []string
	for i, p := range ps {
		if i == most {
			parts = append(parts, fmt.Sprintf("and %d more", len(ps)-most))
			break
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", p.Combo, e.rangeText(p)))
	}
	return strings.Join(parts, ", ")
}

// rangeText is a point's runs' range: "40ms to 44ms", or the one figure.
func (e *Expectation) rangeText(p ExpectPoint) string {
	if p.Low == p.High {
		return e.Format(p.Low)
	}
	return e.Format(p.Low) + " to " + e.Format(p.High)
}

// missingReasons say, once per reason, which points were not measured.
func missingReasons(ps []ExpectPoint) []string {
	var reasons []string
	where := map[string][]string{}
	for _, p := range ps {
		if _, seen := where[p.Missing]; !seen {
			reasons = append(reasons, p.Missing)
		}
		where[p.Missing] = append(where[p.Missing], p.Combo)
	}
	var out []string
	for _, r := range reasons {
		combos := where[r]
		if len(combos) > 6 {
			combos = append(combos[:6:6], fmt.Sprintf("and %d more", len(where[r])-6))
		}
		out = append(out, fmt.Sprintf("Not measured at %s: %s.", strings.Join(combos, ", "), r))
	}
	return out
}

// finding is the expectation's row of the findings table: the study's own
// expectation where a seed's published finding would be.
func (e *Expectation) finding(rd *RunData) report.Finding {
	o := e.Judge(rd)
	f := report.Finding{
		Published: e.Finding + "\n(this study's own expectation, with no published source: " + e.Condition() + ")",
		Measured:  "-", Model: "-", Verdict: o.Verdict, Why: o.Why,
	}
	var measured, ranges []string
	runs := 0
	for _, p := range o.Points {
		if p.Missing != "" {
			continue
		}
		value := e.Format(p.Kept)
		if e.RatioTo != nil {
			value += fmt.Sprintf(" (%s / %s)", e.metric.format(p.Of.Mean), e.metric.format(p.To.Mean))
		}
		if len(o.Points) > 1 {
			value += " at " + p.Combo
		}
		measured = append(measured, value)
		ranges = append(ranges, e.rangeText(p))
		runs = max(runs, p.Runs)
	}
	if len(measured) > 0 {
		f.Measured = strings.Join(measured, "; ")
		head := plural(runs, "run", "runs")
		if len(ranges) > 1 {
			head += " each"
		}
		if e.RatioTo != nil {
			head += ", the ratio's worst to best case"
		}
		f.Spread = head + ": " + strings.Join(ranges, "; ")
	}
	return f
}
