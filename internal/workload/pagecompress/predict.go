package pagecompress

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/gonum/stat"

	"github.com/dbrig/dbrig/internal/units"
	"github.com/dbrig/dbrig/internal/workload"
)

// Predict is the model before the point runs. The data's definition (its
// rows, period and order) gives each page's distinct values D once the
// page's rows R are known; R, a row's bytes w and a value's v are the
// layout an earlier point of the same table and server measured (both
// orders hold the same rows). Then:
//
//   - the page dictionary's ratio is R × w / (R × (w − v + 1) + D × v);
//   - PostgreSQL's ratio (zstd's) is the page over a + b × D, the line
//     fitted on the points of the same table measured before (two values
//     of D at least; with one, its bytes a page as they are);
//   - MariaDB's ratio (its own) is the page over deflate's bytes a page
//     plus a 40-byte header in whole file system blocks: deflate's bytes
//     from the ratio an earlier point's pages of the same rows gave (any
//     engine: deflate finds the same repeats in a row whatever the page),
//     the block from an earlier point of MariaDB.
func Predict(r workload.Result, before []workload.Result) workload.Prediction {
	var pred workload.Prediction
	var d float64
	l, ok := earlierLayout(r, before)
	if ok {
		d = DistinctPerPage(r.Params.Int("rows"), r.Params.Int("period"), r.Params.String("order"), l.rowsPerPage)
		pred = predictDistinct(l, d)
	}
	ratio, formula, reason := predictRatio(r, before, l, d)
	if ratio > 0 {
		if pred.Metrics == nil {
			pred.Metrics = map[string]float64{}
		}
		pred.Metrics["ratio"] = ratio
		pred.Formula = joinFormula(pred.Formula, formula)
	}
	pred.Reason = reason
	return pred
}

// layout is what a page of the table holds, as a point measured it.
type layout struct {
	rowsPerPage, rowBytes, valueBytes, pageBytes float64
}

// earlierLayout is the layout the latest earlier point of r's table and
// server measured (another order or period: the same rows a page).
func earlierLayout(r workload.Result, before []workload.Result) (layout, bool) {
	key := sweepKey(r)
	for _, o := range slices.Backward(before) {
		m := o.Metrics
		if o.Measured() && o.Combo != r.Combo && sweepKey(o) == key && m["rows_per_page"] > 0 {
			return layout{rowsPerPage: m["rows_per_page"], rowBytes: m["row_bytes"], valueBytes: m["value_bytes"], pageBytes: m["page_bytes"]}, true
		}
	}
	return layout{}, false
}

// predictDistinct is D from the data's definition on pages of the
// layout's rows, and the page dictionary's ratio.
func predictDistinct(l layout, d float64) workload.Prediction {
	dict := DictionaryRatio(l.rowsPerPage, d, l.rowBytes, l.valueBytes)
	return workload.Prediction{
		Metrics: map[string]float64{"distinct_per_page": d, "dictionary_ratio": dict},
		Formula: fmt.Sprintf("D = %.1f from the data's order and period on pages of %.1f rows; page dictionary: ", d, l.rowsPerPage) +
			dictionaryTerms(l.rowsPerPage, d, l.rowBytes, l.valueBytes, dict),
	}
}

func joinFormula(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// predictRatio is the study's measure predicted: MariaDB's own ratio in
// blocks, else zstd's by the line in D.
func predictRatio(r workload.Result, before []workload.Result, l layout, d float64) (ratio float64, formula, reason string) {
	if r.Instance().Engine == "mariadb" {
		return predictBlocks(r, before)
	}
	if l.rowsPerPage == 0 {
		return 0, "", "no prediction: first point of its table and server (zstd's bytes a page are a line in D fitted on the points measured before)"
	}
	if a, b, n, ok := fitLine(r, before); ok {
		ratio = l.pageBytes / (a + b*d)
		return ratio, fmt.Sprintf("zstd bytes per page = %.0f + %.2f × D over %d point(s) before: %.2fx", a, b, n, ratio),
			"zstd's bytes a page as a line in D through the points before: what zstd finds inside the values and the rows' headers is taken to be the same on every page"
	}
	_, ys := zstdPoints(r, before)
	if len(ys) == 0 {
		return 0, "", "no prediction: no point of its table and server before measured zstd's bytes a page"
	}
	bytes := stat.Mean(ys, nil)
	ratio = l.pageBytes / bytes
	return ratio, fmt.Sprintf("zstd bytes per page = %.0f, as %d point(s) of one D before: %.2fx", bytes, len(ys), ratio),
		"only one value of D measured before: zstd's bytes a page are taken as they were, without what D changes"
}

// predictBlocks is MariaDB's own ratio: the page over deflate's bytes a
// page plus InnoDB's 40-byte header, in whole file system blocks.
func predictBlocks(r workload.Result, before []workload.Result) (ratio float64, formula, reason string) {
	page := 16384.0 // InnoDB's default page
	if s := r.Instance().Settings["innodb_page_size"]; s != "" {
		if z, err := units.ParseSize(s); err == nil && z > 0 {
			page = float64(z)
		}
	}
	deflate, from := earlierDeflate(r, before)
	if deflate == 0 {
		return 0, "", "no prediction: no point before compressed the pages with deflate"
	}
	block, reason := 4096.0, "the file system's block taken as 4 KiB (no MariaDB point before measured it); a page's deflate size taken from the ratio of "+from
	for _, o := range slices.Backward(before) {
		if o.Measured() && o.Metrics["fs_block_bytes"] > 0 {
			block, reason = o.Metrics["fs_block_bytes"], "a page's deflate size taken from the ratio of "+from+": near a block's edge, a page's own size decides its blocks"
			break
		}
	}
	perPage := page/deflate + 40
	blocks := math.Ceil(perPage / block)
	ratio = page / (blocks * block)
	return ratio, fmt.Sprintf("the engine: a %.0f-byte page at deflate's %.2fx (%s) + 40 bytes = %.0f bytes, in %.0f block(s) of %.0f: %.2fx",
		page, deflate, from, perPage, blocks, block, ratio), reason
}

// earlierDeflate is deflate's ratio over an earlier point's pages: of the
// same rows (order and period) on another server first, else of the same
// server, else any; and which it was.
func earlierDeflate(r workload.Result, before []workload.Result) (float64, string) {
	sameRows := func(o workload.Result) bool {
		return o.Params.Int("period") == r.Params.Int("period") && o.Params.String("order") == r.Params.String("order") && o.Params.Int("rows") == r.Params.Int("rows")
	}
	key := sweepKey(r)
	for _, pick := range []struct {
		match func(workload.Result) bool
		what  string
	}{
		{sameRows, "the same rows on another server"},
		{func(o workload.Result) bool { return sweepKey(o) == key }, "another order or period on this server"},
		{func(workload.Result) bool { return true }, "another table"},
	} {
		for _, o := range slices.Backward(before) {
			if o.Measured() && o.Combo != r.Combo && o.Metrics["deflate_ratio"] > 0 && pick.match(o) {
				return o.Metrics["deflate_ratio"], pick.what
			}
		}
	}
	return 0, ""
}

// DistinctPerPage is the distinct fillers a page holds on average when the
// table's rows, with fillers of the given period, lie in order (by cid or
// by filler) rowsPerPage to a page. Clustered on cid a page holds the
// fillers of consecutive rows; clustered on filler it holds runs of equal
// fillers, and a page spans one run or the edge of two. The pattern repeats
// with the period, so the rows past the first 200,000 change nothing.
func DistinctPerPage(rows, period int64, order string, rowsPerPage float64) float64 {
	if rows <= 0 || rowsPerPage <= 0 {
		return 0
	}
	if period == 0 {
		return math.Min(rowsPerPage, float64(rows))
	}
	ids := fillerIDs(period)
	if order == ByCID {
		return distinctByCID(min(rows, 200_000), ids, rowsPerPage)
	}
	return distinctByFiller(rows, ids, rowsPerPage)
}

// fillerIDs numbers each residue's filler by its distinct part, the first
// 7 characters of i % period followed by zeros (1 and 10 give the same),
// in the fillers' sorted order.
func fillerIDs(period int64) []int {
	keys := make([]string, period)
	for k := range period {
		keys[k] = (strconv.FormatInt(k, 10) + "0000000")[:7]
	}
	sorted := slices.Compact(slices.Sorted(slices.Values(keys)))
	ids := make([]int, period)
	for k, key := range keys {
		ids[k], _ = slices.BinarySearch(sorted, key)
	}
	return ids
}

// distinctByCID counts each page's distinct fillers over rows 1 to n laid
// in cid order.
func distinctByCID(n int64, ids []int, rowsPerPage float64) float64 {
	period := int64(len(ids))
	seen := make([]int64, slices.Max(ids)+1)
	var total, pages int64
	for page := int64(0); ; page++ {
		lo, hi := int64(float64(page)*rowsPerPage)+1, min(int64(float64(page+1)*rowsPerPage), n)
		if lo > n {
			break
		}
		pages++
		for i := lo; i <= hi; i++ {
			if id := ids[i%period]; seen[id] != page+1 {
				seen[id] = page + 1
				total++
			}
		}
	}
	return float64(total) / float64(pages)
}

// distinctByFiller counts each page's distinct fillers over the rows laid
// in filler order: runs of each filler's rows, in the fillers' order.
func distinctByFiller(rows int64, ids []int, rowsPerPage float64) float64 {
	period := int64(len(ids))
	runs := make([]int64, slices.Max(ids)+1)
	for k := range period {
		n := rows / period
		if k > 0 && k <= rows%period {
			n++
		}
		runs[ids[k]] += n
	}
	var total, pages, start int64
	run, runEnd := 0, runs[0]
	for page := int64(0); start < rows; page++ {
		end := min(int64(float64(page+1)*rowsPerPage), rows)
		for runEnd <= start { // runs that ended before the page
			run++
			runEnd += runs[run]
		}
		d, r, e := int64(1), run, runEnd
		for e < end {
			r++
			e += runs[r]
			if runs[r] > 0 {
				d++
			}
		}
		total += d
		pages++
		start = end
	}
	return float64(total) / float64(pages)
}
