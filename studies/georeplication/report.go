package georeplication

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/workload/georep"
)

// Report adds the reproduction of Table 2 and the charts.
func Report(rd *study.RunData, d *report.Doc) {
	a := newAnalysis(rd)
	d.Sections = append(d.Sections, a.table2Section(), a.beyondSection(), a.scenarioSection())
	d.Charts = append(d.Charts, a.timesChart())
	for _, c := range a.timeSeriesCharts() {
		d.Charts = append(d.Charts, c)
	}
}

// table2Section sets the seed's Table 2 beside dbrig's figures.
func (a *analysis) table2Section() report.Section {
	sec := report.Section{
		Title: "Table 2, reproduced",
		Text: "The seed's minutes (A: SQL Server 2005 on Windows Server 2003, 64 KB receive window; B: SQL Server 2008 on Windows Server 2008, receive window autotuning) " +
			"beside dbrig's seconds over the same 77 ms link with the 2003 stack (A: a 64 KiB window and an 8 KB send buffer, the legacy-stack profile; a 64 KiB window alone where the run has no such point) and a 16 MiB window (B), at dbrig's row counts; gain = (A - B) / B × 100 as the seed computes it. " +
			"'At the seed's size' scales dbrig's measured rate to the seed's volume.",
	}
	t := report.Table{Columns: []string{"scenario", "seed A (min)", "seed B (min)", "seed gain", "rows", "dbrig A", "dbrig B", "dbrig gain", "model A", "model B", "at the seed's size A / B (min)"}}
	wan := "tukwila-blueridge"
	for _, row := range table2 {
		p, _ := a.rd.Spec.PublishedByID(row.id)
		seedA, seedB := publishedMinutes(p)
		rows := a.largest(row.scenario, row.payload, wan)
		sa, _ := a.seedA(row.scenario, row.payload, rows, wan)
		sb := a.get(row.scenario, row.payload, rows, wan, autotuned)
		cells := []string{row.label, seedA, seedB, fmtGain(p.Value), "-", "-", "-", "-", "-", "-", "-"}
		if sa != nil && sb != nil {
			ta, tb := sa.Mean("seconds"), sb.Mean("seconds")
			scale := func(s *study.Summary) float64 { return row.seedBytes / (s.Mean("mb_per_s") * 1e6) / 60 }
			cells = []string{row.label, seedA, seedB, fmtGain(p.Value), fmt.Sprint(rows), fmtSec(ta), fmtSec(tb), fmtGain(study.Gain(ta, tb)),
				fmtSec(model(sa, "seconds")), fmtSec(model(sb, "seconds")), fmt.Sprintf("%.1f / %.1f", scale(sa), scale(sb))}
		}
		t.Rows = append(t.Rows, cells)
	}
	sec.Tables = []report.Table{t}
	return sec
}

// publishedMinutes returns the seed's A and B minutes of a finding.
func publishedMinutes(p study.Published) (string, string) {
	f := func(k string) string {
		if v, ok := p.Figures[k]; ok {
			return fmt.Sprintf("%g", v)
		}
		return "-"
	}
	return f("a_minutes"), f("b_minutes")
}

// beyondSection: the pipelined writer and native logical replication.
func (a *analysis) beyondSection() report.Section {
	sec := report.Section{
		Title: "Beyond the seed: a pipelined push, and PostgreSQL's own replication",
		Text:  "The seed stops at 'pull beats push'. A writer with several buffers in flight (sized from the measured bandwidth-delay product) should close the gap; PostgreSQL's native logical replication is pull by design.",
	}
	t := report.Table{Columns: []string{"link", "window", "rows", "push", "pull", "push, pipelined", "native", "pipelined / pull"}}
	for _, wan := range a.wans {
		for _, window := range []string{legacy, autotuned} {
			rows := a.largest("push-pipelined", "char-1k", wan)
			cells := []string{wan, window, fmt.Sprint(rows)}
			var pipe, pull float64 = math.NaN(), math.NaN()
			for _, sc := range []string{"push", "pull", "push-pipelined", "native"} {
				s := a.get(sc, "char-1k", rows, wan, window)
				v := math.NaN()
				if s != nil {
					v = s.Mean("seconds")
				}
				cells = append(cells, fmtSec(v))
				switch sc {
				case "pull":
					pull = v
				case "push-pipelined":
					pipe = v
				}
			}
			ratio := "-"
			if !math.IsNaN(pipe) && !math.IsNaN(pull) {
				ratio = fmt.Sprintf("%.2fx", pipe/pull)
			}
			t.Rows = append(t.Rows, append(cells, ratio))
		}
	}
	sec.Tables = []report.Table{t}
	return sec
}

// scenarioSection lists every scenario with its model.
func (a *analysis) scenarioSection() report.Section {
	sec := report.Section{Title: "Every scenario against its model", Text: "Means of the runs. V is the bytes of the rows that crossed the link (see the model formulas)."}
	t := report.Table{Columns: []string{"scenario", "payload", "rows", "link", "seconds", "model", "error", "rows/s", "MB/s", "V (MB)", "model formula"}}
	summaries := slices.Clone(a.rd.Summaries)
	sort.SliceStable(summaries, func(i, j int) bool {
		return slices.Index(georep.Scenarios, summaries[i].Params.String("scenario")) < slices.Index(georep.Scenarios, summaries[j].Params.String("scenario"))
	})
	for _, s := range summaries {
		r := s.Results[len(s.Results)-1]
		pred := georep.Model(r, nil)
		got, m := s.Mean("seconds"), pred.Metrics["seconds"]
		scenario := s.Params.String("scenario")
		if !defaultBuffer(s) {
			scenario += ", " + fmtBytes(s.Params.Int("buffer_size")) + " buffers"
		}
		t.Rows = append(t.Rows, []string{scenario, s.Params.String("payload"), fmt.Sprint(s.Params.Int("rows")), study.LinkOf(r).Profile,
			fmtSec(got), fmtSec(m), fmt.Sprintf("%+.0f %%", study.PercentError(got, m)),
			fmt.Sprintf("%.0f", s.Mean("rows_per_s")), fmt.Sprintf("%.2f", s.Mean("mb_per_s")), fmt.Sprintf("%.2f", georep.Volume(r)/1e6), pred.Formula})
	}
	sec.Tables = []report.Table{t}
	return sec
}

// timesChart shows the time to catch up by scenario for each link.
func (a *analysis) timesChart() report.Chart {
	c := report.Chart{
		ID: "scenarios", Title: "Time until the subscriber has caught up",
		Subtitle: "1 KB character rows, the largest increment measured on each link",
		XLabel:   "scenario", YLabel: "seconds (log)", YLog: true,
		Note: "Bars are the mean of the runs; the dashed ticks are the models.",
	}
	scen := []string{"push", "pull", "push-pipelined", "native", "fdw-batch"}
	c.XCategories = scen
	for _, wan := range a.wans {
		for _, window := range []string{legacy, autotuned} {
			bars := report.Series{Name: wan + " " + window, Style: report.Bars}
			models := report.Series{Name: wan + " " + window + ", model", Style: report.Model}
			for i, sc := range scen {
				rows := a.largest(sc, "char-1k", wan)
				if s := a.get(sc, "char-1k", rows, wan, window); s != nil {
					label := fmt.Sprintf("%d rows", rows)
					bars.Points = append(bars.Points, report.XY{X: float64(i), Y: s.Mean("seconds"), Label: label})
					if m := model(s, "seconds"); !math.IsNaN(m) {
						models.Points = append(models.Points, report.XY{X: float64(i), Y: m, Label: label})
					}
				}
			}
			if len(bars.Points) > 0 {
				c.Series = append(c.Series, bars, models)
			}
		}
	}
	return c
}

// timeSeriesCharts reproduce the seed's Figures 6 and 7: the link's
// throughput over time under push (bursty) and pull (smooth).
func (a *analysis) timeSeriesCharts() []report.Chart {
	var out []report.Chart
	wan := "tukwila-blueridge"
	for _, fig := range []struct{ scenario, id, title string }{
		{"push", "figure-6", "Figure 6: link throughput under push (stop-and-wait writer)"},
		{"pull", "figure-7", "Figure 7: link throughput under pull (one streaming result set)"},
	} {
		rows := a.largest(fig.scenario, "char-1k", wan)
		c := report.Chart{ID: fig.id, Title: fig.title, XLabel: "seconds since the point started", YLabel: "Mbit/s on the link",
			Subtitle: fmt.Sprintf("%d rows of 1 KB over %s (77 ms), first run", rows, wan),
			Note: "Bytes delivered per interval in both directions. Push sends a buffer, then waits a round trip for the answer; pull keeps the link busy. " +
				"Idle is the share of the transfer's intervals (the middle 95 % of its bytes) carrying under a tenth of their mean; CV the bytes per interval's coefficient of variation."}
		for _, window := range []string{legacy, autotuned} {
			s := a.get(fig.scenario, "char-1k", rows, wan, window)
			if s == nil {
				continue
			}
			l := study.LinkOf(s.Results[0])
			if l.SeriesSeconds <= 0 {
				continue
			}
			name := window
			if sh, ok := shapeOf(l); ok {
				name = fmt.Sprintf("%s (%.0f %% idle, CV %.1f)", window, 100*sh.idleShare, sh.cv)
			}
			series := report.Series{Name: name, Style: report.Area}
			for i := range max(len(l.ForwardSeries), len(l.ReverseSeries)) {
				var b int64
				if i < len(l.ForwardSeries) {
					b += l.ForwardSeries[i]
				}
				if i < len(l.ReverseSeries) {
					b += l.ReverseSeries[i]
				}
				series.Points = append(series.Points, report.XY{X: float64(i) * l.SeriesSeconds, Y: float64(b) * 8 / l.SeriesSeconds / 1e6})
			}
			c.Series = append(c.Series, series)
		}
		if len(c.Series) > 0 {
			out = append(out, c)
		}
	}
	return out
}
