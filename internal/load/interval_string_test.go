package load

import (
	"strings"
	"testing"
	"time"
)

// TestStoppingIntervalReadsAsNoResult: the stopping sliver holds only the
// operations in flight at the end; its line gives no rate that could be
// read as the run's throughput.
func TestStoppingIntervalReadsAsNoResult(t *testing.T) {
	t.Parallel()
	iv := Interval{Start: 10 * time.Second, Length: 20 * time.Millisecond, Phase: Stopping, Users: 8, Overall: IntervalStats{Ops: 7}}
	got := iv.String()
	if strings.Contains(got, "tps") || !strings.Contains(got, "7 operations in flight at the end finished after it (not measured)") {
		t.Errorf("stopping line %q", got)
	}
	iv.Phase = Measured
	if got := iv.String(); !strings.Contains(got, "tps 350") {
		t.Errorf("measured line %q lacks its rate", got)
	}
}
