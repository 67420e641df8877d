package loadoltp

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dbrig/dbrig/internal/diagnose"
	"github.com/dbrig/dbrig/internal/measure"
	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/units"
	"github.com/dbrig/dbrig/internal/workload/oltp"
)

// lineName names a curve in a chart of its mix: its facet without the
// mix's own value, which the chart's title carries.
func lineName(rd *study.RunData, c *Curve, perMix bool) string {
	if c.Facet == "" {
		return "tps"
	}
	if !perMix {
		return c.Facet
	}
	var parts []string
	for _, part := range strings.Fields(c.Facet) {
		k, v, _ := strings.Cut(part, "=")
		if v == c.Mix && slices.Contains(rd.Spec.SweepKeys, k) {
			continue
		}
		parts = append(parts, part)
	}
	if len(parts) == 0 {
		return c.Facet
	}
	return strings.Join(parts, " ")
}

// usersCharts draw throughput and mean response time against the users,
// a chart of each per mix, a line per curve with its closed-loop model
// dashed through it and its knee marked.
func usersCharts(rd *study.RunData, cs []*Curve) []report.Chart {
	swept := false
	for _, c := range cs {
		swept = swept || len(c.Points) > 1
	}
	if !swept {
		return nil
	}
	mixes := Mixes(cs)
	perMix := len(mixes) > 1
	var tpsCharts, respCharts []report.Chart
	for i, mix := range mixes {
		suffix, id := "", ""
		if perMix {
			suffix, id = ", mix "+mix, "-"+strconv.Itoa(i+1)
		}
		tc := report.Chart{ID: "oltp-users" + id, Title: "Throughput against virtual users" + suffix, XLabel: "virtual users", YLabel: "transactions per second",
			Note: rd.RunsCaption() + ". Dashed: the closed-loop model, tps = min(users / (R0 + Z), X_peak), R0 the mean response at the lightest load, Z the think time its users lived there (users / tps - R0, Little's law), X_peak the mean of the top 4 points (seed 001's rule); the knee (users = X_peak × (R0 + Z)) marked on each."}
		rc := report.Chart{ID: "oltp-response" + id, Title: "Mean response time against virtual users" + suffix, XLabel: "virtual users", YLabel: "mean response time (ms)",
			Note: "Dashed: the closed-loop model's response, max(R0, users / X_peak - Z): flat below the knee, then growing by 1 / X_peak for every user added."}
		knees := report.Series{Name: "knees", Style: report.Points, Unit: "tps", Metric: "tps"}
		for _, c := range cs {
			if c.Mix != mix {
				continue
			}
			name := lineName(rd, c, perMix)
			line := report.Series{Name: name, Style: report.Line, Unit: "tps", Metric: "tps"}
			runs := report.Series{Name: name + " (runs)", Style: report.Points, Unit: "tps", Metric: "tps"}
			model := report.Series{Name: name + " model", Style: report.Model, Unit: "tps", Metric: "tps"}
			// A curve without a facet is named by its metric: the response
			// chart's is the mean response, not tps.
			respName := name
			if c.Facet == "" {
				respName = "mean response"
			}
			resp := report.Series{Name: respName, Style: report.Line, Unit: "ms", Metric: "response"}
			respModel := report.Series{Name: respName + " model", Style: report.Model, Unit: "ms", Metric: "response"}
			m := c.Model
			xs := []float64{}
			for _, s := range c.Points {
				u := s.Params.Float("users")
				xs = append(xs, u)
				line.Points = append(line.Points, report.XY{X: u, Y: s.Mean("tps"), Label: label(rd, s)})
				if len(s.Stats["tps"].Runs) > 1 {
					for _, v := range s.Stats["tps"].Runs {
						runs.Points = append(runs.Points, report.XY{X: u, Y: v, Label: label(rd, s)})
					}
				}
				if v := s.Mean("mean_ms"); !math.IsNaN(v) {
					resp.Points = append(resp.Points, report.XY{X: u, Y: v, Label: label(rd, s)})
				}
			}
			if m.Knee > 0 && !math.IsInf(m.Knee, 0) {
				m.Knee = math.Round(m.Knee*10) / 10
				xs = append(xs, m.Knee)
				knees.Points = append(knees.Points, report.XY{X: m.Knee, Y: m.Peak, Label: fmt.Sprintf("%s: knee at %.0f users, %s/s", name, m.Knee, oltp.FormatTPS(m.Peak))})
			}
			slices.Sort(xs)
			for _, x := range slices.Compact(xs) {
				model.Points = append(model.Points, report.XY{X: x, Y: m.TPS(x), Label: name + " model"})
				respModel.Points = append(respModel.Points, report.XY{X: x, Y: math.Max(m.BaseMS, 1000*x/m.Peak-m.ThinkMS), Label: respName + " model"})
			}
			tc.Series = append(tc.Series, line)
			if len(runs.Points) > 0 {
				tc.Series = append(tc.Series, runs)
			}
			tc.Series = append(tc.Series, model)
			rc.Series = append(rc.Series, resp, respModel)
		}
		if len(knees.Points) > 0 {
			tc.Series = append(tc.Series, knees)
		}
		tpsCharts = append(tpsCharts, tc)
		respCharts = append(respCharts, rc)
	}
	return append(tpsCharts, respCharts...)
}

// peaksSection is a row per curve: its peak by seed 001's rule, the points
// it averages, its gain over Gigabit Ethernet's peak in the same mix, the
// model's knee, the server's CPUs at the peak, and the errors.
func peaksSection(rd *study.RunData, cs []*Curve) (report.Section, bool) {
	t := report.Table{Columns: []string{"curve", "peak", "from users", "gain over " + GbE, "knee (users)", "R0", "Z", "server CPUs at the peak", "errors", "over limit"}}
	haveGbE := false
	for _, c := range cs {
		if len(c.Points) < 2 {
			continue
		}
		peak, top := c.Peak()
		gain := "-"
		if g, ok := GainOverGbE(cs, c.Mix, c.Transport); ok && !c.Mismatch {
			gain = study.FormatPercent(g)
			haveGbE = true
		}
		cpu := "-"
		if v := study.ServerCPU(top...); !math.IsNaN(v) {
			cpu = fmt.Sprintf("%.2f", v)
		}
		var errs, over float64
		for _, s := range c.Points {
			errs += s.Mean("errors")
			over += s.Mean("over_limit")
		}
		m := c.Model
		knee := "-"
		if !math.IsNaN(m.Knee) {
			knee = fmt.Sprintf("%.0f", m.Knee)
		}
		t.Rows = append(t.Rows, []string{c.Name(), oltp.FormatTPS(peak) + "/s", UsersList(top), gain, knee, oltp.FormatMS(m.BaseMS), oltp.FormatMS(m.ThinkMS), cpu,
			strconv.FormatFloat(errs, 'f', -1, 64), strconv.FormatFloat(over, 'f', -1, 64)})
	}
	if len(t.Rows) == 0 {
		return report.Section{}, false
	}
	text := "Each curve's peak is the mean of its top 4 points (seed 001: \"an average of the top 4 scores\"; its highest point when it has fewer than 4). "
	if haveGbE {
		text += "The gain over " + GbE + " is seed 001's: (peak - peak on " + GbE + ") / peak on " + GbE + ", in the same mix. "
	}
	text += "The knee is the closed-loop model's, stored with the curve's last point: R0 is the mean response at the lightest load, Z the think time per transaction its users lived there (users / tps - R0, Little's law: a busy machine wakes a sleeping user late). Server CPUs are the CPU time of the server's processes per second while the peak's points ran (the monitoring connection's samples"
	if n := rd.Environment.CPUs; n > 0 {
		text += fmt.Sprintf("; this machine has %d, shared with the client and the emulated links", n)
	}
	text += "). Errors and transactions over the limit are summed over the curve's points."
	return report.Section{Title: "Peak throughput and the knee", Text: text, Tables: []report.Table{t}}, true
}

// duplexSection sets each mismatched point beside its full-duplex twin:
// throughput, mean, median, tail and the outliers, the link's losses and
// the stall model; and a chart of both distributions per mix.
func duplexSection(rd *study.RunData, cs []*Curve) (report.Section, []report.Chart, bool) {
	pairs := DuplexPairs(rd)
	if len(pairs) == 0 {
		return report.Section{}, nil, false
	}
	t := report.Table{Columns: []string{"mix", "link", "load", "tps full", "tps mismatch", "ratio", "mean full", "mean mismatch", "ratio",
		"p50 full", "p50 mismatch", "p99 full", "p99 mismatch", "≥ 200 ms full", "≥ 200 ms mismatch", "> 1 s mismatch", "segments lost", "users' time stalled", "stall model"}}
	for _, p := range pairs {
		hf, hm := p.Full.Histograms["latency"], p.Mismatched.Histograms["latency"]
		row := []string{p.Mix, p.Wire, p.Load(), oltp.FormatTPS(p.Full.Mean("tps")), oltp.FormatTPS(p.Mismatched.Mean("tps")), ratio(p.Mismatched.Mean("tps"), p.Full.Mean("tps")),
			oltp.FormatMS(p.Full.Mean("mean_ms")), oltp.FormatMS(p.Mismatched.Mean("mean_ms")), ratio(p.Mismatched.Mean("mean_ms"), p.Full.Mean("mean_ms"))}
		row = append(row, Quantile(hf, 0.5), Quantile(hm, 0.5), Quantile(hf, 0.99), Quantile(hm, 0.99),
			over(hf, 200*time.Millisecond), over(hm, 200*time.Millisecond), strconv.FormatInt(countOver(hm, time.Second), 10))
		var lost, fwd int64
		for _, r := range p.Mismatched.Results {
			l := r.Link()
			lost += l.LostSegments
			fwd += l.ForwardSegments
		}
		share, _ := StalledShare(p.Mismatched)
		row = append(row, fmt.Sprintf("%d of %d", lost, fwd), fmt.Sprintf("%.1f %%", 100*share))
		model := "-"
		if v, ok := p.Mismatched.Results[len(p.Mismatched.Results)-1].Model[oltp.ModelStall]; ok {
			model = oltp.FormatTPS(v) + "/s"
		}
		t.Rows = append(t.Rows, append(row, model))
	}
	text := "Each point on the mismatched link beside the same point at full duplex (seed 002: the server's NIC at half duplex, the client's at full). A closed loop drives the server as hard as its users can; an open loop offers a given load (transactions arriving at a fixed rate, each response time from its intended start). Ratios are mismatch / full. '≥ 200 ms' counts the transactions that took at least 200 ms, with their share; 'segments lost' is what the link lost to late collisions against what the client sent (the whole point, warm-up included); each stalls one user one retransmission timeout, and 'users' time stalled' is lost × RTO over the users' time. The stall model charges each transaction in the RTO-spaced clusters one retransmission timeout on top of the full-duplex response: tps = users / (R_full + Z + h × RTO)."
	var charts []report.Chart
	var groups []string
	for _, p := range pairs {
		if g := p.Mix + " " + p.Wire; !slices.Contains(groups, g) {
			groups = append(groups, g)
		}
	}
	for i, g := range groups {
		var top *DuplexPair
		for j := range pairs {
			if pairs[j].Mix+" "+pairs[j].Wire == g && !pairs[j].Open() && (top == nil || pairs[j].Users > top.Users) {
				top = &pairs[j]
			}
		}
		if top == nil {
			continue
		}
		c := report.Chart{ID: fmt.Sprintf("oltp-duplex-%d", i+1), Title: fmt.Sprintf("Response times at full duplex and at a duplex mismatch, mix %s, %s, %g users", top.Mix, top.Wire, top.Users),
			XLabel: "response time (ms)", YLabel: "transactions", XLog: true, YLog: true,
			Note: "How many transactions took each time (bins of a fifth of a decade; empty bins left out), from the distributions merged over the combination's runs. A retransmission stall shows as a cluster from 200 ms on, and at its multiples."}
		c.Series = append(c.Series, binSeries("full duplex", top.Full.Histograms["latency"]), binSeries("duplex mismatch", top.Mismatched.Histograms["latency"]))
		charts = append(charts, c)
	}
	return report.Section{Title: "Duplex mismatch beside full duplex", Text: text, Tables: []report.Table{t}}, charts, true
}

// binSeries is a distribution as counts in log-spaced bins, five a decade
// from 10 µs to 100 s, with the empty bins left out.
func binSeries(name string, h *measure.Histogram) report.Series {
	s := report.Series{Name: name, Style: report.Points}
	if h == nil {
		return s
	}
	for e := -5.0; e < 2; e += 0.2 {
		lo, hi := time.Duration(math.Pow(10, e)*1e9), time.Duration(math.Pow(10, e+0.2)*1e9)
		n := h.CountAbove(lo) - h.CountAbove(hi)
		if n > 0 {
			mid := math.Sqrt(float64(lo) * float64(hi))
			s.Points = append(s.Points, report.XY{X: mid / 1e6, Y: float64(n),
				Label: fmt.Sprintf("%s to %s: %d", units.FormatDuration(lo), units.FormatDuration(hi), n)})
		}
	}
	return s
}

func ratio(a, b float64) string {
	if math.IsNaN(a) || math.IsNaN(b) || b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", a/b)
}

// Quantile writes a distribution's quantile q as a duration, "-" when it
// is empty.
func Quantile(h *measure.Histogram, q float64) string {
	if h == nil || h.Count() == 0 {
		return "-"
	}
	return units.FormatDuration(h.Quantile(q))
}

// countOver is the transactions over d (those in d's own bucket not
// counted).
func countOver(h *measure.Histogram, d time.Duration) int64 {
	if h == nil {
		return 0
	}
	return h.CountAbove(d)
}

// over writes the transactions of at least d with their share.
func over(h *measure.Histogram, d time.Duration) string {
	if h == nil || h.Count() == 0 {
		return "-"
	}
	n := h.CountAbove(d - time.Microsecond)
	return fmt.Sprintf("%d (%.2f %%)", n, 100*float64(n)/float64(h.Count()))
}

// stallsSection lists the points where dbrig diagnose finds the
// retransmission-stall signature, or says that none has it.
func stallsSection(rd *study.RunData) (report.Section, bool) {
	t := report.Table{Columns: []string{"point", "stalled", "clusters", "≥ 200 ms", "> 1 s", "median", "by transaction"}}
	checked := 0
	for _, s := range rd.Summaries {
		for _, p := range Stalls(s) {
			checked++
			if !p.Found {
				continue
			}
			var types []string
			for _, ty := range p.Types {
				if ty.Samples > 0 {
					types = append(types, fmt.Sprintf("%s %.1f %%", ty.Type, 100*ty.HitShare))
				}
			}
			t.Rows = append(t.Rows, []string{p.Key, fmt.Sprintf("%d of %d (%.2f %%)", p.Hit, p.Samples, 100*p.HitShare),
				fmt.Sprintf("%s × %s", diagnose.Multiples(p.Clusters), units.FormatDuration(p.Spacing)), strconv.FormatInt(p.Over200ms, 10),
				strconv.FormatInt(p.Over1s, 10), units.FormatDuration(p.Median), strings.Join(types, ", ")})
		}
	}
	if checked == 0 {
		return report.Section{}, false
	}
	sec := report.Section{Title: "Retransmission stalls (dbrig diagnose)"}
	if len(t.Rows) == 0 {
		sec.Text = fmt.Sprintf("None of the %d points shows the signature of retransmission stalls (a cluster of transactions from 200 ms on, at whole multiples of a timeout, while the median is a few milliseconds). `dbrig diagnose` on the run directory says why for each.", checked)
		return sec, true
	}
	sec.Text = fmt.Sprintf("%d of the %d points show the signature of retransmission stalls: a cluster of transactions from 200 ms on (TCP's minimum retransmission timeout), clusters at its multiples (hit twice; a retransmission lost too), a median of a few milliseconds. `dbrig diagnose` on the run directory prints the same, with why for the others.", len(t.Rows), checked)
	sec.Tables = []report.Table{t}
	return sec, true
}
