package rbarlatency

import (
	"fmt"
	"math"

	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/workload/rbar"
)

// Report adds the study's charts and per-experiment tables; the findings
// come from Judges.
func Report(rd *study.RunData, d *report.Doc) {
	a := newAnalysis(rd)
	d.Charts = append(d.Charts, a.perRowChart(), a.throughputChart(), a.experimentsChart())
	d.Sections = append(d.Sections, a.experimentTables()...)
}

// linkSeries draws a metric of one experiment and client across the links,
// for each facet: every run as a dot, the kept value as a line, the stored
// model dashed; values are divided by unit.
func (a *analysis) linkSeries(exp, cost, metric, name string, unit float64) []report.Series {
	var out []report.Series
	for _, facet := range a.facets {
		label := name
		if facet != "" && len(a.facets) > 1 {
			label += ", " + facet
		}
		runs := report.Series{Name: label + ", runs", Style: report.Points}
		line := report.Series{Name: label, Style: report.Line}
		model := report.Series{Name: label + ", model", Style: report.Model}
		for i, net := range a.links {
			s, ok := a.sums[key(exp, cost, net, facet)]
			if !ok {
				continue
			}
			x := float64(i)
			for _, v := range s.Stats[metric].Runs {
				runs.Points = append(runs.Points, report.XY{X: x, Y: v / unit, Label: net})
			}
			line.Points = append(line.Points, report.XY{X: x, Y: s.Mean(metric) / unit, Label: net})
			if m := storedModel(s, metric); !math.IsNaN(m) {
				model.Points = append(model.Points, report.XY{X: x, Y: m / unit, Label: net})
			}
		}
		if len(line.Points) > 0 {
			out = append(out, runs, line, model)
		}
	}
	return out
}

func (a *analysis) perRowChart() report.Chart {
	c := report.Chart{
		ID:          "per-row",
		Title:       "Row by row: time per row against the link",
		Subtitle:    "client-row-by-row, one round trip per row",
		XLabel:      "link (ordered by RTT)",
		YLabel:      "time per row (µs, log)",
		YLog:        true,
		XCategories: a.categories(),
		Note:        a.rd.RunsCaption() + "; the dashed line is the model, RTT + the per-row cost fitted on the fastest path.",
	}
	for _, cost := range []string{fast, a.slowCost()} {
		if cost == "" {
			continue
		}
		name := "fast client"
		if cost != fast {
			name = "slow client (+" + cost + "/row)"
		}
		c.Series = append(c.Series, a.linkSeries("client-row-by-row", cost, "us_per_row", name, 1)...)
	}
	return c
}

func (a *analysis) throughputChart() report.Chart {
	c := report.Chart{
		ID:          "throughput",
		Title:       "Streaming: throughput against the link",
		Subtitle:    "one result set streamed to a client that discards the rows",
		XLabel:      "link (ordered by RTT)",
		YLabel:      "throughput (Mbit/s of protocol bytes, log)",
		YLog:        true,
		XCategories: a.categories(),
		Note:        a.rd.RunsCaption() + "; the dashed line is the model, min(link rate, window / RTT, consumer rate) with the consumer rate measured on the fastest path.",
	}
	for _, exp := range []string{"client-stream", "wide-rows", "cursor-messages"} {
		c.Series = append(c.Series, a.linkSeries(exp, fast, "throughput_bps", exp, 1e6)...)
	}
	return c
}

func (a *analysis) experimentsChart() report.Chart {
	c := report.Chart{
		ID:          "experiments",
		Title:       "Every experiment: time per row against the link",
		XLabel:      "link (ordered by RTT)",
		YLabel:      "time per row (µs, log)",
		YLog:        true,
		XCategories: a.categories(),
		Note:        "The kept value of each experiment (fast client). Set-based work on the server is flat; streaming barely moves; row by row follows the RTT.",
	}
	for _, exp := range rbar.Experiments {
		for _, facet := range a.facets {
			name := exp
			if len(a.facets) > 1 {
				name += ", " + facet
			}
			s := report.Series{Name: name, Style: report.Line}
			for i, net := range a.links {
				if sm, ok := a.sums[key(exp, fast, net, facet)]; ok {
					s.Points = append(s.Points, report.XY{X: float64(i), Y: sm.Mean("us_per_row"), Label: net})
				}
			}
			if len(s.Points) > 0 {
				c.Series = append(c.Series, s)
			}
		}
	}
	return c
}

func (a *analysis) experimentTables() []report.Section {
	sec := report.Section{
		Title: "Each experiment by link",
		Text:  "Kept values (fast client). Error = (measured - model) / model, with the model stored when the point ran; the link a model was fitted on shows its own fit.",
	}
	for _, exp := range rbar.Experiments {
		metric := "us_per_row"
		if exp == "client-stream" || exp == "wide-rows" || exp == "cursor-messages" {
			metric = "throughput_bps"
		}
		for _, facet := range a.facets {
			title := exp
			if len(a.facets) > 1 {
				title += ", " + facet
			}
			t := report.Table{Title: title, Columns: []string{"link", "rows", "seconds", metric, "model", "error", "model formula"}}
			for _, net := range a.links {
				s, ok := a.sums[key(exp, fast, net, facet)]
				if !ok {
					continue
				}
				got, model := s.Mean(metric), storedModel(s, metric)
				t.Rows = append(t.Rows, []string{a.linkLabel(net), fmt.Sprintf("%.0f", s.Mean("rows")), study.FormatSeconds(s.Mean("seconds")),
					a.rd.FormatMetric(metric, got), a.rd.FormatMetric(metric, model), study.FormatPercent(study.PercentError(got, model)),
					s.Results[len(s.Results)-1].Formula})
			}
			if len(t.Rows) > 0 {
				sec.Tables = append(sec.Tables, t)
			}
		}
	}
	return []report.Section{sec}
}
