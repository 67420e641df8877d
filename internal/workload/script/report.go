package script

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/dbrig/dbrig/internal/load"
	"github.com/dbrig/dbrig/internal/measure"
)

// Report is a run's figures per script and per command, in pgbench's
// terms (its per-script report and -r), over the measured interval.
type Report struct {
	Protocol string
	Scripts  []ScriptReport
}

// ScriptReport is one script's figures. The means are over the
// transactions that succeeded.
type ScriptReport struct {
	Name   string // the transaction type's name
	Metric string // its metrics' prefix
	Weight int
	// Ops succeeded; Failed failed after their last try, by class.
	Ops     int64
	TPS     float64
	Failed  load.ErrorCounts
	Latency *measure.Histogram
	// Retried counts the transactions tried more than once (succeeded or
	// not), Retries the tries after the first, as pgbench 15 counts them.
	Retried, Retries int64
	// RoundTrips are the turns of the conversation a transaction took on
	// the wire, the writes after a read (one per statement, one per
	// pipeline): what a link adds its delay to. Bytes each way on the wire.
	RoundTrips, BytesOut, BytesIn float64
	// Wait is the time waiting for the server (the round trips and the
	// server's work), Sleep the time in \sleep, Client the rest: the
	// client's own work.
	Wait, Sleep, Client time.Duration
	Commands            []CommandReport
}

// CommandReport is one command's figures: its latency (SQL, \sleep and a
// pipeline's end; nil for meta commands the client runs at once), and the
// errors met at it that failed the transaction or were retried.
type CommandReport struct {
	Line              int
	Text              string
	Latency           *measure.Histogram
	Failures, Retries int64
}

func newReport(prog *Program, res *load.Result, st *clientStats) Report {
	rep := Report{Protocol: prog.Protocol}
	seen := map[string]int{}
	for i, s := range prog.Scripts {
		sc := &st.scripts[i]
		r := ScriptReport{Name: prog.TypeName(i), Weight: s.Weight, Retried: sc.retried, Retries: sc.retries}
		r.Metric = metricName(s.Name)
		if seen[r.Metric]++; seen[r.Metric] > 1 {
			r.Metric = fmt.Sprintf("%s_%d", r.Metric, seen[r.Metric])
		}
		if i < len(res.Types) {
			t := res.Types[i]
			r.Ops, r.TPS, r.Failed, r.Latency = t.Ops, t.TPS, t.Errors, t.Latency
		}
		if sc.ok > 0 {
			n := float64(sc.ok)
			r.RoundTrips, r.BytesOut, r.BytesIn = float64(sc.trips)/n, float64(sc.bytesOut)/n, float64(sc.bytesIn)/n
			r.Wait, r.Sleep = sc.wait/time.Duration(sc.ok), sc.sleep/time.Duration(sc.ok)
			r.Client = max(sc.total/time.Duration(sc.ok)-r.Wait-r.Sleep, 0)
		}
		for j, c := range s.Commands {
			cs := sc.commands[j]
			r.Commands = append(r.Commands, CommandReport{Line: c.Line, Text: c.Text, Latency: cs.latency, Failures: cs.failures, Retries: cs.retries})
		}
		rep.Scripts = append(rep.Scripts, r)
	}
	return rep
}

// WriteText prints the report as pgbench prints its per-script report and
// its statement latencies (-r), with what dbrig adds: the percentiles, the
// round trips and bytes per transaction, and where the time went.
func (r Report) WriteText(w io.Writer) error {
	var b strings.Builder
	total := 0
	for _, s := range r.Scripts {
		total += s.Weight
	}
	for i, s := range r.Scripts {
		ended := s.Ops + s.Failed.Total()
		fmt.Fprintf(&b, "SQL script %d: %s\n", i+1, s.Name)
		fmt.Fprintf(&b, " - weight: %d (targets %.1f%% of total)\n", s.Weight, 100*float64(s.Weight)/float64(max(total, 1)))
		fmt.Fprintf(&b, " - number of transactions actually processed: %d (tps = %f)\n", s.Ops, s.TPS)
		fmt.Fprintf(&b, " - number of failed transactions: %d (%.3f%%)%s\n", s.Failed.Total(), percent(s.Failed.Total(), ended), failedText(s.Failed))
		fmt.Fprintf(&b, " - number of transactions retried: %d (%.3f%%)\n", s.Retried, percent(s.Retried, ended))
		fmt.Fprintf(&b, " - total number of retries: %d\n", s.Retries)
		fmt.Fprintf(&b, " - per transaction: %.2f round trips, %.0f bytes sent, %.0f received; %s waiting for the server, %s asleep, %s in the client\n",
			s.RoundTrips, s.BytesOut, s.BytesIn, ms(s.Wait), ms(s.Sleep), ms(s.Client))
		fmt.Fprintf(&b, " - statement latencies in milliseconds (mean, p50, p99), failures and retries:\n")
		for _, c := range s.Commands {
			if c.Latency == nil || c.Latency.Count() == 0 {
				fmt.Fprintf(&b, "   %11s %9s %9s  %10d %10d  %s\n", "-", "-", "-", c.Failures, c.Retries, c.Text)
				continue
			}
			h := c.Latency
			fmt.Fprintf(&b, "   %11.3f %9.3f %9.3f  %10d %10d  %s\n", msf(h.Mean()), msf(h.Quantile(0.5)), msf(h.Quantile(0.99)), c.Failures, c.Retries, c.Text)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func percent(n, of int64) float64 {
	if of == 0 {
		return 0
	}
	return 100 * float64(n) / float64(of)
}

func failedText(e load.ErrorCounts) string {
	if e.Total() == 0 {
		return ""
	}
	return " (" + e.String() + ")"
}

func msf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
func ms(d time.Duration) string   { return fmt.Sprintf("%.3f ms", msf(d)) }
