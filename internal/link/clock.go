package link

import (
	"container/heap"
	"fmt"
	"os"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// clock is the model's time source. The proxy uses a precise wall clock;
// tests of exact timing use timerClock inside a testing/synctest bubble,
// whose fake time advances only when every goroutine waits.
type clock interface {
	Now() time.Time
	// SleepUntil blocks until the clock reads t or later and reports true,
	// or returns false as soon as cancel is closed. A precise sleep returns
	// within microseconds of t; an imprecise one may return some tens of
	// microseconds late, which suits a dense stream whose average rate is
	// kept by absolute deadlines anyway.
	SleepUntil(t time.Time, precise bool, cancel <-chan struct{}) bool
}

// timerClock sleeps on Go timers. On Linux they wake up to about a
// millisecond late for short sleeps (the runtime's netpoller waits with
// millisecond resolution), too coarse for the wall clock, but exact on a
// synctest fake clock.
type timerClock struct{}

func (timerClock) Now() time.Time { return time.Now() }

func (timerClock) SleepUntil(t time.Time, _ bool, cancel <-chan struct{}) bool {
	d := time.Until(t)
	if d <= 0 {
		return true
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-cancel:
		return false
	}
}

// wallClock sleeps precisely on the wall clock. One timerfd, read through
// the runtime's netpoller by one dispatcher goroutine, serves every sleeper
// of a proxy from a heap of wake-up times: timerfd expiries have nanosecond
// resolution, where Go timers wake an idle program up to a millisecond late.
// Waking a sleeping CPU still costs tens to a few hundred microseconds, so a
// precise sleep is woken that much early (the margin, learnt from the
// lateness observed) and the rest is spun, yielding. The dispatcher spins
// for every precise sleeper of the proxy at once and releases each at its
// deadline: a sleeper spinning for itself kept a P busy, and two of them
// (two connections whose deadlines fall together, on this 2-core machine)
// left the runtime no idle P to poll the network, so that the replies the
// link delivered and the timerfd's own expiries waited for a spin to end.
type wallClock struct {
	file *os.File // the timerfd
	fd   int
	done chan struct{} // closed when the dispatcher has stopped

	mu           sync.Mutex
	waiters      waiterHeap // by wake-up time
	spinning     []*waiter  // precise waiters past their wake-up, for the dispatcher's spin
	dispatching  bool       // the dispatcher spins: a precise waiter may join its spin
	spins        int        // goroutines spinning now: the dispatcher and busy-time fallbacks
	maxSpins     int        // the most that ever spun at once
	armed        time.Time  // the expiry the timerfd is set to; zero when disarmed
	armedPrecise bool       // the expiry is a precise waiter's early wake-up
	closed       bool       // the descriptor is closed and its number may be reused
	// The smoothed lateness of timerfd wake-ups and its deviation.
	lateMean, lateDev time.Duration
}

// A precise sleep spins through its last minSpin plus the learnt wake-up
// lateness, at most maxSpin. Spinning keeps a P busy, and a Go program polls
// its network only from an idle P (or every 10 ms), so spins must stay short.
const (
	minSpin = 20 * time.Microsecond
	maxSpin = 300 * time.Microsecond
)

// waiter is one sleep. A precise one wakes at wake, margin before at, and
// is released at at, by the dispatcher's spin (claimed) or by its own; an
// imprecise one is released at wake, which is at.
type waiter struct {
	wake, at time.Time
	precise  bool
	claimed  bool // the dispatcher spins for it: it releases it at at
	gone     bool // its sleeper no longer waits for it
	released bool // its channel is closed
	ch       chan struct{}
}

type waiterHeap []*waiter

func (h waiterHeap) Len() int           { return len(h) }
func (h waiterHeap) Less(i, j int) bool { return h[i].wake.Before(h[j].wake) }
func (h waiterHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *waiterHeap) Push(x any)        { *h = append(*h, x.(*waiter)) }
func (h *waiterHeap) Pop() any {
	old := *h
	w := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return w
}

// newWallClock creates the timerfd and starts the dispatcher; stop it with
// close.
func newWallClock() (*wallClock, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("create timerfd: %w", err)
	}
	c := &wallClock{file: os.NewFile(uintptr(fd), "timerfd"), fd: fd, done: make(chan struct{}),
		lateMean: 50 * time.Microsecond, lateDev: 25 * time.Microsecond}
	go c.dispatch()
	return c, nil
}

func (c *wallClock) Now() time.Time { return time.Now() }

func (c *wallClock) SleepUntil(t time.Time, precise bool, cancel <-chan struct{}) bool {
	if time.Until(t) <= 0 {
		return true
	}
	w := c.add(t, precise)
	// The timerfd is read through the netpoller, which the runtime polls
	// only when it runs out of goroutines to run (or every 10 ms): on a
	// busy machine the dispatcher can wake very late. Go timers are checked
	// at every scheduling point, so one also runs, and whichever comes
	// first wins. For a precise sleep it runs half the margin later, which
	// leaves the dispatcher time to take the sleep into its spin: a sleeper
	// that spins for itself beside the dispatcher is a second P kept busy.
	fallback := w.wake
	if precise {
		fallback = fallback.Add(t.Sub(w.wake) / 2)
	}
	tm := time.NewTimer(time.Until(fallback))
	defer tm.Stop()
	select {
	case <-w.ch:
		return true
	case <-cancel:
		c.leave(w, false)
		return false
	case <-tm.C:
	}
	if c.leave(w, true) {
		// The dispatcher spins for it and releases it at t.
		select {
		case <-w.ch:
			return true
		case <-cancel:
			return false
		}
	}
	return c.spinUntil(t, cancel)
}

// spinUntil yields until t, or returns false as soon as cancel is closed:
// a precise sleeper's own spin, when the dispatcher did not wake in time.
func (c *wallClock) spinUntil(t time.Time, cancel <-chan struct{}) bool {
	if !time.Now().Before(t) {
		return true
	}
	c.mu.Lock()
	c.spinStarts()
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.spins--
		c.mu.Unlock()
	}()
	for time.Now().Before(t) {
		select {
		case <-cancel:
			return false
		default:
		}
		runtime.Gosched()
	}
	return true
}

// spinStarts counts one more goroutine spinning. c.mu must be held.
func (c *wallClock) spinStarts() {
	c.spins++
	c.maxSpins = max(c.maxSpins, c.spins)
}

// add registers a sleep until t and returns its waiter, whose channel the
// dispatcher closes when the sleep ends.
func (c *wallClock) add(t time.Time, precise bool) *waiter {
	w := &waiter{wake: t, at: t, precise: precise, ch: make(chan struct{})}
	c.mu.Lock()
	if precise {
		w.wake = t.Add(-c.margin())
	}
	heap.Push(&c.waiters, w)
	if c.armed.IsZero() || w.wake.Before(c.armed) {
		c.arm(w.wake, precise)
	}
	c.mu.Unlock()
	return w
}

// leave withdraws a waiter whose sleeper stops waiting for the dispatcher,
// unless the dispatcher spins for it: it reports whether it does. With
// join, a precise waiter joins a spin the dispatcher runs rather than spin
// beside it.
func (c *wallClock) leave(w *waiter, join bool) (claimed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if join && !w.claimed && !w.released && w.precise && c.dispatching && !c.closed {
		w.claimed = true
		c.spinning = append(c.spinning, w)
	}
	w.gone = !w.claimed
	return w.claimed
}

// release ends the waiter's sleep. The clock's mu must be held.
func (w *waiter) release() {
	w.released = true
	close(w.ch)
}

// after returns a channel that the dispatcher closes once the timerfd has
// passed t. A waiter nobody waits for any more stays in the heap until then.
func (c *wallClock) after(t time.Time) <-chan struct{} { return c.add(t, false).ch }

// learn folds the lateness of one timerfd wake-up into the spin margin the
// way TCP estimates its retransmission timeout: a smoothed mean plus four
// smoothed deviations, so that the margin covers the tail, not the median.
// c.mu must be held.
func (c *wallClock) learn(late time.Duration) {
	diff := late - c.lateMean
	c.lateMean += diff / 8
	c.lateDev += (max(diff, -diff) - c.lateDev) / 4
}

// margin is how long before a precise deadline the sleep ends and the spin
// begins. c.mu must be held.
func (c *wallClock) margin() time.Duration {
	return min(max(c.lateMean+4*c.lateDev, 0)+minSpin, maxSpin)
}

// arm sets the timerfd to expire at t, a precise waiter's early wake-up
// when precise. c.mu must be held.
func (c *wallClock) arm(t time.Time, precise bool) {
	// The timerfd counts CLOCK_MONOTONIC, which time.Time does not expose:
	// arm it relative to now. A zero value would disarm it.
	if c.closed {
		return
	}
	d := max(time.Until(t), 1)
	spec := unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}
	if err := unix.TimerfdSettime(c.fd, 0, &spec, nil); err != nil {
		// Only a closed descriptor fails here; the dispatcher is stopping.
		return
	}
	c.armed, c.armedPrecise = t, precise
}

// dispatch wakes the sleepers whose time has come each time the timerfd
// expires, and sets it to the next wake-up. It returns when the timerfd is
// closed.
func (c *wallClock) dispatch() {
	defer close(c.done)
	var buf [8]byte
	for {
		if _, err := c.file.Read(buf[:]); err != nil {
			return
		}
		c.mu.Lock()
		// Only a wake-up for a precise sleep teaches the margin: the
		// others are not spun for, whatever their lateness.
		if c.armedPrecise {
			c.learn(time.Since(c.armed))
		}
		c.armed = time.Time{}
		c.spin()
		c.rearm()
		c.mu.Unlock()
	}
}

// spin releases the waiters whose time has come and spins, yielding,
// through the precise deadlines taken into it, releasing each at its time.
// c.mu must be held; it is released while yielding.
func (c *wallClock) spin() {
	if !c.releaseDue(time.Now()) {
		return
	}
	c.dispatching = true
	c.spinStarts()
	for c.releaseDue(time.Now()) {
		c.mu.Unlock()
		runtime.Gosched()
		c.mu.Lock()
	}
	c.spins--
	c.dispatching = false
	// Let the sleeper released last run before the timerfd is re-armed.
	c.mu.Unlock()
	runtime.Gosched()
	c.mu.Lock()
}

// rearm sets the timerfd to the next wake-up, or disarms it, which also
// drops an expiry that a sleeper added during the spin left pending.
// c.mu must be held.
func (c *wallClock) rearm() {
	if len(c.waiters) > 0 {
		c.arm(c.waiters[0].wake, c.waiters[0].precise)
		return
	}
	if !c.closed {
		unix.TimerfdSettime(c.fd, 0, &unix.ItimerSpec{}, nil)
	}
	c.armed = time.Time{}
}

// releaseDue closes the channel of every waiter whose time has come at now,
// takes the precise ones past their wake-up into the spin, and reports
// whether the spin goes on. c.mu must be held.
func (c *wallClock) releaseDue(now time.Time) (spin bool) {
	for len(c.waiters) > 0 && !c.waiters[0].wake.After(now) {
		w := heap.Pop(&c.waiters).(*waiter)
		switch {
		case w.gone || w.claimed:
		case w.precise && w.at.After(now) && !c.closed:
			w.claimed = true
			c.spinning = append(c.spinning, w)
		default:
			w.release()
		}
	}
	kept := c.spinning[:0]
	for _, w := range c.spinning {
		if w.at.After(now) && !c.closed {
			kept = append(kept, w)
			continue
		}
		w.release()
	}
	clear(c.spinning[len(kept):])
	c.spinning = kept
	return len(kept) > 0
}

// close stops the dispatcher and waits for it. Sleepers still waiting must
// be cancelled by their owners.
func (c *wallClock) close() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.file.Close()
	<-c.done
}
