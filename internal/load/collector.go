package load

import (
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/dbrig/dbrig/internal/measure"
)

// tick is the length of an interval of the per-second series.
const tick = time.Second

// typeAgg is one transaction type's (or all types') dense aggregate.
type typeAgg struct {
	latency   *hdrhistogram.Histogram
	service   *hdrhistogram.Histogram // open loop only
	ok        int64
	errors    ErrorCounts
	overLimit int64
	clamped   int64
}

func newTypeAgg(open bool) typeAgg {
	a := typeAgg{latency: measure.NewDense()}
	if open {
		a.service = measure.NewDense()
	}
	return a
}

func (a *typeAgg) reset() {
	resetDense(a.latency)
	if a.service != nil {
		resetDense(a.service)
	}
	a.ok, a.errors, a.overLimit, a.clamped = 0, ErrorCounts{}, 0, 0
}

// add merges one worker's type buffer; MergeInto is proportional to the
// buffer's populated buckets and does not allocate.
func (a *typeAgg) add(t *typeBuffer) {
	t.latency.MergeInto(a.latency)
	if a.service != nil {
		t.service.MergeInto(a.service)
	}
	a.ok += t.ok
	a.errors.add(&t.errors)
	a.overLimit += t.overLimit
	a.clamped += t.clamped
}

func (a *typeAgg) stats(name string) IntervalStats {
	return IntervalStats{
		Name: name, Ops: a.ok, Errors: a.errors, OverLimit: a.overLimit,
		P50: micros(a.latency.ValueAtPercentile(50)),
		P99: micros(a.latency.ValueAtPercentile(99)),
		Max: micros(a.latency.ValueAtPercentile(100)),
	}
}

func (a *typeAgg) result(name string, weight int, measured time.Duration) TypeResult {
	t := TypeResult{Name: name, Weight: weight, Ops: a.ok, Errors: a.errors, OverLimit: a.overLimit,
		Latency: measure.FromDense(a.latency, a.clamped)}
	if measured > 0 {
		t.TPS = float64(a.ok) / measured.Seconds()
	}
	if a.service != nil {
		t.Service = measure.FromDense(a.service, 0)
	}
	return t
}

// resetDense clears h unless it is empty: clearing writes every one of its
// thousands of buckets, each second, for each type, even one no operation
// of the second had.
func resetDense(h *hdrhistogram.Histogram) {
	if h.TotalCount() != 0 {
		h.Reset()
	}
}

func micros(v int64) time.Duration { return time.Duration(v) * time.Microsecond }

// aggregate is the collector's sum of every worker's buffers over an
// interval or over the measured run.
type aggregate struct {
	types      []typeAgg
	overall    typeAgg
	lag        *hdrhistogram.Histogram
	late       int64
	notStarted int64
}

func newAggregate(types int, open bool) *aggregate {
	a := &aggregate{types: make([]typeAgg, types), overall: newTypeAgg(open), lag: measure.NewDense()}
	for i := range a.types {
		a.types[i] = newTypeAgg(open)
	}
	return a
}

func (a *aggregate) add(b *buffer) {
	for i := range b.types {
		a.types[i].add(&b.types[i])
		a.overall.add(&b.types[i])
	}
	b.lag.MergeInto(a.lag)
	a.late += b.late
}

func (a *aggregate) reset() {
	for i := range a.types {
		a.types[i].reset()
	}
	a.overall.reset()
	resetDense(a.lag)
	a.late, a.notStarted = 0, 0
}

// collector owns every dense histogram of a run. At every tick (and at the
// warm-up's end and the run's stop) it takes each worker's buffer, adds it to
// the interval and, by phase, to the measured run, the warm-up count or the
// after-end record; at every second it closes an interval of the series.
type collector struct {
	r             *Runner
	open          bool
	phase         Phase
	intervalStart time.Duration
	intervalPhase Phase
	stopAt        time.Duration
	iv, cum       *aggregate
	afterEnd      *hdrhistogram.Histogram
	afterEndClamp int64
	warmUpOps     int64
	cancelled     int64
	notStartedWas int64
	series        []Interval
	live          []liveType // the collector's copy, published each second
	samples       []int64    // the interval's, with Config.KeepSamples
	// cpuFrom and cpuTo are the process's CPU readings at the measured
	// interval's start and stop.
	cpuFrom, cpuTo cpuReading
}

func newCollector(r *Runner) *collector {
	open := r.cfg.Open()
	c := &collector{
		r: r, open: open, stopAt: -1,
		iv: newAggregate(len(r.mix), open), cum: newAggregate(len(r.mix), open),
		afterEnd: measure.NewDense(),
		series:   make([]Interval, 0, expectedIntervals(r.cfg)),
		live:     newLiveTypes(len(r.mix)),
	}
	if r.cfg.WarmUp == 0 {
		c.phase, c.intervalPhase = Measured, Measured
		c.cpuFrom = readCPU()
	}
	return c
}

// expectedIntervals sizes the series once for a timed run.
func expectedIntervals(cfg Config) int {
	if cfg.Duration == 0 {
		return 64
	}
	return int((cfg.WarmUp+cfg.Duration)/tick) + 2
}

// loop runs until finished is closed, after every user has returned. stopAt
// delivers the moment the run stopped starting operations; it is sent before
// finished is closed.
func (c *collector) loop(stopAt <-chan time.Duration, finished <-chan struct{}) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	warmEnd := c.r.cfg.WarmUp
	for {
		// Seconds stay on the run's grid; the warm-up's end and the stop
		// also end an interval, so that every interval belongs to one phase
		// and the measured ones merge exactly into the measured run.
		next := (c.intervalStart/tick + 1) * tick
		if c.phase == WarmUp && warmEnd < next {
			next = warmEnd
		}
		timer.Reset(next - c.r.since())
		select {
		case <-timer.C:
			c.drain()
			if c.phase == WarmUp && c.r.since() >= warmEnd {
				c.phase = Measured
				c.cpuFrom = readCPU()
			}
			if c.r.since() >= next {
				c.closeInterval(next)
			}
		case at := <-stopAt:
			c.stop(at)
			stopAt = nil
		case <-finished:
			select {
			case at := <-stopAt:
				c.stop(at)
			default:
			}
			c.drain()
			if end := c.r.since(); end > c.intervalStart {
				c.closeInterval(end)
			}
			return
		}
	}
}

// stop ends the measured interval at (an offset from the start of the run).
func (c *collector) stop(at time.Duration) {
	c.drain()
	c.stopAt = at
	if c.phase == Measured {
		c.cpuTo = readCPU()
	}
	c.phase = Stopping
	end := at
	if end <= c.intervalStart {
		// A tick closed an interval after the stop (the stop fell on the
		// second): what the drain just took was counted as measured, so it
		// closes now as a measured sliver of its own, and the operations
		// that end after it go to a stopping interval, never into a
		// measured one.
		end = max(c.r.since(), c.intervalStart+1)
	}
	c.closeInterval(end)
}

// drain takes every worker's buffer into the current phase.
func (c *collector) drain() {
	for _, rec := range c.r.recorders {
		b := rec.take()
		c.absorb(b)
		rec.give(b)
	}
	n := c.r.notStarted.Load()
	delta := n - c.notStartedWas
	c.notStartedWas = n
	c.iv.notStarted += delta
	if c.phase == Measured {
		c.cum.notStarted += delta
	}
}

func (c *collector) absorb(b *buffer) {
	c.iv.add(b)
	c.samples = append(c.samples, b.samples...)
	switch c.phase {
	case WarmUp:
		for i := range b.types {
			c.warmUpOps += b.types[i].ok
		}
	case Measured:
		c.cum.add(b)
	case Stopping:
		for i := range b.types {
			b.types[i].latency.MergeInto(c.afterEnd)
			c.afterEndClamp += b.types[i].clamped
		}
	}
	for i := range b.types {
		c.cancelled += b.types[i].cancelled
		c.live[i].add(&b.types[i])
	}
}

// closeInterval ends the current interval at end (an offset from the start
// of the run) and begins the next.
func (c *collector) closeInterval(end time.Duration) {
	a := c.iv
	iv := Interval{
		Start: c.intervalStart, Length: end - c.intervalStart, Phase: c.intervalPhase,
		Users: int(c.r.usersStarted.Load()), InFlight: c.r.inFlight.Load(),
		Late: a.late, LagMax: micros(a.lag.ValueAtPercentile(100)), NotStarted: a.notStarted,
		Overall: a.overall.stats("all"),
		Types:   make([]IntervalStats, len(a.types)),
	}
	if a.lag.TotalCount() == 0 {
		iv.LagMax = 0
	}
	for i := range a.types {
		iv.Types[i] = a.types[i].stats(c.r.mix[i].Name)
	}
	if c.r.cfg.IntervalHistograms {
		h := &IntervalHistograms{StartLag: measure.FromDense(a.lag, 0)}
		for i := range a.types {
			h.Latency = append(h.Latency, measure.FromDense(a.types[i].latency, a.types[i].clamped))
			if c.open {
				h.Service = append(h.Service, measure.FromDense(a.types[i].service, 0))
			}
		}
		iv.Histograms = h
	}
	if c.r.cfg.KeepSamples {
		iv.Samples = c.samples
		c.samples = nil
	}
	c.series = append(c.series, iv)
	c.r.live.publish(c, &iv)
	if c.r.cfg.OnInterval != nil {
		c.r.cfg.OnInterval(iv)
	}
	a.reset()
	c.intervalStart = end
	c.intervalPhase = c.phase
}

// result is the run's result once the loop has returned.
func (c *collector) result() *Result {
	cfg := c.r.cfg
	res := &Result{
		Mode: "closed", Users: cfg.Users, Think: cfg.Think, Keying: cfg.Keying, RampUp: cfg.RampUp,
		WarmUp: cfg.WarmUp, TxLimit: cfg.TxLimit, LateAfter: cfg.LateAfter,
		StartLag: measure.FromDense(c.cum.lag, 0), Late: c.cum.late,
		NotStarted: c.cum.notStarted, Overloaded: c.cum.notStarted > 0,
		WarmUpOps: c.warmUpOps, AfterEnd: measure.FromDense(c.afterEnd, c.afterEndClamp),
		CancelledAtStop: c.cancelled, Series: c.series,
	}
	if c.open {
		res.Mode, res.Rate, res.Arrival, res.MaxInFlight = "open", cfg.Rate, cfg.Arrival.String(), cfg.MaxInFlight
	}
	if c.stopAt > cfg.WarmUp {
		res.Measured = c.stopAt - cfg.WarmUp
	}
	for i := range c.cum.types {
		res.Types = append(res.Types, c.cum.types[i].result(c.r.mix[i].Name, c.r.mix[i].Weight, res.Measured))
	}
	res.Overall = c.cum.overall.result("all", 0, res.Measured)
	res.Client = clientLoad(c.cpuFrom, c.cpuTo, c.r.clientCores, c.r.userThreads())
	return res
}
