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

func newPreciseWaiter(r *Runner, stop context.Context) (movableWaiter, error) {
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

func (w *timerfdWaiter) rearm(at time.Duration) {
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(w.monoAt0 + int64(at))}
	unix.TimerfdSettime(w.fd, unix.TFD_TIMER_ABSTIME, &spec, nil) // a failure leaves the wake-up where it was: one wake-up too many
}

func (w *timerfdWaiter) close() {
	w.unstop()
	w.file.Close()
}

// threadWaiter sleeps its goroutine's OS thread in ppoll(2) until the
// arrival's time, or until the run stops (an eventfd the stop writes). The
// goroutine must be locked to its thread for as long as the waiter lives:
// the thread's timer slack is set to a nanosecond (the kernel's default of
// 50 µs would make each wake-up up to that late) and put back by close.
// Unlike the timerfd in Go's network poller, the wake-up is the thread's
// own: the runtime wakes no other thread to run the worker.
type threadWaiter struct {
	r      *Runner
	stopFd int
	unstop func() bool
	fds    [1]unix.PollFd
}

func newThreadWaiter(r *Runner, stop context.Context) (waiter, error) {
	fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_TIMERSLACK, 1, 0, 0, 0); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("timer slack: %w", err)
	}
	w := &threadWaiter{r: r, stopFd: fd}
	w.fds[0] = unix.PollFd{Fd: int32(fd), Events: unix.POLLIN}
	one := []byte{1, 0, 0, 0, 0, 0, 0, 0}
	w.unstop = context.AfterFunc(stop, func() { unix.Write(fd, one) })
	return w, nil
}

func (w *threadWaiter) waitUntil(at time.Duration) bool {
	for {
		now := w.r.since()
		if now >= at {
			return true // an operation never starts before its intended start
		}
		ts := unix.NsecToTimespec(int64(at - now))
		n, err := unix.Ppoll(w.fds[:], &ts, nil)
		if n > 0 {
			return false // the stop
		}
		if err != nil && err != unix.EINTR {
			return false
		}
	}
}

func (w *threadWaiter) close() {
	w.unstop()
	unix.Prctl(unix.PR_SET_TIMERSLACK, 0, 0, 0, 0) // 0: the thread's default again
	unix.Close(w.stopFd)
}
