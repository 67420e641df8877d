package readahead

import (
	"fmt"
	"math"

	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/workload"
	"github.com/dbrig/dbrig/internal/workload/readahead"
)

// Report sets the seed's scans beside each engine's, with the model.
func Report(rd *study.RunData, d *report.Doc) {
	var fig map[string]float64
	for _, p := range rd.Spec.Published {
		if p.ID == "scan-time" {
			fig = p.Figures
		}
	}
	t := report.Table{
		Title:   "The seed beside ours",
		Columns: []string{"", "read-ahead", "time", "MB/s", "a read", "in flight", "read-ahead pages", "plain read MB/s", "model time", "predicted", "cold"},
		Note:    "Each row is a setting's mean over its runs. 'a read' and 'in flight' are the device's average read size and queue depth during the scan (/proc/diskstats); 'read-ahead pages' InnoDB's (Innodb_buffer_pool_read_ahead); 'plain read' dbrig reading the table's file at the scan's read size with no database; model time = bytes read / that throughput, after the scan. 'predicted': the time stored before each scan ran, on an emulated disk (its profile's bound on the bytes and reads, plus the time a page took beyond it on the setting's earlier scans). 'cold': no page of the table in the OS cache when the scan started, the server freshly restarted.",
	}
	if fig != nil {
		t.Rows = append(t.Rows,
			[]string{"seed (SQL Server 2005)", "on", fmt.Sprintf("%.0f s", fig["with_s"]), "180-200", "> 350 KiB", "-", "~20,000 a second", "-", "80 s (16,000 MB / 200 MB/s)", "-", "yes"},
			[]string{"seed (SQL Server 2005)", "off (trace flag 652)", fmt.Sprintf("%.0f s", fig["without_s"]), "~80", "~8 KiB", "-", "0", "-", "200 s (16,000 MB / 80 MB/s)", "-", "yes"})
	}
	chart := report.Chart{ID: "scan-time", Title: "Cold scan time by read-ahead", YLabel: "seconds",
		Note: "Bars: each setting's scan time (mean of its runs); dashed: the model, bytes read over the device's throughput at that read size."}
	measured := report.Series{Name: "scan", Style: report.Bars}
	model := report.Series{Name: "model", Style: report.Model}
	for _, c := range comparisons(rd) {
		for _, s := range append([]*study.Summary{c.with, c.without}, c.others...) {
			if s == nil {
				continue
			}
			cold := "yes"
			if s.Mean("resident_before") > 0 {
				cold = "no"
			}
			rap := "-"
			if st := s.Stats["engine_read_ahead_pages"]; st.Kept > 0 {
				rap = fmt.Sprintf("%.0f", st.Mean)
			}
			t.Rows = append(t.Rows, []string{c.label, setting(s), secs(s.Mean("seconds")), fmt.Sprintf("%.0f", s.Mean("mb_per_s")),
				readahead.FormatReadSize(s.Mean("bytes_per_read")), fmt.Sprintf("%.1f", s.Mean("queue_depth")), rap,
				fmt.Sprintf("%.0f", s.Mean("device_mb_per_s")), secs(modelSeconds(s, c.discard)), secs(predictedSeconds(s, c.discard)), cold})
			x := float64(len(chart.XCategories))
			chart.XCategories = append(chart.XCategories, c.label+" "+s.Params.String("read_ahead"))
			measured.Points = append(measured.Points, report.XY{X: x, Y: s.Mean("seconds"), Label: setting(s)})
			if m := modelSeconds(s, c.discard); !math.IsNaN(m) {
				model.Points = append(model.Points, report.XY{X: x, Y: m, Label: "bytes / plain read's MB/s"})
			}
		}
	}
	chart.Series = []report.Series{measured, model}
	d.Charts = append(d.Charts, chart)
	d.Sections = append(d.Sections, report.Section{Title: "Cold scans, engine by engine", Tables: []report.Table{t}})
}

// predictedSeconds is the mean of the times a setting's kept runs stored
// before they ran (NaN when none did).
func predictedSeconds(s *study.Summary, discardFirst bool) float64 {
	return keptMean(s, discardFirst, func(r workload.Result) (float64, bool) {
		v, ok := r.Model["seconds"]
		return v, ok && r.ModelFrom("seconds") == "predicted"
	})
}
