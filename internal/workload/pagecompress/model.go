package pagecompress

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"

	"gonum.org/v1/gonum/stat"

	"github.com/dbrig/dbrig/internal/workload"
)

// The model is distinct values per page. A page compressor sees one page
// at a time, so what it can remove is what repeats within the page. A
// page dictionary (the seed's SQL Server PAGE compression) stores each of
// a page's D distinct values once and leaves each of its R rows its other
// bytes and a one-byte reference:
//
//	rows' bytes after = R × (w − v + 1) + D × v,   ratio = R × w / that
//
// with w the bytes a row takes and v a value's (both measured). Clustered
// on cid, D is about R (the seed: 80 distinct values on a page of ~80
// rows): no gain. Clustered on filler, D is 1 or 2: the values' bytes go.
//
// A byte-level codec (zstd) also finds what repeats inside a value and in
// the rows' headers, so its ratio is not the dictionary's; the model for
// the measured ratio is then a line in D fitted over the study's points
// (each order and period): compressed bytes per page = a + b × D, b being
// what each distinct value on a page costs. On MariaDB the engine's own
// ratio is modelled from the pages themselves: each leaf page's deflate
// size plus its 40-byte header, in whole file system blocks (blocks_ratio,
// computed with the measurement).

// DictionaryRatio is the page dictionary's ratio for rows of w bytes
// holding values of v bytes, R rows and D distinct values a page.
func DictionaryRatio(r, d, w, v float64) float64 {
	return r * w / (r*(w-v+1) + d*v)
}

// sweepKey is what the points of one line share: the table's size and the
// server (its engine and page size).
func sweepKey(r workload.Result) string {
	p := maps.Clone(r.Params)
	delete(p, "order")
	delete(p, "period")
	b, _ := json.Marshal(p)
	in := r.Instance()
	return string(b) + "|" + in.Engine + "|" + in.Target + "|" + in.Settings["innodb_page_size"]
}

// Model predicts a point's ratio: on MariaDB from its pages in whole
// blocks; on PostgreSQL from the line in distinct values per page fitted
// over the points measured so far (two distinct D at least). It stores the
// page dictionary's ratio beside.
func Model(r workload.Result, all []workload.Result) workload.Prediction {
	m := r.Metrics
	if m == nil || m["pages"] == 0 {
		return workload.Prediction{}
	}
	pred := workload.Prediction{Metrics: map[string]float64{}}
	dict := DictionaryRatio(m["rows_per_page"], m["distinct_per_page"], m["row_bytes"], m["value_bytes"])
	pred.Metrics["dictionary_ratio"] = dict
	pred.Formula = "page dictionary: R × w / (R × (w − v + 1) + D × v) = " +
		dictionaryTerms(m["rows_per_page"], m["distinct_per_page"], m["row_bytes"], m["value_bytes"], dict)
	if _, ok := m["engine_ratio"]; ok {
		pred.Metrics["ratio"] = m["blocks_ratio"]
		pred.Formula += fmt.Sprintf("; the engine: each leaf page's deflate size + 40 bytes in whole %.0f-byte blocks = %.2fx", m["fs_block_bytes"], m["blocks_ratio"])
		return pred
	}
	a, b, n, ok := fitLine(r, all)
	if ok {
		pred.Metrics["ratio"] = m["page_bytes"] / (a + b*m["distinct_per_page"])
		pred.Formula += fmt.Sprintf("; zstd bytes per page = %.0f + %.1f × D over %d points: %.2fx", a, b, n, pred.Metrics["ratio"])
	}
	return pred
}

// dictionaryTerms is the page dictionary's ratio with its figures in.
func dictionaryTerms(r, d, w, v, ratio float64) string {
	return fmt.Sprintf("%.1f × %.0f / (%.1f × %.0f + %.1f × %.0f) = %.2fx", r, w, r, w-v+1, d, v, ratio)
}

// fitLine fits zstd's bytes per page against distinct values per page
// over the sweep's other combinations, so that a point's ratio is never
// fitted on itself.
func fitLine(r workload.Result, all []workload.Result) (a, b float64, n int, ok bool) {
	xs, ys := zstdPoints(r, all)
	distinct := map[float64]bool{}
	for _, x := range xs {
		distinct[math.Round(x*10)] = true
	}
	if len(distinct) < 2 {
		return 0, 0, 0, false
	}
	a, b = stat.LinearRegression(xs, ys, nil, false)
	return a, b, len(xs), true
}

// zstdPoints are the distinct values and zstd's bytes a page of the
// sweep's other measured combinations with a zstd ratio.
func zstdPoints(r workload.Result, all []workload.Result) (xs, ys []float64) {
	key := sweepKey(r)
	for _, o := range all {
		if o.Measured() && o.Combo != r.Combo && sweepKey(o) == key && o.Metrics["zstd_ratio"] > 0 {
			xs = append(xs, o.Metrics["distinct_per_page"])
			ys = append(ys, o.Metrics["page_bytes"]/o.Metrics["zstd_ratio"])
		}
	}
	return xs, ys
}
