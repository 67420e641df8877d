package procstat

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// FreeCPU is the CPU one busy thread gets now, wherever the scheduler puts
// it: what a single process (one scan's backend) would get. The machine's
// other work takes the rest. A cancelled ctx returns its error, not the
// part measured before it.
func FreeCPU(ctx context.Context, d time.Duration) (float64, error) {
	start := time.Now()
	got, err := spinThread(ctx, start.Add(d))
	if err == nil {
		err = ctx.Err()
	}
	if err != nil {
		return 0, fmt.Errorf("probe the free CPU: %w", err)
	}
	return got / time.Since(start).Seconds(), nil
}

// spinThread keeps one OS thread busy until the deadline and returns the
// CPU time it got.
func spinThread(ctx context.Context, deadline time.Time) (float64, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before, err := ThreadCPU()
	if err != nil {
		return 0, err
	}
	var spins uint64
	for ctx.Err() == nil && time.Now().Before(deadline) {
		for range 10000 {
			spins++
		}
	}
	spinSink.Add(spins)
	after, err := ThreadCPU()
	return (after - before).Seconds(), err
}

// spinSink keeps the spin loop from being optimized away.
var spinSink atomic.Uint64

// ThreadCPU is the calling OS thread's CPU time (lock the goroutine to
// its thread around the span measured).
func ThreadCPU() (time.Duration, error) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0, fmt.Errorf("read the thread's CPU clock: %w", err)
	}
	return time.Duration(ts.Nano()), nil
}
