package georeplication

import (
	"fmt"
	"math"
	"strings"

	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/workload"
)

// The shape of a transfer on the link, as the seed's Figures 6 and 7 show
// it, is judged on the link's own series (bytes delivered per interval,
// 10 ms by default) over the transfer's span: from the interval where 2.5 %
// of the point's link bytes have crossed to the one where 97.5 % have, so
// the set-up and verification statements (a few hundred bytes, seconds
// before and after) are left out without knowing their timing.
//
// At 77 ms an interval of 10 ms is an eighth of a round trip: a writer that
// sends a 40 KB buffer (0.3 ms at 1 Gbit/s) and then waits a round trip for
// the reply leaves at least 6 of every 8 intervals empty (idle share about
// 0.85, coefficient of variation about √7 = 2.6), while a stream at the
// link's or the agent's rate fills every interval it spans (idle share 0,
// coefficient well under 1). Half the span idle and a coefficient of 1 lie
// between the two, far from both.
const (
	spanTrim      = 0.025 // of the bytes, at each end of the span
	nearZero      = 0.1   // of the span's mean per interval: an idle interval
	burstyIdle    = 0.5   // idle share at or above which a transfer is bursty
	burstyVariant = 1.0   // coefficient of variation at or above which it is
)

// linkShape is how one transfer used the link over its own span.
type linkShape struct {
	intervals int     // in the span
	interval  float64 // seconds
	idleShare float64 // share of the span's intervals carrying under a tenth of its mean
	cv        float64 // coefficient of variation of the bytes per interval
}

func (s linkShape) bursty() bool { return s.idleShare >= burstyIdle && s.cv >= burstyVariant }
func (s linkShape) smooth() bool { return s.idleShare < burstyIdle && s.cv < burstyVariant }

func (s linkShape) String() string {
	return fmt.Sprintf("%.0f %% of %d intervals of %.0f ms idle, CV %.2f", 100*s.idleShare, s.intervals, 1000*s.interval, s.cv)
}

// shapeOf measures a link's series, both directions summed; false when the
// link recorded none.
func shapeOf(l workload.LinkResult) (linkShape, bool) {
	bytes := make([]float64, max(len(l.ForwardSeries), len(l.ReverseSeries)))
	var total float64
	for i := range bytes {
		if i < len(l.ForwardSeries) {
			bytes[i] += float64(l.ForwardSeries[i])
		}
		if i < len(l.ReverseSeries) {
			bytes[i] += float64(l.ReverseSeries[i])
		}
		total += bytes[i]
	}
	if l.SeriesSeconds <= 0 || total <= 0 {
		return linkShape{}, false
	}
	span := transferSpan(bytes, total)
	var mean, sq float64
	for _, b := range span {
		mean += b
	}
	mean /= float64(len(span))
	idle := 0
	for _, b := range span {
		sq += (b - mean) * (b - mean)
		if b < nearZero*mean {
			idle++
		}
	}
	return linkShape{intervals: len(span), interval: l.SeriesSeconds, idleShare: float64(idle) / float64(len(span)),
		cv: math.Sqrt(sq/float64(len(span))) / mean}, true
}

// transferSpan cuts the series to the intervals holding the middle 95 % of
// its bytes.
func transferSpan(bytes []float64, total float64) []float64 {
	first, last := -1, len(bytes)-1
	var sum float64
	for i, b := range bytes {
		sum += b
		if first < 0 && sum >= spanTrim*total {
			first = i
		}
		if sum >= (1-spanTrim)*total {
			last = i
			break
		}
	}
	return bytes[first : last+1]
}

// figure is one of the seed's figures of network use: a scenario and the
// shape the seed shows for it.
type figure struct {
	scenario string
	bursty   bool
	why      string // the seed's reason, for the verdict's text
}

var (
	figure6 = figure{"push", true, "the writer sends a buffer smaller than the window and waits a round trip for the reply before the next"}
	figure7 = figure{"pull", false, "the agent at the subscriber keeps reading while the writer applies, so the window, not a reply, paces the link"}
)

// judgeShape judges a figure on the seed's own stack for both figures
// (Windows Server 2008, the autotuned window) over 77 ms: every run of the
// scenario's largest point shows the figure's shape, none does, or the runs
// disagree.
func (a *analysis) judgeShape(f *report.Finding, fig figure) {
	wan := "tukwila-blueridge"
	rows := a.largest(fig.scenario, "char-1k", wan)
	s := a.get(fig.scenario, "char-1k", rows, wan, autotuned)
	if s == nil {
		return
	}
	shapes, matching, opposite := runShapes(s, fig.bursty)
	if len(shapes) == 0 {
		f.Why = "the link recorded no series of bytes per interval for this point"
		return
	}
	f.Measured = fmt.Sprintf("%s of %d rows over 77 ms, 16 MiB window: %s", fig.scenario, rows, strings.Join(shapes, "; "))
	legacyBursty := false
	if l := a.get(fig.scenario, "char-1k", rows, wan, legacy); l != nil {
		if legacyShapes, bursty, _ := runShapes(l, true); len(legacyShapes) > 0 {
			f.Measured += "; with a 64 KiB window: " + strings.Join(legacyShapes, "; ")
			legacyBursty = bursty == len(legacyShapes)
		}
	}
	f.Model = fmt.Sprintf("bursty: at least %.0f %% of the span idle and CV at least %.0f; smooth: both below", 100*burstyIdle, burstyVariant)
	want := map[bool]string{true: "bursty", false: "smooth"}[fig.bursty]
	switch {
	case matching == len(shapes):
		f.Verdict = report.Reproduced
		f.Why = fmt.Sprintf("Every run was %s, as the seed shows it: %s.", want, fig.why)
	case opposite == len(shapes):
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("No run was %s: the seed's figure shows it %s because %s.", want, want, fig.why)
	default:
		f.Verdict = report.WithinNoise
		f.Why = fmt.Sprintf("%d of %d runs were %s, %d the opposite: the runs do not agree on the shape.", matching, len(shapes), want, opposite)
	}
	if !fig.bursty && legacyBursty {
		f.Why += " With the 64 KiB window the same pull was bursty: 64 KiB per round trip bounds it; the seed's Figure 7 is the expanded window's."
	}
}

// runShapes describes each run's shape and counts the runs with and
// against the wanted one.
func runShapes(s *study.Summary, bursty bool) (shapes []string, matching, opposite int) {
	for _, r := range s.Results {
		sh, ok := shapeOf(study.LinkOf(r))
		if !ok {
			continue
		}
		shapes = append(shapes, fmt.Sprintf("run %d: %s", r.Run, sh))
		switch {
		case sh.bursty() == bursty && sh.smooth() != bursty:
			matching++
		case sh.bursty() != bursty && sh.smooth() == bursty:
			opposite++
		}
	}
	return shapes, matching, opposite
}
