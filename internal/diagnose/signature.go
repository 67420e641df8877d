package diagnose

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dbrig/dbrig/internal/measure"
	"github.com/dbrig/dbrig/internal/units"
)

// The detector's rules, chosen before any run was diagnosed and said in
// every answer.
const (
	// firstEdgeLo and firstEdgeHi bound where the first cluster may
	// begin: TCP's retransmission timeout is at least 200 ms (Linux's
	// tcp_rto_min; 300 ms on older Windows), plus the round trip and the
	// transaction's own time; the lower bound leaves the resolution of a
	// histogram bucket and a clock's slack below 200 ms.
	firstEdgeLo = 180 * time.Millisecond
	firstEdgeHi = 1500 * time.Millisecond
	// edgeStep is the step of the scan for the first cluster's edge.
	edgeStep = 2 * time.Millisecond
	// minWindow is the narrowest window a cluster is counted in: a stalled
	// transaction's time is the timeout plus its own, which spreads the
	// cluster by the transactions' own spread (tens of milliseconds on a
	// busy server).
	minWindow = 40 * time.Millisecond
	// stepRatio: a cluster holds at least this many times the transactions
	// of the window of the same width just below it. A server that is only
	// slow has a tail that thins out with time; a timeout makes the density
	// jump at its edge.
	stepRatio = 4.0
	// spacedShare: at least this share of the transactions beyond the
	// first cluster's edge lie in clusters at whole multiples of it (a
	// transaction hit twice waits two timeouts, a lost retransmission three).
	spacedShare = 0.7
	// medianShare: the median is at most this share of the first cluster's
	// edge: "a few milliseconds" beside a timeout of hundreds.
	medianShare = 0.1
	// slowTypeFast: a transaction type with fewer than this share of its
	// transactions faster than a tenth of the cluster's edge is slow by
	// itself, and its transactions in the cluster are its ordinary time.
	slowTypeFast = 0.1
	// minSamples: fewer transactions than this say nothing about a tail.
	minSamples = 200
	// minCluster and minClusterShare: the first cluster holds at least
	// this many transactions, and at least this share of them, so that a
	// handful of strays is not called a signature.
	minCluster      = 10
	minClusterShare = 1e-4
)

// Signature is what the detector found in one latency distribution.
type Signature struct {
	// Found reports the retransmission-stall signature: a cluster of
	// outliers from 200 ms on, clusters spaced by whole multiples of the
	// first, while the median is a few milliseconds.
	Found   bool          `json:"found"`
	Samples int64         `json:"samples"`
	Median  time.Duration `json:"-"`
	// Edge is where the first cluster begins (the lowest transaction in
	// it, to the histogram's resolution); Spacing is the timeout it
	// implies: the edge less the fastest transaction's own time.
	Edge    time.Duration `json:"-"`
	Spacing time.Duration `json:"-"`
	// First is the transactions in the first cluster, Below those in the
	// window of the same width just below it.
	First, Below int64 `json:"-"`
	// Hit is the transactions in the clusters at whole multiples of the
	// spacing, Beyond every transaction past the first cluster's window's
	// start; Clusters lists the multiples that hold any.
	Hit      int64   `json:"hit"`
	HitShare float64 `json:"hit_share"`
	Beyond   int64   `json:"beyond_edge"`
	Clusters []int   `json:"clusters,omitempty"`
	// Over200ms and Over1s count the transactions over 200 ms and 1 s.
	Over200ms int64 `json:"over_200ms"`
	Over1s    int64 `json:"over_1s"`
	// Why says, in a sentence, why the signature was or was not found.
	Why string `json:"why"`
}

// cdf is a distribution's recorded values with the observations at or
// below each, for the many counts the scan takes.
type cdf struct {
	values    []time.Duration
	atOrBelow []int64
	total     int64
}

func cdfOf(h *measure.Histogram) cdf {
	var c cdf
	h.ForEach(func(v time.Duration, n int64) {
		c.total += n
		c.values = append(c.values, v)
		c.atOrBelow = append(c.atOrBelow, c.total)
	})
	return c
}

// above is the number of observations above d (to resolution, as
// measure.Histogram.CountAbove).
func (c cdf) above(d time.Duration) int64 {
	limit := d.Truncate(time.Microsecond)
	i := sort.Search(len(c.values), func(i int) bool { return c.values[i] > limit })
	if i == 0 {
		return c.total
	}
	return c.total - c.atOrBelow[i-1]
}

// quantileBelow is the q-quantile of the observations at or below limit
// (the healthy transactions, when limit is below any timeout).
func (c cdf) quantileBelow(q float64, limit time.Duration) time.Duration {
	n := c.total - c.above(limit)
	if n == 0 {
		return 0
	}
	rank := int64(math.Ceil(q * float64(n)))
	i := sort.Search(len(c.atOrBelow), func(i int) bool { return c.atOrBelow[i] >= rank })
	if i == len(c.values) {
		return limit
	}
	return c.values[i]
}

// quantileIn is the q-quantile of the observations in (lo, hi].
func (c cdf) quantileIn(lo, hi time.Duration, q float64) time.Duration {
	n := c.in(lo, hi)
	if n == 0 {
		return lo
	}
	rank := c.total - c.above(lo) + int64(math.Ceil(q*float64(n)))
	i := sort.Search(len(c.atOrBelow), func(i int) bool { return c.atOrBelow[i] >= rank })
	if i == len(c.values) {
		return hi
	}
	return c.values[i]
}

// in is the number of observations in (lo, hi].
func (c cdf) in(lo, hi time.Duration) int64 { return c.above(lo) - c.above(hi) }

// windowAt is the width of the window a cluster from edge is counted in:
// a stalled transaction takes the timeout plus its own time, so the
// cluster is as wide as the healthy transactions' spread (their 99th
// percentile, body99), at least minWindow or a fifth of the edge, at most
// half the edge (so that the clusters at its multiples stay apart).
func windowAt(edge, body99 time.Duration) time.Duration {
	return min(max(minWindow, edge/5, body99), edge/2)
}

// Evidence is what a point recorded beside its distribution that tells
// repeated timeouts from one pause of the whole machine. A pause of D
// stalls every transaction in flight at once, which in a closed loop is at
// most one per user, and finishes them within a second or two: a cluster
// at D with no multiples. Timeouts strike connections one at a time,
// second after second.
type Evidence struct {
	// Users is the point's virtual users (0: unknown).
	Users int64
	// SecondMax is the slowest transaction of each second, in
	// milliseconds (nil: not recorded).
	SecondMax []float64
}

// minStallSeconds: stalled transactions in this many different seconds
// are repeated stalls, not one pause.
const minStallSeconds = 3

// Detect looks for the retransmission-stall signature in a latency
// distribution, with no evidence beside it: a single cluster then needs a
// second one at a multiple to count as repeated.
func Detect(h *measure.Histogram) Signature { return DetectWith(h, Evidence{}) }

// DetectWith looks for the retransmission-stall signature in a latency
// distribution. It scans for the edge where the density of transactions
// jumps up beyond 180 ms (a timeout) instead of thinning out (a slow
// server's tail), and checks that the outliers beyond sit at whole
// multiples of that edge and that the median is a few milliseconds.
func DetectWith(h *measure.Histogram, ev Evidence) Signature {
	s := Signature{}
	if h == nil {
		s.Why = "no distribution"
		return s
	}
	s.Samples = h.Count()
	s.Median = h.Quantile(0.5)
	c := cdfOf(h)
	s.Over200ms = c.above(200 * time.Millisecond)
	s.Over1s = c.above(time.Second)
	if s.Samples < minSamples {
		s.Why = fmt.Sprintf("%d transactions: too few to tell a cluster from strays (at least %d)", s.Samples, minSamples)
		return s
	}
	need := max(minCluster, int64(math.Ceil(minClusterShare*float64(s.Samples))))
	body99 := c.quantileBelow(0.99, firstEdgeLo)
	best, bestScore := firstCluster(c, body99, need)
	if best == 0 {
		s.Why = fmt.Sprintf("no window of %s or more from 180 ms on holds %d transactions: %s over 200 ms, no cluster",
			units.FormatDuration(windowAt(firstEdgeLo, body99)), need, count(s.Over200ms))
		return s
	}
	w := windowAt(best, body99)
	s.First, s.Below = c.in(best, best+w), c.in(best-w, best)
	s.Edge = c.lowestAbove(best)
	// A stalled transaction takes the timeout plus its own time, so the
	// first cluster's median less the median of all is the timeout; its
	// lowest value is not, when a busy server's own tail reaches into
	// the window.
	s.Spacing = max(c.quantileIn(best, best+w, 0.5)-s.Median, s.Edge-h.Min())
	s.Beyond = c.above(s.Edge - w/2)
	s.countMultiples(c, h, w)
	s.judge(ev, w, bestScore)
	return s
}

// firstCluster is the edge from 180 ms on above which a window holds at
// least need transactions and the most of them against the window below
// it, and that ratio; 0 when no window holds need.
func firstCluster(c cdf, body99 time.Duration, need int64) (best time.Duration, bestScore float64) {
	for b := firstEdgeLo; b <= firstEdgeHi; b += edgeStep {
		w := windowAt(b, body99)
		above := c.in(b, b+w)
		if above < need {
			continue
		}
		score := float64(above) / float64(c.in(b-w, b)+1)
		if score > bestScore {
			bestScore, best = score, b
		}
	}
	return best, bestScore
}

// countMultiples counts the transactions in windows of width w at whole
// multiples of the spacing above the fastest.
func (s *Signature) countMultiples(c cdf, h *measure.Histogram, w time.Duration) {
	for k := 1; ; k++ {
		at := time.Duration(k)*s.Spacing + h.Min()
		if at-w/2 > h.Max() || k > 64 {
			break
		}
		if n := c.in(at-w/2, at+w); n > 0 {
			s.Hit += n
			s.Clusters = append(s.Clusters, k)
		}
	}
	s.HitShare = float64(s.Hit) / float64(s.Samples)
}

// judge finds the signature, or says which of its marks the clusters lack.
func (s *Signature) judge(ev Evidence, w time.Duration, bestScore float64) {
	spaced := float64(s.Hit) / float64(max(s.Beyond, 1))
	switch {
	case bestScore < stepRatio:
		s.Why = fmt.Sprintf("the tail thins out: from %s on, %s sit in a window of %s and %s in the one below it, no jump of %gx (a slow server, not a timeout)",
			units.FormatDuration(s.Edge), count(s.First), units.FormatDuration(w), count(s.Below), stepRatio)
	case spaced < spacedShare:
		s.Why = fmt.Sprintf("a cluster from %s, but only %.0f %% of the %s transactions beyond it sit at whole multiples of %s (want %.0f %%)",
			units.FormatDuration(s.Edge), 100*spaced, count(s.Beyond), units.FormatDuration(s.Spacing), 100*spacedShare)
	case float64(s.Median) > medianShare*float64(s.Edge):
		s.Why = fmt.Sprintf("a cluster from %s, but the median, %s, is more than %.0f %% of it: the whole distribution is slow, not a few transactions",
			units.FormatDuration(s.Edge), units.FormatDuration(s.Median), 100*medianShare)
	case !repeated(*s, ev, w):
		s.Why = fmt.Sprintf("one cluster of %s from %s with none at its multiples", count(s.First), units.FormatDuration(s.Edge))
		if ev.Users > 0 {
			s.Why += fmt.Sprintf(", no more than the %d users one pause stalls at once", ev.Users)
		}
		if ev.SecondMax != nil {
			s.Why += fmt.Sprintf(", in %s of the run", plural(stallSeconds(ev, s.Edge-w/2), "second", "seconds"))
		}
		s.Why += ": one pause of the whole machine or server, not repeated timeouts"
	default:
		s.Found = true
		s.Why = fmt.Sprintf("%s of %s transactions (%s) stalled in clusters at %s × %s, the first from %s with %s where the %s below it hold %s; median %s",
			count(s.Hit), count(s.Samples), percent(s.HitShare), Multiples(s.Clusters), units.FormatDuration(s.Spacing),
			units.FormatDuration(s.Edge), count(s.First), units.FormatDuration(w), count(s.Below), units.FormatDuration(s.Median))
	}
}

// repeated reports whether the stalls happened more than once: a second
// cluster at a multiple of the first, more stalled transactions than one
// pause can stall, or stalled transactions in several seconds.
func repeated(s Signature, ev Evidence, w time.Duration) bool {
	return len(s.Clusters) >= 2 || (ev.Users > 0 && s.Hit > ev.Users) || stallSeconds(ev, s.Edge-w/2) >= minStallSeconds
}

// stallSeconds counts the seconds whose slowest transaction took at least
// from.
func stallSeconds(ev Evidence, from time.Duration) int {
	n := 0
	for _, v := range ev.SecondMax {
		if v >= ms(from) {
			n++
		}
	}
	return n
}

// lowestAbove is the lowest recorded value above b.
func (c cdf) lowestAbove(b time.Duration) time.Duration {
	limit := b.Truncate(time.Microsecond)
	i := sort.Search(len(c.values), func(i int) bool { return c.values[i] > limit })
	if i == len(c.values) {
		return b
	}
	return c.values[i]
}

// count writes a count with thousands separators: 12,345.
func count(n int64) string {
	s := strconv.FormatInt(n, 10)
	if n < 0 {
		return "-" + count(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

func percent(v float64) string {
	switch {
	case v >= 0.1:
		return fmt.Sprintf("%.0f %%", 100*v)
	case v >= 0.001:
		return fmt.Sprintf("%.1f %%", 100*v)
	}
	return fmt.Sprintf("%.2g %%", 100*v)
}

// Multiples writes the multiples of a signature's clusters: "1, 2, 3",
// or "1, 2, 3, 4, 5, 6 ... 34 (24 in all)" when there are many.
func Multiples(ks []int) string {
	var parts []string
	for i, k := range ks {
		if len(ks) > 8 && i == 6 {
			parts = append(parts, fmt.Sprintf("... %d (%d in all)", ks[len(ks)-1], len(ks)))
			break
		}
		parts = append(parts, strconv.Itoa(k))
	}
	return strings.Join(parts, ", ")
}
