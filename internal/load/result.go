package load

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dbrig/dbrig/internal/units"

	"github.com/dbrig/dbrig/internal/measure"
)

// Phase is the part of a run an interval belongs to.
type Phase uint8

const (
	WarmUp   Phase = iota // run, then discarded
	Measured              // the results
	Stopping              // after the end: operations in flight finish, none start
)

var phaseNames = [...]string{"warm-up", "measured", "stopping"}

func (p Phase) String() string { return phaseNames[p] }

// MarshalText writes the phase's name.
func (p Phase) MarshalText() ([]byte, error) { return []byte(p.String()), nil }

// UnmarshalText reads a phase's name.
func (p *Phase) UnmarshalText(b []byte) error {
	for i, n := range phaseNames {
		if n == string(b) {
			*p = Phase(i)
			return nil
		}
	}
	return fmt.Errorf("unknown phase %q", b)
}

// Interval is one second of a run. Operations are counted in the second in
// which they finished. The end of the warm-up and the stop also end an
// interval (when they fall within a second, it is split in two), so every
// interval belongs to one phase, and the measured intervals' histograms merge
// into exactly the measured run's.
type Interval struct {
	Start      time.Duration   `json:"start_ns"`    // from the start of the run
	Length     time.Duration   `json:"length_ns"`   // one second, except perhaps the last
	Phase      Phase           `json:"phase"`       // the phase at the interval's start
	Users      int             `json:"users"`       // closed loop: users started; open loop: workers
	InFlight   int64           `json:"in_flight"`   // open loop: operations running or waiting at the interval's end
	Late       int64           `json:"late"`        // operations started later than LateAfter behind schedule
	LagMax     time.Duration   `json:"lag_max_ns"`  // the largest start lag
	NotStarted int64           `json:"not_started"` // open-loop arrivals over the in-flight bound
	Overall    IntervalStats   `json:"overall"`
	Types      []IntervalStats `json:"types"` // in the mix's order
	// Histograms is set when Config.IntervalHistograms is: the interval's
	// distributions, for a coordinator to merge.
	Histograms *IntervalHistograms `json:"histograms,omitempty"`
	// Samples is set when Config.KeepSamples is: the recorded latency of
	// every successful operation that finished in the interval, in
	// microseconds, in no particular order.
	Samples []int64 `json:"samples_us,omitempty"`
}

// IntervalStats is one transaction type's (or all types') second.
type IntervalStats struct {
	Name      string        `json:"name"`
	Ops       int64         `json:"ops"` // succeeded
	Errors    ErrorCounts   `json:"errors"`
	OverLimit int64         `json:"over_limit"`
	P50       time.Duration `json:"p50_ns"`
	P99       time.Duration `json:"p99_ns"`
	Max       time.Duration `json:"max_ns"`
}

// TPS is the interval's successful operations per second.
func (s IntervalStats) TPS(length time.Duration) float64 {
	if length <= 0 {
		return 0
	}
	return float64(s.Ops) / length.Seconds()
}

// IntervalHistograms are one interval's distributions.
type IntervalHistograms struct {
	Latency  []*measure.Histogram `json:"latency"`           // per type, in the mix's order
	Service  []*measure.Histogram `json:"service,omitempty"` // per type, open loop only
	StartLag *measure.Histogram   `json:"start_lag"`
}

// String is the interval as one line, for a CLI that prints a line per
// second.
func (iv Interval) String() string {
	o := iv.Overall
	if iv.Phase == Stopping {
		// Only what was in flight at the end finishes here, over a
		// sliver of a second: a rate of it would read as a result.
		return fmt.Sprintf("%6s %-8s %d operations in flight at the end finished after it (not measured), errors %d",
			units.FormatDuration(iv.Start+iv.Length), iv.Phase, o.Ops, o.Errors.Total())
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%6s %-8s users %d  tps %.0f  p50 %s  p99 %s  max %s  errors %d",
		units.FormatDuration(iv.Start+iv.Length), iv.Phase, iv.Users, o.TPS(iv.Length),
		units.FormatDuration(o.P50), units.FormatDuration(o.P99), units.FormatDuration(o.Max), o.Errors.Total())
	if iv.Late > 0 || iv.NotStarted > 0 {
		fmt.Fprintf(&b, "  late %d (lag max %s)", iv.Late, units.FormatDuration(iv.LagMax))
	}
	if iv.NotStarted > 0 {
		fmt.Fprintf(&b, "  OVERLOADED: %d arrivals over the in-flight bound not started", iv.NotStarted)
	}
	return b.String()
}

// Result is a finished run.
type Result struct {
	Mode        string        `json:"mode"` // "closed" or "open"
	Users       int           `json:"users"`
	Rate        float64       `json:"rate,omitempty"`
	Arrival     string        `json:"arrival,omitempty"`
	MaxInFlight int           `json:"max_in_flight,omitempty"`
	Think       Think         `json:"think"`
	Keying      time.Duration `json:"keying_ns,omitempty"`
	RampUp      time.Duration `json:"ramp_up_ns,omitempty"`
	WarmUp      time.Duration `json:"warm_up_ns"`
	// Measured is the measured interval's actual length: Duration, or less
	// when the run was interrupted or reached its operation count.
	Measured  time.Duration `json:"measured_ns"`
	TxLimit   time.Duration `json:"tx_limit_ns"`
	LateAfter time.Duration `json:"late_after_ns"`

	Types   []TypeResult `json:"types"` // in the mix's order
	Overall TypeResult   `json:"overall"`

	// StartLag is how late operations started against their schedule:
	// arrivals in an open loop, the end of think and keying time in a closed
	// loop. Late counts those later than LateAfter.
	StartLag *measure.Histogram `json:"start_lag"`
	Late     int64              `json:"late"`
	// NotStarted counts open-loop arrivals that came while MaxInFlight
	// operations were already running or waiting: the workers and the server
	// could not keep up with the rate, so these were not started.
	// Overloaded is set when any were.
	NotStarted int64 `json:"not_started"`
	Overloaded bool  `json:"overloaded"`
	// NotStartedAtEnd counts arrivals that were waiting for a worker when the
	// run ended.
	NotStartedAtEnd int64 `json:"not_started_at_end"`
	// WarmUpOps counts operations that finished in the warm-up (discarded).
	WarmUpOps int64 `json:"warm_up_ops"`
	// AfterEnd counts operations that finished after the run's end, during
	// the grace period, with their latency: an operation stuck across the end
	// shows here rather than vanishing. CancelledAtStop counts those the hard
	// deadline (or an interrupt) cut short.
	AfterEnd        *measure.Histogram `json:"after_end"`
	CancelledAtStop int64              `json:"cancelled_at_stop"`
	Interrupted     bool               `json:"interrupted"`

	// Series is the run second by second, warm-up and stopping included.
	Series []Interval `json:"series"`

	// Client is what the load generator's process took over the measured
	// interval; nil when it was not read (a result merged from agents).
	Client *ClientLoad `json:"client,omitempty"`
}

// TypeResult is one transaction type's (or all types') measured interval.
type TypeResult struct {
	Name      string      `json:"name"`
	Weight    int         `json:"weight,omitempty"`
	Ops       int64       `json:"ops"` // succeeded
	TPS       float64     `json:"tps"`
	Errors    ErrorCounts `json:"errors"`
	OverLimit int64       `json:"over_limit"`
	// Latency is measured from each operation's intended start; Service from
	// its actual start (open loop only: in a closed loop they are the same).
	Latency *measure.Histogram `json:"latency"`
	Service *measure.Histogram `json:"service,omitempty"`
}

// WriteText prints the result as a table a person reads: per type tps,
// percentiles and errors, then what the driver itself could not do.
func (r *Result) WriteText(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "type\tops\ttps\tp50\tp95\tp99\tp99.9\tmax\terrors\tover limit\t")
	rows := append(append([]TypeResult(nil), r.Types...), r.Overall)
	for _, t := range rows {
		h := t.Latency
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t\n", t.Name, t.Ops, t.TPS,
			units.FormatDuration(h.Quantile(0.50)), units.FormatDuration(h.Quantile(0.95)),
			units.FormatDuration(h.Quantile(0.99)), units.FormatDuration(h.Quantile(0.999)),
			units.FormatDuration(h.Max()), t.Errors.Total(), t.OverLimit)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var notes []string
	if e := r.Overall.Errors; e.Total() > 0 {
		notes = append(notes, "errors: "+e.String())
	}
	if r.Mode == "open" {
		notes = append(notes, fmt.Sprintf("latency is measured from each operation's intended start; service time p99 %s",
			units.FormatDuration(r.Overall.Service.Quantile(0.99))))
	}
	if r.StartLag.Count() > 0 {
		notes = append(notes, fmt.Sprintf("start lag p99 %s, max %s; %d operations started more than %s late",
			units.FormatDuration(r.StartLag.Quantile(0.99)), units.FormatDuration(r.StartLag.Max()),
			r.Late, units.FormatDuration(r.LateAfter)))
	}
	if r.Overloaded {
		notes = append(notes, fmt.Sprintf("SUSTAINED OVERLOAD: %d arrivals over the in-flight bound of %d were not started",
			r.NotStarted, r.MaxInFlight))
	}
	if r.NotStartedAtEnd > 0 {
		notes = append(notes, fmt.Sprintf("%d arrivals were still waiting for a worker at the end", r.NotStartedAtEnd))
	}
	if n := r.AfterEnd.Count(); n > 0 {
		notes = append(notes, fmt.Sprintf("%d operations finished after the end (max %s)", n, units.FormatDuration(r.AfterEnd.Max())))
	}
	if r.CancelledAtStop > 0 {
		notes = append(notes, fmt.Sprintf("%d operations were cancelled at the stop", r.CancelledAtStop))
	}
	if c := r.Overall.Latency.Clamped(); c > 0 {
		notes = append(notes, fmt.Sprintf("%d latencies above 1 h were recorded as 1 h", c))
	}
	if r.Interrupted {
		notes = append(notes, "interrupted: the measured interval is "+units.FormatDuration(r.Measured))
	}
	for _, n := range notes {
		if _, err := fmt.Fprintln(w, n); err != nil {
			return err
		}
	}
	return nil
}
