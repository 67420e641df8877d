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
	monoAt0, err := monotonicAt0(r)
	if err != nil {
		return nil, err
	}
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("timerfd: %w", err)
	}
	w := &timerfdWaiter{r: r, fd: fd, file: os.NewFile(uintptr(fd), "arrival-timer"), monoAt0: monoAt0}
	// Stopping unblocks a pending read by moving its deadline to the past.
	w.unstop = context.AfterFunc(stop, func() { w.file.SetReadDeadline(time.Unix(1, 0)) })
	return w, nil
}

// monotonicAt0 is the run's start on the kernel's CLOCK_MONOTONIC, in ns.
// Go's monotonic clock is CLOCK_MONOTONIC, so this is the start, or a little
// after it (by the time between the two readings): a timer armed from it
// can wake late by that, never early.
func monotonicAt0(r *Runner) (int64, error) {
	since := r.since()
	var now unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &now); err != nil {
		return 0, fmt.Errorf("clock_gettime: %w", err)
	}
	return now.Nano() - int64(since), nil
}

// armTimer arms the timerfd fd to fire once at the run's offset at, the
// run having started at monoAt0 on CLOCK_MONOTONIC; arming clears what it
// counted before.
func armTimer(fd int, monoAt0 int64, at time.Duration) error {
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(monoAt0 + int64(at))}
	return unix.TimerfdSettime(fd, unix.TFD_TIMER_ABSTIME, &spec, nil)
}

func (w *timerfdWaiter) waitUntil(at time.Duration) bool {
	for w.r.since() < at { // an operation never starts before its intended start
		if err := armTimer(w.fd, w.monoAt0, at); err != nil {
			return false
		}
		if _, err := w.file.Read(w.buf[:]); err != nil { // the expiration count; only the wake-up matters
			return false
		}
	}
	return true
}

func (w *timerfdWaiter) rearm(at time.Duration) {
	armTimer(w.fd, w.monoAt0, at) // a failure leaves the wake-up where it was: one wake-up too many
}

func (w *timerfdWaiter) close() {
	w.unstop()
	w.file.Close()
}

// threadWaiter sleeps its goroutine's OS thread in ppoll(2) on a timerfd
// armed at the arrival's time and an eventfd the run's stop writes. Unlike
// the timerfd in Go's network poller, the wake-up is the thread's own: the
// runtime wakes no other thread to run the worker. A timerfd has no timer
// slack (ppoll's own timeout would have the thread's, 50 µs by default),
// and the waiter holds nothing of the thread's, so its goroutine may move
// between threads (the users' yield does).
type threadWaiter struct {
	r       *Runner
	stopFd  int
	timerFd int
	monoAt0 int64 // CLOCK_MONOTONIC at the start of the run, ns
	unstop  func() bool
	stopped chan struct{}  // closed once the stop has written stopFd
	fds     [2]unix.PollFd // the stop, the timer
}

func newThreadWaiter(r *Runner, stop context.Context) (waiter, error) {
	monoAt0, err := monotonicAt0(r)
	if err != nil {
		return nil, err
	}
	stopFd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	timerFd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		unix.Close(stopFd)
		return nil, fmt.Errorf("timerfd: %w", err)
	}
	w := &threadWaiter{r: r, stopFd: stopFd, timerFd: timerFd, monoAt0: monoAt0, stopped: make(chan struct{})}
	w.fds[0] = unix.PollFd{Fd: int32(stopFd), Events: unix.POLLIN}
	w.fds[1] = unix.PollFd{Fd: int32(timerFd), Events: unix.POLLIN}
	one := []byte{1, 0, 0, 0, 0, 0, 0, 0}
	w.unstop = context.AfterFunc(stop, func() {
		unix.Write(stopFd, one)
		close(w.stopped)
	})
	return w, nil
}

func (w *threadWaiter) waitUntil(at time.Duration) bool {
	// Arming the timer clears what it counted before, so its fd is
	// readable only once this at has passed.
	if err := armTimer(w.timerFd, w.monoAt0, at); err != nil {
		return false
	}
	for w.r.since() < at { // an operation never starts before its intended start
		if _, err := unix.Ppoll(w.fds[:], nil, nil); err != nil && err != unix.EINTR {
			return false
		}
		if w.fds[0].Revents != 0 {
			return false // the stop
		}
	}
	return true
}

func (w *threadWaiter) close() {
	if !w.unstop() {
		// The stop's write has begun: the descriptor must not be closed
		// under it, or its number reused by another file before it lands.
		<-w.stopped
	}
	unix.Close(w.stopFd)
	unix.Close(w.timerFd)
}
