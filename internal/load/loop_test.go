package load

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dbrig/dbrig/internal/measure"
)

// Every test here runs on testing/synctest's fake clock: time advances only
// when every goroutine of the bubble waits, so operations take exactly the
// time the test gives them and the figures are exact, not approximate.
//
// Operations are timed so that none finishes exactly on a boundary (a second,
// the end of the warm-up, the stop): at a tie the fake clock does not say
// which of two goroutines runs first.

// The warm-up ends half a millisecond after a whole second so that no
// operation timed in whole milliseconds finishes exactly at its end.
const offset = 500 * time.Microsecond

func TestClosedLoopThroughputIsLittlesLaw(t *testing.T) {
	// A closed loop of N users, each cycling keying + service + think,
	// completes N / (keying + service + think) operations per second.
	tests := []struct {
		name                   string
		users                  int
		service, think, keying time.Duration
		wantTPS                float64
	}{
		{"service and think", 10, 30 * time.Millisecond, 70 * time.Millisecond, 0, 100},
		{"no think time", 4, 10 * time.Millisecond, 0, 0, 400},
		{"keying and think", 5, 20 * time.Millisecond, 30 * time.Millisecond, 50 * time.Millisecond, 50},
		{"one user", 1, 40 * time.Millisecond, 10 * time.Millisecond, 0, 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				wl := &timedWorkload{service: fixedService(tt.service)}
				res := mustRun(t, Config{
					Users: tt.users, Think: Think{Mean: tt.think}, Keying: tt.keying,
					WarmUp: time.Second + offset, Duration: 10 * time.Second,
				}, wl)
				cycle := tt.keying + tt.service + tt.think
				if little := float64(tt.users) / cycle.Seconds(); little != tt.wantTPS {
					t.Fatalf("test table: Little's law gives %v, the row says %v", little, tt.wantTPS)
				}
				if res.Overall.TPS != tt.wantTPS {
					t.Errorf("tps = %v, want %v = %d users / %v", res.Overall.TPS, tt.wantTPS, tt.users, cycle)
				}
				if want := int64(tt.wantTPS * 10); res.Overall.Ops != want {
					t.Errorf("ops = %d, want %d", res.Overall.Ops, want)
				}
				if res.Measured != 10*time.Second {
					t.Errorf("measured %v, want 10s", res.Measured)
				}
				if p := res.Overall.Latency.Quantile(0.99); !near(p, tt.service, 0.001) {
					t.Errorf("p99 latency %v, want the service time %v", p, tt.service)
				}
				if tt.think == 0 && tt.keying == 0 && res.StartLag.Count() != 0 {
					t.Errorf("back-to-back operations have no schedule, yet %d start lags", res.StartLag.Count())
				}
				if tt.think > 0 && (res.StartLag.Max() != 0 || res.Late != 0) {
					t.Errorf("on a fake clock timers are never late: lag max %v, late %d", res.StartLag.Max(), res.Late)
				}
				if res.Overall.Errors.Total() != 0 || res.Overloaded || res.CancelledAtStop != 0 {
					t.Errorf("unexpected trouble: %+v", res)
				}
				wl.checkClosed(t)
			})
		})
	}
}

func TestExponentialThinkTimeHasItsMeanAndCap(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		wl := &timedWorkload{service: fixedService(time.Millisecond)}
		res := mustRun(t, Config{
			Users: 50, Think: Think{Mean: 100 * time.Millisecond, Exponential: true, Max: 300 * time.Millisecond},
			Duration: 60 * time.Second, Seed: 7,
		}, wl)
		// E[min(X, cap)] for X ~ Exp(mean) is mean·(1 − e^(−cap/mean)).
		mean := 0.1 * (1 - 0.049787068) // e^-3
		want := 50 / (0.001 + mean)
		if got := res.Overall.TPS; got < 0.97*want || got > 1.03*want {
			t.Errorf("tps %.1f, want %.1f ± 3%% for a capped exponential think time", got, want)
		}
	})
}

func TestRampUpStartsUsersEvenly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// 10 users over 2.05 s: user i starts at 0.205·i s and completes an
		// operation every 100 ms from 30 ms after its start.
		wl := &timedWorkload{service: fixedService(30 * time.Millisecond)}
		res := mustRun(t, Config{
			Users: 10, Think: Think{Mean: 70 * time.Millisecond}, RampUp: 2050 * time.Millisecond,
			WarmUp: 3 * time.Second, Duration: 2 * time.Second,
		}, wl)
		want := []struct {
			users int
			ops   int64
		}{
			{5, 10 + 8 + 6 + 4 + 2},       // users 0-4 started in second 0
			{10, 50 + 10 + 8 + 6 + 4 + 2}, // users 5-9 start in second 1
			{10, 100},
		}
		for i, w := range want {
			iv := res.Series[i]
			if iv.Users != w.users || iv.Overall.Ops != w.ops {
				t.Errorf("second %d: %d users, %d ops; want %d users, %d ops", i, iv.Users, iv.Overall.Ops, w.users, w.ops)
			}
		}
		if res.Overall.TPS != 100 {
			t.Errorf("measured tps %v, want 100 once every user runs", res.Overall.TPS)
		}
	})
}

func TestWarmUpIsDiscarded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Each user's first three operations take 333 ms (a cold cache), the
		// rest 10 ms; the warm-up covers the slow ones.
		wl := &timedWorkload{service: func(id, n, tx int) (time.Duration, error) {
			if n < 3 {
				return 333 * time.Millisecond, nil
			}
			return 10 * time.Millisecond, nil
		}}
		res := mustRun(t, Config{Users: 2, WarmUp: time.Second, Duration: 2 * time.Second}, wl)
		if res.WarmUpOps != 6 {
			t.Errorf("warm-up ops %d, want 6", res.WarmUpOps)
		}
		if res.Overall.Ops != 400 {
			t.Errorf("measured ops %d, want 400 (1.009 s .. 2.999 s, every 10 ms, 2 users)", res.Overall.Ops)
		}
		if m := res.Overall.Latency.Max(); !near(m, 10*time.Millisecond, 0.001) {
			t.Errorf("measured max %v: the warm-up's 333 ms leaked into the results", m)
		}
		if iv := res.Series[0]; iv.Phase != WarmUp || !near(iv.Overall.Max, 333*time.Millisecond, 0.001) {
			t.Errorf("second 0: phase %v max %v, want the warm-up with its 333 ms in the series", iv.Phase, iv.Overall.Max)
		}
		if iv := res.Series[1]; iv.Phase != Measured {
			t.Errorf("second 1: phase %v, want measured", iv.Phase)
		}
	})
}

// stallAt makes the n-th operation of user 0 take stall, the others 1 ms.
func stallAt(n int, stall time.Duration) func(id, k, tx int) (time.Duration, error) {
	return func(id, k, tx int) (time.Duration, error) {
		if k == n {
			return stall, nil
		}
		return time.Millisecond, nil
	}
}

func TestOpenLoopShowsTheQueueingDelayThatAClosedLoopHides(t *testing.T) {
	for _, m := range openModes {
		t.Run(m.name, func(t *testing.T) { testOpenLoopQueueingDelay(t, m.handOff) })
	}
}

func testOpenLoopQueueingDelay(t *testing.T, handOff bool) {
	// The coordinated-omission test. One worker; operations take 1 ms except
	// one that stalls 995 ms (a lock, a retransmission, a checkpoint).
	const stall = 995 * time.Millisecond
	var open, closed *Result
	synctest.Test(t, func(t *testing.T) {
		// Open loop at 100/s: the arrivals due during the stall wait. The
		// j-th of them (every 10 ms) starts at stall + (j−1) ms and finishes
		// at stall + j ms, so its latency from its intended start is
		// (995 − 9j) ms, down to 1 ms by j = 111.
		open = mustRunOpen(t, Config{Users: 1, Rate: 100, Duration: 5*time.Second + offset},
			&timedWorkload{service: stallAt(150, stall)}, handOff)
	})
	synctest.Test(t, func(t *testing.T) {
		// A closed-loop user simply waits: one slow operation, no queue.
		closed = mustRun(t, Config{Users: 1, Duration: 5*time.Second + offset},
			&timedWorkload{service: stallAt(150, stall)})
	})

	// In the open loop the stall and the 99 arrivals queued behind it with
	// (995 − 9j) > 100 ms are over 100 ms; in the closed loop only the stall.
	if got := open.Overall.Latency.CountAbove(100 * time.Millisecond); got != 100 {
		t.Errorf("open loop: %d operations over 100 ms, want 100 (the stall and 99 queued behind it)", got)
	}
	if got := closed.Overall.Latency.CountAbove(100 * time.Millisecond); got != 1 {
		t.Errorf("closed loop: %d operations over 100 ms, want 1 (the stall)", got)
	}
	if open.Overall.Ops != 500 {
		t.Errorf("open loop: %d operations, want all 500 arrivals", open.Overall.Ops)
	}
	if p := open.Overall.Latency.Quantile(0.90); p < 100*time.Millisecond {
		t.Errorf("open loop p90 %v: a fifth of the run was queued behind the stall", p)
	}
	if p := closed.Overall.Latency.Quantile(0.99); !near(p, time.Millisecond, 0.001) {
		t.Errorf("closed loop p99 %v, want 1 ms: the closed loop omits the queueing", p)
	}
	// The service time (from the actual start) hides the queue too; that is
	// why the open loop reports latency from the intended start.
	if got := open.Overall.Service.CountAbove(100 * time.Millisecond); got != 1 {
		t.Errorf("open loop service time: %d over 100 ms, want 1", got)
	}
	// Arrivals j = 1..110 started (994 − 9j) ms late: at least 4 ms.
	if open.Late != 110 || !near(open.StartLag.Max(), 985*time.Millisecond, 0.001) {
		t.Errorf("late %d (max lag %v), want 110 (985 ms)", open.Late, open.StartLag.Max())
	}
	if open.Overloaded || open.NotStarted != 0 {
		t.Errorf("the default bound holds 10 s of arrivals; %d were not started", open.NotStarted)
	}
}

func TestOpenLoopCountsArrivalsOverTheInFlightBound(t *testing.T) {
	for _, m := range openModes {
		t.Run(m.name, func(t *testing.T) { testOpenLoopInFlightBound(t, m.handOff) })
	}
}

func testOpenLoopInFlightBound(t *testing.T, handOff bool) {
	synctest.Test(t, func(t *testing.T) {
		// The same stall with room for 5 operations in flight: the stalled
		// one and 4 queued; arrivals 5..99 of the stall are not started.
		var lines []string
		res := mustRunOpen(t, Config{
			Users: 1, Rate: 100, MaxInFlight: 5, Duration: 5*time.Second + offset,
			OnInterval: func(iv Interval) { lines = append(lines, iv.String()) },
		}, &timedWorkload{service: stallAt(150, 995*time.Millisecond)}, handOff)
		if res.NotStarted != 95 || !res.Overloaded {
			t.Errorf("not started %d (overloaded %v), want 95", res.NotStarted, res.Overloaded)
		}
		if res.Late != 4 {
			t.Errorf("late %d, want the 4 queued arrivals", res.Late)
		}
		if res.Overall.Ops != 500-95 {
			t.Errorf("ops %d, want %d", res.Overall.Ops, 500-95)
		}
		var series int64
		for _, iv := range res.Series {
			series += iv.NotStarted
		}
		if series != 95 {
			t.Errorf("the series shows %d not started, want 95", series)
		}
		if !strings.Contains(strings.Join(lines, "\n"), "OVERLOADED: ") {
			t.Errorf("no per-second line says the driver was overloaded:\n%s", strings.Join(lines, "\n"))
		}
		var text strings.Builder
		if err := res.WriteText(&text); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(text.String(), "SUSTAINED OVERLOAD: 95 arrivals over the in-flight bound of 5 were not started") {
			t.Errorf("the summary does not report the overload:\n%s", text.String())
		}
	})
}

func TestOpenLoopKeepsRunningUnderSustainedOverload(t *testing.T) {
	for _, m := range openModes {
		t.Run(m.name, func(t *testing.T) { testOpenLoopSustainedOverload(t, m.handOff) })
	}
}

func testOpenLoopSustainedOverload(t *testing.T, handOff bool) {
	synctest.Test(t, func(t *testing.T) {
		// 100 arrivals/s against one worker that serves 1 per 15 ms (66.7/s).
		start := time.Now()
		res := mustRunOpen(t, Config{Users: 1, Rate: 100, MaxInFlight: 10, Duration: 10*time.Second + offset},
			&timedWorkload{service: fixedService(15 * time.Millisecond)}, handOff)
		if took := time.Since(start); took > 11*time.Second {
			t.Errorf("the run took %v of a 10 s duration", took)
		}
		if res.Overall.Ops < 660 || res.Overall.Ops > 670 {
			t.Errorf("ops %d, want the worker's 66.7/s for 10 s", res.Overall.Ops)
		}
		if res.NotStarted < 320 || res.NotStarted > 340 || !res.Overloaded {
			t.Errorf("not started %d, want the excess 33.3/s for 10 s", res.NotStarted)
		}
		for _, iv := range res.Series[1:] {
			if iv.Length < time.Second || iv.Phase != Measured {
				continue
			}
			if iv.NotStarted == 0 || iv.Overall.Ops < 66 {
				t.Errorf("at %v: %d ops, %d not started; the overload is sustained", iv.Start, iv.Overall.Ops, iv.NotStarted)
			}
		}
	})
}

func TestStopGraceAndHardDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// User 0's 11th operation starts at 1.0 s and takes 1.5 s: it ends in
		// the grace period. User 1's 11th never ends by itself: the hard
		// deadline, Grace after the end, cancels it.
		wl := &timedWorkload{service: func(id, n, tx int) (time.Duration, error) {
			switch {
			case n < 10:
				return 100 * time.Millisecond, nil
			case id == 0:
				return 1500 * time.Millisecond, nil
			}
			return time.Hour, nil
		}}
		start := time.Now()
		res := mustRun(t, Config{Users: 2, Duration: 2*time.Second + offset, Grace: 3 * time.Second}, wl)
		if took := time.Since(start); took != 5*time.Second+offset {
			t.Errorf("the run took %v, want the duration plus the grace, 5.0005s", took)
		}
		if n := res.AfterEnd.Count(); n != 1 || !near(res.AfterEnd.Max(), 1500*time.Millisecond, 0.001) {
			t.Errorf("after end: %d operations (max %v), want the 1.5 s one", n, res.AfterEnd.Max())
		}
		if res.CancelledAtStop != 1 {
			t.Errorf("cancelled at stop %d, want 1", res.CancelledAtStop)
		}
		if res.Overall.Ops != 20 || res.Overall.Errors.Total() != 0 {
			t.Errorf("measured %d ops, %v errors; want 20 and no error (a cancelled operation is not an error)",
				res.Overall.Ops, res.Overall.Errors)
		}
		if last := res.Series[len(res.Series)-1]; last.Phase != Stopping {
			t.Errorf("last interval's phase %v, want stopping", last.Phase)
		}
		wl.checkClosed(t)
	})
}

func TestInterruptReturnsThePartialResult(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(3*time.Second+offset, cancel)
		wl := &timedWorkload{service: fixedService(10 * time.Millisecond)}
		r, err := NewRunner(Config{Users: 3, WarmUp: time.Second + offset, Duration: time.Minute}, wl)
		if err != nil {
			t.Fatal(err)
		}
		res, err := r.Run(ctx)
		if !errors.Is(err, context.Canceled) || res == nil || !res.Interrupted {
			t.Fatalf("Run = %v, %v; want the partial result and context.Canceled", res, err)
		}
		if res.Measured != 2*time.Second || res.Overall.Ops != 3*200 {
			t.Errorf("measured %v, %d ops; want 2s and 600", res.Measured, res.Overall.Ops)
		}
		if res.CancelledAtStop != 3 {
			t.Errorf("cancelled %d, want the 3 operations in flight", res.CancelledAtStop)
		}
		wl.checkClosed(t)
	})
}

func TestWorkersAreClosedWhenOneCannotOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		refused := errors.New("too many clients already")
		wl := &timedWorkload{service: fixedService(time.Millisecond), openErr: func(id int) error {
			if id == 20 {
				return refused
			}
			return nil
		}}
		res, err := run(t, Config{Users: 30, Duration: time.Second}, wl)
		if !errors.Is(err, refused) || res != nil || !strings.Contains(err.Error(), "user 21 of 30") {
			t.Fatalf("Run = %v, %v; want no result and the error naming user 21 of 30", res, err)
		}
		wl.checkClosed(t)
	})
}

func TestOpsLimitRunsExactlyThatMany(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"closed", Config{Users: 3, Ops: 1000}},
		{"closed, more users than ops", Config{Users: 8, Ops: 5}},
		{"open", Config{Users: 3, Rate: 1000, Ops: 1000}},
		{"open, handed off", Config{Users: 3, Rate: 1000, Ops: 1000}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				wl := &timedWorkload{service: fixedService(time.Millisecond)}
				res := mustRunOpen(t, tt.cfg, wl, strings.HasSuffix(tt.name, "handed off"))
				if res.Overall.Ops != tt.cfg.Ops || res.Measured <= 0 {
					t.Errorf("ops %d in %v, want %d", res.Overall.Ops, res.Measured, tt.cfg.Ops)
				}
				wl.checkClosed(t)
			})
		})
	}
}

func TestMixIsChosenByWeight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		mix := []TxType{{"browse", 60}, {"buy", 30}, {"pay", 10}, {"never", 0}}
		wl := &timedWorkload{mix: mix, service: fixedService(time.Millisecond)}
		res := mustRun(t, Config{Users: 4, Ops: 100000, Seed: 1}, wl)
		for i, tr := range res.Types {
			want := float64(mix[i].Weight) / 100
			if got := float64(tr.Ops) / 100000; got < want-0.01 || got > want+0.01 {
				t.Errorf("%s: share %.3f, want %.2f", tr.Name, got, want)
			}
		}
		if res.Types[3].Ops != 0 {
			t.Errorf("a type of weight 0 ran %d times", res.Types[3].Ops)
		}
		// The same seed gives the same choices.
		again := mustRun(t, Config{Users: 4, Ops: 100000, Seed: 1}, &timedWorkload{mix: mix, service: fixedService(time.Millisecond)})
		for i := range res.Types {
			if res.Types[i].Ops != again.Types[i].Ops {
				t.Errorf("%s: %d then %d with the same seed", res.Types[i].Name, res.Types[i].Ops, again.Types[i].Ops)
			}
		}
	})
}

func TestErrorsAreClassifiedAndCountedPerType(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Every 4th operation of type "write" is a serialization failure,
		// every 10th of "read" times out after 2 s (over a 1 s limit).
		mix := []TxType{{"read", 1}, {"write", 1}}
		n := map[int]int{}
		wl := &timedWorkload{mix: mix, service: func(id, k, tx int) (time.Duration, error) {
			n[tx]++
			switch {
			case tx == 1 && n[tx]%4 == 0:
				return time.Millisecond, classedError(Serialization)
			case tx == 0 && n[tx]%10 == 0:
				return 2 * time.Second, context.DeadlineExceeded
			}
			return time.Millisecond, nil
		}}
		res := mustRun(t, Config{Users: 1, Ops: 400, TxLimit: time.Second, Seed: 3}, wl)
		read, write := res.Types[0], res.Types[1]
		if int(write.Errors[Serialization]) != n[1]/4 || write.Errors.Total() != write.Errors[Serialization] {
			t.Errorf("write errors %v, want %d serialization failures", write.Errors, n[1]/4)
		}
		if int(read.Errors[Timeout]) != n[0]/10 || read.OverLimit != read.Errors[Timeout] {
			t.Errorf("read errors %v over limit %d, want %d timeouts, all over the limit", read.Errors, read.OverLimit, n[0]/10)
		}
		if res.Overall.Errors.Total() != read.Errors.Total()+write.Errors.Total() {
			t.Errorf("overall errors %v do not add up", res.Overall.Errors)
		}
		if res.Overall.Ops+res.Overall.Errors.Total() != 400 {
			t.Errorf("%d ok + %d failed, want 400", res.Overall.Ops, res.Overall.Errors.Total())
		}
	})
}

// classifyingWorkload classifies its own errors.
type classifyingWorkload struct{ timedWorkload }

var errBusy = errors.New("resource busy, retry")

func (c *classifyingWorkload) ClassifyError(err error) ErrorClass {
	if errors.Is(err, errBusy) {
		return Deadlock
	}
	return ClassifyError(err)
}

func TestAWorkloadCanClassifyItsOwnErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		wl := &classifyingWorkload{timedWorkload{service: func(id, n, tx int) (time.Duration, error) {
			return time.Millisecond, errBusy
		}}}
		res := mustRun(t, Config{Users: 1, Ops: 10}, wl)
		if res.Overall.Errors[Deadlock] != 10 {
			t.Errorf("errors %v, want 10 classified as deadlock by the workload", res.Overall.Errors)
		}
	})
}

func TestConfigValidateReportsEveryProblem(t *testing.T) {
	err := Config{Users: 0, Rate: -1, Think: Think{Mean: -time.Second}, RampUp: time.Second}.Validate()
	for _, want := range []string{"users 0", "rate -1", "think -1s", "ramp-up 1s: longer than warm-up 0s", "duration 0 and ops 0"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to mention %q", err, want)
		}
	}
	if err := (Config{Users: 1, Rate: 10, Think: Think{Mean: time.Second}, Duration: time.Second}).Validate(); err == nil {
		t.Error("think time in an open loop was accepted")
	}
	if err := (Config{Users: 1, Duration: time.Second}).Validate(); err != nil {
		t.Errorf("a minimal closed loop was refused: %v", err)
	}
	if _, err := NewRunner(Config{Users: 1, Duration: time.Second}, &timedWorkload{mix: []TxType{{"a", 0}, {"a", -1}}}); err == nil ||
		!strings.Contains(err.Error(), "repeated name") || !strings.Contains(err.Error(), "weight -1") {
		t.Errorf("a bad mix was accepted or misreported: %v", err)
	}
}

func TestARunnerRunsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, err := NewRunner(Config{Users: 1, Ops: 1}, &timedWorkload{service: fixedService(time.Millisecond)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Run(t.Context()); err != nil {
			t.Fatal(err)
		}
		if _, err := r.Run(t.Context()); err == nil {
			t.Error("a second Run was accepted")
		}
	})
}

func TestResultJSONRoundTrip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		res := mustRun(t, Config{Users: 2, Rate: 100, WarmUp: time.Second, Duration: 2*time.Second + offset, IntervalHistograms: true},
			&timedWorkload{mix: []TxType{{"a", 1}, {"b", 1}}, service: stallAt(30, 300*time.Millisecond)})
		b, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		var back Result
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if back.Overall.Ops != res.Overall.Ops || back.Overall.Latency.Quantile(0.99) != res.Overall.Latency.Quantile(0.99) ||
			len(back.Series) != len(res.Series) || back.Series[1].Phase != Measured || back.Mode != "open" {
			t.Errorf("the result did not survive JSON:\n%s", b)
		}
		// The per-second histograms merge into the measured distribution.
		merged := measure.NewHistogram()
		for _, iv := range back.Series {
			if iv.Phase == Measured {
				for _, h := range iv.Histograms.Latency {
					merged.Merge(h)
				}
			}
		}
		if merged.Count() != res.Overall.Latency.Count() || merged.Quantile(0.99) != res.Overall.Latency.Quantile(0.99) {
			t.Errorf("merged seconds: %d ops p99 %v; the run: %d ops p99 %v", merged.Count(), merged.Quantile(0.99),
				res.Overall.Latency.Count(), res.Overall.Latency.Quantile(0.99))
		}
	})
}

// countingWaiter counts the wake-ups of the waiter it wraps.
type countingWaiter struct {
	movableWaiter
	woke *atomic.Int64
}

func (w countingWaiter) waitUntil(at time.Duration) bool {
	ok := w.movableWaiter.waitUntil(at)
	if ok {
		w.woke.Add(1)
	}
	return ok
}

func TestOpenLoopFreeWorkersClaimArrivalsAhead(t *testing.T) {
	// At 200 arrivals a second on 4 workers that take 1 ms, a worker is
	// always free: claimed ahead, no arrival wakes the dispatcher; handed
	// off, every one does. The arrivals, their latencies and their lag are
	// the same either way.
	const arrivals = 400
	for _, m := range openModes {
		t.Run(m.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var woke atomic.Int64
				r := newFakeClockRunner(t, Config{Users: 4, Rate: 200, Duration: 2*time.Second + offset},
					&timedWorkload{service: fixedService(time.Millisecond)})
				r.handOff = m.handOff
				timers := r.newWaiter
				r.newWaiter = func(r *Runner, stop context.Context) movableWaiter {
					return countingWaiter{timers(r, stop), &woke}
				}
				res, err := r.Run(t.Context())
				if err != nil {
					t.Fatal(err)
				}
				if res.Overall.Ops != arrivals || res.Late != 0 || res.Overall.Latency.Max() != time.Millisecond {
					t.Errorf("%d operations, %d late, latency max %v; want %d, none late, 1 ms", res.Overall.Ops, res.Late,
						res.Overall.Latency.Max(), arrivals)
				}
				want := map[bool]int64{false: 0, true: arrivals}[m.handOff]
				if got := woke.Load(); got < want-1 || got > want+1 {
					t.Errorf("the dispatcher woke %d times, want %d", got, want)
				}
			})
		})
	}
}

func TestOpenLoopClaimsAheadOnlyWhereItCan(t *testing.T) {
	for _, tt := range []struct {
		cfg  Config
		want bool
	}{
		{Config{Users: 4, Rate: 2000}, true},
		{Config{Users: 4, Rate: claimRateBound}, true},
		{Config{Users: 4, Rate: 2 * claimRateBound}, false},  // the dispatcher's wake-ups serve several arrivals
		{Config{Users: 4, Rate: 100, MaxInFlight: 3}, false}, // a free worker does not mean room under the bound
		{Config{Users: 4}, false},                            // a closed loop
	} {
		if got := tt.cfg.withDefaults().claimsAhead(); got != tt.want {
			t.Errorf("%+v: claims ahead %v, want %v", tt.cfg, got, tt.want)
		}
	}
}
