package measure

import (
	"cmp"
	"slices"
)

// TrimmedMean is the mean of values (in the order they were measured)
// after the seeds' repetition rule: the first dropped when dropFirst and
// more than one remains, then the lowest and the highest when dropMinMax
// and at least three remain. kept says how many were averaged. A study's
// runs and a workload's repetitions inside one point (the TPC-H streams)
// keep their figures by it.
func TrimmedMean(values []float64, dropFirst, dropMinMax bool) (mean float64, kept int) {
	idx := KeptRuns(values, dropFirst, dropMinMax)
	var sum float64
	for _, i := range idx {
		sum += values[i]
	}
	return sum / float64(len(idx)), len(idx)
}

// KeptRuns are the indices, in run order, of the values TrimmedMean
// averages: what else was measured with those runs (a prediction stored
// before each) can be held against the same runs.
func KeptRuns(values []float64, dropFirst, dropMinMax bool) []int {
	idx := make([]int, len(values))
	for i := range idx {
		idx[i] = i
	}
	if dropFirst && len(idx) > 1 {
		idx = idx[1:]
	}
	if dropMinMax && len(idx) >= 3 {
		byValue := slices.Clone(idx)
		slices.SortStableFunc(byValue, func(a, b int) int { return cmp.Compare(values[a], values[b]) })
		idx = byValue[1 : len(byValue)-1]
		slices.Sort(idx)
	}
	return idx
}
