package readahead

import (
	"fmt"
	"math"
	"strings"

	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/workload"
)

// The model: a scan that waits for its reads takes the bytes it reads over
// the device's throughput at the size of those reads,
//
//	time = bytes read / device throughput (at that read size)
//
// the seed's own arithmetic (16,000 MB at ~200 MB/s is 80 s, at ~80 MB/s
// 200 s). The throughput is measured at each point: a plain sequential
// read of the table's file by dbrig, cold, read as the engine reads it.

// Model predicts a point's time from its bytes and its device's measured
// throughput.
func Model(r workload.Result, _ []workload.Result) workload.Prediction {
	m := r.Metrics
	if m == nil || m["device_mb_per_s"] <= 0 || m["bytes_read"] <= 0 {
		return workload.Prediction{}
	}
	return workload.Prediction{
		Metrics: map[string]float64{"seconds": m["bytes_read"] / 1e6 / m["device_mb_per_s"]},
		Formula: fmt.Sprintf("time = bytes read / the device's throughput at that read size = %.0f MB / %.1f MB/s (a plain read of %s a read)",
			m["bytes_read"]/1e6, m["device_mb_per_s"], kib(m["device_bytes_per_read"])),
	}
}

// The judges' tolerances, chosen before any measurement and said in each
// verdict.
const (
	// ratioFactor: a ratio (without read-ahead over with) reproduces the
	// seed's when within this factor of it either way.
	ratioFactor = 1.5
	// modelTolerance: a scan's time within 25 % of bytes / throughput
	// (the seed's own: 80 s and 210 s against 80 s and 200 s).
	modelTolerance = 0.25
)

func Judges() map[string]study.Judge {
	each := func(f func(c comparison, p study.Published) report.Finding) study.Judge {
		return func(rd *study.RunData, p study.Published) report.Finding {
			cs := comparisons(rd)
			if len(cs) == 0 {
				return notMeasured(p, "No point was measured."+skippedWhy(rd))
			}
			var labels []string
			var out []report.Finding
			for _, c := range cs {
				labels = append(labels, c.label)
				if why := c.incomplete(); why != "" {
					out = append(out, notMeasured(p, why))
					continue
				}
				f := f(c, p)
				if why := c.warm(); why != "" && f.Verdict == report.Reproduced {
					f.Verdict = report.Differs
					f.Why = why + " " + f.Why
				}
				f.Spread = rd.Spread("seconds", c.with.Stats["seconds"], c.without.Stats["seconds"])
				out = append(out, f)
			}
			return study.MergeFindings(p, labels, out)
		}
	}
	return map[string]study.Judge{
		"scan-time":  each(judgeScanTime),
		"read-size":  each(judgeReadSize),
		"throughput": each(judgeThroughput),
		"model":      each(judgeModel),
	}
}

func notMeasured(p study.Published, why string) report.Finding {
	return report.Finding{Published: p.Finding, Measured: "-", Model: "-", Verdict: report.NotMeasured, Why: why}
}

// skippedWhy gives the reason points were skipped (not root, no loop
// devices, a target), when they were.
func skippedWhy(rd *study.RunData) string {
	for _, r := range rd.Latest() {
		if r.Skipped != "" {
			return " Skipped: " + r.Skipped
		}
	}
	return ""
}

// comparison is one engine's scans with and without read-ahead.
type comparison struct {
	label         string
	engine        string
	with, without *study.Summary
	// others are further settings the run measured (a size of read-ahead).
	others []*study.Summary
	// discard: the study's rule drops each setting's first run.
	discard bool
}

func (c comparison) incomplete() string {
	switch {
	case c.with == nil && c.without == nil:
		return "Neither the default read-ahead nor the minimal was measured."
	case c.with == nil:
		return "The scan with the default read-ahead was not measured."
	case c.without == nil:
		return "The scan without read-ahead (minimal or off) was not measured."
	}
	return ""
}

// warm says when a scan was not cold, which the seed's were (DBCC
// DROPCLEANBUFFERS before each).
func (c comparison) warm() string {
	var parts []string
	for _, s := range []*study.Summary{c.with, c.without} {
		if v := s.Mean("resident_before"); v > 0 {
			parts = append(parts, fmt.Sprintf("with read-ahead %s, %.0f pages of the table were in the OS cache when the scan started", s.Params.String("read_ahead"), v))
		}
		if p, t := s.Mean("pages_read"), s.Mean("table_bytes"); t > 0 && p > 0 && p*pageBytes(c.engine) < 0.9*t {
			parts = append(parts, fmt.Sprintf("with read-ahead %s, the server read only %.0f of the table's pages", s.Params.String("read_ahead"), p))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return "Not every scan was cold (" + strings.Join(parts, "; ") + "), as the seed's were."
}

func pageBytes(engineName string) float64 {
	if engineName == "mariadb" {
		return 16384
	}
	return 8192
}

func (c comparison) slowdown() float64 { return c.without.Mean("seconds") / c.with.Mean("seconds") }

func comparisons(rd *study.RunData) []comparison {
	by := map[string]*comparison{}
	var order []string
	sizes := map[int64]bool{}
	for _, s := range rd.Summaries {
		sizes[s.Params.Int("rows")] = true
	}
	for _, s := range rd.Summaries {
		eng := study.InstanceOf(s.Results[0]).Engine
		label := study.EngineTitle(eng)
		if len(sizes) > 1 {
			label += fmt.Sprintf(", %d rows", s.Params.Int("rows"))
		}
		c, ok := by[label]
		if !ok {
			c = &comparison{label: label, engine: eng, discard: rd.Plan.Repeat.DiscardFirst}
			by[label] = c
			order = append(order, label)
		}
		switch s.Params.String("read_ahead") {
		case Default:
			c.with = s
		case Minimal:
			if c.without != nil {
				c.others = append(c.others, c.without)
			}
			c.without = s
		case Off:
			if c.without == nil {
				c.without = s
			} else {
				c.others = append(c.others, s)
			}
		default:
			c.others = append(c.others, s)
		}
	}
	out := make([]comparison, 0, len(order))
	for _, l := range order {
		out = append(out, *by[l])
	}
	return out
}

func kib(b float64) string {
	if b >= 1<<20 {
		return fmt.Sprintf("%.2f MiB", b/(1<<20))
	}
	return fmt.Sprintf("%.1f KiB", b/1024)
}

func mbs(v float64) string { return fmt.Sprintf("%.0f MB/s", v) }

func secs(v float64) string { return study.FormatSeconds(v) }

// setting names a point's read-ahead for people.
func setting(s *study.Summary) string {
	ra := s.Params.String("read_ahead")
	kb := s.Mean("read_ahead_kb")
	switch {
	case s.Stats["engine_read_ahead_threshold"].Kept > 0:
		th := s.Mean("engine_read_ahead_threshold")
		if th == 0 {
			return fmt.Sprintf("%s (device %.0f KiB, InnoDB's read-ahead off)", ra, kb)
		}
		return fmt.Sprintf("%s (device %.0f KiB, InnoDB's read-ahead at %.0f pages)", ra, kb, th)
	}
	return fmt.Sprintf("%s (%.0f KiB)", ra, kb)
}

func judgeScanTime(c comparison, p study.Published) report.Finding {
	want := p.Figures["without_s"] / p.Figures["with_s"]
	if !(want > 0) {
		return notMeasured(p, "The study gives no published times (figures with_s and without_s) to compare with.")
	}
	got := c.slowdown()
	f := report.Finding{
		Published: p.Finding,
		Measured: fmt.Sprintf("%s with read-ahead %s, %s with %s: %s as long",
			secs(c.with.Mean("seconds")), setting(c.with), secs(c.without.Mean("seconds")), setting(c.without), study.FormatTimes(got)),
		Model: fmt.Sprintf("%s and %s: bytes over the device's throughput at each read size (%s)",
			secs(modelSeconds(c.with, c.discard)), secs(modelSeconds(c.without, c.discard)), study.FormatTimes(modelSeconds(c.without, c.discard)/modelSeconds(c.with, c.discard))),
	}
	switch {
	case study.Within(got, want, ratioFactor):
		f.Verdict = report.Reproduced
		f.Why = fmt.Sprintf("Without read-ahead the cold scan took %s as long, within a factor %g of the seed's %s (210 s against 80 s).", study.FormatTimes(got), ratioFactor, study.FormatTimes(want))
	default:
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("Without read-ahead the cold scan took %s as long where the seed's took %s (not within a factor %g): %s",
			study.FormatTimes(got), study.FormatTimes(want), ratioFactor, readsWhy(c))
	}
	return f
}

// readsWhy explains a difference by the device's reads.
func readsWhy(c comparison) string {
	return fmt.Sprintf("the device read %s a read at %s (%.1f in flight) with read-ahead, %s at %s (%.1f in flight) without.",
		kib(c.with.Mean("bytes_per_read")), mbs(c.with.Mean("mb_per_s")), c.with.Mean("queue_depth"),
		kib(c.without.Mean("bytes_per_read")), mbs(c.without.Mean("mb_per_s")), c.without.Mean("queue_depth"))
}

func judgeReadSize(c comparison, p study.Published) report.Finding {
	wantWith, wantWithout := p.Figures["with_kb"]*1024, p.Figures["without_kb"]*1024
	if wantWith <= 0 || wantWithout <= 0 {
		return notMeasured(p, "The study gives no published read sizes (figures with_kb and without_kb) to compare with.")
	}
	with, without := c.with.Mean("bytes_per_read"), c.without.Mean("bytes_per_read")
	f := report.Finding{
		Published: p.Finding,
		Measured:  fmt.Sprintf("%s a read with read-ahead %s, %s with %s", kib(with), setting(c.with), kib(without), setting(c.without)),
		Model:     fmt.Sprintf("the device's read-ahead bounds a read: %.0f KiB and %.0f KiB", c.with.Mean("read_ahead_kb"), c.without.Mean("read_ahead_kb")),
	}
	if c.engine == "mariadb" {
		f.Model = "InnoDB reads its 16 KiB pages with O_DIRECT, past the OS's read-ahead; its own read-ahead reads a whole extent's pages at once, each a read of its own"
	}
	switch {
	case with >= wantWith && without <= 2*wantWithout:
		f.Verdict = report.Reproduced
		f.Why = fmt.Sprintf("With read-ahead the reads averaged at least the seed's %s; without, about a page each (at most twice the seed's %s).", kib(wantWith), kib(wantWithout))
	case with < wantWith:
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("With read-ahead the reads averaged %s, under the seed's %s: %s", kib(with), kib(wantWith), sizeWhy(c))
	default:
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("Without read-ahead the reads averaged %s, more than twice the seed's %s.", kib(without), kib(wantWithout))
	}
	return f
}

func sizeWhy(c comparison) string {
	if c.engine == "mariadb" {
		return fmt.Sprintf("InnoDB's read-ahead does not make reads larger: it issues a read per 16 KiB page, many at once (%.1f in flight against %.1f without it).",
			c.with.Mean("queue_depth"), c.without.Mean("queue_depth"))
	}
	return fmt.Sprintf("the device's read-ahead was %.0f KiB.", c.with.Mean("read_ahead_kb"))
}

func judgeThroughput(c comparison, p study.Published) report.Finding {
	want := p.Figures["with_mb_s"] / p.Figures["without_mb_s"]
	if !(want > 0) {
		return notMeasured(p, "The study gives no published throughputs (figures with_mb_s and without_mb_s) to compare with.")
	}
	got := c.with.Mean("mb_per_s") / c.without.Mean("mb_per_s")
	f := report.Finding{
		Published: p.Finding,
		Measured: fmt.Sprintf("%s with read-ahead, %s without: %s",
			mbs(c.with.Mean("mb_per_s")), mbs(c.without.Mean("mb_per_s")), study.FormatTimes(got)),
		Model: fmt.Sprintf("a plain read of the file at the same read sizes: %s (%s a read) and %s (%s a read)",
			mbs(c.with.Mean("device_mb_per_s")), kib(c.with.Mean("device_bytes_per_read")),
			mbs(c.without.Mean("device_mb_per_s")), kib(c.without.Mean("device_bytes_per_read"))),
	}
	if study.Within(got, want, ratioFactor) {
		f.Verdict = report.Reproduced
		f.Why = fmt.Sprintf("Read-ahead raised the throughput %s, within a factor %g of the seed's %s (180-200 MB/s against ~80).", study.FormatTimes(got), ratioFactor, study.FormatTimes(want))
	} else {
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("Read-ahead raised the throughput %s where the seed's rose %s (not within a factor %g): %s", study.FormatTimes(got), study.FormatTimes(want), ratioFactor, readsWhy(c))
	}
	return f
}

// modelSeconds is the model's time for a setting: the mean of the times
// stored with its kept runs, each from the device's throughput measured
// right after that run's scan (a busy disk's throughput changes from run
// to run, and each scan is set beside its own).
func modelSeconds(s *study.Summary, discardFirst bool) float64 {
	runs := s.Results
	if discardFirst && len(runs) > 1 {
		runs = runs[1:]
	}
	var sum float64
	n := 0
	for _, r := range runs {
		if v, ok := r.Model["seconds"]; ok && v > 0 {
			sum += v
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

func judgeModel(c comparison, p study.Published) report.Finding {
	var ms, ps []string
	worst, worstSetting := 0.0, ""
	for _, s := range []*study.Summary{c.with, c.without} {
		model := modelSeconds(s, c.discard)
		off := (s.Mean("seconds") - model) / model
		ms = append(ms, fmt.Sprintf("%s: %s for %.0f MB", setting(s), secs(s.Mean("seconds")), s.Mean("bytes_read")/1e6))
		ps = append(ps, fmt.Sprintf("%.0f MB / %s = %s (%+.0f %%)", s.Mean("bytes_read")/1e6, mbs(s.Mean("device_mb_per_s")), secs(model), 100*off))
		if math.IsNaN(off) || math.Abs(off) > math.Abs(worst) {
			worst, worstSetting = off, s.Params.String("read_ahead")
		}
	}
	f := report.Finding{Published: p.Finding, Measured: strings.Join(ms, "; "), Model: strings.Join(ps, "; ")}
	switch {
	case math.IsNaN(worst):
		return notMeasured(p, "The device's throughput was not measured.")
	case math.Abs(worst) <= modelTolerance:
		f.Verdict = report.Reproduced
		f.Why = fmt.Sprintf("Both scans took their bytes over the device's throughput at their read size, within %.0f %%: the read size sets the time, as the seed's arithmetic says.", 100*modelTolerance)
	case worst > 0:
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("With read-ahead %s the scan took %.0f %% longer than its bytes over the device's throughput: the scan did more than wait for the device (the database's own work per page, beyond %.0f %%).", worstSetting, 100*worst, 100*modelTolerance)
	default:
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("With read-ahead %s the scan took %.0f %% less than its bytes over the plain read's throughput: it had more reads in flight than a plain read at that size (%s).", worstSetting, -100*worst, readsWhy(c))
	}
	return f
}

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
		Columns: []string{"", "read-ahead", "time", "MB/s", "a read", "in flight", "read-ahead pages", "plain read MB/s", "model time", "cold"},
		Note:    "Each row is a setting's mean over its runs. 'a read' and 'in flight' are the device's average read size and queue depth during the scan (/proc/diskstats); 'read-ahead pages' InnoDB's (Innodb_buffer_pool_read_ahead); 'plain read' dbrig reading the table's file at the scan's read size with no database; model time = bytes read / that throughput. 'cold': no page of the table in the OS cache when the scan started, the server freshly restarted.",
	}
	if fig != nil {
		t.Rows = append(t.Rows,
			[]string{"seed (SQL Server 2005)", "on", fmt.Sprintf("%.0f s", fig["with_s"]), "180-200", "> 350 KiB", "-", "~20,000 a second", "-", "80 s (16,000 MB / 200 MB/s)", "yes"},
			[]string{"seed (SQL Server 2005)", "off (trace flag 652)", fmt.Sprintf("%.0f s", fig["without_s"]), "~80", "~8 KiB", "-", "0", "-", "200 s (16,000 MB / 80 MB/s)", "yes"})
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
				kib(s.Mean("bytes_per_read")), fmt.Sprintf("%.1f", s.Mean("queue_depth")), rap,
				fmt.Sprintf("%.0f", s.Mean("device_mb_per_s")), secs(modelSeconds(s, c.discard)), cold})
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
