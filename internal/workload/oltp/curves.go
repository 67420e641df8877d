package oltp

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/dbrig/dbrig/internal/diagnose"
	"github.com/dbrig/dbrig/internal/study"
)

// curve is one line of a users sweep: the combinations that share every
// swept value but the users (a transport and a mix, say), in users order.
type curve struct {
	facet     string // the other swept values: "mix=shop net=unix" ("" when only users vary)
	mix       string
	transport string
	mismatch  bool
	points    []*study.Summary
	// model is the closed-loop model stored with the curve's last point
	// (fitted on every point before it), or fitted here for a run made
	// before the model was stored.
	model ClosedLoop
}

func (c *curve) users(i int) float64 { return c.points[i].Params.Float("users") }

// tps is each point's kept throughput.
func (c *curve) tps() []float64 {
	out := make([]float64, len(c.points))
	for i, s := range c.points {
		out[i] = s.Mean("tps")
	}
	return out
}

// peak is the seed's peak of the curve and the points it averages.
func (c *curve) peak() (float64, []*study.Summary) {
	v, idx := Peak(c.tps())
	var top []*study.Summary
	for _, i := range idx {
		top = append(top, c.points[i])
	}
	return v, top
}

// last is the point at the most users.
func (c *curve) last() *study.Summary { return c.points[len(c.points)-1] }

// name says which curve it is in a finding: "unix", "lan-1g (mix=shop)".
func (c *curve) name() string {
	if c.facet == "" {
		return c.transport
	}
	return c.facet
}

// curvesOf groups a run's closed-loop combinations into curves, in the
// order the run first met them.
func curvesOf(rd *study.RunData) []*curve {
	facetOf, _ := rd.Facets(func(s *study.Summary) string { return fmt.Sprint(s.Params.Int("users")) })
	var out []*curve
	by := map[string]*curve{}
	for _, s := range rd.Summaries {
		if s.Params.Float("rate") > 0 || len(s.Results) == 0 || math.IsNaN(s.Mean("tps")) {
			continue
		}
		f := facetOf(s)
		c, ok := by[f]
		if !ok {
			r := s.Results[0]
			c = &curve{facet: f, mix: s.Params.String("mix"), transport: transportOf(r), mismatch: mismatched(r)}
			by[f] = c
			out = append(out, c)
		}
		c.points = append(c.points, s)
	}
	for _, c := range out {
		slices.SortStableFunc(c.points, func(a, b *study.Summary) int {
			return int(a.Params.Int("users") - b.Params.Int("users"))
		})
		c.model = storedModel(c)
	}
	return out
}

// storedModel reads the closed-loop model stored with the curve's last
// point, or fits it when the point has none.
func storedModel(c *curve) ClosedLoop {
	last := c.last()
	m := last.Results[len(last.Results)-1].Model
	if v, ok := m[modelKnee]; ok {
		n := peakPoints
		if len(c.points) < peakPoints {
			n = 1
		}
		return ClosedLoop{Knee: v, Peak: m[modelPeak], BaseMS: m[modelBase], BaseUsers: m[modelBaseN], ThinkMS: m[modelThink], PeakPoints: n}
	}
	var cp []curvePoint
	for _, s := range c.points {
		cp = append(cp, curvePoint{users: s.Params.Float("users"), tps: s.Mean("tps"), meanMS: s.Mean("mean_ms"), runs: 1})
	}
	return fitClosedLoop(cp, thinkMS(last.Params))
}

// transportCurve finds a mix's curve on a transport (full duplex).
func transportCurve(cs []*curve, mix, transport string) *curve {
	for _, c := range cs {
		if c.mix == mix && c.transport == transport && !c.mismatch {
			return c
		}
	}
	return nil
}

// mixesOf lists the mixes of the curves, in order.
func mixesOf(cs []*curve) []string {
	var out []string
	for _, c := range cs {
		if !slices.Contains(out, c.mix) {
			out = append(out, c.mix)
		}
	}
	return out
}

// gbe is the transport seed 001 measured its gains against: Gigabit
// Ethernet, here the emulated lan-1g link.
const gbe = "lan-1g"

// gainOverGbE is seed 001's gain of a transport's peak over Gigabit
// Ethernet's in the same mix, in percent: (peak - peak_GbE) / peak_GbE.
func gainOverGbE(cs []*curve, mix, transport string) (float64, bool) {
	t, g := transportCurve(cs, mix, transport), transportCurve(cs, mix, gbe)
	if t == nil || g == nil {
		return math.NaN(), false
	}
	pt, _ := t.peak()
	pg, _ := g.peak()
	return study.Gain(pt, pg), true
}

// usersList writes the users of some points: "70, 110, 150".
func usersList(ps []*study.Summary) string {
	var out []string
	for _, s := range ps {
		out = append(out, fmt.Sprint(s.Params.Int("users")))
	}
	return strings.Join(out, ", ")
}

// serverCPU is the mean CPUs the points' servers used while they ran
// (sampled by the monitoring connection), NaN when not measured.
func serverCPU(ps ...*study.Summary) float64 {
	sum, n := 0.0, 0
	for _, s := range ps {
		for _, r := range s.Results {
			for _, ser := range r.Monitor {
				if v := ser.Summarize().MeanCPU; v >= 0 {
					sum += v
					n++
				}
			}
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

// stalls diagnoses each run of a combination.
func stalls(s *study.Summary) []diagnose.Point {
	var out []diagnose.Point
	for _, r := range s.Results {
		if p, ok := diagnose.Result(r); ok {
			out = append(out, p)
		}
	}
	return out
}
