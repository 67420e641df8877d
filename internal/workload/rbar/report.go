package rbar

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/units"
)

// Report adds the study's charts and per-experiment tables; the findings
// come from Judges.
func Report(rd *study.RunData, d *report.Doc) {
	a := newAnalysis(rd)
	d.Charts = append(d.Charts, a.perRowChart(), a.throughputChart(), a.experimentsChart())
	d.Sections = append(d.Sections, a.experimentTables()...)
}

// Judges decide the seed's findings, by the ids of studies/rbarlatency/rbar-latency.toml.
// A run that sweeps a dimension the findings do not group by (the engine,
// when a study sweeps engine = ["postgres", "mariadb"]) is judged on each
// of its values: the finding shows each, and says "reproduced" only when
// every value reproduces it.
func Judges() map[string]study.Judge {
	judge := func(f func(*analysis, *report.Finding, study.Published)) study.Judge {
		return func(rd *study.RunData, p study.Published) report.Finding {
			a := newAnalysis(rd)
			var each []report.Finding
			for _, facet := range a.facets {
				out := report.Finding{Published: p.Finding, Verdict: report.NotMeasured, Measured: "-", Model: "-",
					Why: "This run has no point that measures it."}
				a.facet = facet
				f(a, &out, p)
				each = append(each, out)
			}
			return mergeFacets(p, a.facets, each)
		}
	}
	return map[string]study.Judge{
		"server-side-no-network": judge((*analysis).judgeServerSide),
		"infiniband-stream": judge(func(a *analysis, f *report.Finding, p study.Published) {
			a.judgeInfiniband(f, "client-stream", "rows streamed in one result set", p.Value)
		}),
		"infiniband-resultsets": judge(func(a *analysis, f *report.Finding, p study.Published) {
			a.judgeInfiniband(f, "cursor-messages", "rows sent as one message each", p.Value)
		}),
		"round-trip-per-row": judge((*analysis).judgeRoundTrip),
		"slow-client":        judge((*analysis).judgeSlowClient),
		"wide-rows-1g":       judge((*analysis).judgeWide1G),
		"wide-rows-consumer": judge((*analysis).judgeWideConsumer),
	}
}

// mergeFacets makes one finding of a finding judged on each facet: each
// facet's figures and reasons under its name; reproduced when every facet
// that measured it reproduced it, differs when any differs.
func mergeFacets(p study.Published, facets []string, each []report.Finding) report.Finding {
	if len(each) == 0 {
		return report.Finding{Published: p.Finding, Verdict: report.NotMeasured, Measured: "-", Model: "-",
			Why: "This run has no point that measures it."}
	}
	if len(each) == 1 {
		return each[0]
	}
	var measured []int
	for i, f := range each {
		if f.Verdict != report.NotMeasured {
			measured = append(measured, i)
		}
	}
	switch len(measured) {
	case 0:
		return each[0]
	case 1:
		// One facet measured it: say which.
		f := each[measured[0]]
		label := facets[measured[0]] + ": "
		f.Measured, f.Why = label+f.Measured, label+f.Why
		if f.Spread != "" {
			f.Spread = label + f.Spread
		}
		return f
	}
	out := report.Finding{Published: p.Finding, Verdict: report.Reproduced}
	var ms, models, spreads, whys []string
	sameModel := true
	for _, i := range measured {
		f, label := each[i], facets[i]+": "
		ms = append(ms, label+f.Measured)
		models = append(models, label+f.Model)
		sameModel = sameModel && f.Model == each[measured[0]].Model
		if f.Spread != "" {
			spreads = append(spreads, label+f.Spread)
		}
		whys = append(whys, label+string(f.Verdict)+". "+f.Why)
		if f.Verdict != report.Reproduced {
			out.Verdict = report.Differs
		}
	}
	out.Measured = strings.Join(ms, "\n")
	out.Model = strings.Join(models, "\n")
	if sameModel {
		out.Model = each[measured[0]].Model
	}
	out.Spread = strings.Join(spreads, "; ")
	out.Why = strings.Join(whys, "\n")
	return out
}

type analysis struct {
	rd    *study.RunData
	links []string // link profiles in speed order
	// by experiment, client cost, link profile and facet
	sums map[string]*study.Summary
	// facetOf names a combination's values of swept variables the
	// study's own grouping does not cover; facets lists them in order.
	facetOf func(*study.Summary) string
	facets  []string
	// facet is the one the judges read now.
	facet string
}

func key(exp, cost, net, facet string) string { return exp + "|" + cost + "|" + net + "|" + facet }

func baseKey(s *study.Summary) string {
	return key(s.Params.String("experiment"), s.Params.String("client_cost"), linkOf(s.Results[0]).Profile, "")
}

func newAnalysis(rd *study.RunData) *analysis {
	a := &analysis{rd: rd, sums: map[string]*study.Summary{}}
	a.facetOf, a.facets = rd.Facets(baseKey)
	rank := map[string]float64{}
	for _, s := range rd.Summaries {
		l := linkOf(s.Results[len(s.Results)-1])
		a.sums[key(s.Params.String("experiment"), s.Params.String("client_cost"), l.Profile, a.facetOf(s))] = s
		if _, ok := rank[l.Profile]; !ok {
			rank[l.Profile] = speedRank(l)
			a.links = append(a.links, l.Profile)
		}
	}
	slices.SortStableFunc(a.links, func(x, y string) int {
		switch {
		case rank[x] < rank[y]:
			return -1
		case rank[x] > rank[y]:
			return 1
		}
		return 0
	})
	return a
}

const fast = "0s"

// slowCost finds the slow client's cost in the run ("25us"), if any.
func (a *analysis) slowCost() string {
	for _, s := range a.rd.Summaries {
		if c := s.Params.String("client_cost"); c != fast && c != "" {
			return c
		}
	}
	return ""
}

func (a *analysis) sum(exp, cost, net string) *study.Summary {
	return a.sums[key(exp, cost, net, a.facet)]
}

func (a *analysis) mean(exp, cost, net, metric string) float64 {
	if s := a.sum(exp, cost, net); s != nil {
		return s.Mean(metric)
	}
	return math.NaN()
}

func (a *analysis) stat(exp, cost, net, metric string) study.Stat {
	if s := a.sum(exp, cost, net); s != nil {
		return s.Stats[metric]
	}
	return study.Stat{}
}

// predicted is the model's value stored when the point ran (its last run).
func (a *analysis) predicted(exp, cost, net, metric string) float64 {
	return storedModel(a.sum(exp, cost, net), metric)
}

func storedModel(s *study.Summary, metric string) float64 {
	if s == nil {
		return math.NaN()
	}
	if v, ok := s.Results[len(s.Results)-1].Model[metric]; ok {
		return v
	}
	return math.NaN()
}

func (a *analysis) judgeServerSide(f *report.Finding, _ study.Published) {
	const far, rtt = "rtt-77ms", 0.077
	var parts []string
	measured, within := false, true
	for _, exp := range []string{"server-loop", "server-cursor"} {
		near, wan := a.mean(exp, fast, "unix", "seconds"), a.mean(exp, fast, far, "seconds")
		rows := a.mean(exp, fast, far, "rows")
		if math.IsNaN(near) || math.IsNaN(wan) {
			continue
		}
		measured = true
		parts = append(parts, fmt.Sprintf("%s over %.0f rows: %s on the unix socket, %s across 77 ms (%+.1f RTTs; one RTT per row would be %s)",
			exp, rows, fmtSec(near), fmtSec(wan), (wan-near)/rtt, fmtSec(rows*rtt)))
		// A few round trips (the query, the server's own noise) is the
		// finding; one per row would be rows × RTT.
		within = within && wan-near < 5*rtt
	}
	if !measured {
		return
	}
	f.Measured = strings.Join(parts, "; ")
	f.Spread = a.rd.Spread("seconds", a.stat("server-loop", fast, "unix", "seconds"), a.stat("server-loop", fast, far, "seconds"),
		a.stat("server-cursor", fast, "unix", "seconds"), a.stat("server-cursor", fast, far, "seconds"))
	f.Model = "t = rows × s_server + one RTT"
	if within {
		f.Verdict = report.Reproduced
		f.Why = "The whole loop runs inside the server and the client waits for one answer: 77 ms of latency costs one round trip (within this machine's noise), whatever the row count."
	} else {
		f.Verdict = report.Differs
		f.Why = "The link added more than a few round trips to work that runs inside the server; see the points table."
	}
}

func (a *analysis) judgeInfiniband(f *report.Finding, exp, what string, published float64) {
	t1, tib := a.mean(exp, fast, "lan-1g", "seconds"), a.mean(exp, fast, "infiniband", "seconds")
	if math.IsNaN(t1) || math.IsNaN(tib) {
		return
	}
	m1, mib := a.predicted(exp, fast, "lan-1g", "seconds"), a.predicted(exp, fast, "infiniband", "seconds")
	got, model := study.Change(tib, t1), study.Change(mib, m1)
	rows := a.mean(exp, fast, "lan-1g", "rows")
	f.Measured = fmt.Sprintf("%s, %.0f %s: %s over lan-1g, %s over infiniband: %s", exp, rows, what, fmtSec(t1), fmtSec(tib), study.FormatPercent(got))
	s1, sib := a.stat(exp, fast, "lan-1g", "seconds"), a.stat(exp, fast, "infiniband", "seconds")
	f.Spread = a.rd.Spread("seconds", s1, sib)
	if !study.Separated(s1, sib) {
		f.Spread += " (the two links' runs overlap)"
	}
	f.Model = study.FormatPercent(model)
	// The finding is that a 40x faster link gains little: a change within
	// twice the seed's figure (at least 10 %) either way says the same.
	tolerance := math.Max(2*math.Abs(published), 10)
	switch {
	case math.Abs(got) <= tolerance:
		f.Verdict = report.Reproduced
		f.Why = fmt.Sprintf("A 40x faster link changes the time by %s: the consumer's rate, not the link, decides how fast the rows arrive.", study.FormatPercent(got))
	case got > 0:
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("The faster link came out %.0f %% slower, where the model expects %s: the emulated link's own CPU cost per segment, on a 2-core machine it shares with the server and the client, and this machine's noise decide here, not the link's rate or delay.", got, study.FormatPercent(model))
	default:
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("Here the faster link changed the time by %s, against the seed's %.0f %%: the link's rate, not the client, limits this stream on this machine.", study.FormatPercent(got), published)
	}
}

// wanLink reports whether a link's RTT is at least 1 ms: there the round
// trip dominates a row; below it the proxy's own cost per round trip shows.
func (a *analysis) wanLink(net string) bool {
	s := a.sum("client-row-by-row", fast, net)
	return s != nil && linkOf(s.Results[0]).RTTSeconds >= 1e-3
}

func (a *analysis) judgeRoundTrip(f *report.Finding, _ study.Published) {
	var wanWorst, lanWorst float64
	var parts []string
	var stats []study.Stat
	n := 0
	for _, net := range a.links {
		got, model := a.mean("client-row-by-row", fast, net, "us_per_row"), a.predicted("client-row-by-row", fast, net, "us_per_row")
		if math.IsNaN(got) || math.IsNaN(model) {
			continue
		}
		n++
		stats = append(stats, a.stat("client-row-by-row", fast, net, "us_per_row"))
		e := math.Abs(study.PercentError(got, model))
		if a.wanLink(net) {
			wanWorst = max(wanWorst, e)
		} else {
			lanWorst = max(lanWorst, e)
		}
		parts = append(parts, fmt.Sprintf("%s %s/row", net, units.FormatDuration(usDur(got))))
	}
	if n == 0 {
		return
	}
	f.Measured = strings.Join(parts, ", ")
	f.Spread = study.RelativeSpread(stats...)
	f.Model = fmt.Sprintf("t/row = RTT + per-row cost fitted on the fastest path; worst error %.0f %% at RTTs of 1 ms and more, %.0f %% below", wanWorst, lanWorst)
	if wanWorst <= 25 {
		f.Verdict = report.Reproduced
		f.Why = "Each row waits a whole round trip: the time per row follows the RTT one for one, from microseconds on a socket to the full WAN latency."
		if lanWorst > 25 {
			f.Why += fmt.Sprintf(" Below 1 ms the emulated link's own cost per round trip on this busy 2-core machine adds up to %.0f %%; see docs/link.md.", lanWorst)
		}
	} else {
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("The model misses a WAN link by %.0f %%; see the chart of time per row.", wanWorst)
	}
}

func (a *analysis) judgeSlowClient(f *report.Finding, _ study.Published) {
	slow := a.slowCost()
	if slow == "" {
		f.Why = "This run has no slow client (client_cost)."
		return
	}
	// The seed's comparison is its cursor sending 10^7 result sets: here
	// cursor-messages. The other experiments show the same client cost
	// where each row waits a round trip, and where rows stream.
	var parts []string
	var clientEffect, linkEffect float64 = math.NaN(), math.NaN()
	for _, exp := range []string{"cursor-messages", "client-row-by-row", "client-stream"} {
		tf, ts := a.mean(exp, fast, "lan-1g", "us_per_row"), a.mean(exp, slow, "lan-1g", "us_per_row")
		if math.IsNaN(tf) || math.IsNaN(ts) {
			continue
		}
		diff, more := ts-tf, "more"
		if diff < 0 { // the machine's noise outweighed the client's cost
			diff, more = -diff, "less"
		}
		part := fmt.Sprintf("%s over lan-1g: slow/fast = %.2fx (%s/row %s)", exp, ts/tf, units.FormatDuration(usDur(diff)), more)
		if exp == "cursor-messages" {
			clientEffect = study.Change(ts, tf)
			if tfi := a.mean(exp, fast, "infiniband", "us_per_row"); !math.IsNaN(tfi) {
				linkEffect = study.Change(tfi, tf)
				part += fmt.Sprintf(", where infiniband instead of lan-1g changed it by %s", study.FormatPercent(linkEffect))
			}
		}
		parts = append(parts, part)
	}
	if len(parts) == 0 {
		return
	}
	f.Measured = strings.Join(parts, "; ")
	f.Spread = a.rd.Spread("us_per_row", a.stat("cursor-messages", fast, "lan-1g", "us_per_row"), a.stat("cursor-messages", slow, "lan-1g", "us_per_row"))
	f.Model = "t/row = RTT + s_server + s_client: the slow client adds " + slow + " per row"
	switch {
	case math.IsNaN(clientEffect):
		f.Verdict = report.NotMeasured
		f.Why = "cursor-messages, the seed's experiment, has no slow-client point in this run."
	case clientEffect > 30 && (math.IsNaN(linkEffect) || clientEffect > math.Abs(linkEffect)):
		f.Verdict = report.Reproduced
		f.Why = "The client's per-row time moves the total more than a 40x faster link does: the client decides."
	default:
		f.Verdict = report.Differs
		f.Why = "Here the link moved the total as much as the client's speed did."
	}
}

// consumerRate is what the client absorbs of a stream on the fastest TCP
// path (direct loopback, no link), the model's consumer rate for links.
func (a *analysis) consumerRate(exp string) (float64, string) {
	if v := a.mean(exp, fast, "direct", "throughput_bps"); !math.IsNaN(v) {
		return v, "direct loopback TCP"
	}
	return a.mean(exp, fast, "unix", "throughput_bps"), "the unix socket"
}

func (a *analysis) judgeWide1G(f *report.Finding, _ study.Published) {
	got := a.mean("wide-rows", fast, "lan-1g", "throughput_bps")
	consumer, where := a.consumerRate("wide-rows")
	if math.IsNaN(got) {
		return
	}
	f.Measured = fmt.Sprintf("%s over lan-1g; the client alone absorbs %s on %s", units.Rate(got), units.Rate(consumer), where)
	f.Spread = a.rd.Spread("throughput_bps", a.stat("wide-rows", fast, "lan-1g", "throughput_bps"))
	f.Model = fmt.Sprintf("min(1 Gbit/s, window/RTT, consumer) = %s", units.Rate(a.predicted("wide-rows", fast, "lan-1g", "throughput_bps")))
	if got > 0.85e9 && got < 1.05e9 && consumer > 1.2e9 {
		f.Verdict = report.Reproduced
		f.Why = "The consumer could take more; the 1 Gbit/s link caps the stream at its rate."
	} else {
		f.Verdict = report.Differs
		f.Why = "The stream did not run at the link's rate: see the throughput chart."
	}
}

func (a *analysis) judgeWideConsumer(f *report.Finding, _ study.Published) {
	ib := a.mean("wide-rows", fast, "infiniband", "throughput_bps")
	consumer, where := a.consumerRate("wide-rows")
	if math.IsNaN(ib) || math.IsNaN(consumer) {
		return
	}
	f.Measured = fmt.Sprintf("%s over infiniband; the client absorbs %s on %s", units.Rate(ib), units.Rate(consumer), where)
	f.Spread = a.rd.Spread("throughput_bps", a.stat("wide-rows", fast, "infiniband", "throughput_bps"))
	f.Model = fmt.Sprintf("min(40 Gbit/s, consumer) = %s", units.Rate(a.predicted("wide-rows", fast, "infiniband", "throughput_bps")))
	if ib >= 0.8*consumer {
		f.Verdict = report.Reproduced
		f.Why = "Far below the link's 40 Gbit/s and close to what the client absorbs without a link: the consumer decides, as in the seed."
	} else {
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("The stream reached %.0f %% of what the client absorbs without a link: on this 2-core machine the emulated link's own forwarding rate (see docs/link.md), not the consumer, caps a 40 Gbit/s link.", ib/consumer*100)
	}
}

func usDur(us float64) (d time.Duration) { return time.Duration(us * 1e3) }

func fmtSec(s float64) string { return units.FormatDuration(time.Duration(s * 1e9)) }

// linkLabel is a category of the link axis: the profile and its RTT.
func (a *analysis) linkLabel(net string) string {
	for _, s := range a.rd.Summaries {
		l := linkOf(s.Results[0])
		if l.Profile != net {
			continue
		}
		switch l.Mode {
		case "unix":
			return "unix socket"
		case "direct":
			return "direct TCP"
		}
		return fmt.Sprintf("%s (%s)", net, units.FormatDuration(time.Duration(l.RTTSeconds*1e9)))
	}
	return net
}

func (a *analysis) categories() []string {
	var out []string
	for _, n := range a.links {
		out = append(out, a.linkLabel(n))
	}
	return out
}

// linkSeries draws a metric of one experiment and client across the links,
// for each facet: every run as a dot, the kept value as a line, the stored
// model dashed; values are divided by unit.
func (a *analysis) linkSeries(exp, cost, metric, name string, unit float64) []report.Series {
	var out []report.Series
	for _, facet := range a.facets {
		label := name
		if facet != "" && len(a.facets) > 1 {
			label += ", " + facet
		}
		runs := report.Series{Name: label + ", runs", Style: report.Points}
		line := report.Series{Name: label, Style: report.Line}
		model := report.Series{Name: label + ", model", Style: report.Model}
		for i, net := range a.links {
			s, ok := a.sums[key(exp, cost, net, facet)]
			if !ok {
				continue
			}
			x := float64(i)
			for _, v := range s.Stats[metric].Runs {
				runs.Points = append(runs.Points, report.XY{X: x, Y: v / unit, Label: net})
			}
			line.Points = append(line.Points, report.XY{X: x, Y: s.Mean(metric) / unit, Label: net})
			if m := storedModel(s, metric); !math.IsNaN(m) {
				model.Points = append(model.Points, report.XY{X: x, Y: m / unit, Label: net})
			}
		}
		if len(line.Points) > 0 {
			out = append(out, runs, line, model)
		}
	}
	return out
}

func (a *analysis) perRowChart() report.Chart {
	c := report.Chart{
		ID:          "per-row",
		Title:       "Row by row: time per row against the link",
		Subtitle:    "client-row-by-row, one round trip per row",
		XLabel:      "link (ordered by RTT)",
		YLabel:      "time per row (µs, log)",
		YLog:        true,
		XCategories: a.categories(),
		Note:        a.rd.RunsCaption() + "; the dashed line is the model, RTT + the per-row cost fitted on the fastest path.",
	}
	for _, cost := range []string{fast, a.slowCost()} {
		if cost == "" {
			continue
		}
		name := "fast client"
		if cost != fast {
			name = "slow client (+" + cost + "/row)"
		}
		c.Series = append(c.Series, a.linkSeries("client-row-by-row", cost, "us_per_row", name, 1)...)
	}
	return c
}

func (a *analysis) throughputChart() report.Chart {
	c := report.Chart{
		ID:          "throughput",
		Title:       "Streaming: throughput against the link",
		Subtitle:    "one result set streamed to a client that discards the rows",
		XLabel:      "link (ordered by RTT)",
		YLabel:      "throughput (Mbit/s of protocol bytes, log)",
		YLog:        true,
		XCategories: a.categories(),
		Note:        a.rd.RunsCaption() + "; the dashed line is the model, min(link rate, window / RTT, consumer rate) with the consumer rate measured on the fastest path.",
	}
	for _, exp := range []string{"client-stream", "wide-rows", "cursor-messages"} {
		c.Series = append(c.Series, a.linkSeries(exp, fast, "throughput_bps", exp, 1e6)...)
	}
	return c
}

func (a *analysis) experimentsChart() report.Chart {
	c := report.Chart{
		ID:          "experiments",
		Title:       "Every experiment: time per row against the link",
		XLabel:      "link (ordered by RTT)",
		YLabel:      "time per row (µs, log)",
		YLog:        true,
		XCategories: a.categories(),
		Note:        "The kept value of each experiment (fast client). Set-based work on the server is flat; streaming barely moves; row by row follows the RTT.",
	}
	for _, exp := range Experiments {
		for _, facet := range a.facets {
			name := exp
			if len(a.facets) > 1 {
				name += ", " + facet
			}
			s := report.Series{Name: name, Style: report.Line}
			for i, net := range a.links {
				if sm, ok := a.sums[key(exp, fast, net, facet)]; ok {
					s.Points = append(s.Points, report.XY{X: float64(i), Y: sm.Mean("us_per_row"), Label: net})
				}
			}
			if len(s.Points) > 0 {
				c.Series = append(c.Series, s)
			}
		}
	}
	return c
}

func (a *analysis) experimentTables() []report.Section {
	sec := report.Section{
		Title: "Each experiment by link",
		Text:  "Kept values (fast client). Error = (measured - model) / model, with the model stored when the point ran; the link a model was fitted on shows its own fit.",
	}
	for _, exp := range Experiments {
		metric := "us_per_row"
		if exp == "client-stream" || exp == "wide-rows" || exp == "cursor-messages" {
			metric = "throughput_bps"
		}
		for _, facet := range a.facets {
			title := exp
			if len(a.facets) > 1 {
				title += ", " + facet
			}
			t := report.Table{Title: title, Columns: []string{"link", "rows", "seconds", metric, "model", "error", "model formula"}}
			for _, net := range a.links {
				s, ok := a.sums[key(exp, fast, net, facet)]
				if !ok {
					continue
				}
				got, model := s.Mean(metric), storedModel(s, metric)
				t.Rows = append(t.Rows, []string{a.linkLabel(net), fmt.Sprintf("%.0f", s.Mean("rows")), fmtSec(s.Mean("seconds")),
					a.rd.FormatMetric(metric, got), a.rd.FormatMetric(metric, model), study.FormatPercent(study.PercentError(got, model)),
					s.Results[len(s.Results)-1].Formula})
			}
			if len(t.Rows) > 0 {
				sec.Tables = append(sec.Tables, t)
			}
		}
	}
	return []report.Section{sec}
}
