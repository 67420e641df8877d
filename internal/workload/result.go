package workload

import (
	"slices"
	"strings"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/link"
	"github.com/dbrig/dbrig/internal/measure"
	"github.com/dbrig/dbrig/internal/monitor"
	"github.com/dbrig/dbrig/internal/units"
)

// Result is one point: a line of results.jsonl. A finished point has no
// Status; one cut short by an interrupt has StatusInterrupted.
type Result struct {
	Study  string         `json:"study"`
	Key    string         `json:"key"`   // combination and run: "net=lan-1g #2"
	Combo  string         `json:"combo"` // combination only
	Run    int            `json:"run"`
	Values map[string]any `json:"values"` // sweep values
	Params Params         `json:"params"` // resolved workload parameters
	Client ResolvedClient `json:"client"`
	// Instances are the servers the point ran on, as configured for it.
	Instances []engine.InstanceConfig `json:"instances,omitempty"`
	Links     []LinkResult            `json:"links,omitempty"`
	Started   time.Time               `json:"started"`
	Seconds   float64                 `json:"seconds"` // wall time of the workload's Run
	Metrics   map[string]float64      `json:"metrics,omitempty"`
	Series    map[string][]float64    `json:"series,omitempty"`
	// SeriesInterval is the seconds between two values of Series.
	SeriesInterval float64 `json:"series_interval_s,omitempty"`
	// Histograms are the run's latency distributions, whole.
	Histograms map[string]*measure.Histogram `json:"histograms,omitempty"`
	Notes      []string                      `json:"notes,omitempty"`
	// Warnings qualify the figures themselves (see Measurement.Warnings).
	Warnings []string `json:"warnings,omitempty"`
	// Monitor is what dbrig saw of each server while the point ran, over a
	// connection of its own (see package monitor).
	Monitor []monitor.Series `json:"monitor,omitempty"`
	// IdleLoops are the busy loops that kept this machine's CPUs from
	// halting while the point ran (Client.Idle "spin").
	IdleLoops *IdleLoops `json:"idle_loops,omitempty"`
	// Probe is what Kind.Probe measured just before the point ran, for
	// its prediction: an input of the prediction, never a figure judged.
	Probe   map[string]float64 `json:"probe,omitempty"`
	Model   map[string]float64 `json:"model,omitempty"`
	Formula string             `json:"formula,omitempty"`
	// Predicted names the figures of Model that Kind.Predict made before
	// the point ran; every other figure of Model is a fit on the other
	// combinations (Kind.Model).
	Predicted []string `json:"predicted,omitempty"`
	// PredictReason is the stored prediction's Prediction.Reason, and
	// FitReason the fit's.
	PredictReason string `json:"predict_reason,omitempty"`
	FitReason     string `json:"fit_reason,omitempty"`
	Error         string `json:"error,omitempty"`
	// Skipped says why a point was not measured although it did not fail
	// (a target cannot give the path the point asks for).
	Skipped string `json:"skipped,omitempty"`
	// Status is StatusInterrupted for a point an interrupt cut short: its
	// metrics are what it measured before the stop, kept so the run shows
	// where it stopped, and are no result (see Finished).
	Status string `json:"status,omitempty"`
}

// StatusInterrupted marks a point cut short by SIGINT, SIGTERM or SIGHUP.
const StatusInterrupted = "interrupted"

// Interrupted reports whether an interrupt cut the point short.
func (r Result) Interrupted() bool { return r.Status == StatusInterrupted }

// OK reports whether the point is done: measured, or skipped for a reason
// no rerun changes. An interrupted point is not: --resume runs it again.
func (r Result) OK() bool { return r.Error == "" && !r.Interrupted() }

// Measured reports whether the point was measured.
func (r Result) Measured() bool { return r.OK() && r.Skipped == "" }

// Instance is the configuration of the instance the point ran on (its
// "instance" parameter), or the zero configuration when it names none: a
// model that fits each engine or CPU set apart reads it.
func (r Result) Instance() engine.InstanceConfig {
	name := r.Params.String("instance")
	for _, in := range r.Instances {
		if in.Name == name {
			return in
		}
	}
	return engine.InstanceConfig{}
}

// LinkResult is a link's configuration and what it carried during a point.
type LinkResult struct {
	Name    string    `json:"name"`
	Between [2]string `json:"between"`
	Profile string    `json:"profile"`
	Mode    string    `json:"mode"`
	// Model figures of the link, for the report's models.
	RTTSeconds float64 `json:"rtt_s"`
	// RTOSeconds is the stall a lost segment costs before its
	// retransmission arrives (RTT + the minimum RTO), doubling on repeats.
	RTOSeconds float64 `json:"rto_s,omitempty"`
	// Duplex is "half" or "mismatch" when the link is not full duplex.
	Duplex       string  `json:"duplex,omitempty"`
	RateBitsPerS float64 `json:"rate_bps,omitempty"`
	WindowBytes  int64   `json:"window_bytes,omitempty"`
	// SendBufferBytes bounds what the sender may have unacknowledged, beside
	// the window (0 = unlimited).
	SendBufferBytes int64  `json:"sndbuf_bytes,omitempty"`
	Description     string `json:"description"`
	ForwardBytes    int64  `json:"forward_bytes"`
	ReverseBytes    int64  `json:"reverse_bytes"`
	Connections     int64  `json:"connections"`
	WindowStalls    int64  `json:"window_stalls,omitempty"`
	LostSegments    int64  `json:"lost_segments,omitempty"`
	// ShadowCollisions is, on a full-duplex link with a rate, the client
	// segments that started while a server frame was on the air (what a
	// duplex mismatch would have lost at this timing); nil where the link
	// did not count them (another duplex, no rate, or a run stored before).
	ShadowCollisions *int64 `json:"shadow_collisions,omitempty"`
	// Segments carried each way (a lost one counted once).
	ForwardSegments int64   `json:"forward_segments,omitempty"`
	ReverseSegments int64   `json:"reverse_segments,omitempty"`
	SeriesSeconds   float64 `json:"series_interval_s,omitempty"`
	// Bytes delivered per interval, each direction.
	ForwardSeries []int64 `json:"forward_series,omitempty"`
	ReverseSeries []int64 `json:"reverse_series,omitempty"`
}

// Link is the point's first link (a unix socket when it has none), the
// link of a study with one: a model that charges a link's round trips or
// timeouts reads it.
func (r Result) Link() LinkResult {
	if len(r.Links) == 0 {
		return LinkResult{Mode: "unix"}
	}
	return r.Links[0]
}

// IdleLoops are a point's busy loops: on which CPUs they ran and the CPU
// time they took, which the host's busy time leaves out.
type IdleLoops struct {
	CPUs       string  `json:"cpus"` // "0-1"
	Count      int     `json:"count"`
	CPUSeconds float64 `json:"cpu_s"`
	// CPUSecondsEach is each loop's, in the order of CPUs.
	CPUSecondsEach []float64 `json:"cpu_s_each,omitempty"`
}

// ResolvedClient is the client's constraints for one combination.
type ResolvedClient struct {
	Site       string
	GOMAXPROCS int
	CPUs       string
	// CPUSpeed caps the client process's CPU time, in cores' worth (a CFS
	// quota); 0 = no cap.
	CPUSpeed float64 `json:",omitempty"`
	// Idle is "spin" when a lowest-priority busy loop on each of this
	// machine's CPUs kept it from halting while the point ran; "" is the
	// machine as it is ("halt").
	Idle string `json:",omitempty"`
}

// Constrained reports whether the client must run in a process of its own:
// a process is what a CPU affinity, a thread limit and a cgroup apply to.
func (c ResolvedClient) Constrained() bool {
	return c.GOMAXPROCS > 0 || c.CPUs != "" || c.CPUSpeed > 0
}

// Keep records what the workload measured.
func (r *Result) Keep(m Measurement) {
	r.Metrics, r.Series, r.SeriesInterval, r.Histograms = m.Metrics, m.Series, m.SeriesInterval, m.Histograms
	r.Notes, r.Warnings = m.Notes, m.Warnings
}

// InFlightBytes is the most one direction may have in flight: the smaller
// of the window and the send buffer (0 = unlimited), as the link's model
// takes it.
func (l LinkResult) InFlightBytes() int64 {
	return int64(link.Config{Window: units.Size(l.WindowBytes), SendBuffer: units.Size(l.SendBufferBytes)}.InFlight())
}

// ModelFrom says how Model's figure for a metric was made: "predicted"
// (before the point ran, from the points before it) or "fit" (on the
// other combinations, held out).
func (r Result) ModelFrom(metric string) string {
	if slices.Contains(r.Predicted, metric) {
		return "predicted"
	}
	return "fit"
}

// OtherCombinations are the results of all that are not of r's
// combination: what a fit of r may be made on, so that its error is a
// held-out one.
func OtherCombinations(r Result, all []Result) []Result {
	out := make([]Result, 0, len(all))
	for _, o := range all {
		if o.Combo != r.Combo {
			out = append(out, o)
		}
	}
	return out
}

// FitFormulaPrefix opens a fit's formula in Result.Formula, after the
// prediction's.
const FitFormulaPrefix = "fit on the other combinations: "

// Reason is why the model has no figure for a metric, or where it misses.
func (r Result) Reason(metric string) string {
	_, fitted := r.Model[metric]
	if r.ModelFrom(metric) == "predicted" || (!fitted && r.PredictReason != "") {
		return r.PredictReason
	}
	return r.FitReason
}

// SetModel records a point's prediction, made before it ran, and the fit
// on the other combinations for the figures the prediction leaves out.
func (r *Result) SetModel(pred, fit Prediction) {
	r.Model, r.Formula, r.Predicted = nil, "", nil
	for name, v := range pred.Metrics {
		if r.Model == nil {
			r.Model = map[string]float64{}
		}
		r.Model[name] = v
		r.Predicted = append(r.Predicted, name)
	}
	slices.Sort(r.Predicted)
	for name, v := range fit.Metrics {
		if _, predicted := r.Model[name]; !predicted {
			if r.Model == nil {
				r.Model = map[string]float64{}
			}
			r.Model[name] = v
		}
	}
	var formulas []string
	if pred.Formula != "" {
		formulas = append(formulas, pred.Formula)
	}
	if fit.Formula != "" && len(fit.Metrics) > 0 {
		formulas = append(formulas, FitFormulaPrefix+fit.Formula)
	}
	r.Formula = strings.Join(formulas, "; ")
	r.PredictReason, r.FitReason = pred.Reason, fit.Reason
}
