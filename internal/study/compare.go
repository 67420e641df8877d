package study

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/workload"
)

// Comparison sets two runs of the same study side by side, combination by
// combination: each headline metric's kept value in A and in B, their
// ratio, and whether the difference is larger than the runs' own spread.
type Comparison struct {
	Study string       `json:"study"`
	A     RunSide      `json:"a"`
	B     RunSide      `json:"b"`
	Rows  []CompareRow `json:"rows"`
	// OnlyA and OnlyB are combinations measured in one run only.
	OnlyA []string `json:"only_a,omitempty"`
	OnlyB []string `json:"only_b,omitempty"`
}

// RunSide describes one of the runs compared.
type RunSide struct {
	Dir     string            `json:"dir"`
	Scale   string            `json:"scale"`
	Options string            `json:"options"`
	Servers map[string]string `json:"servers"`
	Targets []string          `json:"targets,omitempty"`
	Dbrig   string            `json:"dbrig"`
	Started time.Time         `json:"started"`
}

// CompareRow is one metric of one combination in both runs.
type CompareRow struct {
	Combo  string  `json:"combo"`
	Metric string  `json:"metric"`
	Unit   string  `json:"unit,omitempty"`
	A      float64 `json:"a"`
	B      float64 `json:"b"`
	ARuns  int     `json:"a_runs"`
	BRuns  int     `json:"b_runs"`
	Ratio  float64 `json:"ratio"` // B / A
	// Beyond is true when the two runs' ranges do not overlap: the
	// difference is larger than either run's own spread.
	Beyond bool `json:"beyond_spread"`
	// Verdict says it in words: "B better", "B worse", "no difference
	// beyond the spread".
	Verdict string `json:"verdict"`

	aText, bText string
	aRuns, bRuns []float64 // every run's value, for the box plots
}

// Compare sets two runs side by side. They must be runs of the same study;
// engines, targets, scales and dbrig versions may differ (that is what is
// compared).
func Compare(a, b *RunData) (*Comparison, error) {
	if a.Spec.Name != b.Spec.Name {
		return nil, fmt.Errorf("%s is a run of %s and %s a run of %s: compare runs of the same study", a.Dir, a.Spec.Name, b.Dir, b.Spec.Name)
	}
	c := &Comparison{Study: a.Spec.Name, A: side(a), B: side(b)}
	bBy := map[string]*Summary{}
	for _, s := range b.Summaries {
		bBy[s.Combo] = s
	}
	aHas := map[string]bool{}
	kind := a.Spec.Kind()
	for _, sa := range a.Summaries {
		aHas[sa.Combo] = true
		sb, ok := bBy[sa.Combo]
		if !ok {
			c.OnlyA = append(c.OnlyA, sa.Combo)
			continue
		}
		for _, metric := range a.HeadlineMetrics(sa) {
			stA, stB := sa.Stats[metric], sb.Stats[metric]
			if stA.Kept == 0 || stB.Kept == 0 {
				continue
			}
			row := CompareRow{Combo: sa.Combo, Metric: metric, A: stA.Mean, B: stB.Mean, ARuns: len(stA.Runs), BRuns: len(stB.Runs),
				Ratio: stB.Mean / stA.Mean, Beyond: Separated(stA, stB),
				aText: a.FormatMetric(metric, stA.Mean), bText: a.FormatMetric(metric, stB.Mean), aRuns: stA.Runs, bRuns: stB.Runs}
			spec, declared := kind.Metric(metric)
			if declared {
				row.Unit = string(spec.Unit)
			}
			single := len(stA.Runs) < 2 || len(stB.Runs) < 2
			if single {
				row.Beyond = false // one run has no spread to judge a difference against
			}
			switch {
			case single && stA.Mean == stB.Mean:
				row.Verdict = "the same (a single run: no spread to judge against)"
			case single && (!declared || spec.Better == workload.Neither):
				row.Verdict = "different (a single run: no spread to judge against)"
			case single && (spec.Better == workload.Higher) == (stB.Mean > stA.Mean):
				row.Verdict = "B better by a single run: no spread to judge against"
			case single:
				row.Verdict = "B worse by a single run: no spread to judge against"
			case !row.Beyond:
				row.Verdict = "no difference beyond the runs' spread"
			case !declared || spec.Better == workload.Neither:
				row.Verdict = "different"
			case (spec.Better == workload.Higher) == (stB.Mean > stA.Mean):
				row.Verdict = "B better"
			default:
				row.Verdict = "B worse"
			}
			c.Rows = append(c.Rows, row)
		}
	}
	for _, sb := range b.Summaries {
		if !aHas[sb.Combo] {
			c.OnlyB = append(c.OnlyB, sb.Combo)
		}
	}
	return c, nil
}

func side(rd *RunData) RunSide {
	s := RunSide{Dir: rd.Dir, Scale: rd.Info.Scale, Options: rd.Info.Options.String(), Servers: rd.Environment.Servers,
		Dbrig: strings.TrimSpace(rd.Environment.DbrigVersion + " " + rd.Environment.DbrigCommit), Started: rd.Info.Started}
	for _, t := range rd.Environment.Targets {
		s.Targets = append(s.Targets, fmt.Sprintf("%s: %s %s", t.Name, t.Engine, t.Version))
	}
	return s
}

func (s RunSide) describe() string {
	var servers []string
	for _, k := range slices.Sorted(maps.Keys(s.Servers)) {
		servers = append(servers, k+" "+s.Servers[k])
	}
	parts := []string{s.Dir, "scale " + orNone(s.Scale), s.Options}
	if len(servers) > 0 {
		parts = append(parts, strings.Join(servers, ", "))
	}
	if len(s.Targets) > 0 {
		parts = append(parts, "targets "+strings.Join(s.Targets, ", "))
	}
	return strings.Join(append(parts, "dbrig "+s.Dbrig), "; ")
}

// Doc renders the comparison as a report: a table per metric and a chart
// of the ratios.
func (c *Comparison) Doc() *report.Doc {
	d := &report.Doc{
		Title:     "Comparison of two runs of " + c.Study,
		Question:  "A: " + c.A.describe() + "\nB: " + c.B.describe(),
		Generated: time.Now().UTC(),
	}
	var metrics []string
	for _, r := range c.Rows {
		if !slices.Contains(metrics, r.Metric) {
			metrics = append(metrics, r.Metric)
		}
	}
	for _, m := range metrics {
		t := report.Table{Title: m, Columns: []string{"combination", "A", "B", "B / A", "difference"}}
		chart := report.Chart{ID: "ratio-" + m, Title: m + ": B / A by combination", YLabel: "B / A", XLabel: "combination",
			Note: "1 is no change; a bar whose runs overlap in A and B is within the runs' own spread."}
		beyond := report.Series{Name: "beyond the spread", Style: report.Bars, Unit: "ratio"}
		within := report.Series{Name: "within the spread", Style: report.Bars, Unit: "ratio"}
		var rows []CompareRow
		for _, r := range c.Rows {
			if r.Metric == m {
				rows = append(rows, r)
			}
		}
		labels, shared := distinctParts(rows)
		if shared != "" {
			chart.Subtitle = "every combination has " + shared
		}
		for i, r := range rows {
			t.Rows = append(t.Rows, []string{r.Combo, fmt.Sprintf("%s (%d runs)", r.aText, r.ARuns), fmt.Sprintf("%s (%d runs)", r.bText, r.BRuns),
				fmt.Sprintf("%.3f", r.Ratio), r.Verdict})
			x := float64(len(chart.XCategories))
			chart.XCategories = append(chart.XCategories, labels[i])
			if r.Beyond {
				beyond.Points = append(beyond.Points, report.XY{X: x, Y: r.Ratio, Label: r.Combo})
			} else {
				within.Points = append(within.Points, report.XY{X: x, Y: r.Ratio, Label: r.Combo})
			}
		}
		chart.Series = []report.Series{beyond, within}
		d.Charts = append(d.Charts, chart, runsChart(m, rows, labels, shared))
		d.Sections = append(d.Sections, report.Section{Title: m, Tables: []report.Table{t}})
	}
	if len(c.OnlyA)+len(c.OnlyB) > 0 {
		sec := report.Section{Title: "Measured in one run only"}
		t := report.Table{Columns: []string{"combination", "run"}}
		for _, k := range c.OnlyA {
			t.Rows = append(t.Rows, []string{k, "A only"})
		}
		for _, k := range c.OnlyB {
			t.Rows = append(t.Rows, []string{k, "B only"})
		}
		sec.Tables = append(sec.Tables, t)
		d.Sections = append(d.Sections, sec)
	}
	return d
}

// runsChart draws each combination's runs in A and in B as box plots side
// by side, so a difference reads against both runs' spread.
func runsChart(metric string, rows []CompareRow, labels []string, shared string) report.Chart {
	unit := ""
	if len(rows) > 0 {
		unit = rows[0].Unit
	}
	yLabel := metric
	if unit != "" {
		yLabel += " (" + unit + ")"
	}
	c := report.Chart{ID: "runs-" + metric, Title: metric + ": the runs of A and B by combination", XLabel: "combination", YLabel: yLabel, XCategories: labels,
		Note: "Each box spans the runs' middle half with a line at their median; the whiskers reach the least and the greatest run."}
	if shared != "" {
		c.Subtitle = "every combination has " + shared
	}
	a := report.Series{Name: "A", Style: report.Box, Unit: unit, Metric: metric}
	b := report.Series{Name: "B", Style: report.Box, Unit: unit, Metric: metric}
	for i, r := range rows {
		for _, v := range r.aRuns {
			a.Points = append(a.Points, report.XY{X: float64(i), Y: v})
		}
		for _, v := range r.bRuns {
			b.Points = append(b.Points, report.XY{X: float64(i), Y: v})
		}
	}
	c.Series = []report.Series{a, b}
	return c
}

// distinctParts names each row's combination by the values that differ
// between the rows, and says the ones they share: a chart's labels then
// hold what tells its bars apart ("engine=postgres path=scan", not the
// cache sizes every combination has).
func distinctParts(rows []CompareRow) (labels []string, shared string) {
	count := map[string]int{}
	for _, r := range rows {
		for _, part := range strings.Fields(r.Combo) {
			count[part]++
		}
	}
	var common []string
	for _, r := range rows {
		var own []string
		for _, part := range strings.Fields(r.Combo) {
			if count[part] == len(rows) && len(rows) > 1 {
				if !slices.Contains(common, part) {
					common = append(common, part)
				}
				continue
			}
			own = append(own, part)
		}
		labels = append(labels, strings.Join(own, " "))
	}
	return labels, strings.Join(common, " ")
}

// Summary counts the rows by verdict, for a line on the terminal.
func (c *Comparison) Summary() string {
	n := map[string]int{}
	for _, r := range c.Rows {
		n[r.Verdict]++
	}
	var parts []string
	for _, v := range slices.Sorted(maps.Keys(n)) {
		parts = append(parts, fmt.Sprintf("%d %s", n[v], v))
	}
	if len(parts) == 0 {
		return "no combination measured in both runs"
	}
	return strings.Join(parts, ", ")
}

// Text writes the comparison as a plain table for the terminal.
func (c *Comparison) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "A: %s\nB: %s\n\n", c.A.describe(), c.B.describe())
	width := 0
	for _, r := range c.Rows {
		width = max(width, len(r.Combo))
	}
	for _, r := range c.Rows {
		ratio := "-"
		if !math.IsNaN(r.Ratio) && !math.IsInf(r.Ratio, 0) {
			ratio = fmt.Sprintf("%.3f", r.Ratio)
		}
		fmt.Fprintf(&b, "%-*s  %-14s  A %-12s  B %-12s  B/A %-7s  %s\n", width, r.Combo, r.Metric, r.aText, r.bText, ratio, r.Verdict)
	}
	for _, k := range c.OnlyA {
		fmt.Fprintf(&b, "%-*s  measured in A only\n", width, k)
	}
	for _, k := range c.OnlyB {
		fmt.Fprintf(&b, "%-*s  measured in B only\n", width, k)
	}
	fmt.Fprintf(&b, "\n%s\n", c.Summary())
	return b.String()
}
