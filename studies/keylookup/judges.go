package keylookup

import (
	"fmt"
	"math"
	"strings"

	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/workload/keylookup"
)

// The judges' tolerances, chosen before any measurement and said in each
// verdict.
const (
	// ratioFactor: a ratio (lookup over scan) reproduces the seed's when
	// within this factor of it either way: the finding is "several times
	// more", and engines lay rows out differently.
	ratioFactor = 2.0
	// modelTolerance: measured lookup pages within 10 % of the model's
	// count (the seed's own: 8,130,363 against 8,005,000, 1.6 % off).
	modelTolerance = 0.10
	// followFactor: the time ratio follows the pages ratio when within
	// this factor of it (the seed: 3x the time for 4.05x the pages).
	followFactor = 1.5
)

// Judges decide the seed's findings, by their ids in key-lookup.toml, on
// each engine's comparison apart.
func Judges() map[string]study.Judge {
	each := func(judge func(c comparison, p study.Published) report.Finding) study.Judge {
		return func(rd *study.RunData, p study.Published) report.Finding {
			return study.JudgeEach(p, comparisons(rd), labelOf, func(c comparison) report.Finding {
				if why := c.incomplete(); why != "" {
					return study.NotMeasured(p, why)
				}
				f := study.Unlike(judge(c, p), c.uncached())
				f.Spread = rd.Spread("time_ms", c.scan.Stats["time_ms"], c.lookup.Stats["time_ms"])
				return f
			})
		}
	}
	return map[string]study.Judge{
		"lookup-time":        each(judgeLookupTime),
		"lookup-pages":       each(judgeLookupPages),
		"pages-per-lookup":   each(judgePagesPerLookup),
		"time-follows-pages": each(judgeTimeFollowsPages),
	}
}

// comparison is a scan and a lookup path over one table on one server.
type comparison struct {
	label        string
	engine       string
	scan, lookup *study.Summary
}

func labelOf(c comparison) string { return c.label }

func (c comparison) incomplete() string {
	switch {
	case c.scan == nil && c.lookup == nil:
		return "Neither path was measured."
	case c.scan == nil:
		return "The scan was not measured: the lookups have nothing to be compared with."
	case c.lookup == nil:
		return "The lookup path was not measured."
	}
	return ""
}

// uncached says when a point read pages from outside the cache, which the
// seed's comparison excluded.
func (c comparison) uncached() string {
	var parts []string
	for _, s := range []*study.Summary{c.scan, c.lookup} {
		if v := s.Mean("physical_reads"); v > 0 {
			parts = append(parts, fmt.Sprintf("the %s path read %.0f pages from outside the cache", s.Params.String("path"), v))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "Not every page was cached (" + strings.Join(parts, ", ") + "), as the seed's were: the server's cache is smaller than the table."
}

func (c comparison) timeRatio() float64 { return c.lookup.Mean("time_ms") / c.scan.Mean("time_ms") }

func (c comparison) pagesRatio() float64 { return c.lookup.Mean("pages") / c.scan.Mean("pages") }

// modelPages is the model's count of a path's page visits.
func modelPages(s *study.Summary) float64 {
	return keylookup.PredictPages(s.Params.String("path"), s.Mean("rows"), s.Mean("table_pages"), s.Mean("index_pages"), s.Mean("lookup_depth"))
}

func (c comparison) modelRatio() float64 { return modelPages(c.lookup) / modelPages(c.scan) }

// layout says how the engine stores the table, for the model's column.
func (c comparison) layout() string {
	rpp := c.scan.Mean("rows") / c.scan.Mean("table_pages")
	return fmt.Sprintf("%s a page of %s, %s a lookup", plural(rpp, "row", "rows"), sizeOf(c.scan.Mean("page_bytes")),
		plural(c.scan.Mean("lookup_depth"), "page", "pages"))
}

func plural(v float64, one, many string) string {
	if num(v) == "1" {
		return "1 " + one
	}
	return num(v) + " " + many
}

// comparisons pairs the paths of each engine (and table size, when a run
// has several), in the order the run measured them.
func comparisons(rd *study.RunData) []comparison {
	var out []comparison
	for _, g := range rd.EngineGroups() {
		c := comparison{label: g.Label, engine: g.Engine}
		for _, s := range g.Summaries {
			if s.Params.String("path") == keylookup.Scan {
				c.scan = s
			} else {
				c.lookup = s
			}
		}
		out = append(out, c)
	}
	return out
}

func num(v float64) string {
	if math.Abs(v-math.Round(v)) < 0.05 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

func sizeOf(b float64) string { return fmt.Sprintf("%.0f KiB", b/1024) }

func count(v float64) string {
	s := fmt.Sprintf("%.0f", v)
	var out []byte
	for i := range s {
		if i > 0 && (len(s)-i)%3 == 0 && s[i-1] != '-' {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	return string(out)
}

// seedPages are the seed's logical reads, from the study's figures.
func seedPages(p study.Published) (scan, lookup, rows float64, ok bool) {
	scan, lookup, rows = p.Figures["scan_pages"], p.Figures["lookup_pages"], p.Figures["rows"]
	return scan, lookup, rows, scan > 0 && lookup > 0
}

func judgeLookupTime(c comparison, p study.Published) report.Finding {
	got := c.timeRatio()
	f := report.Finding{
		Published: p.Finding,
		Measured: fmt.Sprintf("lookups %s against the scan's %s: %s as long",
			study.FormatSeconds(c.lookup.Mean("time_ms")/1000), study.FormatSeconds(c.scan.Mean("time_ms")/1000), study.FormatTimes(got)),
		Model: fmt.Sprintf("%s: the pages' ratio (%s), if a page visit costs the same on both paths", study.FormatTimes(c.modelRatio()), c.layout()),
	}
	switch {
	case p.Value <= 0:
		return study.NotMeasured(p, "The study gives no published ratio (value) to compare with.")
	case study.Within(got, p.Value, ratioFactor):
		f.Verdict = report.Reproduced
		f.Why = fmt.Sprintf("The lookups took %s the scan's time, within a factor %g of the seed's %s: looking rows up costs several times a scan even with every page cached.",
			study.FormatTimes(got), ratioFactor, study.FormatTimes(p.Value))
	case got > p.Value:
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("The lookups took %s the scan's time, more than %g times the seed's %s: %s",
			study.FormatTimes(got), ratioFactor, study.FormatTimes(p.Value), pagesWhy(c))
	default:
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("The lookups took %s the scan's time, less than 1/%g of the seed's %s: %s",
			study.FormatTimes(got), ratioFactor, study.FormatTimes(p.Value), pagesWhy(c))
	}
	return f
}

// pagesWhy explains a ratio by the pages each path touched.
func pagesWhy(c comparison) string {
	return fmt.Sprintf("the lookups touched %s the scan's pages (%s: %s pages a row where the scan touches %s).",
		study.FormatTimes(c.pagesRatio()), c.layout(), num(c.lookup.Mean("pages_per_row")), num(c.scan.Mean("pages_per_row")))
}

func judgeLookupPages(c comparison, p study.Published) report.Finding {
	seedScan, seedLookup, _, ok := seedPages(p)
	if !ok {
		return study.NotMeasured(p, "The study gives no published page counts (figures scan_pages and lookup_pages) to compare with.")
	}
	want := seedLookup / seedScan
	got := c.pagesRatio()
	f := report.Finding{
		Published: p.Finding,
		Measured: fmt.Sprintf("%s pages touched by the lookups, %s by the scan: %s",
			count(c.lookup.Mean("pages")), count(c.scan.Mean("pages")), study.FormatTimes(got)),
		Model: fmt.Sprintf("%s (%s)", study.FormatTimes(c.modelRatio()), c.layout()),
	}
	if study.Within(got, want, ratioFactor) {
		f.Verdict = report.Reproduced
		f.Why = fmt.Sprintf("The lookups touched %s the scan's pages, within a factor %g of the seed's %s.", study.FormatTimes(got), ratioFactor, study.FormatTimes(want))
	} else {
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("The lookups touched %s the scan's pages where the seed's touched %s (not within a factor %g): a lookup costs %s here and a page holds %s, so the model gives %s; the seed's SQL Server paid 4 page visits a lookup on pages of one row each.",
			study.FormatTimes(got), study.FormatTimes(want), ratioFactor, plural(c.scan.Mean("lookup_depth"), "page visit", "page visits"),
			plural(c.scan.Mean("rows")/c.scan.Mean("table_pages"), "row", "rows"), study.FormatTimes(c.modelRatio()))
	}
	return f
}

func judgePagesPerLookup(c comparison, p study.Published) report.Finding {
	model := modelPages(c.lookup)
	got := c.lookup.Mean("pages")
	off := (got - model) / model
	f := report.Finding{
		Published: p.Finding,
		Measured: fmt.Sprintf("%s pages for %s rows: %s a row; one lookup by what the index holds touched %.0f",
			count(got), count(c.lookup.Mean("rows")), num(c.lookup.Mean("pages_per_row")), c.lookup.Mean("lookup_depth")),
		Model: fmt.Sprintf("rows × pages per lookup + index pages = %s × %.0f + %s = %s (%+.1f %%)",
			count(c.lookup.Mean("rows")), c.lookup.Mean("lookup_depth"), count(c.lookup.Mean("index_pages")), count(model), 100*off),
	}
	if _, seedLookup, seedRows, ok := seedPages(p); ok && seedRows > 0 {
		f.Model += fmt.Sprintf("; the seed: %s × 4 + %s = %s against its %s",
			count(seedRows), count(p.Figures["index_leaf_pages"]), count(seedRows*4+p.Figures["index_leaf_pages"]), count(seedLookup))
	}
	if math.Abs(off) <= modelTolerance {
		f.Verdict = report.Reproduced
		f.Why = fmt.Sprintf("The lookup path's pages are the rows times what one lookup costs, plus the index, within %.0f %%: the cost is the lookups'. %s",
			100*modelTolerance, depthWhy(c.engine, c.lookup.Mean("lookup_depth")))
	} else {
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("The lookup path touched %+.1f %% more pages than rows × pages per lookup + index pages (tolerance %.0f %%): something besides the lookups read pages.",
			100*off, 100*modelTolerance)
	}
	return f
}

func depthWhy(engineName string, depth float64) string {
	switch engineName {
	case "postgres":
		return "A PostgreSQL index entry holds the row's address, so a lookup reads one heap page; the seed's lookup descended SQL Server's clustered index, 4 pages."
	case "mariadb":
		return fmt.Sprintf("An InnoDB secondary index entry holds the primary key, so a lookup descends the clustered index, %.0f pages, as the seed's SQL Server did (4 pages).", depth)
	}
	return ""
}

func judgeTimeFollowsPages(c comparison, p study.Published) report.Finding {
	t, pg := c.timeRatio(), c.pagesRatio()
	f := report.Finding{
		Published: p.Finding,
		Measured:  fmt.Sprintf("%s the time for %s the pages", study.FormatTimes(t), study.FormatTimes(pg)),
		Model:     fmt.Sprintf("time ratio = pages ratio = %s", study.FormatTimes(pg)),
	}
	// Each run of the lookups against each run of the scan: the ratios
	// two runs of this study could give.
	lo, hi := study.RatioRange(c.lookup.Stats["time_ms"], c.scan.Stats["time_ms"])
	f.Spread = fmt.Sprintf("the runs give time ratios from %s to %s", study.FormatTimes(lo), study.FormatTimes(hi))
	switch f.Verdict = study.Band(lo, hi, pg/followFactor, pg*followFactor); f.Verdict {
	case report.Reproduced:
		f.Why = fmt.Sprintf("The time ratio is within a factor %g of the pages ratio in every run (the seed: 3x for 4.05x): with every page cached, the pages visited set the time.", followFactor)
	case report.WithinNoise:
		f.Why = fmt.Sprintf("The runs' time ratios (%s to %s) fall on both sides of a factor %g of the pages ratio (%s): two runs of this study could say either.", study.FormatTimes(lo), study.FormatTimes(hi), followFactor, study.FormatTimes(pg))
	default:
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("The time ratio is %s of the pages ratio, beyond a factor %g: a page visit did not cost the same on both paths here (%.3g µs a page on the scan, %.3g µs on the lookups).",
			study.FormatTimes(t/pg), followFactor, 1000*c.scan.Mean("time_ms")/c.scan.Mean("pages"), 1000*c.lookup.Mean("time_ms")/c.lookup.Mean("pages"))
	}
	return f
}
