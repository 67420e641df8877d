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
// of a proxy from a heap of deadlines: timerfd expiries have nanosecond
// resolution, where Go timers wake an idle program up to a millisecond late.
// Waking a sleeping CPU still costs tens to a few hundred microseconds, so a
// precise sleep wakes that much early (the margin, learnt from the lateness
// observed) and spins, yielding, through the rest.
type wallClock struct {
	file *os.File // the timerfd
	fd   int
	done chan struct{} // closed when the dispatcher has stopped

	mu      sync.Mutex
	waiters waiterHeap
	armed   time.Time // the expiry the timerfd is set to; zero when disarmed
	closed  bool      // the descriptor is closed and its number may be reused
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

type waiter struct {
	at time.Time
	ch chan struct{}
}

type waiterHeap []*waiter

func (h waiterHeap) Len() int           { return len(h) }
func (h waiterHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
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
	wake := t
	if precise {
		c.mu.Lock()
		wake = t.Add(-c.margin())
		c.mu.Unlock()
	}
	if time.Until(wake) > 0 {
		fired := c.after(wake)
		// The timerfd is read through the netpoller, which the runtime polls
		// only when it runs out of goroutines to run (or every 10 ms): on a
		// busy machine it can wake us very late. Go timers are checked at
		// every scheduling point, so one also runs, and whichever comes first
		// wins.
		tm := time.NewTimer(time.Until(wake))
		select {
		case <-fired:
			// Only the timerfd's lateness is the CPU's wake-up time; a Go
			// timer firing first means the process is busy, when spinning
			// longer would only take the CPU from the work.
			if precise {
				c.learn(time.Since(wake))
			}
		case <-tm.C:
		case <-cancel:
			tm.Stop()
			return false
		}
		tm.Stop()
	}
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

// after returns a channel that the dispatcher closes once the timerfd has
// passed t. A waiter nobody waits for any more stays in the heap until then.
func (c *wallClock) after(t time.Time) <-chan struct{} {
	w := &waiter{at: t, ch: make(chan struct{})}
	c.mu.Lock()
	heap.Push(&c.waiters, w)
	if c.armed.IsZero() || t.Before(c.armed) {
		c.arm(t)
	}
	c.mu.Unlock()
	return w.ch
}

// learn folds the lateness of one timerfd wake-up into the spin margin the
// way TCP estimates its retransmission timeout: a smoothed mean plus four
// smoothed deviations, so that the margin covers the tail, not the median.
func (c *wallClock) learn(late time.Duration) {
	c.mu.Lock()
	diff := late - c.lateMean
	c.lateMean += diff / 8
	c.lateDev += (max(diff, -diff) - c.lateDev) / 4
	c.mu.Unlock()
}

// margin is how long before a precise deadline the sleep ends and the spin
// begins. c.mu must be held.
func (c *wallClock) margin() time.Duration {
	return min(max(c.lateMean+4*c.lateDev, 0)+minSpin, maxSpin)
}

// arm sets the timerfd to expire at t. c.mu must be held.
func (c *wallClock) arm(t time.Time) {
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
	c.armed = t
}

// dispatch wakes the sleepers whose time has come each time the timerfd
// expires, and sets it to the next deadline. It returns when the timerfd is
// closed.
func (c *wallClock) dispatch() {
	defer close(c.done)
	var buf [8]byte
	for {
		if _, err := c.file.Read(buf[:]); err != nil {
			return
		}
		c.mu.Lock()
		c.armed = time.Time{}
		now := time.Now()
		for len(c.waiters) > 0 && !c.waiters[0].at.After(now) {
			close(heap.Pop(&c.waiters).(*waiter).ch)
		}
		if len(c.waiters) > 0 {
			c.arm(c.waiters[0].at)
		}
		c.mu.Unlock()
	}
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
