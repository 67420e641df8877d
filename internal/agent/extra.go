package agent

import (
	"time"

	"github.com/dbrig/dbrig/internal/load"
	"github.com/dbrig/dbrig/internal/measure"
)

// Extra is what a load workload measures beyond load.Result (a script's
// statements' latencies, its retries), in a form the coordinator merges
// without knowing the workload: counters add up over the agents, and
// distributions merge exactly (HDR histograms), so that every percentile
// is read from all the agents' samples, never averaged. The names are the
// workload's own; every agent of a load runs the same workload, so the
// same names mean the same thing on each.
type Extra struct {
	Counters   map[string]int64              `json:"counters,omitempty"`
	Histograms map[string]*measure.Histogram `json:"histograms,omitempty"`
}

// Reporter is a load workload with an Extra: an agent tells it the
// measured interval when the load's clock starts, and sends its Extra
// beside the result.
type Reporter interface {
	load.Workload
	// Measuring is called once every user is open, at the common start,
	// before any transaction runs: the measured interval is from..to (a
	// warm-up after the start, for the load's duration).
	Measuring(from, to time.Time)
	// Extra is called once the run is over.
	Extra() *Extra
}

// MergeExtras adds up the agents' counters and merges their histograms;
// nil when no agent sent one.
func MergeExtras(parts []*Extra) *Extra {
	var m *Extra
	for _, p := range parts {
		if p == nil {
			continue
		}
		if m == nil {
			m = &Extra{Counters: map[string]int64{}, Histograms: map[string]*measure.Histogram{}}
		}
		for name, n := range p.Counters {
			m.Counters[name] += n
		}
		for name, h := range p.Histograms {
			if h == nil {
				continue
			}
			if m.Histograms[name] == nil {
				m.Histograms[name] = measure.NewHistogram()
			}
			m.Histograms[name].Merge(h)
		}
	}
	return m
}
