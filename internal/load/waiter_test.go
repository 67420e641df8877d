package load

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/measure"
)

func TestArrivalWaitersNeverWakeEarlyAndStop(t *testing.T) {
	for _, tt := range []struct {
		name string
		make func(*Runner, context.Context) (waiter, error)
	}{
		{"precise", func(r *Runner, stop context.Context) (waiter, error) { return newPreciseWaiter(r, stop) }},
		{"timer", func(r *Runner, _ context.Context) (waiter, error) { return newTimerWaiter(r) }},
		{"thread", newThreadWaiter},
	} {
		t.Run(tt.name, func(t *testing.T) {
			runtime.LockOSThread() // the thread waiter's contract; harmless to the others
			defer runtime.UnlockOSThread()
			stop, cancel := context.WithCancel(t.Context())
			defer cancel()
			r := &Runner{t0: time.Now(), stopDone: stop.Done()}
			w, err := tt.make(r, stop)
			if err != nil {
				t.Fatal(err)
			}
			defer w.close()
			for range 50 {
				at := r.since() + 300*time.Microsecond
				if !w.waitUntil(at) {
					t.Fatal("waitUntil reported a stop")
				}
				// An operation must never start before its intended start.
				if now := r.since(); now < at {
					t.Fatalf("woke at %v, before %v", now, at)
				}
			}
			time.AfterFunc(50*time.Millisecond, cancel)
			start := time.Now()
			if w.waitUntil(r.since() + time.Hour) {
				t.Error("waitUntil an hour away returned true")
			}
			if took := time.Since(start); took > 10*time.Second {
				t.Errorf("the stop took %v to wake the waiter", took)
			}
		})
	}
}

// BenchmarkArrivalWaiter measures how late each waiter wakes for an arrival
// 200 µs away, as the open loop waits for each arrival.
//
//	go test -run '^$' -bench ArrivalWaiter -benchtime 5000x ./internal/load/
func BenchmarkArrivalWaiter(b *testing.B) {
	for _, bb := range []struct {
		name string
		make func(*Runner, context.Context) (waiter, error)
	}{
		{"timerfd", func(r *Runner, stop context.Context) (waiter, error) { return newPreciseWaiter(r, stop) }},
		{"go-timer", func(r *Runner, _ context.Context) (waiter, error) { return newTimerWaiter(r) }},
		{"thread", newThreadWaiter},
	} {
		b.Run(bb.name, func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			r := &Runner{t0: time.Now(), stopDone: b.Context().Done()}
			w, err := bb.make(r, b.Context())
			if err != nil {
				b.Fatal(err)
			}
			defer w.close()
			late := measure.NewHistogram()
			for b.Loop() {
				at := r.since() + 200*time.Microsecond
				w.waitUntil(at)
				late.Record(r.since() - at)
			}
			b.ReportMetric(float64(late.Quantile(0.5)), "late-p50-ns")
			b.ReportMetric(float64(late.Quantile(0.99)), "late-p99-ns")
		})
	}
}

func TestThreadWaiterClosesItsStopOnlyAfterTheStopWroteIt(t *testing.T) {
	// The run's stop writes the waiter's eventfd from a goroutine of its
	// own; a close racing it must not close the descriptor under the write
	// (another file could take its number and get the write).
	for range 200 {
		stop, cancel := context.WithCancel(t.Context())
		r := &Runner{t0: time.Now(), stopDone: stop.Done()}
		w, err := newThreadWaiter(r, stop)
		if err != nil {
			t.Fatal(err)
		}
		cancel()
		w.close()
		select {
		case <-w.(*threadWaiter).stopped:
		default:
			t.Fatal("close returned before the stop's write to the descriptor it closed")
		}
	}
}
