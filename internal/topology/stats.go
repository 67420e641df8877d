package topology

import (
	"time"

	"github.com/dbrig/dbrig/internal/link"
)

// MergeStats sums the statistics of two runs of one link (each load
// agent runs its own in front of its users); a zero Stats is none.
func MergeStats(a, b link.Stats) link.Stats {
	return mergeStats(a, b, !a.Started.IsZero())
}

// mergeStats sums the statistics of two proxies of one link. Time series
// are re-binned onto the earlier start and the coarser interval.
func mergeStats(a, b link.Stats, aValid bool) link.Stats {
	if !aValid {
		return b
	}
	out := a
	if b.Started.Before(out.Started) {
		out.Started = b.Started
	}
	out.Connections += b.Connections
	out.ActiveConnections += b.ActiveConnections
	out.Forward = mergeDir(a.Forward, a.Started, b.Forward, b.Started, out.Started)
	out.Reverse = mergeDir(a.Reverse, a.Started, b.Reverse, b.Started, out.Started)
	return out
}

func mergeDir(a link.DirStats, aStart time.Time, b link.DirStats, bStart, start time.Time) link.DirStats {
	out := a
	out.Bytes += b.Bytes
	out.Segments += b.Segments
	out.LostSegments += b.LostSegments
	out.ShadowCollisions += b.ShadowCollisions
	out.MaxInFlight = max(a.MaxInFlight, b.MaxInFlight)
	out.WindowStalls += b.WindowStalls
	out.StallTime += b.StallTime
	out.MaxJitter = max(a.MaxJitter, b.MaxJitter)
	out.Spun = mergeLateness(a.Spun, b.Spun)
	out.Unspun = mergeLateness(a.Unspun, b.Unspun)
	out.MaxLateness = max(a.MaxLateness, b.MaxLateness)
	out.MeanLateness = weightedMean(a.MeanLateness, a.Spun.Writes+a.Unspun.Writes, b.MeanLateness, b.Spun.Writes+b.Unspun.Writes)
	if out.FirstDelivery.IsZero() || (!b.FirstDelivery.IsZero() && b.FirstDelivery.Before(out.FirstDelivery)) {
		out.FirstDelivery = b.FirstDelivery
	}
	if b.LastDelivery.After(out.LastDelivery) {
		out.LastDelivery = b.LastDelivery
	}
	interval := max(a.SeriesInterval, b.SeriesInterval)
	out.SeriesInterval = interval
	if interval <= 0 {
		out.Series = nil
		return out
	}
	var series []int64
	add := func(s []int64, sStart time.Time, sInterval time.Duration) {
		for i, v := range s {
			at := sStart.Sub(start) + time.Duration(i)*sInterval
			j := int(at / interval)
			for len(series) <= j {
				series = append(series, 0)
			}
			series[j] += v
		}
	}
	add(a.Series, aStart, a.SeriesInterval)
	add(b.Series, bStart, b.SeriesInterval)
	out.Series = series
	return out
}

// mergeLateness joins two sets of writes' timing errors: the mean weighted
// by their writes, the larger maximum.
func mergeLateness(a, b link.Lateness) link.Lateness {
	return link.Lateness{Writes: a.Writes + b.Writes, Max: max(a.Max, b.Max),
		Mean: weightedMean(a.Mean, a.Writes, b.Mean, b.Writes)}
}

func weightedMean(a time.Duration, aN int64, b time.Duration, bN int64) time.Duration {
	if aN+bN == 0 {
		return 0
	}
	return time.Duration((float64(a)*float64(aN) + float64(b)*float64(bN)) / float64(aN+bN))
}
