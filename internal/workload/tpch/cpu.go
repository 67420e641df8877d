package tpch

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dbrig/dbrig/internal/monitor"
	"github.com/dbrig/dbrig/internal/procstat"
)

// cpuSample is the host's busy CPU time, the server's and dbrig's own at
// one moment, to tell how much of the CPUs other work took during a point:
// a parallel degree can only gain what the CPUs have free.
type cpuSample struct {
	at     time.Time
	host   float64 // busy seconds of all CPUs since boot
	server float64 // the server and every process it reaped, seconds
	self   float64 // this process, seconds
	ok     bool
}

// sampleCPU reads the CPU times; serverPID 0 (a target, or a client
// process) gives no sample.
func sampleCPU(serverPID int) cpuSample {
	s := cpuSample{at: time.Now()}
	if serverPID <= 0 {
		return s
	}
	// The host's busy time leaves dbrig's idle loops out, so this
	// process's own must too (procstat reads both the same way).
	host, errHost := procstat.HostBusy()
	server, ok := monitor.TreeCPU(serverPID)
	self, errSelf := procstat.SelfCPU()
	s.host, s.server, s.self, s.ok = host, server, self, errHost == nil && ok && errSelf == nil
	return s
}

// otherCPUs is the CPUs' worth of work, on average between two samples,
// that neither the server nor dbrig did.
func otherCPUs(a, b cpuSample) (float64, bool) {
	wall := b.at.Sub(a.at).Seconds()
	if !a.ok || !b.ok || wall <= 0 {
		return 0, false
	}
	other := (b.host - a.host) - (b.server - a.server) - (b.self - a.self)
	return max(other, 0) / wall, true
}

// freeCPUs is the CPUs' worth a server with one busy process per CPU would
// get now: one thread per CPU spins for d and their CPU time over d is
// returned. The machine's other work takes the rest, and the scheduler
// shares the CPUs between sessions (autogroups) before threads, so on a
// busy machine this is less than cpus whatever their number: the share a
// parallel degree can use, which the CPUs' count alone overstates.
func freeCPUs(ctx context.Context, cpus int, d time.Duration) (float64, error) {
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
