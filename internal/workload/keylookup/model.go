package keylookup

import (
	"encoding/json"
	"fmt"
	"maps"

	"github.com/dbrig/dbrig/internal/measure"
	"github.com/dbrig/dbrig/internal/workload"
)

// The model counts page visits. A scan visits each page of the table once:
//
//	pages(scan) = table pages
//
// A lookup path reads the index on j in order and, for each of its
// entries, looks the row up by what the entry holds, which costs d page
// visits (d = lookup_depth, measured: PostgreSQL's index holds the row's
// address, so d = 1 heap page; InnoDB's holds the primary key, so d is the
// clustered index's height; the seed's SQL Server, 4):
//
//	pages(lookup) = rows × d + index pages
//
// so the lookup path touches rows × d / table pages = d × rows per page
// times the scan's pages. The time model: with every page cached, a page
// visit costs the same on both paths, so each path's time is the other
// path's measured time scaled by their measured pages.

// PredictPages is the model's page visits for a path.
func PredictPages(path string, rows, tablePages, indexPages, depth float64) float64 {
	if path == Scan {
		return tablePages
	}
	return rows*depth + indexPages
}

// sweepKey is what the two paths of one comparison share: every parameter
// but the path, and the server.
func sweepKey(r workload.Result) string {
	p := maps.Clone(r.Params)
	delete(p, "path")
	b, _ := json.Marshal(p)
	in := r.Instance()
	return string(b) + "|" + in.Engine + "|" + in.Target
}

// Model predicts a point's pages from the table's layout, and its time
// from the other path's measured time and pages when the sweep has
// measured it.
func Model(r workload.Result, all []workload.Result) workload.Prediction {
	m := r.Metrics
	if m == nil || m["table_pages"] == 0 {
		return workload.Prediction{}
	}
	path := r.Params.String("path")
	pred := workload.Prediction{Metrics: map[string]float64{}}
	pred.Metrics["pages"] = PredictPages(path, m["rows"], m["table_pages"], m["index_pages"], m["lookup_depth"])
	if path == Scan {
		pred.Formula = fmt.Sprintf("pages = the table's pages (%.0f)", m["table_pages"])
	} else {
		pred.Formula = fmt.Sprintf("pages = rows × pages per lookup + index pages = %.0f × %.0f + %.0f",
			m["rows"], m["lookup_depth"], m["index_pages"])
	}
	other := Scan
	if path == Scan {
		other = Lookup
	}
	key := sweepKey(r)
	var t, p float64
	n := 0
	for _, o := range all {
		if o.Measured() && o.Params.String("path") == other && sweepKey(o) == key && o.Metrics["pages"] > 0 {
			t += o.Metrics["time_ms"]
			p += o.Metrics["pages"]
			n++
		}
	}
	if n > 0 && m["pages"] > 0 {
		pred.Metrics["time_ms"] = t / p * m["pages"]
		pred.Reason = samePageCost
		pred.Formula += fmt.Sprintf("; time = the %s path's time × pages / its pages (%.3g ms per 1,000 pages)", other, 1000*t/p)
	}
	return pred
}

// samePageCost is what the time model leaves out, said where it misses.
const samePageCost = "a page visit is taken to cost the same on both paths: a scan reads each page's rows in order, a lookup finds one row a visit"

// firstOfItsPath is what the first point of a path leaves out: no point
// before it measured what a page visit costs that path, and the other
// path's cost is not its own. On the stored quick run
// key-lookup-20261128-021249 (200,000 rows) a lookup's page visit cost
// 2.8 times a scan's on PostgreSQL (0.98 against 0.36 µs) and 0.54 times
// on MariaDB (0.47 against 0.89 µs), and the first lookup took 197 ms
// where 71 were predicted, 286 ms where 533 were; the path's later points,
// from its own, were within 2 to 8 %.
const firstOfItsPath = "the first point of its path: no point before it measured what a page visit costs this path, and the other path's cost is taken, where each path's is its own (a scan reads each page's rows in order; a lookup jumps between the table's two ends on PostgreSQL, at 2.8 times a scan's cost a page on the stored quick run, and descends InnoDB's clustered index, whose upper pages every lookup shares, at 0.54 times); the path's later points take their own"

// samePathCost is what a prediction from the path's own earlier points
// leaves out, said where it misses.
const samePathCost = "a page visit is taken to cost what it cost on this path's earlier points of the same table: the machine's other work, which changes from run to run, changes it"

// Predict is the model before the point runs: the table's layout (its
// pages, the index's, a lookup's depth) as an earlier point measured it on
// the same data, and the time a page visit took on the same path's earlier
// points. A scan reads its pages in order and a lookup jumps between the
// table's two ends (j alternates between i and rows - i), so a page visit
// costs each path its own (2.8 times a scan's on PostgreSQL at 200,000
// rows, 0.54 times on MariaDB). The lookup path's first point takes the
// time a row cost the lookups of the index's first twentieth, which every
// scan point times before its query (lookup_sample_us_per_row), times its rows;
// only a path's first point with neither takes the other path's cost a
// page, and says so.
func Predict(r workload.Result, before []workload.Result) workload.Prediction {
	path, key := r.Params.String("path"), sweepKey(r)
	var same, other []workload.Result
	var layout map[string]float64 // the latest point's: before runs in time order
	var samples []float64
	for _, o := range before {
		if o.Key == r.Key || !o.Measured() || sweepKey(o) != key || o.Metrics["table_pages"] <= 0 || o.Metrics["pages"] <= 0 {
			continue
		}
		layout = o.Metrics
		if v := o.Metrics[sampleMetric]; v > 0 {
			samples = append(samples, v)
		}
		if o.Params.String("path") == path {
			same = append(same, o)
		} else {
			other = append(other, o)
		}
	}
	if len(same) == 0 && len(other) == 0 {
		return workload.Prediction{Reason: "no prediction: first point of its table (no point before it measured the layout and a page's time)"}
	}
	pages := PredictPages(path, layout["rows"], layout["table_pages"], layout["index_pages"], layout["lookup_depth"])
	pred := workload.Prediction{Metrics: map[string]float64{"pages": pages}}
	pred.Formula = fmt.Sprintf("pages from the layout measured before (%.0f table pages, %.0f index pages, %.0f a lookup)",
		layout["table_pages"], layout["index_pages"], layout["lookup_depth"])
	if len(same) == 0 && path == Lookup && len(samples) > 0 {
		perRow := measure.Median(samples) / 1000
		pred.Metrics["time_ms"] = perRow * layout["rows"]
		pred.Formula += fmt.Sprintf("; time = rows × the lookups' time a row = %.0f × %.3g µs, the median of the %d point(s) before that timed the index's first twentieth", layout["rows"], 1000*perRow, len(samples))
		pred.Reason = sampledLookups
		return pred
	}
	ref, reason := same, samePathCost
	if len(ref) == 0 {
		ref, reason = other, firstOfItsPath
	}
	perPage := timePerPage(ref)
	pred.Metrics["time_ms"] = perPage * pages
	pred.Formula += fmt.Sprintf("; time = pages × %.3g ms per 1,000 pages, the %s path's on %d point(s) before", 1000*perPage, ref[0].Params.String("path"), len(ref))
	pred.Reason = reason
	return pred
}

// sampleMetric is the lookups' time a row on the index's first twentieth.
const sampleMetric = "lookup_sample_us_per_row"

// sampledLookups is what the lookup path's first point, predicted from
// the sample, leaves out.
const sampledLookups = "the lookup path's first point: its time is its rows at what a row cost the lookups of the index's first twentieth at the points before it, whose pages are a twentieth of the table's, fewer for the CPU's caches and the machine's other work to disturb"

// timePerPage is the time a page visit took over points: their time over
// their pages.
func timePerPage(rs []workload.Result) float64 {
	var t, p float64
	for _, o := range rs {
		t += o.Metrics["time_ms"]
		p += o.Metrics["pages"]
	}
	return t / p
}
