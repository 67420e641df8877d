package keylookup

import (
	"fmt"
	"sort"
	"strings"

	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/study"
)

// Report adds the seed's figures beside each engine's, and a chart of the
// ratios.
func Report(rd *study.RunData, d *report.Doc) {
	cs := comparisons(rd)
	var pub study.Published
	var seedTime float64
	for _, p := range rd.Spec.Published {
		switch p.ID {
		case "lookup-pages":
			pub = p
		case "lookup-time":
			seedTime = p.Value
		}
	}
	seedScan, seedLookup, seedRows, haveSeed := seedPages(pub)
	t := report.Table{
		Title: "The seed beside ours",
		Columns: []string{"", "rows", "rows a page", "pages per lookup", "scan pages", "lookup pages", "pages ratio", "model ratio",
			"scan time", "lookup time", "time ratio", "cached"},
		Note: "Pages are the seed's logical reads: pages visited in the server's cache (PostgreSQL: EXPLAIN (ANALYZE, BUFFERS) shared hits and reads; MariaDB: Innodb_buffer_pool_read_requests), for one execution. Times are the median of each point's timed executions, averaged over the runs. 'cached' says whether every page came from the server's cache.",
	}
	if haveSeed {
		t.Rows = append(t.Rows, []string{"seed (SQL Server 2005)", count(seedRows), "1", "4", count(seedScan), count(seedLookup),
			study.FormatTimes(seedLookup / seedScan), study.FormatTimes((seedRows*4 + pub.Figures["index_leaf_pages"]) / seedScan), "-", "-", "~" + study.FormatTimes(seedTime), "yes"})
	}
	chart := report.Chart{ID: "ratios", Title: "Lookups against the scan", YLabel: "lookup / scan",
		Note: "Bars: the lookup path's time and pages over the scan's; dashed: the model's pages ratio (rows × pages per lookup + index pages, over the table's pages)."}
	var cats []string
	timeS := report.Series{Name: "time ratio", Style: report.Bars}
	pageS := report.Series{Name: "pages ratio", Style: report.Bars}
	modelS := report.Series{Name: "model", Style: report.Model}
	if haveSeed {
		cats = append(cats, "seed")
		timeS.Points = append(timeS.Points, report.XY{X: 0, Y: seedTime, Label: "the seed: almost three times"})
		pageS.Points = append(pageS.Points, report.XY{X: 0, Y: seedLookup / seedScan})
		modelS.Points = append(modelS.Points, report.XY{X: 0, Y: (seedRows*4 + pub.Figures["index_leaf_pages"]) / seedScan})
	}
	for _, c := range cs {
		if c.incomplete() != "" {
			continue
		}
		x := float64(len(cats))
		cats = append(cats, c.label)
		cached := "yes"
		if c.uncached() != "" {
			cached = "no"
		}
		t.Rows = append(t.Rows, []string{c.label, count(c.scan.Mean("rows")), num(c.scan.Mean("rows") / c.scan.Mean("table_pages")),
			num(c.scan.Mean("lookup_depth")), count(c.scan.Mean("pages")), count(c.lookup.Mean("pages")), study.FormatTimes(c.pagesRatio()),
			study.FormatTimes(c.modelRatio()), study.FormatSeconds(c.scan.Mean("time_ms") / 1000), study.FormatSeconds(c.lookup.Mean("time_ms") / 1000),
			study.FormatTimes(c.timeRatio()), cached})
		timeS.Points = append(timeS.Points, report.XY{X: x, Y: c.timeRatio(), Label: c.label})
		pageS.Points = append(pageS.Points, report.XY{X: x, Y: c.pagesRatio(), Label: c.label})
		modelS.Points = append(modelS.Points, report.XY{X: x, Y: c.modelRatio(), Label: c.layout()})
	}
	chart.XCategories = cats
	chart.Series = []report.Series{timeS, pageS, modelS}
	d.Charts = append(d.Charts, chart)
	d.Sections = append(d.Sections, report.Section{Title: "Key lookup against scan, engine by engine", Tables: []report.Table{t}, Text: handlerText(cs)})
}

// handlerText adds MariaDB's handler counters, which say which path ran.
func handlerText(cs []comparison) string {
	var parts []string
	for _, c := range cs {
		if c.engine != "mariadb" || c.incomplete() != "" {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s: the scan read %s rows in order (Handler_read_rnd_next); the lookups read %s index entries (Handler_read_next), one lookup each.",
			c.label, count(c.scan.Mean("handler_read_rnd_next")), count(c.lookup.Mean("handler_read_next"))))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}
