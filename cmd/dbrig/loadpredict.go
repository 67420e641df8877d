package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/dbrig/dbrig/internal/predict"
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/units"
	"github.com/dbrig/dbrig/internal/workload"
)

// calibrationLength is the warm-up and measured interval of a --predict
// calibration: seconds, not the sweep's length.
var calibrationLength = workload.Params{"warm_up": "1s", "duration": "3s", "ramp_up": "0s"}

// calibrationLinks are the calibration's paths: one that changes nothing
// (what a transaction costs), and one that delays (what a round trip costs
// beyond its RTT, the server and the client waking up after it).
var calibrationLinks = []string{"loopback", "rtt-2ms"}

// checkPredict refuses --predict where it cannot predict: a kind that
// reports no round trips, a load without a link, a load spread on agents.
func (f *loadFlags) checkPredict(k workload.Kind, req study.LoadRequest) error {
	switch {
	case !f.predict:
		return nil
	case !reportsRoundTrips(k):
		return fmt.Errorf("--predict: load %s reports no round trips to predict from", k.Name)
	case req.Link == nil:
		return errors.New("--predict: give --link PROFILE[,PROFILE...]: the links to predict the load through")
	case f.fleet.agents != "" || f.fleet.listen != "":
		return errors.New("--predict: calibrates on this machine; run it without --agents and --listen-agents")
	}
	return nil
}

// reportsRoundTrips says whether a kind counts its transactions' round
// trips, which --predict calibrates on: a kind with a Predict of its own
// (a sweep's points predicted from the points before them) may not.
func reportsRoundTrips(k workload.Kind) bool {
	_, ok := k.Metric("round_trips_per_tx")
	return ok && k.Predict != nil
}

// predictLoad calibrates the load briefly through the calibration's links,
// at the fewest and the most users it sweeps, then prints each planned
// point's prediction without running the sweep.
func predictLoad(ctx context.Context, a *app, reg *study.Registry, req study.LoadRequest, plan *study.Plan, o study.Options, asJSON bool) error {
	users := map[int64]bool{}
	for _, p := range plan.Points() {
		users[p.Combo.Params.Int("users")] = true
	}
	counts := slices.Sorted(maps.Keys(users))
	cal := req
	cal.Link = &study.LoadLink{Profiles: calibrationLinks}
	cal.Sweep = []any{counts[0]}
	if n := counts[len(counts)-1]; n != counts[0] {
		cal.Sweep = append(cal.Sweep, n)
	}
	cal.Params = maps.Clone(req.Params)
	for name, v := range calibrationLength {
		if slices.ContainsFunc(req.Kind.Params, func(p workload.ParamSpec) bool { return p.Name == name }) {
			cal.Params[name] = v
		}
	}
	spec, err := study.ParseLoad(cal, reg)
	if err != nil {
		return usageError(fmt.Errorf("--predict: the calibration: %w", err))
	}
	o.Spec = spec
	ran, err := study.Run(ctx, reg, o)
	if ran == nil {
		return runError(err)
	}
	if err != nil {
		return loadOutcome(a, ran, err)
	}
	doc := predictions(plan, ran)
	if asJSON {
		writeJSON(a.stdout, doc)
	} else {
		doc.print(a.stdout)
	}
	return nil
}

// predictionDoc is what --predict prints: the calibration, and each
// planned point's prediction.
type predictionDoc struct {
	Calibration string            `json:"calibration_dir"`
	Points      []pointPrediction `json:"points"`
}

type pointPrediction struct {
	Key        string  `json:"key"`
	Link       string  `json:"link"`
	Users      int64   `json:"users"`
	TPS        float64 `json:"tps,omitempty"`
	ResponseMS float64 `json:"response_ms,omitempty"`
	Dominant   string  `json:"dominant,omitempty"`
	Formula    string  `json:"formula,omitempty"`
	// Why says why a point has no prediction.
	Why string `json:"why,omitempty"`
}

func predictions(plan *study.Plan, ran *study.Ran) predictionDoc {
	doc := predictionDoc{Calibration: ran.Dir}
	for _, p := range plan.Points() {
		r := p.Planned()
		pp := pointPrediction{Key: p.Key(), Link: r.Link().Description, Users: r.Params.Int("users")}
		if len(p.Combo.Links) > 0 {
			pp.Link = p.Combo.Links[0].Profile
		}
		switch e, ok := predict.Point(r, ran.Results); {
		case !ok:
			pp.Why = "no impaired link: what the calibration measures"
		default:
			pp.TPS, pp.Dominant, pp.Formula = e.TPS, e.Dominant, e.Formula
			if e.Response < time.Duration(math.MaxInt64) {
				pp.ResponseMS = float64(e.Response) / float64(time.Millisecond)
			}
		}
		doc.Points = append(doc.Points, pp)
	}
	return doc
}

func (d predictionDoc) print(w io.Writer) {
	fmt.Fprintf(w, "Predicted before any point runs, from the calibration in %s:\n\n", d.Calibration)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "link\tusers\tpredicted tps\tresponse\tdominates")
	for _, p := range d.Points {
		if p.Why != "" {
			fmt.Fprintf(tw, "%s\t%d\t-\t-\t%s\n", p.Link, p.Users, p.Why)
			continue
		}
		response := "unbounded"
		if p.ResponseMS > 0 {
			response = units.FormatDuration(time.Duration(p.ResponseMS * float64(time.Millisecond)))
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", p.Link, p.Users, workload.FormatNumber(p.TPS), response, p.Dominant)
	}
	_ = tw.Flush()
}

// pointModel is a point's prediction, made and stored before it ran,
// beside what it measured.
type pointModel struct {
	TPS float64 `json:"tps"`
	// ErrorPct is (measured - predicted) / predicted, in percent.
	ErrorPct float64 `json:"error_pct"`
	Formula  string  `json:"formula"`
}

// modelOf is the prediction of the run's point of users through the link
// profile (any, when the load has one link); nil when it has none.
func modelOf(ran *study.Ran, users int, profile string) *pointModel {
	for _, r := range ran.Results {
		tps, ok := r.Model[predict.TPSMetric]
		if !ok || r.Params.Int("users") != int64(users) || profile != "" && r.Link().Profile != profile {
			continue
		}
		return &pointModel{TPS: tps, ErrorPct: 100 * predict.Compare(tps, r.Metrics[predict.TPSMetric]).Error, Formula: r.Formula}
	}
	return nil
}
