package load

import (
	"runtime"
	"sync"
	"time"
)

// claimRateBound is the highest rate at which the open loop's workers claim
// their arrivals ahead (see claimsAhead): past it the dispatcher's
// wake-ups are shared by several arrivals (minWakeInterval), cheaper than a
// timer of each worker's own for every arrival.
const claimRateBound = float64(time.Second / minWakeInterval)

// claimsAhead reports whether an open loop's free workers claim the next
// arrival ahead of its time and wait for it on their own timers, instead of
// the dispatcher waking at each arrival and handing it to a free worker.
// Either way an arrival goes to whichever worker is free first; the hand-off
// is what differs: it woke a second thread for every arrival, and its
// wake-up was start lag. Measured against pgbench -R (whose clients each
// sleep for their own schedule) at 2,000 point selects a second from 4
// clients, six rounds of 10 s each way (docs/load.md): the median start lag
// was 50 to 70 µs handed off and 30 to 34 µs claimed, the latency's p50 /
// p90 / p99 from the intended start 116-169 / 199-264 / 326-452 µs against
// 88-104 / 143-171 / 223-295 µs. It needs an in-flight bound of at least
// one a worker: a free worker then means the bound is not reached, so a
// claim never starts an arrival the bound would have turned away. A worker
// that claims yields every yieldEvery, as a closed-loop user does: without
// it sysmon preempted each worker every 10 ms and then polled every 20 µs,
// 6 context switches and 75 to 82 µs of CPU an arrival at 2,000 a second
// from 4 workers, against 2.5 and 44 µs with it (pgbench -R 1.9 and 23 to
// 31 µs).
func (c Config) claimsAhead() bool {
	return c.Open() && c.Rate <= claimRateBound && c.MaxInFlight >= c.Users
}

// arrivals is the open loop's schedule when the workers claim ahead: a free
// worker takes the next arrival that nobody has taken and waits for its
// time; the dispatcher wakes only when an arrival falls due that no worker
// claimed (every worker was busy), and queues it, or counts it as not
// started over the in-flight bound, as it does when it hands off.
type arrivals struct {
	mu    sync.Mutex
	sched *schedule
	off   time.Duration // the run's ArrivalOffset
	quota int64         // the run's Ops, 0 for none
	taken int64         // arrivals taken from sched so far
	next  time.Duration // the intended start of arrival taken-1, unclaimed
	done  bool          // the quota is spent: there is no next arrival
	disp  movableWaiter // the dispatcher's, re-armed for each new next
}

func newArrivals(cfg Config) *arrivals {
	a := &arrivals{sched: newSchedule(cfg.Rate, cfg.Arrival, cfg.RampUp, cfg.Seed), off: cfg.ArrivalOffset, quota: cfg.Ops}
	a.advance()
	return a
}

// advance draws the next arrival; a.mu is held (or a is not shared yet).
func (a *arrivals) advance() {
	if a.quota > 0 && a.taken >= a.quota {
		a.done = true
		return
	}
	a.next = a.sched.next() + a.off
	a.taken++
}

// peek returns the next unclaimed arrival and its number, ok false when the
// quota is spent.
func (a *arrivals) peek() (at time.Duration, seq int64, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.next, a.taken, !a.done
}

// claim gives a free worker its next arrival: one that fell due while every
// worker was busy (queued true; the dispatcher counted it in flight), else
// the next unclaimed one, whose time the worker waits for itself. ok is
// false when there is none left.
func (r *Runner) claim() (at time.Duration, queued, ok bool) {
	a := r.arrivals
	a.mu.Lock()
	defer a.mu.Unlock()
	select {
	case at := <-r.queue:
		return at, true, true
	default:
	}
	if a.done || r.stopped() {
		return 0, false, false
	}
	at = a.next
	a.advance()
	if a.disp != nil {
		if a.done {
			a.disp.rearm(0) // wake it to see that there is no more
		} else {
			a.disp.rearm(a.next)
		}
	}
	return at, false, true
}

// dispatchUnclaimed is the dispatcher of an open loop whose workers claim
// ahead: it sleeps until the next unclaimed arrival (a claim moves its
// timer on) and queues that arrival, or counts it as not started, when it
// falls due with nobody to claim it.
func (r *Runner) dispatchUnclaimed() {
	a := r.arrivals
	w := r.newWaiter(r, r.stopCtx)
	defer w.close()
	a.mu.Lock()
	a.disp = w
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		a.disp = nil
		a.mu.Unlock()
	}()
	limit := int64(r.cfg.MaxInFlight)
	for {
		at, seq, ok := a.peek()
		if !ok {
			return
		}
		if at > r.since() {
			if !w.waitUntil(at) {
				return
			}
		} else if r.stopped() {
			return
		}
		a.mu.Lock()
		if a.done || a.taken != seq || at > r.since() || r.stopped() { // claimed while the dispatcher slept, or woken early
			a.mu.Unlock()
			continue
		}
		r.enqueue(at, limit)
		a.advance()
		a.mu.Unlock()
	}
}

// claimArrivals is one open-loop worker that claims its arrivals ahead. An
// arrival counts as in flight from its intended start (or from when it was
// queued), not from its claim.
func (r *Runner) claimArrivals(u *user) {
	if r.dedicated {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	w := r.newUserWaiter(r, r.stopCtx)
	defer w.close()
	yielded := r.since()
	for {
		if now := r.since(); now-yielded >= yieldEvery {
			r.yield() // as a closed-loop user does, and for the same reason
			yielded = now
		}
		at, queued, ok := r.claim()
		if !ok {
			return
		}
		if queued && r.stopped() {
			r.inFlight.Add(-1)
			r.notStartedAtEnd.Add(1)
			return
		}
		if !queued {
			if at > r.since() && !w.waitUntil(at) {
				return // stopped before the arrival was due
			}
			if r.stopped() { // due, but the run ended before its worker woke
				r.notStartedAtEnd.Add(1)
				return
			}
			r.inFlight.Add(1)
		}
		r.runArrival(u, at)
	}
}
