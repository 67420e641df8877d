package pagecompression

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/workload"
	"github.com/dbrig/dbrig/internal/workload/pagecompress"
)

// Report sets the seed's ratios beside every point's, with the models,
// and charts each page's compression against its distinct values.
func Report(rd *study.RunData, d *report.Doc) {
	t := report.Table{
		Title: "The seed beside ours",
		Columns: []string{"", "clustered on", "period", "rows a page", "distinct a page", "measure", "zstd", "S2", "deflate",
			"MariaDB's own", "model: blocks", "model: dictionary"},
		Note: "The measure is zstd over each page on PostgreSQL and MariaDB's PAGE_COMPRESSED table (its allocated blocks against the same table uncompressed) on MariaDB. zstd, S2 and deflate compress each page of the table on its own. Model: blocks is each leaf page's deflate size plus 40 bytes in whole file system blocks (MariaDB); dictionary is a page dictionary of whole values, the seed's engine's way: R × w / (R × (w − v + 1) + D × v).",
	}
	t.Rows = append(t.Rows,
		[]string{"seed (SQL Server 2008 PAGE)", "cid", "80", "~80", "80 (73 unique strings)", "slightly > 1x", "-", "-", "-", "-", "-", "-"},
		[]string{"seed (SQL Server 2008 PAGE)", "filler", "80", "~80", "1", "~10x", "-", "-", "-", "-", "-", "-"})
	chart := report.Chart{ID: "by-distinct", Title: "Each page's zstd ratio by its distinct values", XLabel: "distinct filler values on the page", YLabel: "page / zstd size",
		XLog: true, YLog: true,
		Note: "One dot per number of distinct values a page held, in each point: the mean zstd ratio of those pages. Fewer distinct values, better compression; the line is a page dictionary's ratio on the same pages (the seed's mechanism)."}
	for _, s := range sides(rd) {
		keys := make([]string, 0, len(s.points))
		for k := range s.points {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		dots := report.Series{Name: s.label, Style: report.Points}
		model := report.Series{Name: s.label + ": page dictionary", Style: report.Model}
		for _, k := range keys {
			sm := s.points[k]
			last := sm.Results[len(sm.Results)-1]
			engineRatio, blocks := "-", "-"
			if s.engine == "mariadb" {
				engineRatio, blocks = study.FormatTimes(sm.Mean("engine_ratio")), study.FormatTimes(sm.Mean("blocks_ratio"))
			}
			per := strconv.FormatInt(sm.Params.Int("period"), 10)
			if per == "0" {
				per = "none (all distinct)"
			}
			t.Rows = append(t.Rows, []string{s.label, sm.Params.String("order"), per, fmt.Sprintf("%.1f", sm.Mean("rows_per_page")),
				fmt.Sprintf("%.1f", sm.Mean("distinct_per_page")), study.FormatTimes(sm.Mean("ratio")), study.FormatTimes(sm.Mean("zstd_ratio")), study.FormatTimes(sm.Mean("s2_ratio")),
				study.FormatTimes(sm.Mean("deflate_ratio")), engineRatio, blocks, study.FormatTimes(last.Model["dictionary_ratio"])})
			pages, zb := last.Series["pages_by_distinct"], last.Series["zstd_bytes_by_distinct"]
			for dv := range pages {
				if pages[dv] > 0 && dv < len(zb) && zb[dv] > 0 {
					dots.Points = append(dots.Points, report.XY{X: float64(dv), Y: sm.Mean("page_bytes") / zb[dv],
						Label: fmt.Sprintf("%s, %.0f pages", k, pages[dv])})
				}
			}
		}
		if sm := firstOf(s); sm != nil {
			r, w, v := sm.Mean("rows_per_page"), sm.Mean("row_bytes"), sm.Mean("value_bytes")
			for _, dv := range []float64{1, 2, 5, 10, 20, 50, 100, 200, 500} {
				if dv <= r {
					model.Points = append(model.Points, report.XY{X: dv, Y: pagecompress.DictionaryRatio(r, dv, w, v)})
				}
			}
		}
		chart.Series = append(chart.Series, dots, model)
	}
	d.Charts = append(d.Charts, chart)
	d.Sections = append(d.Sections, report.Section{Title: "Page compression by data order", Tables: []report.Table{t}, Text: strings.TrimSpace(fitText(rd))})
}

func firstOf(s side) *study.Summary {
	for _, k := range []string{at(pagecompress.ByCID, seedPeriod), at(pagecompress.ByFiller, seedPeriod)} {
		if sm, ok := s.points[k]; ok {
			return sm
		}
	}
	for _, sm := range s.points {
		return sm
	}
	return nil
}

// fitText states the line zstd's bytes per page follow, from the last
// point of each sweep.
func fitText(rd *study.RunData) string {
	var parts []string
	for _, s := range sides(rd) {
		var last *workload.Result
		for _, sm := range s.points {
			r := sm.Results[len(sm.Results)-1]
			if last == nil || r.Started.After(last.Started) {
				last = &r
			}
		}
		if last != nil && strings.Contains(last.Formula, "zstd bytes per page") {
			parts = append(parts, s.label+": "+last.Formula[strings.Index(last.Formula, "zstd bytes per page"):]+".")
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "The line in distinct values per page, fitted over every point: " + strings.Join(parts, " ")
}
