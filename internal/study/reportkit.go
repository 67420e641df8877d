package study

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/units"
	"github.com/dbrig/dbrig/internal/workload"
)

// What every workload's report needs, in one place: the seed's gain
// formula, a change in percent, durations, the point's link, captions that
// say what ran, and the spread a verdict is judged against.

// Gain is the seeds' gain of B over A, (A - B) / B × 100: how much more
// time A took than B, in percent of B.
func Gain(a, b float64) float64 { return (a - b) / b * 100 }

// Change is the change from old to new in percent of old.
func Change(newV, oldV float64) float64 { return (newV - oldV) / oldV * 100 }

// FormatPercent prints a percentage with its sign ("+12.5 %"), "-" when
// it is not a number.
func FormatPercent(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "-"
	}
	return fmt.Sprintf("%+.1f %%", v)
}

// FormatSeconds prints seconds as a duration ("1.25 s", "310 µs").
func FormatSeconds(s float64) string {
	if math.IsNaN(s) {
		return "-"
	}
	return units.FormatDuration(time.Duration(s * 1e9))
}

// FormatTimes prints a ratio as a factor ("2.44x", "14.7x" from 10 on),
// "-" when it is not a number.
func FormatTimes(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return "-"
	case v >= 10:
		return fmt.Sprintf("%.1fx", v)
	}
	return fmt.Sprintf("%.2fx", v)
}

// Within reports whether got is within a factor f of want either way.
func Within(got, want, f float64) bool { return got >= want/f && got <= want*f }

// ServerCPU is the mean CPUs the points' servers used while they ran
// (sampled by the monitoring connection), NaN when not measured (a
// target's processes, or points too short for a sample).
func ServerCPU(ps ...*Summary) float64 {
	sum, n := 0.0, 0
	for _, s := range ps {
		for _, r := range s.Results {
			for _, ser := range r.Monitor {
				if v := ser.Summarize().MeanCPU; v >= 0 {
					sum += v
					n++
				}
			}
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

// RunRange is the lowest and highest run of a figure, leaving out a
// discarded first run as the mean does; NaN without runs.
func RunRange(s Stat, discardFirst bool) (lo, hi float64) {
	runs := s.Runs
	if discardFirst && len(runs) > 1 {
		runs = runs[1:]
	}
	if len(runs) == 0 {
		return math.NaN(), math.NaN()
	}
	return slices.Min(runs), slices.Max(runs)
}

// RatioRange is the lowest and highest ratio of a run of num to a run of
// den: the ratios two runs of a study could give for num / den.
func RatioRange(num, den Stat) (lo, hi float64) {
	nlo, nhi := RunRange(num, false)
	dlo, dhi := RunRange(den, false)
	return nlo / dhi, nhi / dlo
}

// Band judges a figure whose runs span [lo, hi] against the band [min,
// max]: reproduced when every run's value is inside, differs when none is,
// and within noise when the runs fall on both sides of a bound, where two
// runs of the same study could give either verdict.
func Band(lo, hi, min, max float64) report.Verdict {
	switch {
	case lo >= min && hi <= max:
		return report.Reproduced
	case hi < min || lo > max:
		return report.Differs
	}
	return report.WithinNoise
}

// InstanceOf is the configuration of the instance a point ran on:
// [workload.Result.Instance], for reports.
func InstanceOf(r workload.Result) engine.InstanceConfig { return r.Instance() }

// EngineTitle is an engine's name as its makers write it ("PostgreSQL"
// for postgres), for reports.
func EngineTitle(name string) string {
	switch name {
	case "postgres":
		return "PostgreSQL"
	case "mariadb":
		return "MariaDB"
	}
	return name
}

// LinkOf is a result's first link: [workload.Result.Link], for reports.
func LinkOf(r workload.Result) workload.LinkResult { return r.Link() }

// RunsCaption says how a chart's runs and line were made, from what ran:
// "Dots are single runs; the line is the median of 3 runs".
func (rd *RunData) RunsCaption() string {
	n := rd.Plan.Repeat.Runs
	if n == 1 {
		return "Each point is one run"
	}
	kept := "the mean of " + plural(n, "run", "runs")
	switch {
	case rd.Plan.Repeat.Trim == "min-max" && rd.Plan.Repeat.DiscardFirst && n >= 4:
		kept = fmt.Sprintf("the mean of %d runs after the first is dropped and then the lowest and highest", n)
	case rd.Plan.Repeat.Trim == "min-max" && n == 3:
		kept = "the median of 3 runs"
	case rd.Plan.Repeat.Trim == "min-max" && n > 3:
		kept = fmt.Sprintf("the mean of %d runs without the lowest and highest", n)
	case rd.Plan.Repeat.DiscardFirst:
		kept = fmt.Sprintf("the mean of %d runs after the first is dropped", n)
	}
	return "Dots are single runs; the line is " + kept
}

// Spread says what the runs behind a verdict were: "3 runs each: 309-953
// Mbit/s and 880-910 Mbit/s". Stats without runs are left out.
func (rd *RunData) Spread(metric string, stats ...Stat) string {
	var ranges []string
	runs := 0
	for _, st := range stats {
		if len(st.Runs) == 0 {
			continue
		}
		runs = max(runs, len(st.Runs))
		if len(st.Runs) == 1 {
			ranges = append(ranges, rd.FormatMetric(metric, st.Runs[0]))
			continue
		}
		ranges = append(ranges, rd.FormatMetric(metric, st.Min)+" to "+rd.FormatMetric(metric, st.Max))
	}
	if len(ranges) == 0 {
		return ""
	}
	head := plural(runs, "run", "runs")
	if len(ranges) > 1 {
		head += " each"
	}
	return head + ": " + strings.Join(ranges, "; ")
}

// Separated reports whether two combinations' runs do not overlap: a
// difference between them is larger than their own spread.
func Separated(a, b Stat) bool {
	if len(a.Runs) == 0 || len(b.Runs) == 0 {
		return false
	}
	return a.Max < b.Min || b.Max < a.Min
}

// Facets finds the swept dimensions a workload's own grouping leaves out:
// the sweep variables whose value differs between combinations that the
// workload's key puts together (a user's own `sc = ["on", "off"]` beside
// the study's experiment and link). FacetOf names a combination's values
// of those variables ("" when there are none), so a report can draw a
// series or a table per facet instead of keeping one value and dropping
// the others.
func (rd *RunData) Facets(key func(*Summary) string) (facetOf func(*Summary) string, facets []string) {
	seen := map[string]map[string]map[string]bool{} // key -> var -> values
	for _, s := range rd.Summaries {
		k := key(s)
		if seen[k] == nil {
			seen[k] = map[string]map[string]bool{}
		}
		for v, val := range s.Values {
			if seen[k][v] == nil {
				seen[k][v] = map[string]bool{}
			}
			seen[k][v][fmt.Sprint(val)] = true
		}
	}
	var dims []string
	for _, v := range rd.Spec.SweepKeys {
		for _, byVar := range seen {
			if len(byVar[v]) > 1 {
				dims = append(dims, v)
				break
			}
		}
	}
	facetOf = func(s *Summary) string {
		var parts []string
		for _, v := range dims {
			parts = append(parts, fmt.Sprintf("%s=%v", v, s.Values[v]))
		}
		return strings.Join(parts, " ")
	}
	have := map[string]bool{}
	for _, s := range rd.Summaries {
		if f := facetOf(s); !have[f] {
			have[f] = true
			facets = append(facets, f)
		}
	}
	return facetOf, facets
}

// RelativeSpread says how far the runs strayed from the values kept, for a
// verdict over many combinations: "runs within ±4 % of the kept values".
func RelativeSpread(stats ...Stat) string {
	worst, runs := 0.0, 0
	for _, st := range stats {
		if len(st.Runs) < 2 || st.Mean == 0 {
			continue
		}
		runs = max(runs, len(st.Runs))
		worst = max(worst, (st.Max-st.Mean)/math.Abs(st.Mean), (st.Mean-st.Min)/math.Abs(st.Mean))
	}
	if runs == 0 {
		return ""
	}
	return fmt.Sprintf("%s each; runs within ±%.0f %% of the values kept", plural(runs, "run", "runs"), worst*100)
}

// Unmeasured says what MergeFindings says of the parts of a run that
// measured nothing.
type Unmeasured int

const (
	// SayUnmeasured gives each such part a line with its reason: the
	// parts are what the study compares (each engine of a key-lookup run),
	// so one that measured nothing is news.
	SayUnmeasured Unmeasured = iota
	// OmitUnmeasured leaves them out, and a part that alone measured the
	// finding stands as its own finding under its label: the parts are the
	// values of a dimension a user's sweep added (the engine of an rbar
	// study swept over both), where a value without the experiment is no
	// news.
	OmitUnmeasured
)

// MergeFindings makes one finding of a finding judged on each of several
// parts of a run (each engine of a sweep, say), labelled: each part's
// figures and reasons under its label; reproduced when every part that
// measured it reproduced it, differs when any differs, not measured when
// none measured it. The parts that measured nothing are said unless
// unmeasured is OmitUnmeasured.
func MergeFindings(p Published, labels []string, each []report.Finding, unmeasured ...Unmeasured) report.Finding {
	omit := len(unmeasured) > 0 && unmeasured[0] == OmitUnmeasured
	var measured []int
	for i, f := range each {
		if f.Verdict != report.NotMeasured {
			measured = append(measured, i)
		}
	}
	switch {
	case len(each) == 0:
		return NotMeasured(p, "This run has no point that measures it.")
	case len(each) == 1, len(measured) == 0 && omit:
		return each[0]
	case len(measured) == 0:
		out := each[0]
		var whys []string
		for i, f := range each {
			whys = append(whys, labels[i]+": "+f.Why)
		}
		out.Why = strings.Join(whys, "\n")
		return out
	case len(measured) == 1 && omit:
		return labelled(each[measured[0]], labels[measured[0]])
	}
	out := mergeMeasured(p, labels, each, measured)
	if !omit {
		whys := []string{out.Why}
		for i, f := range each {
			if f.Verdict == report.NotMeasured {
				whys = append(whys, labels[i]+": not measured. "+f.Why)
			}
		}
		out.Why = strings.Join(whys, "\n")
	}
	return out
}

// mergeMeasured merges the parts that measured a finding, each under its
// label.
func mergeMeasured(p Published, labels []string, each []report.Finding, measured []int) report.Finding {
	out := report.Finding{Published: p.Finding, Verdict: report.Reproduced}
	var ms, models, spreads, whys []string
	sameModel := true
	for _, i := range measured {
		f, label := each[i], labels[i]+": "
		ms = append(ms, label+f.Measured)
		models = append(models, label+f.Model)
		sameModel = sameModel && f.Model == each[measured[0]].Model
		if f.Spread != "" {
			spreads = append(spreads, label+f.Spread)
		}
		whys = append(whys, label+string(f.Verdict)+". "+f.Why)
		// One part that differs makes the finding differ; else one the
		// runs cannot decide leaves it within noise.
		switch {
		case f.Verdict == report.WithinNoise && out.Verdict == report.Reproduced:
			out.Verdict = report.WithinNoise
		case f.Verdict != report.Reproduced && f.Verdict != report.WithinNoise:
			out.Verdict = report.Differs
		}
	}
	out.Measured = strings.Join(ms, "\n")
	out.Model = strings.Join(models, "\n")
	if sameModel {
		out.Model = each[measured[0]].Model
	}
	out.Spread = strings.Join(spreads, "; ")
	out.Why = strings.Join(whys, "\n")
	return out
}

// labelled is one part's finding under its label, but for its model,
// which mergeMeasured also leaves unlabelled when every part shares it.
func labelled(f report.Finding, label string) report.Finding {
	label += ": "
	f.Measured, f.Why = label+f.Measured, label+f.Why
	if f.Spread != "" {
		f.Spread = label + f.Spread
	}
	return f
}

// NotMeasured is a finding this run has no figure for, and why.
func NotMeasured(p Published, why string) report.Finding {
	return report.Finding{Published: p.Finding, Measured: "-", Model: "-", Verdict: report.NotMeasured, Why: why}
}

// EngineGroup is the combinations of a run on one engine (and one table
// size, when the run measured several), labelled for people.
type EngineGroup struct {
	Label     string // "PostgreSQL", or "MariaDB, 100000 rows"
	Engine    string // the engine's name ("mariadb")
	Summaries []*Summary
}

// EngineGroups puts a run's combinations in groups by the engine they ran
// on and, when the run measured several table sizes (the workload's rows),
// by size, in the order the run first measured each: the parts of a study
// that sets each engine's figures beside the seed's.
func (rd *RunData) EngineGroups() []EngineGroup {
	sizes := map[int64]bool{}
	for _, s := range rd.Summaries {
		sizes[s.Params.Int("rows")] = true
	}
	var out []EngineGroup
	at := map[string]int{}
	for _, s := range rd.Summaries {
		eng := s.Results[0].Instance().Engine
		label := EngineTitle(eng)
		if len(sizes) > 1 {
			label += fmt.Sprintf(", %d rows", s.Params.Int("rows"))
		}
		i, ok := at[label]
		if !ok {
			i = len(out)
			at[label] = i
			out = append(out, EngineGroup{Label: label, Engine: eng})
		}
		out[i].Summaries = append(out[i].Summaries, s)
	}
	return out
}

// JudgeEach judges a finding on each part of a run apart (each engine's
// comparison, say) and merges the answers, each under its part's label
// (MergeFindings).
func JudgeEach[P any](p Published, parts []P, label func(P) string, judge func(P) report.Finding) report.Finding {
	var labels []string
	var each []report.Finding
	for _, part := range parts {
		labels = append(labels, label(part))
		each = append(each, judge(part))
	}
	return MergeFindings(p, labels, each)
}

// Unlike makes a reproduced finding differ when its points did not run as
// the seed's did (unlike says how; "" when they did), and says so first.
func Unlike(f report.Finding, unlike string) report.Finding {
	if unlike != "" && f.Verdict == report.Reproduced {
		f.Verdict = report.Differs
		f.Why = unlike + " " + f.Why
	}
	return f
}
