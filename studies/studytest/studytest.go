// Package studytest is for the tests of the built-in studies' judges: run
// data of hand-made results made into repeated runs, for judges that weigh
// the spread between runs.
package studytest

import (
	"fmt"
	"maps"
	"slices"

	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/workload"
)

// Repeated is rd with each of its results run n times more, after all of
// rd's own: the i-th further run (from 0) is a copy of the result with
// metrics of its own, which edit changes, and the summaries are made anew
// by the plan's repeat rule.
func Repeated(rd *study.RunData, n int, edit func(i int, r *workload.Result)) *study.RunData {
	all := slices.Clone(rd.Results)
	for _, r := range rd.Results {
		for i := range n {
			x := r
			x.Run = r.Run + i + 1
			x.Key = fmt.Sprintf("%s #%d", r.Combo, x.Run)
			x.Metrics = maps.Clone(r.Metrics)
			edit(i, &x)
			all = append(all, x)
		}
	}
	out := *rd
	out.Results, out.Summaries = all, study.Summarize(all, rd.Plan.Repeat)
	return &out
}

// Scaled is rd with each point run once more per factor, every metric of
// that run times the factor: runs with a spread.
func Scaled(rd *study.RunData, factors ...float64) *study.RunData {
	return Repeated(rd, len(factors), func(i int, r *workload.Result) {
		for k, v := range r.Metrics {
			r.Metrics[k] = v * factors[i]
		}
	})
}
