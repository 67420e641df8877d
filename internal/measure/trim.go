package measure

import "slices"

// TrimmedMean is the mean of values (in the order they were measured)
// after the seeds' repetition rule: the first dropped when dropFirst and
// more than one remains, then the lowest and the highest when dropMinMax
// and at least three remain. kept says how many were averaged. A study's
// runs and a workload's repetitions inside one point (the TPC-H streams)
// keep their figures by it.
func TrimmedMean(values []float64, dropFirst, dropMinMax bool) (mean float64, kept int) {
	rest := values
	if dropFirst && len(rest) > 1 {
		rest = rest[1:]
	}
	if dropMinMax && len(rest) >= 3 {
		sorted := slices.Clone(rest)
		slices.Sort(sorted)
		rest = sorted[1 : len(sorted)-1]
	}
	var sum float64
	for _, v := range rest {
		sum += v
	}
	return sum / float64(len(rest)), len(rest)
}
