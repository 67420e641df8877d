package topology

import (
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/link"
)

// TestMergeStatsKeepsTheLateness: two agents' runs of one link merge into
// a lateness over both (the mean weighted by each run's writes, the larger
// maximum, each scheduler path apart), where the merge kept the first
// run's lateness and dropped the second's.
func TestMergeStatsKeepsTheLateness(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 27, 11, 0, 0, 0, time.UTC)
	run := func(spun, unspun link.Lateness) link.Stats {
		d := link.DirStats{Spun: spun, Unspun: unspun, MaxLateness: max(spun.Max, unspun.Max)}
		if n := spun.Writes + unspun.Writes; n > 0 {
			d.MeanLateness = (spun.Mean*time.Duration(spun.Writes) + unspun.Mean*time.Duration(unspun.Writes)) / time.Duration(n)
		}
		return link.Stats{Started: start, Forward: d, Reverse: d}
	}
	a := run(link.Lateness{Writes: 30, Mean: 10 * time.Microsecond, Max: 40 * time.Microsecond},
		link.Lateness{Writes: 10, Mean: 50 * time.Microsecond, Max: 90 * time.Microsecond})
	b := run(link.Lateness{Writes: 10, Mean: 30 * time.Microsecond, Max: 200 * time.Microsecond}, link.Lateness{})
	got := MergeStats(a, b).Forward
	want := link.DirStats{
		Spun:         link.Lateness{Writes: 40, Mean: 15 * time.Microsecond, Max: 200 * time.Microsecond},
		Unspun:       link.Lateness{Writes: 10, Mean: 50 * time.Microsecond, Max: 90 * time.Microsecond},
		MeanLateness: 22 * time.Microsecond, // (30x10 + 10x50 + 10x30) / 50
		MaxLateness:  200 * time.Microsecond,
	}
	if got.Spun != want.Spun || got.Unspun != want.Unspun || got.MeanLateness != want.MeanLateness || got.MaxLateness != want.MaxLateness {
		t.Errorf("merged lateness: spun %+v unspun %+v mean %v max %v; want spun %+v unspun %+v mean %v max %v",
			got.Spun, got.Unspun, got.MeanLateness, got.MaxLateness, want.Spun, want.Unspun, want.MeanLateness, want.MaxLateness)
	}
	if zero := MergeStats(link.Stats{}, b); zero.Forward.MeanLateness != b.Forward.MeanLateness {
		t.Errorf("a zero Stats merged: mean %v, want the other's %v", zero.Forward.MeanLateness, b.Forward.MeanLateness)
	}
}
