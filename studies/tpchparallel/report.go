package tpchparallel

import (
	"fmt"
	"math"
	"strings"

	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/workload/tpch"
)

// Report adds the charts and the seed's table beside ours. The findings
// come from the judges; every serial fraction shown is the one stored with
// the sweep's last point, never refitted here.
func Report(rd *study.RunData, d *report.Doc) {
	seed, haveSeed := seedOf(rd.Spec)
	for i, sw := range analyze(rd) {
		suffix := ""
		if i > 0 {
			suffix = fmt.Sprintf(" (%s, scale factor %s)", sw.engine, tpch.FormatScale(sw.sf))
		}
		d.Charts = append(d.Charts, totalChart(sw, i, suffix), speedupChart(sw, seed, haveSeed, i, suffix))
		if _, ok := sw.serial(); ok && len(sw.parallel()) > 0 {
			d.Charts = append(d.Charts, perQueryChart(sw, seed, haveSeed, i, suffix), fractionChart(sw, seed, haveSeed, i, suffix))
		}
		d.Sections = append(d.Sections, tableSection(sw, seed, haveSeed, suffix))
	}
}

// caption says what ran, for every chart and table.
func caption(sw *sweep) string {
	kept := 0.0
	if len(sw.levels) > 0 {
		kept = sw.levels[0].mean("streams_kept")
	}
	return fmt.Sprintf("%s at TPC-H scale factor %s; each query's time is the mean of %.0f of its %d streams (the first stream and each query's fastest and slowest dropped, the seed's rule)",
		study.EngineTitle(sw.engine), tpch.FormatScale(sw.sf), kept, sw.streams)
}

func totalChart(sw *sweep, i int, suffix string) report.Chart {
	c := report.Chart{
		ID:     fmt.Sprintf("total-%d", i),
		Title:  "The stream's total time by parallel degree" + suffix,
		XLabel: "degree (max_parallel_workers_per_gather)",
		YLabel: "total of the queries (s)",
		Note:   caption(sw) + ". Dots: each stream's total (the first stream included); line: the kept total; dashed: Amdahl's law with the fitted serial fraction.",
	}
	runs := report.Series{Name: "each stream", Style: report.Points}
	line := report.Series{Name: "kept total", Style: report.Line}
	model := report.Series{Name: "Amdahl", Style: report.Model}
	serial, haveSerial := sw.serial()
	s := sw.fraction("total_s")
	for _, l := range sw.levels {
		x := float64(l.degree)
		for _, r := range l.sum.Results {
			for k, v := range r.Series["total_s"] {
				runs.Points = append(runs.Points, report.XY{X: x, Y: v, Label: fmt.Sprintf("degree %d, stream %d", l.degree, k+1)})
			}
		}
		line.Points = append(line.Points, report.XY{X: x, Y: l.mean("total_s"), Label: levelName(l)})
		if haveSerial && !math.IsNaN(s) {
			model.Points = append(model.Points, report.XY{X: x, Y: tpch.Amdahl(serial.mean("total_s"), s, l.n), Label: fmt.Sprintf("s = %s, n = %g", pct(s), l.n)})
		}
	}
	c.Series = []report.Series{runs, line}
	if len(model.Points) > 0 {
		c.Series = append(c.Series, model)
	}
	return c
}

func speedupChart(sw *sweep, seed seedTable, haveSeed bool, i int, suffix string) report.Chart {
	c := report.Chart{
		ID:     fmt.Sprintf("speedup-%d", i),
		Title:  "Total speedup by processes, beside the seed's" + suffix,
		XLabel: "processes per query (n)",
		YLabel: "speedup against serial",
		Note:   caption(sw) + ". n is the workers and the leader, at most the server's CPUs; the seed's n is its MAXDOP (SQL Server 2005, scale factor 10, 16 cores).",
	}
	ours := report.Series{Name: "here", Style: report.Line}
	for _, l := range sw.levels {
		if sp := sw.speedup(l, "total_s"); !math.IsNaN(sp) {
			ours.Points = append(ours.Points, report.XY{X: l.n, Y: sp, Label: levelName(l)})
		}
	}
	c.Series = append(c.Series, ours)
	if haveSeed && seed.totals[1] > 0 {
		s := report.Series{Name: "seed", Style: report.Line}
		for _, d := range seed.dops {
			if v, ok := seed.totals[d]; ok {
				s.Points = append(s.Points, report.XY{X: float64(d), Y: seed.totals[1] / v, Label: fmt.Sprintf("MAXDOP %d", d)})
			}
		}
		c.Series = append(c.Series, s)
	}
	ideal := report.Series{Name: "linear (speedup = n)", Style: report.Model}
	top := 1.0
	for _, l := range sw.levels {
		top = max(top, l.n)
	}
	if haveSeed && len(seed.dops) > 0 {
		top = max(top, float64(seed.dops[len(seed.dops)-1]))
	}
	ideal.Points = []report.XY{{X: 1, Y: 1}, {X: top, Y: top}}
	c.Series = append(c.Series, ideal)
	return c
}

func queryCategories(qs []int) []string {
	var out []string
	for _, q := range qs {
		out = append(out, fmt.Sprintf("Q%d", q))
	}
	return out
}

func perQueryChart(sw *sweep, seed seedTable, haveSeed bool, i int, suffix string) report.Chart {
	top, _ := sw.top()
	qs := sw.queries()
	c := report.Chart{
		ID:          fmt.Sprintf("per-query-%d", i),
		Title:       fmt.Sprintf("Each query's speedup at degree %d (n = %g)%s", top.degree, top.n, suffix),
		XLabel:      "query",
		YLabel:      "speedup against serial",
		XCategories: queryCategories(qs),
		Note:        caption(sw) + ". Beside each: the speedup the seed's own times predict at the same n (Amdahl's law fitted to its MAXDOP 1, 4, 8 and 16).",
	}
	ours := report.Series{Name: "here", Style: report.Bars}
	pred := report.Series{Name: "seed, at the same n", Style: report.Bars}
	for k, q := range qs {
		ours.Points = append(ours.Points, report.XY{X: float64(k), Y: sw.speedup(top, tpch.MetricName(q)), Label: fmt.Sprintf("Q%d, %g workers planned", q, top.mean(tpch.WorkersName(q)))})
		if s, ok := seed.fit(q); ok && haveSeed {
			pred.Points = append(pred.Points, report.XY{X: float64(k), Y: tpch.SpeedupAt(s, top.n), Label: fmt.Sprintf("Q%d, seed s = %s", q, pct(s))})
		}
	}
	c.Series = []report.Series{ours}
	if len(pred.Points) > 0 {
		c.Series = append(c.Series, pred)
	}
	return c
}

func fractionChart(sw *sweep, seed seedTable, haveSeed bool, i int, suffix string) report.Chart {
	qs := sw.queries()
	c := report.Chart{
		ID:          fmt.Sprintf("fraction-%d", i),
		Title:       "Amdahl serial fraction per query" + suffix,
		XLabel:      "query",
		YLabel:      "serial fraction s (%)",
		XCategories: queryCategories(qs),
		Note:        caption(sw) + ". s is fitted by least squares on 1/speedup against 1/n (time(n) = t1 × (s + (1 − s)/n)); the seed's from its four MAXDOPs.",
	}
	ours := report.Series{Name: "here", Style: report.Bars}
	theirs := report.Series{Name: "seed", Style: report.Bars}
	for k, q := range qs {
		if v := sw.fraction(tpch.MetricName(q)); !math.IsNaN(v) {
			ours.Points = append(ours.Points, report.XY{X: float64(k), Y: 100 * v, Label: fmt.Sprintf("Q%d", q)})
		}
		if s, ok := seed.fit(q); ok && haveSeed {
			theirs.Points = append(theirs.Points, report.XY{X: float64(k), Y: 100 * s, Label: fmt.Sprintf("Q%d", q)})
		}
	}
	c.Series = []report.Series{ours}
	if len(theirs.Points) > 0 {
		c.Series = append(c.Series, theirs)
	}
	return c
}

// tableSection is the seed's table beside ours: per query, the seed's times
// at each MAXDOP and its fitted serial fraction, our times at each degree,
// our speedups and stored serial fraction, and the workers PostgreSQL
// planned.
func tableSection(sw *sweep, seed seedTable, haveSeed bool, suffix string) report.Section {
	cols := []string{"query"}
	if haveSeed {
		for _, d := range seed.dops {
			cols = append(cols, fmt.Sprintf("seed MAXDOP %d (ms)", d))
		}
		cols = append(cols, "seed s")
	}
	for _, l := range sw.levels {
		cols = append(cols, fmt.Sprintf("degree %d (ms)", l.degree))
	}
	_, haveSerial := sw.serial()
	if haveSerial {
		for _, l := range sw.levels[1:] {
			cols = append(cols, fmt.Sprintf("speedup %d", l.degree))
		}
		cols = append(cols, "s")
	}
	var workersAt level
	if top, ok := sw.top(); ok {
		workersAt = top
		cols = append(cols, fmt.Sprintf("workers planned at %d", top.degree))
	}
	t := report.Table{Title: "The seed's table beside ours" + suffix, Columns: cols}
	row := func(label string, metric string, q int, seedTimes map[int]float64, scale float64, format func(float64) string) []string {
		r := []string{label}
		if haveSeed {
			for _, d := range seed.dops {
				v, ok := seedTimes[d]
				if !ok {
					v = math.NaN()
				}
				r = append(r, format(v))
			}
			s, _ := seed.fit(q)
			r = append(r, pct(s))
		}
		for _, l := range sw.levels {
			r = append(r, format(l.mean(metric)*scale))
		}
		if haveSerial {
			for _, l := range sw.levels[1:] {
				r = append(r, study.FormatTimes(sw.speedup(l, metric)))
			}
			r = append(r, pct(sw.fraction(metric)))
		}
		if workersAt.sum != nil {
			if q > 0 {
				r = append(r, fmt.Sprintf("%g", workersAt.mean(tpch.WorkersName(q))))
			} else {
				r = append(r, "")
			}
		}
		return r
	}
	for _, q := range sw.queries() {
		t.Rows = append(t.Rows, row(fmt.Sprintf("Q%d", q), tpch.MetricName(q), q, seed.query[q], 1, ms))
	}
	t.Rows = append(t.Rows, row("total (s)", "total_s", 0, seed.totals, 1, func(v float64) string {
		if math.IsNaN(v) {
			return "-"
		}
		return fmt.Sprintf("%.3g", v)
	}))
	var notes []string
	notes = append(notes, caption(sw)+".")
	if haveSeed {
		notes = append(notes, "The seed: SQL Server 2005 on 16 cores at scale factor 10, all pages cached, the stream run 10 times with the same rule; MAXDOP 1 is serial. s is Amdahl's serial fraction fitted to each row's times.")
	}
	notes = append(notes, "Here, degree is max_parallel_workers_per_gather: degree 0 is serial, degree d lets d workers join the leader (n = d + 1 processes, at most the server's CPUs). Speedups are against degree 0; s is the fit stored with the sweep's last point. Workers planned is the most a plan node of the query asked for (EXPLAIN): 0 means PostgreSQL chose a serial plan.")
	t.Note = strings.Join(notes, " ") + sw.busy()
	return report.Section{Title: "Per-query times" + suffix, Tables: []report.Table{t}}
}
