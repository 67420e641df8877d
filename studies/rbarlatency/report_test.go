package rbarlatency

import (
	"slices"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/study"
)

func TestFacetsKeepAUserSweptDimension(t *testing.T) {
	rd := runData(t,
		point{exp: "client-row-by-row", cost: fast, net: "unix", rows: 200, metrics: map[string]float64{"us_per_row": 30}},
		point{exp: "client-row-by-row", cost: fast, net: "unix", rows: 200, metrics: map[string]float64{"us_per_row": 60}},
	)
	// The second point is the same experiment and link with the user's
	// own variable at another value.
	rd.Spec.SweepKeys = append(rd.Spec.SweepKeys, "sc")
	for i := range rd.Results {
		rd.Results[i].Values["sc"] = []string{"on", "off"}[i/3]
		rd.Results[i].Combo += " sc=" + rd.Results[i].Values["sc"].(string)
	}
	rd.Summaries = study.Summarize(rd.Results, rd.Plan.Repeat)
	d := &report.Doc{}
	Report(rd, d)
	var tables []string
	for _, sec := range d.Sections {
		for _, tb := range sec.Tables {
			tables = append(tables, tb.Title)
		}
	}
	if len(tables) != 2 || tables[0] != "client-row-by-row, sc=on" || tables[1] != "client-row-by-row, sc=off" {
		t.Errorf("tables %q: want one per value of sc", tables)
	}
}

// TestReportKeepsEachEngine: with two engines, every chart series and
// table is drawn per engine.
func TestReportKeepsEachEngine(t *testing.T) {
	pts := []point{
		{exp: "client-row-by-row", cost: fast, net: "unix", rows: 200, metrics: map[string]float64{"us_per_row": 30}},
		{exp: "client-stream", cost: fast, net: "unix", rows: 2000, metrics: map[string]float64{"throughput_bps": 1e9}},
	}
	rd := onEngines(t, pts, pts)
	d := &report.Doc{}
	Report(rd, d)
	var tables []string
	for _, sec := range d.Sections {
		for _, tb := range sec.Tables {
			tables = append(tables, tb.Title)
		}
	}
	want := []string{"client-stream, engine=postgres", "client-stream, engine=mariadb", "client-row-by-row, engine=postgres", "client-row-by-row, engine=mariadb"}
	if !slices.Equal(tables, want) {
		t.Errorf("tables %q, want %q", tables, want)
	}
	for _, c := range d.Charts {
		for _, eng := range []string{"engine=postgres", "engine=mariadb"} {
			found := false
			for _, s := range c.Series {
				found = found || strings.Contains(s.Name, eng)
			}
			if !found && !c.Empty() {
				t.Errorf("chart %q has no series of %s", c.ID, eng)
			}
		}
	}
}
