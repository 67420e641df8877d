package measure

import (
	"slices"
	"testing"
)

func TestTrimmedMean(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		values              []float64
		dropFirst, dropEnds bool
		mean                float64
		kept                int
	}{
		{[]float64{1, 2, 3}, false, false, 2, 3},
		{[]float64{10, 2, 3, 4}, true, false, 3, 3},
		{[]float64{10, 1, 2, 3, 100}, true, true, 2.5, 2},
		{[]float64{5}, true, true, 5, 1},
		{[]float64{1, 9}, false, true, 5, 2},
		// The TPC-H streams: ten, the first and each end dropped.
		{[]float64{50, 9, 1, 2, 3, 4, 5, 6, 7, 8}, true, true, 5, 7},
	} {
		mean, kept := TrimmedMean(tc.values, tc.dropFirst, tc.dropEnds)
		if mean != tc.mean || kept != tc.kept {
			t.Errorf("TrimmedMean(%v, %v, %v) = %v, %d; want %v, %d", tc.values, tc.dropFirst, tc.dropEnds, mean, kept, tc.mean, tc.kept)
		}
		var sum float64
		idx := KeptRuns(tc.values, tc.dropFirst, tc.dropEnds)
		for _, i := range idx {
			sum += tc.values[i]
		}
		if len(idx) != tc.kept || sum/float64(len(idx)) != tc.mean || !slices.IsSorted(idx) {
			t.Errorf("KeptRuns(%v, %v, %v) = %v: not the %d runs in order that average %v", tc.values, tc.dropFirst, tc.dropEnds, idx, tc.kept, tc.mean)
		}
	}
}
