package keylookup

import (
	"encoding/json"
	"fmt"
	"maps"

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

// Predict is the model before the point runs: the table's layout (its
// pages, the index's, a lookup's depth) as the other path's point measured
// it on the same data, and the time a page visit took there.
func Predict(r workload.Result, before []workload.Result) workload.Prediction {
	path, key := r.Params.String("path"), sweepKey(r)
	var ref []workload.Result
	for _, o := range before {
		if o.Measured() && o.Combo != r.Combo && sweepKey(o) == key && o.Metrics["table_pages"] > 0 && o.Metrics["pages"] > 0 {
			ref = append(ref, o)
		}
	}
	if len(ref) == 0 {
		return workload.Prediction{Reason: "no prediction: first point of its table (the other path, which measures the layout and a page's time, ran after it)"}
	}
	layout := ref[len(ref)-1].Metrics
	pages := PredictPages(path, layout["rows"], layout["table_pages"], layout["index_pages"], layout["lookup_depth"])
	var t, p float64
	for _, o := range ref {
		t += o.Metrics["time_ms"]
		p += o.Metrics["pages"]
	}
	perPage := t / p
	return workload.Prediction{
		Metrics: map[string]float64{"pages": pages, "time_ms": perPage * pages},
		Formula: fmt.Sprintf("pages from the layout the %s path measured (%.0f table pages, %.0f index pages, %.0f a lookup); time = pages × %.3g ms per 1,000 pages, the %s path's",
			ref[0].Params.String("path"), layout["table_pages"], layout["index_pages"], layout["lookup_depth"], 1000*perPage, ref[0].Params.String("path")),
		Reason: samePageCost,
	}
}
