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

// FreeCPUs is the CPUs' worth a server with one busy process on each of
// cpus would get now: thread i, pinned to cpus[i], spins for d and their
// CPU time over d is returned. The machine's other work takes the rest,
// and the scheduler shares the CPUs between sessions (autogroups) before
// threads, so on a busy machine this is less than len(cpus) whatever their
// number: the share a parallel degree can use, which the CPUs' count alone
// overstates. Pinned, the threads measure the server's CPUs and no others,
// and two of them never share one CPU while another is idle. They still
// need a Go processor each to spin at once: a GOMAXPROCS below len(cpus)
// caps the figure at it. A cancelled ctx returns its error, not the part
// measured before it.
func FreeCPUs(ctx context.Context, cpus []int, d time.Duration) (float64, error) {
	return spin(ctx, cpus, d, nil)
}

// FreeCPU is the CPU one busy thread gets now, wherever the scheduler puts
// it: what a single process (one scan's backend) would get.
func FreeCPU(ctx context.Context, d time.Duration) (float64, error) {
	return spin(ctx, []int{unpinned}, d, nil)
}

// unpinned in spin's list is a thread the scheduler places.
const unpinned = -1

// spin runs one thread per entry of cpus, pinned to it unless unpinned;
// onPinned, when set, runs on thread i once it is pinned (tests look at
// its affinity there).
func spin(ctx context.Context, cpus []int, d time.Duration, onPinned func(i int)) (float64, error) {
	got := make([]float64, len(cpus))
	errs := make([]error, len(cpus))
	var wg sync.WaitGroup
	start := time.Now()
	for i, cpu := range cpus {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], errs[i] = spinThread(ctx, cpu, start.Add(d), func() {
				if onPinned != nil {
					onPinned(i)
				}
			})
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, fmt.Errorf("probe the free CPUs: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("probe the free CPUs: %w", err)
	}
	var sum float64
	for _, g := range got {
		sum += g
	}
	return sum / time.Since(start).Seconds(), nil
}

// spinThread keeps one OS thread busy on cpu until the deadline and
// returns the CPU time it got.
func spinThread(ctx context.Context, cpu int, deadline time.Time, pinned func()) (float64, error) {
	runtime.LockOSThread()
	if cpu != unpinned {
		restore, err := pinThread(cpu)
		if err != nil {
			runtime.UnlockOSThread()
			return 0, err
		}
		// A thread whose affinity could not be restored stays locked: the
		// runtime ends it with the goroutine rather than reuse it pinned.
		defer func() {
			if restore() == nil {
				runtime.UnlockOSThread()
			}
		}()
	} else {
		defer runtime.UnlockOSThread()
	}
	pinned()
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

// pinThread pins the calling (locked) thread to cpu and returns what puts
// its affinity back.
func pinThread(cpu int) (restore func() error, err error) {
	var was, set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &was); err != nil {
		return nil, fmt.Errorf("read the thread's CPU affinity: %w", err)
	}
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("pin the probe's thread to CPU %d: %w", cpu, err)
	}
	return func() error { return unix.SchedSetaffinity(0, &was) }, nil
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
