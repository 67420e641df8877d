package load

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"
)

// Arrival is how an open loop spaces its operations.
type Arrival uint8

const (
	// Fixed starts operations at exactly 1/rate intervals.
	Fixed Arrival = iota
	// Poisson starts operations at exponentially distributed intervals with
	// mean 1/rate, as independent users arrive (pgbench -R does the same).
	Poisson
)

func (a Arrival) String() string {
	if a == Poisson {
		return "poisson"
	}
	return "fixed"
}

// Think is the pause a closed-loop user takes after each operation.
type Think struct {
	// Mean is the think time; 0 means none.
	Mean time.Duration `json:"mean_ns"`
	// Exponential draws each pause from a negative-exponential distribution
	// with this mean (TPC-C's rule) instead of pausing exactly Mean.
	Exponential bool `json:"exponential,omitempty"`
	// Max caps an exponential pause; 0 means 10 × Mean, as TPC-C caps it.
	Max time.Duration `json:"max_ns,omitempty"`
}

// Config describes a run. Rate 0 is a closed loop, Rate > 0 an open loop.
type Config struct {
	// Users is the number of virtual users, each with its own worker (its own
	// connection). In an open loop they are the workers that serve arrivals.
	Users int
	// Think is each closed-loop user's pause after an operation.
	Think Think
	// Keying is a closed-loop user's fixed pause before each operation (the
	// time to type a request, in TPC-C's terms).
	Keying time.Duration
	// RampUp spreads the users' starts evenly over this duration (closed
	// loop), or raises the arrival rate linearly from 0 to Rate over it (open
	// loop). It must fit in WarmUp, so the measured interval sees every user.
	RampUp time.Duration

	// Rate is the open loop's arrival rate in operations per second.
	Rate float64
	// Arrival is the open loop's arrival process.
	Arrival Arrival
	// MaxInFlight bounds the open loop's operations that have arrived and not
	// finished, running or waiting for a free worker. An arrival past it is
	// not started; it is counted and reported, never silently dropped.
	// 0 means Users plus 10 seconds of arrivals (at most 1,048,576).
	MaxInFlight int
	// LateAfter is how far behind its intended start an operation may start
	// before it counts as late; 0 means 1 ms.
	LateAfter time.Duration

	// WarmUp is run and then discarded from the results (it stays in the
	// per-second series, marked as warm-up).
	WarmUp time.Duration
	// Duration is the measured interval after WarmUp. 0 means no time limit
	// (then Ops must be set).
	Duration time.Duration
	// Ops stops the run after this many operations: shared evenly by the
	// users in a closed loop, arrivals in an open loop. 0 means no limit.
	Ops int64
	// Grace is how long operations in flight at the end of the run may take
	// to finish before their context is cancelled; 0 means 10 s.
	Grace time.Duration
	// TxLimit is the response time above which an operation is counted as
	// over the limit (seed 001 counted transactions over 30 s); 0 means 30 s.
	TxLimit time.Duration

	// Seed seeds every worker's random choices (mix, think time) and the
	// arrival process, so a run can be repeated exactly on a fake clock.
	Seed uint64
	// OnInterval, if set, receives each second's statistics as soon as the
	// second is over, from the layer's collector goroutine: it should be quick
	// (print a line, send it on). The Interval must not be modified.
	OnInterval func(Interval)
	// IntervalHistograms attaches each second's distributions to the
	// Interval, for a coordinator that merges the intervals of load agents.
	IntervalHistograms bool

	// Ready, if set, is called once every worker is open, just before the
	// run's clock starts; the clock starts when it returns, and an error
	// ends the run before any operation. A load agent waits in it for its
	// coordinator's common start instant, so that every agent's seconds
	// cover the same seconds of the wall clock.
	Ready func(ctx context.Context) error
	// ArrivalOffset delays every arrival of an open loop's schedule: agents
	// that share a fixed rate stagger their arrivals with it, so that
	// together they are evenly spaced rather than simultaneous.
	ArrivalOffset time.Duration
	// KeepSamples attaches every successful operation's latency (in
	// microseconds, as recorded) to the Interval in which it finished, so
	// that a merge of distributions can be checked against all the samples.
	// Memory grows with the operations: for short runs and checks only.
	KeepSamples bool
}

// Defaults the layer applies to zero fields.
const (
	DefaultLateAfter   = time.Millisecond
	DefaultGrace       = 10 * time.Second
	DefaultTxLimit     = 30 * time.Second
	defaultThinkCap    = 10 // × mean
	backlogSeconds     = 10
	maxDefaultInFlight = 1 << 20
)

// Open reports whether the configuration is an open loop.
func (c Config) Open() bool { return c.Rate > 0 }

// withDefaults returns the configuration with every zero default filled in.
func (c Config) withDefaults() Config {
	if c.LateAfter == 0 {
		c.LateAfter = DefaultLateAfter
	}
	if c.Grace == 0 {
		c.Grace = DefaultGrace
	}
	if c.TxLimit == 0 {
		c.TxLimit = DefaultTxLimit
	}
	if c.Think.Exponential && c.Think.Max == 0 {
		c.Think.Max = defaultThinkCap * c.Think.Mean
	}
	if c.Open() && c.MaxInFlight == 0 {
		backlog := math.Ceil(c.Rate * backlogSeconds)
		c.MaxInFlight = int(min(float64(c.Users)+backlog, maxDefaultInFlight))
	}
	return c
}

// Validate reports every problem with the configuration at once, naming the
// setting and the value.
func (c Config) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Users < 1 {
		bad("users %d: need at least 1", c.Users)
	}
	if c.Rate < 0 || math.IsNaN(c.Rate) || math.IsInf(c.Rate, 0) {
		bad("rate %v: must be a positive number of operations per second (0 for a closed loop)", c.Rate)
	}
	if c.Arrival > Poisson {
		bad("arrival %d: unknown arrival process", c.Arrival)
	}
	for _, d := range []struct {
		name  string
		value time.Duration
	}{
		{"think", c.Think.Mean}, {"think cap", c.Think.Max}, {"keying", c.Keying}, {"ramp-up", c.RampUp},
		{"warm-up", c.WarmUp}, {"duration", c.Duration}, {"grace", c.Grace}, {"late-after", c.LateAfter},
		{"transaction limit", c.TxLimit}, {"arrival offset", c.ArrivalOffset},
	} {
		if d.value < 0 {
			bad("%s %v: must not be negative", d.name, d.value)
		}
	}
	if c.Think.Max > 0 && c.Think.Max < c.Think.Mean {
		bad("think cap %v: smaller than the mean think time %v", c.Think.Max, c.Think.Mean)
	}
	if c.Ops < 0 {
		bad("ops %d: must not be negative", c.Ops)
	}
	if c.Duration == 0 && c.Ops == 0 {
		bad("duration 0 and ops 0: the run would never end; give a duration or a number of operations")
	}
	if c.RampUp > c.WarmUp {
		bad("ramp-up %v: longer than warm-up %v, so the measured interval would include users still starting", c.RampUp, c.WarmUp)
	}
	if c.MaxInFlight < 0 {
		bad("max-in-flight %d: must not be negative", c.MaxInFlight)
	}
	if c.Open() {
		if c.Think != (Think{}) || c.Keying != 0 {
			bad("think/keying time: a closed-loop setting; an open loop's pace is its rate %v/s", c.Rate)
		}
	} else if c.MaxInFlight != 0 || c.Arrival != Fixed {
		bad("max-in-flight/arrival: open-loop settings; set a rate for an open loop")
	}
	return errors.Join(errs...)
}
