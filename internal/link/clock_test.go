package link

import (
	"slices"
	"sync"
	"testing"
	"time"
)

func TestWallClockSleepsPrecisely(t *testing.T) {
	c, err := newWallClock()
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	// A Go timer alone wakes about a millisecond late on an idle Linux
	// machine; the timerfd does far better, and the spin better still. On a
	// busy machine every sleep wakes later, so each bound is the stated one
	// or a share of a Go timer's own lateness measured beside it in the same
	// attempt, whichever is larger: a clock no better than a Go timer fails
	// either way. Other processes can keep this one off the CPU for a
	// while, so each kind of sleep gets three attempts.
	for _, tt := range []struct {
		precise bool
		bound   time.Duration
		share   float64 // of the Go timer's median lateness
	}{{true, 100 * time.Microsecond, 0.1}, {false, 500 * time.Microsecond, 0.5}} {
		var med, limit time.Duration
		for attempt := range 3 {
			var lates, goLates []time.Duration
			for i := range 60 {
				d := time.Duration(200+i*50) * time.Microsecond
				at := time.Now().Add(d)
				if !c.SleepUntil(at, tt.precise, nil) {
					t.Fatalf("SleepUntil returned false without a cancel")
				}
				late := time.Since(at)
				if late < 0 {
					t.Fatalf("precise=%v: woke %v before the deadline", tt.precise, -late)
				}
				lates = append(lates, late)
				at = time.Now().Add(d)
				time.Sleep(d)
				goLates = append(goLates, time.Since(at))
			}
			slices.Sort(lates)
			slices.Sort(goLates)
			med = lates[len(lates)/2]
			limit = max(tt.bound, time.Duration(tt.share*float64(goLates[len(goLates)/2])))
			t.Logf("precise=%v, attempt %d: lateness median %v, p90 %v, max %v; a Go timer's median %v; limit %v",
				tt.precise, attempt+1, med, lates[len(lates)*9/10], lates[len(lates)-1], goLates[len(goLates)/2], limit)
			if med <= limit {
				break
			}
		}
		if med > limit {
			t.Errorf("precise=%v: median lateness %v in three attempts, want under %v", tt.precise, med, limit)
		}
	}
}

func TestWallClockManySleepersAndCancel(t *testing.T) {
	c, err := newWallClock()
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	// The dispatcher alone (no Go timer to fall back on) must wake every
	// waiter, whatever the order the deadlines were registered in: a later
	// registration with an earlier deadline re-arms the timerfd.
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan string, 200)
	for i := range 200 {
		wg.Go(func() {
			at := start.Add(time.Duration((i*7919)%200) * 100 * time.Microsecond)
			select {
			case <-c.after(at):
				if late := time.Since(at); late < 0 {
					errs <- "woke " + (-late).String() + " before its deadline"
				}
			case <-time.After(5 * time.Second):
				errs <- "not woken by the timerfd within 5s of its deadline"
			}
		})
	}
	cancel := make(chan struct{})
	var cancelled bool
	wg.Go(func() { cancelled = !c.SleepUntil(time.Now().Add(time.Hour), true, cancel) })
	time.Sleep(5 * time.Millisecond)
	close(cancel)
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if !cancelled {
		t.Error("a sleep an hour long was not cancelled")
	}
}

func TestTimerClockCancelsAndPassesPastDeadlines(t *testing.T) {
	// timerClock is what the synctest tests run on: it must not spin, or the
	// fake clock would never advance. (Exactness itself is checked by the
	// TestLink* tests.)
	var c timerClock
	cancel := make(chan struct{})
	close(cancel)
	if c.SleepUntil(time.Now().Add(time.Hour), true, cancel) {
		t.Error("SleepUntil with a closed cancel returned true")
	}
	if !c.SleepUntil(time.Now().Add(-time.Second), true, nil) {
		t.Error("SleepUntil of a past deadline returned false")
	}
}

// TestWallClockSpinsOnceForDeadlinesThatFallTogether: precise sleeps whose
// deadlines fall within one another's spin (several connections' replies
// due together) are spun for by one goroutine, each released at its own
// deadline. A spin per sleeper kept every P of a 2-core machine busy, and
// the runtime polls the network only from an idle P: replies through the
// link waited for the spins to end, more so the more users. A busy machine
// can keep the dispatcher from waking in time, when a sleeper spins for
// itself, so of five attempts three must spin once.
func TestWallClockSpinsOnceForDeadlinesThatFallTogether(t *testing.T) {
	t.Parallel()
	const sleepers, attempts = 4, 5
	var most []int
	for range attempts {
		most = append(most, mostSpinningAtOnce(t, sleepers))
	}
	t.Logf("%d precise sleepers with deadlines 10 µs apart, five times: at most %v goroutines spinning at once", sleepers, most)
	several := 0
	for _, n := range most {
		if n > 1 {
			several++
		}
	}
	if several > 2 {
		t.Errorf("more than one goroutine spun at once in %d of %d attempts (%v), want at most 2", several, attempts, most)
	}
}

// mostSpinningAtOnce sleeps sleepers goroutines precisely until deadlines
// 10 µs apart on a clock of their own and returns how many spun at once.
func mostSpinningAtOnce(t *testing.T, sleepers int) int {
	c, err := newWallClock()
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	deadline := time.Now().Add(5 * time.Millisecond)
	var wg sync.WaitGroup
	early := make(chan time.Duration, sleepers)
	for i := range sleepers {
		at := deadline.Add(time.Duration(i) * 10 * time.Microsecond)
		wg.Go(func() {
			c.SleepUntil(at, true, nil)
			if late := time.Since(at); late < 0 {
				early <- -late
			}
		})
	}
	wg.Wait()
	close(early)
	for d := range early {
		t.Fatalf("a precise sleep ended %v before its deadline", d)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.maxSpins
}
