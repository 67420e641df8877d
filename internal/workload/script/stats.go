package script

import (
	"time"

	"github.com/dbrig/dbrig/internal/measure"
)

// window is the measured interval, set when the run's clock starts; what
// ends outside it is not counted, as the load layer counts transactions.
// Zero counts everything (a run whose clock dbrig does not see).
type window struct{ from, to time.Time }

func (w *window) counts(t time.Time) bool {
	if w == nil || w.from.IsZero() {
		return true
	}
	return !t.Before(w.from) && t.Before(w.to)
}

// clientStats are one client's figures, kept without a lock (one goroutine
// writes them) and summed once the run is over.
type clientStats struct {
	scripts []scriptStats
	// The transaction in progress: time waiting for the server and asleep.
	txWait, txSleep time.Duration
}

// scriptStats are one script's figures: its commands', and over the
// transactions that succeeded in the measured interval, the retries and
// what each cost on the wire.
type scriptStats struct {
	commands []commandStats
	// Transactions that succeeded, and those of them and of the failed
	// ones that were tried again (pgbench's "retried"), and the retries.
	ok, retried, retries int64
	// Sums over the successful transactions: round trips (the times the
	// client waited for the server), bytes each way, the time spent
	// waiting for the server, asleep (\sleep), and in all.
	trips, bytesOut, bytesIn int64
	wait, sleep, total       time.Duration
}

// commandStats are one command's latencies (pgbench -r) and the errors at
// it: failures (not tried again) and retries.
type commandStats struct {
	latency           *measure.Histogram
	failures, retries int64
}

func newClientStats(p *Program) *clientStats {
	st := &clientStats{scripts: make([]scriptStats, len(p.Scripts))}
	for i, s := range p.Scripts {
		st.scripts[i].commands = make([]commandStats, len(s.Commands))
		for j, c := range s.Commands {
			if timed(c.Type) {
				st.scripts[i].commands[j].latency = measure.NewHistogram()
			}
		}
	}
	return st
}

// timed reports whether a command's latency is kept: SQL, the wait at the
// end of a pipeline, and sleeps.
func timed(k CommandType) bool { return k == SQLCommand || k == EndPipeline || k == Sleep }

// statement records an SQL command (or a pipeline's end) that started at
// start and ended now.
func (st *clientStats) statement(w *window, s, c int, start time.Time) {
	now := time.Now()
	d := now.Sub(start)
	st.txWait += d
	if w.counts(now) {
		st.scripts[s].commands[c].latency.Record(d)
	}
}

func (st *clientStats) sleep(w *window, s, c int, start time.Time) {
	now := time.Now()
	d := now.Sub(start)
	st.txSleep += d
	if w.counts(now) {
		st.scripts[s].commands[c].latency.Record(d)
	}
}

// merge adds another client's figures.
func (st *clientStats) merge(o *clientStats) {
	for i := range st.scripts {
		a, b := &st.scripts[i], &o.scripts[i]
		a.ok += b.ok
		a.retried += b.retried
		a.retries += b.retries
		a.trips += b.trips
		a.bytesOut += b.bytesOut
		a.bytesIn += b.bytesIn
		a.wait += b.wait
		a.sleep += b.sleep
		a.total += b.total
		for j := range a.commands {
			ac, bc := &a.commands[j], &b.commands[j]
			ac.failures += bc.failures
			ac.retries += bc.retries
			if ac.latency != nil {
				ac.latency.Merge(bc.latency)
			}
		}
	}
}
