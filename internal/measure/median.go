package measure

import (
	"math"
	"slices"
)

// Median is the middle of xs (the mean of the two middle values when their
// number is even), NaN when xs is empty; xs is left as it was.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
