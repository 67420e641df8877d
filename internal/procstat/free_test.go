package procstat

import (
	"context"
	"runtime"
	"testing"
	"time"
)

// TestFreeCPUsIsAShareOfTheCPUs: the probe's busy threads get CPU time,
// at most one CPU's worth each, and stop.
func TestFreeCPUsIsAShareOfTheCPUs(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cpus := min(runtime.NumCPU(), 2)
	free, err := FreeCPUs(ctx, cpus, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if free <= 0 || free > float64(cpus)*1.05 {
		t.Errorf("%d busy threads got %.3f CPUs", cpus, free)
	}
}
