package loadoltp

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/dbrig/dbrig/internal/diagnose"
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/workload"
	"github.com/dbrig/dbrig/internal/workload/oltp"
)

// Curve is one line of a users sweep: the combinations that share every
// swept value but the users (a transport and a mix, say), in users order.
type Curve struct {
	Facet     string // the other swept values: "mix=shop net=unix" ("" when only users vary)
	Mix       string
	Transport string // "unix", "direct" (loopback TCP) or the link's profile
	Mismatch  bool   // the link runs at a duplex mismatch
	Points    []*study.Summary
	// Model is the closed-loop model stored with the curve's last point
	// (fitted on every point before it), or fitted here for a run made
	// before the model was stored.
	Model oltp.ClosedLoop
}

// tps is each point's kept throughput.
func (c *Curve) tps() []float64 {
	out := make([]float64, len(c.Points))
	for i, s := range c.Points {
		out[i] = s.Mean("tps")
	}
	return out
}

// Peak is the seed's peak of the curve and the points it averages.
func (c *Curve) Peak() (float64, []*study.Summary) {
	v, idx := oltp.Peak(c.tps())
	var top []*study.Summary
	for _, i := range idx {
		top = append(top, c.Points[i])
	}
	return v, top
}

// Last is the point at the most users.
func (c *Curve) Last() *study.Summary { return c.Points[len(c.Points)-1] }

// Name says which curve it is in a finding: "unix", "lan-1g (mix=shop)".
func (c *Curve) Name() string {
	if c.Facet == "" {
		return c.Transport
	}
	return c.Facet
}

// Curves groups a run's closed-loop combinations into curves, in the
// order the run first met them.
func Curves(rd *study.RunData) []*Curve {
	facetOf, _ := rd.Facets(func(s *study.Summary) string { return fmt.Sprint(s.Params.Int("users")) })
	var out []*Curve
	by := map[string]*Curve{}
	for _, s := range rd.Summaries {
		if s.Params.Float("rate") > 0 || len(s.Results) == 0 || math.IsNaN(s.Mean("tps")) {
			continue
		}
		f := facetOf(s)
		c, ok := by[f]
		if !ok {
			r := s.Results[0]
			c = &Curve{Facet: f, Mix: s.Params.String("mix"), Transport: transportOf(r), Mismatch: oltp.Mismatched(r)}
			by[f] = c
			out = append(out, c)
		}
		c.Points = append(c.Points, s)
	}
	for _, c := range out {
		slices.SortStableFunc(c.Points, func(a, b *study.Summary) int {
			return int(a.Params.Int("users") - b.Params.Int("users"))
		})
		c.Model = curveModel(c)
	}
	return out
}

// transportOf names how a point's client reached the server: "unix",
// "direct" (loopback TCP) or the emulated link's profile.
func transportOf(r workload.Result) string {
	l := r.Link()
	if l.Mode == "unix" || l.Mode == "direct" {
		return l.Mode
	}
	return l.Profile
}

// curveModel is the closed loop fitted on every point of the curve: what
// the curve's knee and peak are, a description of the measured points
// (each point's own figure is held out of its fit).
func curveModel(c *Curve) oltp.ClosedLoop {
	last := c.Last()
	var cp []oltp.CurvePoint
	for _, s := range c.Points {
		cp = append(cp, oltp.CurvePoint{Users: s.Params.Float("users"), TPS: s.Mean("tps"), MeanMS: s.Mean("mean_ms"), Runs: 1})
	}
	return oltp.FitClosedLoop(cp, oltp.ThinkMS(last.Params))
}

// TransportCurve finds a mix's curve on a transport (full duplex).
func TransportCurve(cs []*Curve, mix, transport string) *Curve {
	for _, c := range cs {
		if c.Mix == mix && c.Transport == transport && !c.Mismatch {
			return c
		}
	}
	return nil
}

// Mixes lists the mixes of the curves, in order.
func Mixes(cs []*Curve) []string {
	var out []string
	for _, c := range cs {
		if !slices.Contains(out, c.Mix) {
			out = append(out, c.Mix)
		}
	}
	return out
}

// GbE is the transport seed 001 measured its gains against: Gigabit
// Ethernet, here the emulated lan-1g link.
const GbE = "lan-1g"

// GainOverGbE is seed 001's gain of a transport's peak over Gigabit
// Ethernet's in the same mix, in percent: (peak - peak_GbE) / peak_GbE.
func GainOverGbE(cs []*Curve, mix, transport string) (float64, bool) {
	t, g := TransportCurve(cs, mix, transport), TransportCurve(cs, mix, GbE)
	if t == nil || g == nil {
		return math.NaN(), false
	}
	pt, _ := t.Peak()
	pg, _ := g.Peak()
	return study.Gain(pt, pg), true
}

// UsersList writes the users of some points: "70, 110, 150".
func UsersList(ps []*study.Summary) string {
	var out []string
	for _, s := range ps {
		out = append(out, fmt.Sprint(s.Params.Int("users")))
	}
	return strings.Join(out, ", ")
}

// Stalls diagnoses each run of a combination.
func Stalls(s *study.Summary) []diagnose.Point {
	var out []diagnose.Point
	for _, r := range s.Results {
		if p, ok := diagnose.Result(r); ok {
			out = append(out, p)
		}
	}
	return out
}
