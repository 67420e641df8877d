package georeplication

import (
	"fmt"
	"strings"

	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/study"
)

// Judges decide the seed's findings, by id.
func Judges() map[string]study.Judge {
	out := map[string]study.Judge{}
	for id := range (&analysis{}).judges() {
		out[id] = func(rd *study.RunData, p study.Published) report.Finding {
			f := report.Finding{Published: p.Finding, Verdict: report.NotMeasured, Measured: "-", Model: "-",
				Why: "this run has no points that measure it"}
			newAnalysis(rd).judges()[id](&f, p)
			return f
		}
	}
	return out
}

func (a *analysis) judges() map[string]func(*report.Finding, study.Published) {
	j := map[string]func(*report.Finding, study.Published){
		"pull-beats-push": a.judgePullBeatsPush,
		"backup-fastest":  a.judgeBackup,
		"snapshot":        a.judgeSnapshot,
		"figure-6":        func(f *report.Finding, _ study.Published) { a.judgeShape(f, figure6) },
		"figure-7":        func(f *report.Finding, _ study.Published) { a.judgeShape(f, figure7) },
		"agent-profile":   a.judgeProfile,
	}
	for _, row := range table2 {
		j[row.id] = func(f *report.Finding, p study.Published) { a.judgeGain(f, p, row) }
	}
	return j
}

// judgeGain compares the gain of the autotuned window over the legacy one,
// the seed's way, on the WAN the seed measured (Tukwila-Blueridge, 77 ms).
func (a *analysis) judgeGain(f *report.Finding, p study.Published, row table2Row) {
	wan := "tukwila-blueridge"
	rows := a.largest(row.scenario, row.payload, wan)
	sa, arm := a.seedA(row.scenario, row.payload, rows, wan)
	sb := a.get(row.scenario, row.payload, rows, wan, autotuned)
	if sa == nil || sb == nil {
		return
	}
	ta, tb := sa.Mean("seconds"), sb.Mean("seconds")
	g := study.Gain(ta, tb)
	f.Measured = fmt.Sprintf("%s of %d rows over 77 ms: %s with %s, %s with 16 MiB: gain %s", row.scenario, rows, fmtSec(ta), armName(arm), fmtSec(tb), fmtGain(g))
	f.Model = fmt.Sprintf("%s and %s: gain %s", fmtSec(model(sa, "seconds")), fmtSec(model(sb, "seconds")), fmtGain(study.Gain(model(sa, "seconds"), model(sb, "seconds"))))
	published := p.Value
	if sameSpeedup(g, published) {
		f.Verdict = report.Reproduced
		f.Why = fmt.Sprintf("The larger window gave a speed-up of %s, within a factor %g of the seed's %s.", speedup(g), speedupTolerance, speedup(published))
	} else {
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("The larger window gave a speed-up of %s, beyond a factor %g of the seed's %s.", speedup(g), speedupTolerance, speedup(published))
	}
	switch row.scenario {
	case "push":
		if arm == stack {
			f.Why += " The stop-and-wait writer sends one 40 KB buffer at a time: the 2003 stack's 8 KB send buffer lets 8 KB of it in flight per round trip, five round trips a buffer, where the autotuned stack sends it in one (the seed credits send buffer scaling)."
		} else {
			f.Why += " The stop-and-wait writer sends one 40 KB buffer per round trip, which fits in a 64 KiB window: the window alone cannot speed it up. The seed credits its push gain to send buffer scaling: the legacy-stack profile (8 KB send buffer) is the arm that measures it."
		}
	case "pull":
		f.Why += " Pull streams one result set: a 64 KiB window holds it to 6.8 Mbit/s at 77 ms, the 16 MiB window lets it run at what the agent can apply."
	case "fdw-row":
		f.Why += " One round trip per row: the window never fills, latency decides."
	}
}

func (a *analysis) judgePullBeatsPush(f *report.Finding, _ study.Published) {
	var parts []string
	wins, total := 0, 0
	for _, wan := range a.wans {
		for _, window := range []string{legacy, autotuned} {
			rows := a.largest("push", "char-1k", wan)
			push, pull := a.get("push", "char-1k", rows, wan, window), a.get("pull", "char-1k", rows, wan, window)
			if push == nil || pull == nil {
				continue
			}
			total++
			tp, tl := push.Mean("seconds"), pull.Mean("seconds")
			if tl < tp {
				wins++
			}
			parts = append(parts, fmt.Sprintf("%s %s: push %s, pull %s", wan, window, fmtSec(tp), fmtSec(tl)))
		}
	}
	if total == 0 {
		return
	}
	f.Measured = strings.Join(parts, "; ")
	f.Model = "push pays one RTT per 40 KB buffer; pull streams at min(rate, window/RTT)"
	if wins == total {
		f.Verdict = report.Reproduced
		f.Why = "Pull beats push on every link and window: the reader's single result set streams across the WAN while the push writer waits a round trip for each buffer."
	} else {
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("Pull was faster in %d of %d cases.", wins, total)
	}
}

func (a *analysis) initTimes(wan, window string) (snap, backup *study.Summary, rows int64) {
	rows = a.largest("init-snapshot", "char-1k", wan)
	if rows == 0 {
		for _, s := range a.rd.Summaries {
			if s.Params.String("scenario") == "init-snapshot" {
				rows = max(rows, s.Params.Int("rows"))
			}
		}
	}
	return a.get("init-snapshot", "char-1k", rows, wan, window), a.get("init-backup", "char-1k", rows, wan, window), rows
}

func (a *analysis) judgeBackup(f *report.Finding, _ study.Published) {
	wan := "tukwila-dublin"
	var parts []string
	wins, total := 0, 0
	for _, window := range []string{legacy, autotuned} {
		snap, backup, rows := a.initTimes(wan, window)
		if snap == nil || backup == nil {
			continue
		}
		total++
		ts, tb := snap.Mean("seconds"), backup.Mean("seconds")
		if tb < ts {
			wins++
		}
		what := "64 KiB window"
		if window == autotuned {
			what = "16 MiB window"
		}
		shipped := ""
		if v := backup.Mean("shipped_bytes"); v > 0 {
			shipped = fmt.Sprintf(" (%s shipped for %s of archive)", study.FormatMetric("shipped_bytes", v), study.FormatMetric("init_bytes", backup.Mean("init_bytes")))
		}
		parts = append(parts, fmt.Sprintf("%d rows, %s: snapshot (COPY across the WAN) %s, backup %s%s", rows, what, fmtSec(ts), fmtSec(tb), shipped))
		f.Model = fmt.Sprintf("both stream what crosses at min(rate, window/RTT): snapshot %s, backup %s", fmtSec(model(snap, "seconds")), fmtSec(model(backup, "seconds")))
	}
	if total == 0 {
		return
	}
	f.Measured = "to Dublin (150 ms): " + strings.Join(parts, "; ")
	if wins == total {
		f.Verdict = report.Reproduced
		f.Why = "The backup is dumped at the publisher's site, shipped across the WAN compressed (zstd) and restored at the subscriber's site: a fraction of the bytes the snapshot's COPY sends cross the link, and pg_dump and pg_restore pay their catalog round trips locally."
	} else {
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("The backup was faster in %d of %d cases: where the link is fast enough, compressing, dumping and restoring cost more than the bytes they save.", wins, total)
	}
}

func (a *analysis) judgeSnapshot(f *report.Finding, p study.Published) {
	wan := "tukwila-blueridge"
	snap, _, rows := a.initTimes(wan, autotuned)
	if snap == nil {
		return
	}
	mbps := snap.Mean("mb_per_s")
	f.Measured = fmt.Sprintf("%d rows by snapshot over 77 ms (16 MiB window): %s, %.1f MB/s; at that rate the seed's 11.3 GB would take %.1f min",
		rows, fmtSec(snap.Mean("seconds")), mbps, 11.3e9/(mbps*1e6)/60)
	f.Model = fmtSec(model(snap, "seconds"))
	// The seed's hardware and dbrig's link and servers are different
	// machines: the projection says the same within a factor 3 either way.
	const within = 3
	minutes := 11.3e9 / (mbps * 1e6) / 60
	switch r := minutes / p.Value; {
	case r > within:
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("dbrig's snapshot would take %.1fx the seed's %.2f min, more than %dx slower; see the scenarios table.", r, p.Value, within)
	case r < 1.0/within:
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("dbrig's snapshot would take %.2fx the seed's %.2f min, more than %dx faster: at this size the link is not what limits it here (see the scenarios table).", r, p.Value, within)
	default:
		f.Verdict = report.Reproduced
		f.Why = fmt.Sprintf("Within a factor %d of the seed's %.2f min either way (%.2fx): the seed's 11.3 GB in 22.75 min is 8.3 MB/s; a snapshot streams the rows in one result set, so the window and the link's rate decide.", within, p.Value, r)
	}
}
