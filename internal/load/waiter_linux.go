package load

import (
	"context"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// timerfdWaiter waits on a Linux timerfd armed at the absolute
// CLOCK_MONOTONIC time of the arrival. The goroutine blocks in Go's network
// poller (no OS thread or P is held, nothing spins), and the kernel's
// high-resolution timer wakes the poller at the arrival time, typically
// within tens of microseconds instead of the millisecond a Go timer can take
// on an idle process.
type timerfdWaiter struct {
	r       *Runner
	fd      int
	file    *os.File
	monoAt0 int64 // CLOCK_MONOTONIC at the start of the run, ns
	unstop  func() bool
	buf     [8]byte
}

func newPreciseWaiter(r *Runner, stop context.Context) (waiter, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("timerfd: %w", err)
	}
	// Go's monotonic clock is CLOCK_MONOTONIC, so this is the run's start
	// on the kernel's clock, or a little after it (by the time between the
	// two readings): the timer can wake late by that, never early.
	since := r.since()
	var now unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &now); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("clock_gettime: %w", err)
	}
	w := &timerfdWaiter{r: r, fd: fd, file: os.NewFile(uintptr(fd), "arrival-timer"), monoAt0: now.Nano() - int64(since)}
	// Stopping unblocks a pending read by moving its deadline to the past.
	w.unstop = context.AfterFunc(stop, func() { w.file.SetReadDeadline(time.Unix(1, 0)) })
	return w, nil
}

func (w *timerfdWaiter) waitUntil(at time.Duration) bool {
	for w.r.since() < at { // an operation never starts before its intended start
		spec := unix.ItimerSpec{Value: unix.NsecToTimespec(w.monoAt0 + int64(at))}
		if err := unix.TimerfdSettime(w.fd, unix.TFD_TIMER_ABSTIME, &spec, nil); err != nil {
			return false
		}
		if _, err := w.file.Read(w.buf[:]); err != nil { // the expiration count; only the wake-up matters
			return false
		}
	}
	return true
}

func (w *timerfdWaiter) close() {
	w.unstop()
	w.file.Close()
}
