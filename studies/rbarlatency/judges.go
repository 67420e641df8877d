package rbarlatency

import (
	"fmt"
	"math"
	"strings"

	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/units"
)

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
				out := study.NotMeasured(p, "This run has no point that measures it.")
				a.facet = facet
				f(a, &out, p)
				each = append(each, out)
			}
			return study.MergeFindings(p, a.facets, each, study.OmitUnmeasured)
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
		"round-trip-per-row":  judge((*analysis).judgeRoundTrip),
		"slow-client":         judge((*analysis).judgeSlowClient),
		"wide-rows-1g":        judge((*analysis).judgeWide1G),
		"wide-rows-consumer":  judge((*analysis).judgeWideConsumer),
		"vm-penalty":          judge((*analysis).judgeVMPenalty),
		"bond-one-connection": judge((*analysis).judgeBond),
		"same-host-fast-only": judge((*analysis).judgeSameHost),
	}
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
			exp, rows, study.FormatSeconds(near), study.FormatSeconds(wan), (wan-near)/rtt, study.FormatSeconds(rows*rtt)))
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
	f.Measured = fmt.Sprintf("%s, %.0f %s: %s over lan-1g, %s over infiniband: %s", exp, rows, what, study.FormatSeconds(t1), study.FormatSeconds(tib), study.FormatPercent(got))
	s1, sib := a.stat(exp, fast, "lan-1g", "seconds"), a.stat(exp, fast, "infiniband", "seconds")
	f.Spread = a.rd.Spread("seconds", s1, sib)
	if !study.Separated(s1, sib) {
		f.Spread += " (the two links' runs overlap)"
	}
	f.Model = study.FormatPercent(model)
	// The finding is that a 40x faster link gains little: a gain up to
	// twice the seed's figure (at least 10 %) says the same. A faster link
	// that came out slower says something else, unless its runs overlap
	// the slower link's, where the runs cannot tell the two apart.
	tolerance := math.Max(2*math.Abs(published), 10)
	switch {
	case got <= 0 && -got <= tolerance:
		f.Verdict = report.Reproduced
		f.Why = fmt.Sprintf("A 40x faster link changes the time by %s: the consumer's rate, not the link, decides how fast the rows arrive.", study.FormatPercent(got))
	case got > 0 && !study.Separated(s1, sib):
		f.Verdict = report.WithinNoise
		f.Why = fmt.Sprintf("The faster link came out %.1f %% slower, but the two links' runs overlap: the runs tell neither a gain nor a loss, where the seed saw %.0f %%.", got, published)
	case got > 0:
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("The faster link came out %.1f %% slower, beyond the runs' spread, where the model expects %s: the emulated link's own CPU cost per segment, on a 2-core machine it shares with the server and the client, and this machine's noise decide here, not the link's rate or delay.", got, study.FormatPercent(model))
	default:
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("Here the faster link changed the time by %s, against the seed's %.0f %%: the link's rate, not the client, limits this stream on this machine.", study.FormatPercent(got), published)
	}
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

func (a *analysis) judgeSlowClient(f *report.Finding, p study.Published) {
	speed, bySpeed := a.clientSpeedRatio()
	if bySpeed {
		defer func() { a.judgeSlowClientSpeed(f, speed, a.linkEffect()) }()
	}
	a.judgeSlowClientCost(f, p)
}

// linkEffect is the change in cursor-messages' time per row from lan-1g to
// infiniband (NaN when either is missing).
func (a *analysis) linkEffect() float64 {
	tf, tfi := a.mean("cursor-messages", fast, "lan-1g", "us_per_row"), a.mean("cursor-messages", fast, "infiniband", "us_per_row")
	return study.Change(tfi, tf)
}

func (a *analysis) judgeSlowClientCost(f *report.Finding, _ study.Published) {
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
		// The slow client is the seed's own 25 µs per row put in by
		// dbrig: that it outweighs the link follows from the setting, so
		// it cannot confirm the seed. Only the opposite is news.
		f.Verdict = report.NotMeasured
		f.Why = "The client's per-row time moves the total more than a 40x faster link does, but the slow client here is dbrig's own " + slow + " per row (client_cost), the seed's difference set by hand: the run shows the setting, not a slower client. A client on a slower CPU would measure it."
	default:
		f.Verdict = report.Differs
		f.Why = "Here the link moved the total as much as the client's speed did."
	}
}

func (a *analysis) judgeWide1G(f *report.Finding, _ study.Published) {
	got := a.mean("wide-rows", fast, "lan-1g", "throughput_bps")
	nl := a.noLinkRate("wide-rows")
	if math.IsNaN(got) {
		return
	}
	f.Measured = fmt.Sprintf("%s over lan-1g; without a link %s", units.Rate(got), nl.ends())
	f.Spread = a.rd.Spread("throughput_bps", a.stat("wide-rows", fast, "lan-1g", "throughput_bps"))
	f.Model = fmt.Sprintf("min(1 Gbit/s, window/RTT, consumer) = %s", units.Rate(a.predicted("wide-rows", fast, "lan-1g", "throughput_bps")))
	if got > 0.85e9 && got < 1.05e9 && nl.rate > 1.2e9 {
		f.Verdict = report.Reproduced
		f.Why = "Both ends could move more; the 1 Gbit/s link caps the stream at its rate."
	} else {
		f.Verdict = report.Differs
		f.Why = "The stream did not run at the link's rate: see the throughput chart."
	}
}

func (a *analysis) judgeWideConsumer(f *report.Finding, _ study.Published) {
	ib := a.mean("wide-rows", fast, "infiniband", "throughput_bps")
	nl := a.noLinkRate("wide-rows")
	if math.IsNaN(ib) || math.IsNaN(nl.rate) {
		return
	}
	f.Measured = fmt.Sprintf("%s over infiniband; without a link %s", units.Rate(ib), nl.ends())
	f.Spread = a.rd.Spread("throughput_bps", a.stat("wide-rows", fast, "infiniband", "throughput_bps"))
	f.Model = fmt.Sprintf("min(40 Gbit/s, consumer) = %s", units.Rate(a.predicted("wide-rows", fast, "infiniband", "throughput_bps")))
	switch {
	case nl.serverBound():
		// The seed's consumer decides; here the server's one process does,
		// so the comparison says nothing of the consumer.
		f.Verdict = report.NotMeasured
		f.Why = fmt.Sprintf("Without a link the server's process was busy %.2f CPUs: the rate there is the server's send rate, not what the consumer absorbs, so this run cannot show the consumer deciding.", nl.serverCPU)
	case ib >= 0.8*nl.rate:
		f.Verdict = report.Reproduced
		f.Why = "Far below the link's 40 Gbit/s and close to the rate without a link, where the server had CPU to spare: the consumer decides, as in the seed."
		if math.IsNaN(nl.serverCPU) {
			f.Why = "Far below the link's 40 Gbit/s and close to the rate without a link: the ends decide, not the link (no CPU sample of the server says which end; the seed's was the consumer)."
		}
	default:
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("The stream reached %.0f %% of the rate without a link: on this 2-core machine the emulated link's own forwarding rate (see docs/link.md), not the consumer, caps a 40 Gbit/s link.", ib/nl.rate*100)
	}
}

// The bond's finding reads the wide-rows stream: the one stream that one
// 1 Gbit/s link caps (wide-rows-1g), so the one a second member could
// speed up if a connection could use it.
const (
	bondNet, memberNet = "lan-2x1g", "lan-1g"
	// bondSame is the change in rate between the bond and one member
	// within which one connection gained nothing: two points of the same
	// physics, run apart on a shared machine.
	bondSame = 10.0
	// memberFull is the share of a member's rate from which the stream is
	// held by the link, not by an end.
	memberFull = 0.85
)

func (a *analysis) judgeBond(f *report.Finding, _ study.Published) {
	one, bond := a.mean("wide-rows", fast, memberNet, "throughput_bps"), a.mean("wide-rows", fast, bondNet, "throughput_bps")
	s := a.sum("wide-rows", fast, bondNet)
	if math.IsNaN(one) || math.IsNaN(bond) || s == nil {
		return
	}
	l := study.LinkOf(s.Results[0])
	member := l.RateBitsPerS
	gain := study.Change(bond, one)
	f.Measured = fmt.Sprintf("one wide-rows stream (one connection): %s over %s, %s over %s (%s)",
		units.Rate(one), memberNet, units.Rate(bond), bondNet, study.FormatPercent(gain))
	so, sb := a.stat("wide-rows", fast, memberNet, "throughput_bps"), a.stat("wide-rows", fast, bondNet, "throughput_bps")
	f.Spread = a.rd.Spread("throughput_bps", so, sb)
	f.Model = fmt.Sprintf("one connection rides one member: at most %s whatever the members", units.Rate(member))
	switch {
	case member > 0 && bond > 1.05*member:
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("One connection carried %.2fx one member's rate over the bond: the link spread it over members, which 802.3ad never does.", bond/member)
	case math.Abs(gain) > bondSame && !study.Separated(so, sb):
		f.Verdict = report.WithinNoise
		f.Why = fmt.Sprintf("The bond changed one connection's rate by %s, but the two links' runs overlap: the runs tell neither a gain nor a loss.", study.FormatPercent(gain))
	case math.Abs(gain) > bondSame:
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("The bond changed one connection's rate by %s, beyond the runs' spread, though it rode one member of the same rate: this machine's load moved between the points, not the link.", study.FormatPercent(gain))
	case member > 0 && one < memberFull*member:
		f.Verdict = report.NotMeasured
		f.Why = fmt.Sprintf("The stream reached %.0f %% of one member's rate over %s: an end, not the link, held it, so there was no cap for a second member to lift.", one/member*100, memberNet)
	default:
		f.Verdict = report.Reproduced
		f.Why = fmt.Sprintf("One member's %s caps the stream, and a second member adds nothing: the connection rides one member (the 802.3ad layer3+4 hash of its ports), as in the seed. More connections would spread over both.", units.Rate(member))
	}
}
