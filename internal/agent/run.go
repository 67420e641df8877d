package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/link"
	"github.com/dbrig/dbrig/internal/load"
)

// LoadSpec is a load to spread over agents.
type LoadSpec struct {
	// Workload names the load workload every agent runs; Params are its
	// parameters (JSON-encoded for the agents).
	Workload string
	Params   any
	// Login is the server's, as the agents' hosts reach it; Link the
	// emulated link each agent runs in front of its users (nil: none).
	Login engine.Conn
	Link  *JobLink
	// Config is the whole load: its users, rate and in-flight bound are
	// shared among the agents.
	Config load.Config
	// OnInterval receives each merged second as soon as every agent has
	// sent it (from RunLoad's goroutine).
	OnInterval func(load.Interval)
	// Lead is how far ahead of the moment every agent is ready the common
	// start is set; 0 means 250 ms plus twice the largest round trip.
	Lead time.Duration
}

// Share is one agent's part of a load.
type Share struct {
	Users       int
	Rate        float64
	MaxInFlight int
	Seed        uint64
	// ArrivalOffset staggers fixed arrivals (see load.Config).
	ArrivalOffset time.Duration
}

// Shares splits a load over n agents: users as evenly as whole users go
// (the first agents get one more), the rate evenly (independent Poisson
// processes at r/n add up to one at r; fixed arrivals are staggered by 1/r
// so that together they are evenly spaced), the in-flight bound evenly
// (rounded up), and a seed per agent so that no two agents replay the same
// random choices.
func Shares(cfg load.Config, n int) ([]Share, error) {
	if n < 1 {
		return nil, errors.New("no agents to share the load")
	}
	if cfg.Users < n {
		return nil, fmt.Errorf("%d users over %d agents: each agent needs at least one user (give at least %d users, or fewer agents)", cfg.Users, n, n)
	}
	out := make([]Share, n)
	for i := range out {
		s := Share{Users: cfg.Users / n, Seed: cfg.Seed + uint64(i)*0x9E3779B97F4A7C15}
		if i < cfg.Users%n {
			s.Users++
		}
		if cfg.Rate > 0 {
			s.Rate = cfg.Rate / float64(n)
			if cfg.Arrival == load.Fixed {
				s.ArrivalOffset = time.Duration(float64(i) / cfg.Rate * float64(time.Second))
			}
		}
		if cfg.MaxInFlight > 0 {
			s.MaxInFlight = (cfg.MaxInFlight + n - 1) / n
		}
		out[i] = s
	}
	return out, nil
}

// AgentReport is one agent's part of a run.
type AgentReport struct {
	Name    string `json:"name"`
	Host    string `json:"host"`
	Address string `json:"address,omitempty"`
	Share   Share  `json:"share"`
	// Offset is the agent's clock minus the coordinator's; RTT the control
	// channel's round trip; StartSkew how far from the common instant the
	// agent's clock started, on the coordinator's clock (exact to RTT/2).
	Offset    time.Duration `json:"offset_ns"`
	RTT       time.Duration `json:"rtt_ns"`
	StartSkew time.Duration `json:"start_skew_ns"`
	Result    *load.Result  `json:"-"`
	Ops       int64         `json:"ops"`
	Intervals int           `json:"intervals"`
	Traffic   Traffic       `json:"traffic"`
	Error     string        `json:"error,omitempty"`
	Extra     *Extra        `json:"extra,omitempty"` // what the agent's workload measured beyond its result
	Link      *link.Stats   `json:"link,omitempty"`  // what the agent's link carried
}

// LoadOutcome is a load run on agents: the merged result and each agent's.
type LoadOutcome struct {
	Result *load.Result
	Agents []AgentReport
	// Samples are every measured operation's latency in µs, from all agents
	// (Config.KeepSamples only).
	Samples []int64
	// Extra is the agents' Extras merged (nil when the workload has none).
	Extra *Extra
	// Link is what the agents' links carried, summed (nil without a link).
	Link *link.Stats
}

// RunLoad runs one load over the agents: each gets its share, opens its
// users, and waits; when all are ready the coordinator sets a common start
// instant, translated into each agent's clock; the agents' seconds are
// merged as they arrive and their results at the end. When an agent's
// connection is lost, or it fails, the others are stopped and the run fails
// saying which and why; when ctx ends (Ctrl-C) every agent is stopped and
// the partial merged result is returned with ctx's error.
func RunLoad(ctx context.Context, agents []*Agent, spec LoadSpec) (*LoadOutcome, error) {
	shares, err := Shares(spec.Config, len(agents))
	if err != nil {
		return nil, err
	}
	params, err := json.Marshal(spec.Params)
	if err != nil {
		return nil, fmt.Errorf("encode the workload's parameters: %w", err)
	}
	out := &LoadOutcome{Agents: make([]AgentReport, len(agents))}
	for i, a := range agents {
		cfg := spec.Config
		sh := shares[i]
		cfg.Users, cfg.Rate, cfg.MaxInFlight, cfg.Seed, cfg.ArrivalOffset = sh.Users, sh.Rate, sh.MaxInFlight, sh.Seed, sh.ArrivalOffset
		out.Agents[i] = AgentReport{Name: a.Name, Host: a.Hello.Host, Address: a.Hello.Address, Share: sh, Offset: a.Offset, RTT: a.RTT}
		job := &LoadJob{Workload: spec.Workload, Params: params, Login: spec.Login.Seal(), Config: jobConfig(cfg), Index: i, Agents: len(agents),
			Link: spec.Link.forAgent(i)}
		if err := a.send(Message{Type: TypeLoad, Load: job}); err != nil {
			return nil, fmt.Errorf("agent %s: send its share: %w", a.Name, err)
		}
	}
	r := &loadRun{agents: agents, spec: spec, out: out, series: make([][]load.Interval, len(agents)),
		results: make([]*load.Result, len(agents)), extras: make([]*Extra, len(agents)), links: make([]*link.Stats, len(agents)),
		ready: make([]bool, len(agents))}
	runErr := r.loop(ctx)
	for i := range agents {
		out.Agents[i].Traffic = agents[i].Traffic()
		out.Agents[i].Intervals = len(r.series[i])
		out.Agents[i].Extra = r.extras[i]
		out.Agents[i].Link = r.links[i]
		if res := r.results[i]; res != nil {
			out.Agents[i].Result = res
			out.Agents[i].Ops = res.Overall.Ops
		}
	}
	if r.complete() {
		for i, res := range r.results {
			res.Series = r.series[i]
		}
		merged, err := load.MergeResults(r.results)
		if err != nil {
			return out, err
		}
		for i := range merged.Series {
			iv := &merged.Series[i]
			if iv.Phase == load.Measured {
				out.Samples = append(out.Samples, iv.Samples...)
			}
			iv.Histograms, iv.Samples = nil, nil
		}
		for _, res := range r.results {
			res.Series = nil
		}
		out.Result = merged
		out.Extra = MergeExtras(r.extras)
	}
	// What the links carried counts on every path: an interrupted point's
	// traffic crossed them too.
	out.Link = mergeLinks(r.links)
	return out, runErr
}

type loadRun struct {
	agents  []*Agent
	spec    LoadSpec
	out     *LoadOutcome
	series  [][]load.Interval
	results []*load.Result
	extras  []*Extra
	links   []*link.Stats
	ready   []bool
	start   time.Time // the common instant, on the coordinator's clock
	emitted int
}

func (r *loadRun) complete() bool {
	for _, res := range r.results {
		if res == nil {
			return false
		}
	}
	return true
}

// event is one agent's message, or the end of its channel.
type event struct {
	i    int
	m    Message
	lost bool
}

func (r *loadRun) loop(ctx context.Context) error {
	events := make(chan event, 64)
	stop := make(chan struct{})
	defer close(stop)
	for i, a := range r.agents {
		go forwardEvents(i, a, events, stop) // ends with the run or the agent's channel
	}
	s := &loopState{r: r}
	ctxDone := ctx.Done()
	for !r.complete() {
		select {
		case <-ctxDone:
			ctxDone = nil
			s.stopAll()
			s.afterStop = time.After(15 * time.Second)
			continue
		case <-s.afterStop:
			return errors.Join(s.failure, ctx.Err(), errors.New("agents did not send their results after the stop"))
		case ev := <-events:
			if ev.lost {
				if r.results[ev.i] == nil {
					s.lost(ev.i)
					if r.othersDone(ev.i) {
						return s.failure
					}
				}
				continue
			}
			s.handle(ev)
			if s.failure != nil && r.othersDone(-1) {
				return s.failure
			}
		}
	}
	r.emit(true)
	if s.failure != nil {
		return s.failure
	}
	return ctx.Err()
}

// forwardEvents passes agent i's messages on to events, then (once its
// channel ended and every message sent before the end is delivered) that
// it is lost; it returns when stop closes.
func forwardEvents(i int, a *Agent, events chan<- event, stop <-chan struct{}) {
	send := func(ev event) bool {
		select {
		case events <- ev:
			return true
		case <-stop:
			return false
		}
	}
	for {
		select {
		case m := <-a.events:
			if !send(event{i: i, m: m}) {
				return
			}
		case <-a.done:
			// Messages sent before the end are delivered first.
			for {
				select {
				case m := <-a.events:
					if !send(event{i: i, m: m}) {
						return
					}
					continue
				default:
				}
				break
			}
			send(event{i: i, lost: true})
			return
		case <-stop:
			return
		}
	}
}

// loopState is what the coordinator's loop learnt so far: the failure,
// whether it stopped the agents, and (after a stop) when it gives up
// waiting for their partial results, which agents send within the load's
// grace and a lost agent never will.
type loopState struct {
	r         *loadRun
	failure   error
	stopped   bool
	afterStop <-chan time.Time
}

func (s *loopState) stopAll() {
	if s.stopped {
		return
	}
	s.stopped = true
	for _, a := range s.r.agents {
		_ = a.send(Message{Type: TypeStop})
	}
}

// fail records err and stops every agent, waiting for their results no
// longer than the grace.
func (s *loopState) fail(err error) {
	s.failure = errors.Join(s.failure, err)
	s.stopAll()
	if s.afterStop == nil {
		s.afterStop = time.After(15 * time.Second)
	}
}

// lost fails the run for agent i, whose channel ended before its result.
func (s *loopState) lost(i int) {
	r, a := s.r, s.r.agents[i]
	why := a.Err()
	if why == nil {
		why = ErrLost
	}
	err := fmt.Errorf("agent %s (%s): %w%s; its share of the load is missing, so the run failed", a.Name, a.Hello.Host, why, r.when())
	r.out.Agents[i].Error = why.Error()
	s.fail(err)
}

// handle takes in one message of an agent.
func (s *loopState) handle(ev event) {
	r, a := s.r, s.r.agents[ev.i]
	switch ev.m.Type {
	case TypeReady:
		r.ready[ev.i] = true
		if r.allReady() && !s.stopped {
			if err := r.startAll(); err != nil {
				s.failure = errors.Join(s.failure, err)
				s.stopAll()
			}
		}
	case TypeStarted:
		if ev.m.Clock != nil && !r.start.IsZero() {
			r.out.Agents[ev.i].StartSkew = time.Duration(ev.m.Clock.Agent-int64(a.Offset)) - time.Duration(r.start.UnixNano())
		}
	case TypeInterval:
		if ev.m.Interval != nil {
			r.series[ev.i] = append(r.series[ev.i], *ev.m.Interval)
			r.emit(false)
		}
	case TypeResult:
		r.results[ev.i], r.extras[ev.i], r.links[ev.i] = ev.m.Result, ev.m.Extra, ev.m.Link
		if ev.m.Result != nil && ev.m.Result.Interrupted && !s.stopped {
			// Not stopped by us: the agent lost its side of the
			// channel (its input ended) and stopped on its own.
			err := fmt.Errorf("agent %s (%s): %w: it stopped its load%s; its share of the load is missing, so the run failed", a.Name, a.Hello.Host, ErrLost, r.when())
			r.out.Agents[ev.i].Error = err.Error()
			s.fail(err)
		}
	case TypeError:
		r.out.Agents[ev.i].Error = ev.m.Error
		s.fail(fmt.Errorf("agent %s: %s", a.Name, ev.m.Error))
	}
}

// othersDone reports whether every agent but skip has sent its result or
// lost its channel.
func (r *loadRun) othersDone(skip int) bool {
	for i, a := range r.agents {
		if i == skip || r.results[i] != nil {
			continue
		}
		select {
		case <-a.done:
		default:
			if r.out.Agents[i].Error == "" {
				return false
			}
		}
	}
	return true
}

func (r *loadRun) allReady() bool {
	for _, ok := range r.ready {
		if !ok {
			return false
		}
	}
	return true
}

// startAll sets the common instant and tells each agent its own clock's
// reading of it.
func (r *loadRun) startAll() error {
	lead := r.spec.Lead
	if lead == 0 {
		worst := time.Duration(0)
		for _, a := range r.agents {
			worst = max(worst, a.RTT)
		}
		lead = 250*time.Millisecond + 2*worst
	}
	r.start = time.Now().Add(lead)
	for _, a := range r.agents {
		if err := a.send(Message{Type: TypeStart, Start: &Start{At: r.start.UnixNano() + int64(a.Offset)}}); err != nil {
			return fmt.Errorf("agent %s: send the start: %w", a.Name, err)
		}
	}
	return nil
}

// emit passes on every second that all agents have sent (all of them, at
// the end).
func (r *loadRun) emit(final bool) {
	for {
		var parts []load.Interval
		have := 0
		for _, s := range r.series {
			if r.emitted < len(s) {
				parts = append(parts, s[r.emitted])
				have++
			}
		}
		if have == 0 || (!final && have < len(r.series)) {
			return
		}
		if r.spec.OnInterval != nil {
			iv := load.MergeIntervals(parts)
			iv.Histograms, iv.Samples = nil, nil
			r.spec.OnInterval(iv)
		}
		r.emitted++
	}
}

// when says how far into the run an agent was lost.
func (r *loadRun) when() string {
	if r.start.IsZero() {
		return " before the start"
	}
	return fmt.Sprintf(" %s after the start", time.Since(r.start).Round(100*time.Millisecond))
}
