package procstat

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// allowedCPUs is up to n of the CPUs this test may run on.
func allowedCPUs(t *testing.T, n int) []int {
	t.Helper()
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	var out []int
	for cpu := 0; cpu < len(set)*64 && len(out) < n; cpu++ {
		if set.IsSet(cpu) {
			out = append(out, cpu)
		}
	}
	return out
}

// TestFreeCPUsIsAShareOfTheCPUs: the probe's busy threads get CPU time,
// at most one CPU's worth each, and stop.
func TestFreeCPUsIsAShareOfTheCPUs(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cpus := allowedCPUs(t, 2)
	free, err := FreeCPUs(ctx, cpus, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if free <= 0 || free > float64(len(cpus))*1.05 {
		t.Errorf("%d busy threads got %.3f CPUs", len(cpus), free)
	}
}

// TestFreeCPUsPinsEachThreadToItsCPU: thread i spins on the i-th CPU of
// the list and on no other, so the probe measures the server's CPUs, one
// thread each, not wherever the scheduler would put them.
func TestFreeCPUsPinsEachThreadToItsCPU(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cpus := allowedCPUs(t, 2)
	var mu sync.Mutex
	seen := make([]unix.CPUSet, len(cpus))
	_, err := spin(ctx, cpus, 20*time.Millisecond, func(i int) {
		var set unix.CPUSet
		if err := unix.SchedGetaffinity(0, &set); err == nil {
			mu.Lock()
			seen[i] = set
			mu.Unlock()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	for i, cpu := range cpus {
		if seen[i].Count() != 1 || !seen[i].IsSet(cpu) {
			t.Errorf("thread %d could run on %d CPUs, want CPU %d alone", i, seen[i].Count(), cpu)
		}
	}
}

// TestFreeCPUsPutsTheThreadBack: a thread the probe pinned may run on its
// CPUs as before once the probe is done (the runtime reuses it).
func TestFreeCPUsPutsTheThreadBack(t *testing.T) {
	t.Parallel()
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var was unix.CPUSet
	if err := unix.SchedGetaffinity(0, &was); err != nil {
		t.Fatal(err)
	}
	cpu := allowedCPUs(t, 1)[0]
	if _, err := spinThread(context.Background(), cpu, time.Now(), func() {}); err != nil {
		t.Fatal(err)
	}
	var now unix.CPUSet
	if err := unix.SchedGetaffinity(0, &now); err != nil {
		t.Fatal(err)
	}
	if now != was {
		t.Errorf("the thread may run on %d CPUs after the probe, %d before", now.Count(), was.Count())
	}
}

// TestFreeCPUsCancelled: a cancelled probe returns the context's error,
// never the share measured before the cancel as if it were the figure.
func TestFreeCPUsCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for name, probe := range map[string]func() (float64, error){
		"FreeCPUs": func() (float64, error) { return FreeCPUs(ctx, allowedCPUs(t, 2), time.Hour) },
		"FreeCPU":  func() (float64, error) { return FreeCPU(ctx, time.Hour) },
	} {
		if free, err := probe(); !errors.Is(err, context.Canceled) {
			t.Errorf("%s cancelled: %.3f CPUs, error %v; want context.Canceled", name, free, err)
		}
	}
}
