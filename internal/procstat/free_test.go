package procstat

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestFreeCPUIsAShareOfACPU: the probe's busy thread gets CPU time, at
// most one CPU's worth, and stops.
func TestFreeCPUIsAShareOfACPU(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	free, err := FreeCPU(ctx, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if free <= 0 || free > 1.05 {
		t.Errorf("a busy thread got %.3f CPUs", free)
	}
}

// TestFreeCPUCancelled: a cancelled probe returns the context's error,
// never the share measured before the cancel as if it were the figure.
func TestFreeCPUCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if free, err := FreeCPU(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %.3f CPUs, error %v; want context.Canceled", free, err)
	}
}
