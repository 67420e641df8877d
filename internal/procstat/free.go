package procstat

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// FreeCPUs is the CPUs' worth a server with one busy process per CPU would
// get now: one thread per CPU spins for d and their CPU time over d is
// returned. The machine's other work takes the rest, and the scheduler
// shares the CPUs between sessions (autogroups) before threads, so on a
// busy machine this is less than cpus whatever their number: the share a
// parallel degree can use, which the CPUs' count alone overstates.
func FreeCPUs(ctx context.Context, cpus int, d time.Duration) (float64, error) {
	got := make([]float64, cpus)
	errs := make([]error, cpus)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range cpus {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = spinThread(ctx, start.Add(d))
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, fmt.Errorf("probe the free CPUs: %w", err)
	}
	var sum float64
	for _, g := range got {
		sum += g
	}
	return sum / time.Since(start).Seconds(), nil
}

// spinThread keeps one OS thread busy until the deadline and returns the
// CPU time it got.
func spinThread(ctx context.Context, deadline time.Time) (float64, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	before, err := threadCPU()
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
	after, err := threadCPU()
	return after - before, err
}

// spinSink keeps the spin loop from being optimized away.
var spinSink atomic.Uint64

func threadCPU() (float64, error) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_THREAD, &ru); err != nil {
		return 0, err
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds(), nil
}
