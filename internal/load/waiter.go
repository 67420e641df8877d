package load

import (
	"context"
	"time"
)

// waiter is how the open loop's arrival process waits for the next intended
// start. The precision matters: every microsecond the arrival process wakes
// late is start lag, and in an open loop start lag is part of the latency.
type waiter interface {
	// waitUntil blocks until the run's clock reads at (an offset from the
	// start of the run), or the run stops; it reports false on stop.
	waitUntil(at time.Duration) bool
	close()
}

// movableWaiter is the dispatcher's waiter: while it waits, another
// goroutine may move its wake-up.
type movableWaiter interface {
	waiter
	// rearm moves the wake-up of a waitUntil in progress to at. That
	// waitUntil may then return at the new time even before its own at
	// (the timer waiter's) or sleep on to its own at (the timerfd
	// waiter's), so its caller checks what it woke to.
	rearm(at time.Duration)
}

// timerWaiter waits on a Go timer. Its precision is the Go runtime's: when
// the process is otherwise idle, the runtime sleeps in the network poller
// with a millisecond timeout, so a wake-up can be about 1 ms late. Tests on
// testing/synctest's fake clock use it (the fake clock drives Go timers
// only); elsewhere it is the fallback of the precise waiter.
type timerWaiter struct {
	r     *Runner
	timer *time.Timer
}

func newTimerWaiter(r *Runner) (movableWaiter, error) {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &timerWaiter{r: r, timer: t}, nil
}

func (w *timerWaiter) waitUntil(at time.Duration) bool {
	w.timer.Reset(at - w.r.since())
	select {
	case <-w.timer.C:
		return true
	case <-w.r.stopDone:
		return false
	}
}

func (w *timerWaiter) rearm(at time.Duration) { w.timer.Reset(at - w.r.since()) }

func (w *timerWaiter) close() { w.timer.Stop() }

// newArrivalWaiter returns the most precise waiter the system offers, or the
// timer waiter when that cannot be had.
func newArrivalWaiter(r *Runner, stop context.Context) movableWaiter {
	if w, err := newPreciseWaiter(r, stop); err == nil {
		return w
	}
	w, _ := newTimerWaiter(r)
	return w
}

// newUserWaiter returns the waiter of an open-loop worker that claims its
// arrivals ahead: on a thread of its own, the thread sleeps in the kernel
// until the arrival, as a pgbench client's does; otherwise the dispatcher's
// kind of waiter.
func newUserWaiter(r *Runner, stop context.Context) waiter {
	if r.dedicated {
		if w, err := newThreadWaiter(r, stop); err == nil {
			return w
		}
	}
	return newArrivalWaiter(r, stop)
}
