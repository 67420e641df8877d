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

// timerWaiter waits on a Go timer. Its precision is the Go runtime's: when
// the process is otherwise idle, the runtime sleeps in the network poller
// with a millisecond timeout, so a wake-up can be about 1 ms late. Tests on
// testing/synctest's fake clock use it (the fake clock drives Go timers
// only); elsewhere it is the fallback of the precise waiter.
type timerWaiter struct {
	r     *Runner
	timer *time.Timer
}

func newTimerWaiter(r *Runner) (waiter, error) {
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

func (w *timerWaiter) close() { w.timer.Stop() }

// newArrivalWaiter returns the most precise waiter the system offers, or the
// timer waiter when that cannot be had.
func newArrivalWaiter(r *Runner, stop context.Context) waiter {
	if w, err := newPreciseWaiter(r, stop); err == nil {
		return w
	}
	w, _ := newTimerWaiter(r)
	return w
}
