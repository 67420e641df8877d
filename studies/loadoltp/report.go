package loadoltp

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/units"
	"github.com/dbrig/dbrig/internal/workload"
	"github.com/dbrig/dbrig/internal/workload/oltp"
)

// Report adds the workload's tables and charts: every transaction type's
// throughput and response-time distribution at every combination; when
// the users were swept, throughput and response time against them with
// the closed-loop model and its knee, and each curve's peak (seed 001's
// rule) with its gain over Gigabit Ethernet; beside a duplex mismatch,
// the full-duplex link's figures and the distributions of both (seed 002);
// the retransmission stalls dbrig diagnose finds; each combination's
// seconds.
func Report(rd *study.RunData, d *report.Doc) {
	if len(rd.Summaries) == 0 {
		return
	}
	d.Sections = append(d.Sections, transactionsSection(rd))
	cs := Curves(rd)
	d.Charts = append(d.Charts, usersCharts(rd, cs)...)
	if sec, ok := peaksSection(rd, cs); ok {
		d.Sections = append(d.Sections, sec)
	}
	if sec, charts, ok := duplexSection(rd, cs); ok {
		d.Sections = append(d.Sections, sec)
		d.Charts = append(d.Charts, charts...)
	}
	if sec, ok := stallsSection(rd); ok {
		d.Sections = append(d.Sections, sec)
	}
	d.Charts = append(d.Charts, secondsCharts(rd)...)
}

// label names a combination by its swept values ("users=40 net=lan-1g"),
// or "the run" when nothing was swept.
func label(rd *study.RunData, s *study.Summary) string {
	var parts []string
	for _, k := range rd.Spec.SweepKeys {
		parts = append(parts, fmt.Sprintf("%s=%v", k, s.Values[k]))
	}
	if len(parts) == 0 {
		return "the run"
	}
	return strings.Join(parts, " ")
}

// transactionsSection is a row per combination and transaction type: tps,
// the percentiles from the distribution merged over the combination's runs,
// and the errors.
func transactionsSection(rd *study.RunData) report.Section {
	dims := rd.Spec.SweepKeys
	t := report.Table{Columns: append(slices.Clone(dims), "transaction", "tps", "mean", "p50", "p95", "p99", "p99.9", "max", "errors", "over limit")}
	open := false
	for _, s := range rd.Summaries {
		mix, err := oltp.ParseMix(s.Params.String("mix"))
		if err != nil {
			continue
		}
		open = open || s.Params.Float("rate") > 0
		names := []string{""}
		if txs := mix.TxTypes(); len(txs) > 1 {
			for _, tx := range txs {
				names = append(names, tx.Name)
			}
		}
		for _, name := range names {
			row := make([]string, 0, len(t.Columns))
			for _, k := range dims {
				row = append(row, fmt.Sprint(s.Values[k]))
			}
			hist, prefix, shown := "latency", "", "all"
			if name != "" {
				hist, shown = "latency/"+name, name
				prefix = oltp.TxMetricName(name) + "_"
			}
			row = append(row, shown, oltp.FormatTPS(s.Stats[prefix+"tps"].Mean))
			h := s.Histograms[hist]
			if h == nil || h.Count() == 0 {
				row = append(row, "-", "-", "-", "-", "-", "-")
			} else {
				f := units.FormatDuration
				row = append(row, f(h.Mean()), f(h.Quantile(0.5)), f(h.Quantile(0.95)), f(h.Quantile(0.99)), f(h.Quantile(0.999)), f(h.Max()))
			}
			errs := s.Stats[prefix+"errors"].Mean
			if name == "" {
				errs = s.Stats["errors"].Mean
			}
			over := "-"
			if name == "" {
				over = strconv.FormatFloat(s.Stats["over_limit"].Mean, 'f', -1, 64)
			}
			row = append(row, strconv.FormatFloat(errs, 'f', -1, 64), over)
			t.Rows = append(t.Rows, row)
		}
	}
	text := "Each transaction type's throughput and response time at each combination; percentiles come from the distribution merged over the combination's runs (HDR, 3 significant figures), never from an average of percentiles."
	if open {
		text += " In an open loop a response time runs from the transaction's intended start, so time spent waiting behind a slow server counts."
	}
	return report.Section{Title: "Transactions", Text: text, Tables: []report.Table{t}}
}

// secondsCharts draw each combination's measured seconds (of its first
// run): throughput, and the median and 99th percentile, where a stall or
// a slow second shows.
func secondsCharts(rd *study.RunData) []report.Chart {
	if len(rd.Summaries) > 4 {
		return nil // a chart per point would bury the report: the series stay in results.jsonl
	}
	var out []report.Chart
	for i, s := range rd.Summaries {
		r := s.Results[0]
		tps := r.Series["tps"]
		if len(tps) == 0 {
			continue
		}
		step := r.SeriesInterval
		if step == 0 {
			step = 1
		}
		// One unit per axis: the rate and the response times apart, so
		// that neither lies flat against the other's scale.
		tc := report.Chart{ID: fmt.Sprintf("oltp-seconds-%d", i), Title: "Each second, " + label(rd, s) + ": throughput", XLabel: "seconds into the measured interval",
			YLabel: "transactions per second", Note: "Throughput of each second, from the run's per-second series (first run)."}
		lc := report.Chart{ID: fmt.Sprintf("oltp-seconds-%d-latency", i), Title: "Each second, " + label(rd, s) + ": response time", XLabel: "seconds into the measured interval",
			YLabel: "response time (ms)", Note: "The median, 99th percentile and maximum response time of each second (first run)."}
		for _, name := range []string{"tps", "p50_ms", "p99_ms", "max_ms"} {
			sr := report.Series{Name: workload.MetricLabel(name), Style: report.Line, Unit: "ms", Metric: "response"}
			for j, v := range r.Series[name] {
				sr.Points = append(sr.Points, report.XY{X: float64(j+1) * step, Y: v})
			}
			if name == "tps" {
				sr.Style, sr.Unit, sr.Metric = report.Area, "tps", "tps"
				tc.Series = append(tc.Series, sr)
			} else {
				lc.Series = append(lc.Series, sr)
			}
		}
		out = append(out, tc, lc)
	}
	return out
}
