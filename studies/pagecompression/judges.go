package pagecompression

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/workload/pagecompress"
)

// The judges' tolerances, chosen before any measurement and said in each
// verdict.
const (
	// nearOne: "slightly greater than 1" is at most 1.5x.
	nearOne = 1.5
	// tenFactor: "~10x" is within a factor 2 of the seed's 10.
	tenFactor = 2.0
	// gainFactor: the order's gain (filler over cid) reproduces the seed's
	// ~9 when within a factor 3 of it: "several times better".
	gainFactor = 3.0
	// sameWithin: with every value distinct, the orders' ratios within
	// 15 % of each other.
	sameWithin = 0.15
	// betterBy: pages "compressed better" by at least 5 %.
	betterBy = 0.05
	// fewDistinct: clustered on filler, a page holds at most this many
	// distinct values on average (the seed's: one, or two at a boundary).
	fewDistinct = 2.0
)

// seedPeriod is the seed's period when the study does not give one.
const seedPeriod = 80

// Judges decide the seed's findings by the ids of page-compression.toml,
// on each engine (and page size) of a run apart, merged into one finding
// that is reproduced only when every side reproduces it.
func Judges() map[string]study.Judge {
	each := func(f func(s side, p study.Published) report.Finding) study.Judge {
		return func(rd *study.RunData, p study.Published) report.Finding {
			ss := sides(rd)
			if len(ss) == 0 {
				return study.NotMeasured(p, "No point was measured.")
			}
			return study.JudgeEach(p, ss, func(s side) string { return s.label }, func(s side) report.Finding { return f(s, p) })
		}
	}
	return map[string]study.Judge{
		"cid-order":       each(judgeCIDOrder),
		"filler-order":    each(judgeFillerOrder),
		"order-decides":   each(judgeOrderDecides),
		"distinct-values": each(judgeDistinctValues),
		"all-distinct":    each(judgeAllDistinct),
	}
}

// side is one engine (and page size) of a run: its points by order and
// period.
type side struct {
	label  string
	engine string
	points map[string]*study.Summary // "cid/80"
}

func at(order string, period int64) string { return order + "/" + strconv.FormatInt(period, 10) }

func (s side) get(order string, period int64) *study.Summary { return s.points[at(order, period)] }

// measure is the side's measure of compression: zstd per page on
// PostgreSQL, the engine's own on MariaDB.
func (s side) measure() string {
	if s.engine == "mariadb" {
		return "MariaDB's PAGE_COMPRESSED (allocated blocks)"
	}
	return "zstd, each page on its own"
}

func (s side) describe(sm *study.Summary) string {
	d := fmt.Sprintf("%s (%.1f distinct values on a page of %.0f rows", study.FormatTimes(sm.Mean("ratio")), sm.Mean("distinct_per_page"), sm.Mean("rows_per_page"))
	if s.engine == "mariadb" {
		d += fmt.Sprintf("; zstd on its pages %s", study.FormatTimes(sm.Mean("zstd_ratio")))
	} else {
		d += fmt.Sprintf("; S2 %s, deflate %s", study.FormatTimes(sm.Mean("s2_ratio")), study.FormatTimes(sm.Mean("deflate_ratio")))
	}
	return d + ")"
}

// model says what the models give for a point: the page dictionary, and
// for MariaDB its pages in whole blocks.
func (s side) model(sm *study.Summary) string {
	last := sm.Results[len(sm.Results)-1]
	out := fmt.Sprintf("page dictionary %s", study.FormatTimes(last.Model["dictionary_ratio"]))
	if s.engine == "mariadb" {
		out += fmt.Sprintf("; deflate in whole %s blocks %s", kib(sm.Mean("fs_block_bytes")), study.FormatTimes(sm.Mean("blocks_ratio")))
	} else if v, ok := last.Model["ratio"]; ok {
		out += fmt.Sprintf("; zstd's line in distinct values %s", study.FormatTimes(v))
	}
	return out
}

func kib(b float64) string { return fmt.Sprintf("%.0f KiB", b/1024) }

func sides(rd *study.RunData) []side {
	by := map[string]*side{}
	var order []string
	sizes := map[int64]bool{}
	for _, s := range rd.Summaries {
		sizes[s.Params.Int("rows")] = true
	}
	for _, sm := range rd.Summaries {
		in := sm.Results[0].Instance()
		label := "PostgreSQL"
		if in.Engine == "mariadb" {
			label = "MariaDB"
			if ps := in.Settings["innodb_page_size"]; ps != "" {
				label += ", " + ps + " pages"
			} else {
				label += fmt.Sprintf(", %.0fk pages", sm.Mean("page_bytes")/1024)
			}
		}
		if len(sizes) > 1 {
			label += fmt.Sprintf(", %d rows", sm.Params.Int("rows"))
		}
		s, ok := by[label]
		if !ok {
			s = &side{label: label, engine: in.Engine, points: map[string]*study.Summary{}}
			by[label] = s
			order = append(order, label)
		}
		s.points[at(sm.Params.String("order"), sm.Params.Int("period"))] = sm
	}
	out := make([]side, 0, len(order))
	for _, l := range order {
		out = append(out, *by[l])
	}
	return out
}

func period(p study.Published) int64 {
	if v, ok := p.Figures["period"]; ok {
		return int64(v)
	}
	return seedPeriod
}

func judgeCIDOrder(s side, p study.Published) report.Finding {
	sm := s.get(pagecompress.ByCID, period(p))
	if sm == nil {
		return study.NotMeasured(p, fmt.Sprintf("The table clustered on cid with period %d was not measured.", period(p)))
	}
	got := sm.Mean("ratio")
	f := report.Finding{Published: p.Finding, Measured: s.measure() + ": " + s.describe(sm), Model: s.model(sm)}
	if got <= nearOne {
		f.Verdict = report.Reproduced
		f.Why = fmt.Sprintf("Clustered on cid the pages compressed %s, at most %.1fx: a page of distinct values has little to remove.", study.FormatTimes(got), nearOne)
	} else {
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("Clustered on cid the pages compressed %s, more than %.1fx: %s", study.FormatTimes(got), nearOne, codecWhy(s, sm))
	}
	return f
}

// codecWhy explains a ratio above the page dictionary's.
func codecWhy(s side, sm *study.Summary) string {
	last := sm.Results[len(sm.Results)-1]
	if s.engine == "mariadb" {
		return fmt.Sprintf("zlib, like zstd, finds what repeats inside each value (92 'a's) and in the rows' headers, which a page dictionary of whole values (the seed's, %s here) does not.",
			study.FormatTimes(last.Model["dictionary_ratio"]))
	}
	return fmt.Sprintf("zstd finds what repeats inside each value (92 'a's) and in the rows' headers, which a page dictionary of whole values, the seed's engine's way, does not: on these pages it would give %s.",
		study.FormatTimes(last.Model["dictionary_ratio"]))
}

func judgeFillerOrder(s side, p study.Published) report.Finding {
	sm := s.get(pagecompress.ByFiller, period(p))
	if sm == nil {
		return study.NotMeasured(p, fmt.Sprintf("The table clustered on filler with period %d was not measured.", period(p)))
	}
	got := sm.Mean("ratio")
	f := report.Finding{Published: p.Finding, Measured: s.measure() + ": " + s.describe(sm), Model: s.model(sm)}
	want := p.Value
	if want <= 0 {
		return study.NotMeasured(p, "The study gives no published ratio (value) to compare with.")
	}
	cid := s.get(pagecompress.ByCID, period(p))
	switch {
	case got >= want/tenFactor && got <= want*tenFactor && cid != nil && cid.Mean("ratio") >= got/(1+sameWithin):
		// The seed's ratio comes from duplicates sharing pages; a ratio
		// the other order reaches too is the codec's, not the order's.
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("Clustered on filler the pages compressed %s, within a factor %g of the seed's ~%s, but clustered on cid they compressed %s: here the ratio does not come from the order. %s",
			study.FormatTimes(got), tenFactor, study.FormatTimes(want), study.FormatTimes(cid.Mean("ratio")), codecWhy(s, sm))
	case got >= want/tenFactor && got <= want*tenFactor:
		f.Verdict = report.Reproduced
		f.Why = fmt.Sprintf("Clustered on filler the pages compressed %s, within a factor %g of the seed's ~%s, more than clustered on cid: duplicates share pages.", study.FormatTimes(got), tenFactor, study.FormatTimes(want))
		if cid == nil {
			f.Why = fmt.Sprintf("Clustered on filler the pages compressed %s, within a factor %g of the seed's ~%s; the cid order was not measured, so the run cannot say the order made it.", study.FormatTimes(got), tenFactor, study.FormatTimes(want))
		}
	case got > want*tenFactor:
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("Clustered on filler the pages compressed %s, more than %g times the seed's ~%s: %s", study.FormatTimes(got), tenFactor, study.FormatTimes(want), codecWhy(s, sm))
	default:
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("Clustered on filler the pages compressed %s, less than 1/%g of the seed's ~%s.", study.FormatTimes(got), tenFactor, study.FormatTimes(want))
		if s.engine == "mariadb" {
			f.Why += fmt.Sprintf(" MariaDB stores a compressed page in whole %s blocks of the file system, so a %s page saves at most %s.",
				kib(sm.Mean("fs_block_bytes")), kib(sm.Mean("page_bytes")), study.FormatTimes(sm.Mean("page_bytes")/sm.Mean("fs_block_bytes")))
		}
	}
	return f
}

func judgeOrderDecides(s side, p study.Published) report.Finding {
	cid, filler := s.get(pagecompress.ByCID, period(p)), s.get(pagecompress.ByFiller, period(p))
	if cid == nil || filler == nil {
		return study.NotMeasured(p, fmt.Sprintf("Both orders with period %d are needed.", period(p)))
	}
	got := filler.Mean("ratio") / cid.Mean("ratio")
	want := p.Value
	dcid, dfil := cid.Results[len(cid.Results)-1].Model["dictionary_ratio"], filler.Results[len(filler.Results)-1].Model["dictionary_ratio"]
	f := report.Finding{
		Published: p.Finding,
		Measured:  fmt.Sprintf("%s: %s on filler, %s on cid: %s", s.measure(), study.FormatTimes(filler.Mean("ratio")), study.FormatTimes(cid.Mean("ratio")), study.FormatTimes(got)),
		Model:     fmt.Sprintf("page dictionary: %s and %s: %s", study.FormatTimes(dfil), study.FormatTimes(dcid), study.FormatTimes(dfil/dcid)),
	}
	if s.engine == "mariadb" {
		f.Model += fmt.Sprintf("; deflate in whole blocks: %s and %s", study.FormatTimes(filler.Mean("blocks_ratio")), study.FormatTimes(cid.Mean("blocks_ratio")))
	}
	if want <= 0 {
		return study.NotMeasured(p, "The study gives no published gain (value) to compare with.")
	}
	if got >= want/gainFactor {
		f.Verdict = report.Reproduced
		f.Why = fmt.Sprintf("The same rows compressed %s better clustered on filler, within a factor %g of the seed's ~%s: the order decides.", study.FormatTimes(got), gainFactor, study.FormatTimes(want))
	} else {
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("The same rows compressed only %s better clustered on filler, less than 1/%g of the seed's ~%s: ", study.FormatTimes(got), gainFactor, study.FormatTimes(want))
		if s.engine == "mariadb" && filler.Mean("blocks_ratio") < filler.Mean("deflate_ratio")*0.8 {
			f.Why += fmt.Sprintf("a compressed page takes whole %s blocks of the file system, and deflate's %.1f KiB and %.1f KiB a page both fill the same blocks: %s and %s, whatever the order (deflate alone: %s and %s).",
				kib(filler.Mean("fs_block_bytes")), filler.Mean("page_bytes")/filler.Mean("deflate_ratio")/1024, cid.Mean("page_bytes")/cid.Mean("deflate_ratio")/1024,
				study.FormatTimes(filler.Mean("blocks_ratio")), study.FormatTimes(cid.Mean("blocks_ratio")), study.FormatTimes(filler.Mean("deflate_ratio")), study.FormatTimes(cid.Mean("deflate_ratio")))
		} else {
			f.Why += "a codec that finds repeats inside each value compresses both orders well, so the order matters less than to a page dictionary."
		}
	}
	return f
}

func judgeDistinctValues(s side, p study.Published) report.Finding {
	cid, filler := s.get(pagecompress.ByCID, period(p)), s.get(pagecompress.ByFiller, period(p))
	if cid == nil || filler == nil {
		return study.NotMeasured(p, fmt.Sprintf("Both orders with period %d are needed.", period(p)))
	}
	dc, df, rc := cid.Mean("distinct_per_page"), filler.Mean("distinct_per_page"), cid.Mean("rows_per_page")
	// A page can hold at most its rows' worth of distinct values, and at
	// most the table's.
	most := rc
	if all := cid.Mean("distinct_values"); all > 0 && all < most {
		most = all
	}
	// Every point of the side: the measure against distinct values a page.
	var xs, ys []float64
	for _, sm := range s.points {
		xs = append(xs, sm.Mean("distinct_per_page"))
		ys = append(ys, sm.Mean("ratio"))
	}
	rho := spearman(xs, ys)
	f := report.Finding{
		Published: p.Finding,
		Measured: fmt.Sprintf("clustered on cid %.1f distinct values on a page of %.0f rows, on filler %.1f; %s %s and %s; over %d points the ratio's rank correlation with distinct values a page %.2f",
			dc, rc, df, s.measure(), study.FormatTimes(cid.Mean("ratio")), study.FormatTimes(filler.Mean("ratio")), len(xs), rho),
		Model: fmt.Sprintf("page dictionary: %s and %s", study.FormatTimes(cid.Results[len(cid.Results)-1].Model["dictionary_ratio"]), study.FormatTimes(filler.Results[len(filler.Results)-1].Model["dictionary_ratio"])),
	}
	switch {
	case dc < most/2:
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("Clustered on cid a page held %.1f distinct values, fewer than half the %.0f it could: the data does not repeat as the seed's did.", dc, most)
	case df > fewDistinct:
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("Clustered on filler a page held %.1f distinct values, more than %g: duplicates did not share pages.", df, fewDistinct)
	case filler.Mean("ratio") < cid.Mean("ratio")*(1+betterBy):
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("Clustered on cid a page held %.1f distinct values and on filler %.1f, as in the seed, but the pages with fewer distinct values did not compress at least %.0f %% better (%s against %s).",
			dc, df, 100*betterBy, study.FormatTimes(filler.Mean("ratio")), study.FormatTimes(cid.Mean("ratio")))
	default:
		f.Verdict = report.Reproduced
		f.Why = fmt.Sprintf("Clustered on cid a page holds most of the table's %.0f distinct values; clustered on filler one or two; and the pages with fewer distinct values compressed better.", cid.Mean("distinct_values"))
	}
	return f
}

func judgeAllDistinct(s side, p study.Published) report.Finding {
	cid, filler := s.get(pagecompress.ByCID, 0), s.get(pagecompress.ByFiller, 0)
	if cid == nil || filler == nil {
		return study.NotMeasured(p, "Both orders with every value distinct (period 0) are needed.")
	}
	g := filler.Mean("ratio") / cid.Mean("ratio")
	f := report.Finding{
		Published: p.Finding,
		Measured:  fmt.Sprintf("%s: %s on filler, %s on cid (%.1f and %.1f distinct values a page): %s", s.measure(), study.FormatTimes(filler.Mean("ratio")), study.FormatTimes(cid.Mean("ratio")), filler.Mean("distinct_per_page"), cid.Mean("distinct_per_page"), study.FormatTimes(g)),
		Model:     fmt.Sprintf("page dictionary: %s and %s", study.FormatTimes(filler.Results[len(filler.Results)-1].Model["dictionary_ratio"]), study.FormatTimes(cid.Results[len(cid.Results)-1].Model["dictionary_ratio"])),
	}
	if s.engine == "mariadb" {
		// MariaDB stores a compressed page in whole blocks of the file
		// system, which can round two different results to the same
		// blocks: the codec's own ratios say whether the orders differ.
		g = filler.Mean("deflate_ratio") / cid.Mean("deflate_ratio")
		f.Measured += fmt.Sprintf("; deflate alone, before the %s blocks: %s on filler, %s on cid: %s",
			kib(filler.Mean("fs_block_bytes")), study.FormatTimes(filler.Mean("deflate_ratio")), study.FormatTimes(cid.Mean("deflate_ratio")), study.FormatTimes(g))
	}
	if math.Abs(g-1) <= sameWithin {
		f.Verdict = report.Reproduced
		f.Why = fmt.Sprintf("With every value distinct the two orders compressed within %.0f %% of each other: no order puts duplicates together when there are none.", 100*sameWithin)
	} else {
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("With every value distinct the orders' ratios differ by %.0f %% (more than %.0f %%).", 100*math.Abs(g-1), 100*sameWithin)
	}
	return f
}

// spearman is the rank correlation of two samples (NaN under 3 points).
func spearman(xs, ys []float64) float64 {
	if len(xs) < 3 {
		return math.NaN()
	}
	rank := func(v []float64) []float64 {
		idx := make([]int, len(v))
		for i := range idx {
			idx[i] = i
		}
		slices.SortFunc(idx, func(a, b int) int {
			switch {
			case v[a] < v[b]:
				return -1
			case v[a] > v[b]:
				return 1
			}
			return 0
		})
		r := make([]float64, len(v))
		for i := 0; i < len(idx); {
			j := i
			for j+1 < len(idx) && v[idx[j+1]] == v[idx[i]] {
				j++
			}
			for k := i; k <= j; k++ {
				r[idx[k]] = float64(i+j)/2 + 1
			}
			i = j + 1
		}
		return r
	}
	rx, ry := rank(xs), rank(ys)
	var mx, my float64
	for i := range rx {
		mx += rx[i]
		my += ry[i]
	}
	mx /= float64(len(rx))
	my /= float64(len(ry))
	var sxy, sxx, syy float64
	for i := range rx {
		sxy += (rx[i] - mx) * (ry[i] - my)
		sxx += (rx[i] - mx) * (rx[i] - mx)
		syy += (ry[i] - my) * (ry[i] - my)
	}
	if sxx == 0 || syy == 0 {
		return math.NaN()
	}
	return sxy / math.Sqrt(sxx*syy)
}
