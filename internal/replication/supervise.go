package replication

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// RunConfig is one run of a replication's roles in this process: the log
// reader, the distribution agent, or both. `dbrig replicate run` and the
// geo-replication study both run a replication through it.
type RunConfig struct {
	// Config names the replication; its logins are the rig's own (the
	// log reader reads the publisher through Config.Publisher, the
	// supervisor watches through all three).
	Config
	// LogReader and Agent say which roles run here.
	LogReader, Agent bool
	// Targets are the agent's two connections, one of which may cross a
	// link (see Mode.AgentTargets); zero values mean Config.Distribution()
	// and Config.Subscriber.
	Targets Targets
	Mode    Mode
	Options AgentOptions
	// UntilCaughtUp ends the run, with a nil error, once every transaction
	// committed on the publisher before the start is applied (or, with the
	// log reader alone, stored).
	UntilCaughtUp bool
	// AgentRetry restarts an agent that stopped on an apply error (a
	// constraint, a full disk) after this long, as often as it stops; zero
	// leaves it stopped. The log reader keeps capturing either way.
	AgentRetry time.Duration
	// AgentReady and AgentGate time the agent without its connection
	// set-up (see AgentConfig.Ready and Gate).
	AgentReady func()
	AgentGate  <-chan struct{}
	// OnEvent, when set, hears of every role that stops or restarts, from
	// the supervisor's goroutine: what an operator must be told.
	OnEvent func(Event)
	// Clock, for tests; nil is time.Now.
	now func() time.Time
}

// Event is a role stopping or restarting.
type Event struct {
	Role string // "log reader" or "distribution agent"
	// State is "stopped" (Err says why) or "restarting".
	State string
	Err   error
	At    time.Time
}

func (e Event) String() string {
	if e.State == "restarting" {
		return e.Role + " restarting"
	}
	return fmt.Sprintf("%s stopped: %v", e.Role, e.Err)
}

// Progress is what a supervised run has done so far.
type Progress struct {
	Elapsed   time.Duration   `json:"elapsed_ns"`
	LogReader *LogReaderStats `json:"log_reader,omitempty"`
	Agent     *AgentStats     `json:"agent,omitempty"`
	// AgentStopped says why the agent is not running while the log reader
	// goes on ("" while it runs).
	AgentStopped string `json:"agent_stopped,omitempty"`
	// Applied counts the commands the agents of this run applied, across
	// restarts; CommandsPerSecond is the rate over the last ten seconds or
	// so (not since the start, which hides a stall).
	Applied           int64   `json:"applied"`
	CommandsPerSecond float64 `json:"commands_per_second"`
	// Errors counts the failures the roles recovered from by reconnecting,
	// and the ones that stopped them.
	TransientErrors int64 `json:"transient_errors"`
	PermanentErrors int64 `json:"permanent_errors"`
	CaughtUp        bool  `json:"caught_up,omitempty"`
}

// Supervisor runs a replication's roles and watches them: a transient
// failure is retried inside each role (with backoff); a permanent one of
// the agent stops only the agent, while the log reader keeps capturing, so
// the backlog is kept and measured; a permanent one of the log reader ends
// the run.
type Supervisor struct {
	cfg    RunConfig
	start  time.Time
	cancel context.CancelFunc
	done   chan struct{}
	waiter *Waiter
	wmu    sync.Mutex // the waiter's connections serve one caller at a time
	target LSN

	mu        sync.Mutex
	lr        *LogReader
	agent     *DistributionAgent
	agentErr  error
	agentBase int64 // commands applied by earlier agents of this run
	restarts  int64 // transient errors of earlier agents
	permanent int64
	caughtUp  bool
	err       error
	rate      rateWindow
}

// rateWindow is a rate over the last few samples of a growing count: what
// an operator watching a replication wants to see (a stall shows within
// seconds), unlike an average since the start.
type rateWindow struct {
	samples []rateSample
	keep    int // samples kept (default 11: ten one-second steps)
}

type rateSample struct {
	at    time.Time
	count int64
}

func (w *rateWindow) add(at time.Time, count int64) {
	keep := w.keep
	if keep < 2 {
		keep = 11
	}
	w.samples = append(w.samples, rateSample{at, count})
	if len(w.samples) > keep {
		w.samples = append(w.samples[:0], w.samples[len(w.samples)-keep:]...)
	}
}

// perSecond is the growth per second between the oldest and the newest
// sample kept (0 with fewer than two).
func (w *rateWindow) perSecond() float64 {
	n := len(w.samples)
	if n < 2 {
		return 0
	}
	a, b := w.samples[0], w.samples[n-1]
	d := b.at.Sub(a.at).Seconds()
	if d <= 0 {
		return 0
	}
	return float64(b.count-a.count) / d
}

// Supervise checks that the replication exists and its servers answer,
// then starts the roles RunConfig asks for and returns at once. The run
// ends when ctx is cancelled, with UntilCaughtUp once caught up, or when a
// role stops for good and nothing is left to run (see Supervisor).
func Supervise(ctx context.Context, cfg RunConfig) (*Supervisor, error) {
	cfg.Config = cfg.Config.withDefaults()
	if cfg.now == nil {
		cfg.now = time.Now
	}
	if !cfg.LogReader && !cfg.Agent {
		return nil, usageErr("nothing to run: neither the log reader nor the agent")
	}
	if cfg.Targets.Distribution.Host == "" {
		cfg.Targets.Distribution = cfg.Distribution()
	}
	if cfg.Targets.Subscriber.Host == "" {
		cfg.Targets.Subscriber = cfg.Subscriber
	}
	s := &Supervisor{cfg: cfg, done: make(chan struct{})}
	if cfg.LogReader {
		lr, err := NewLogReader(LogReaderConfig{Publisher: cfg.Publisher, Distribution: cfg.Distribution(), Publication: cfg.Publication, Logger: cfg.Logger})
		if err != nil {
			return nil, err
		}
		s.lr = lr
	}
	if cfg.Agent {
		a, err := s.newAgent()
		if err != nil {
			return nil, err
		}
		s.agent = a
	}
	// Fail fast on what waiting cannot cure: a replication that does not
	// exist, a server that does not answer at the start.
	pub, dist, _, err := openReplication(ctx, cfg.Config, "dbrig run")
	if err != nil {
		return nil, err
	}
	pub.Close(context.WithoutCancel(ctx))
	dist.Close(context.WithoutCancel(ctx))
	if cfg.UntilCaughtUp || cfg.LogReader {
		if s.waiter, err = NewWaiter(ctx, cfg.Config); err != nil {
			return nil, &ServerError{Err: err}
		}
		if cfg.UntilCaughtUp {
			if s.target, err = s.waiter.CurrentLSN(ctx); err != nil {
				s.waiter.Close()
				return nil, &ServerError{Err: err}
			}
		}
	}
	runCtx, cancel := context.WithCancel(ctx)
	s.cancel = cancel
	s.start = cfg.now()
	go s.run(runCtx, ctx) // owned by the Supervisor: Stop waits for it
	return s, nil
}

func (s *Supervisor) newAgent() (*DistributionAgent, error) {
	cfg := s.cfg
	acfg := AgentConfig{Targets: cfg.Targets, Publication: cfg.Publication, Options: cfg.Options, Mode: cfg.Mode, Logger: cfg.Logger,
		UntilCaughtUp: cfg.UntilCaughtUp && !cfg.LogReader, Ready: cfg.AgentReady, Gate: cfg.AgentGate}
	return NewDistributionAgent(acfg)
}

// Target is the publisher position UntilCaughtUp waits for.
func (s *Supervisor) Target() LSN { return s.target }

// Done is closed when the run has ended.
func (s *Supervisor) Done() <-chan struct{} { return s.done }

// Err is why the run ended: nil when it caught up (UntilCaughtUp) or was
// stopped with no role failing for good; the first permanent error of a
// role otherwise, or the context's error when it was cancelled.
func (s *Supervisor) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// Stop ends the run, waits for both roles and returns Err.
func (s *Supervisor) Stop() error {
	s.cancel()
	<-s.done
	return s.Err()
}

// Progress is a snapshot of the run.
func (s *Supervisor) Progress() Progress {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := Progress{Elapsed: s.cfg.now().Sub(s.start), CaughtUp: s.caughtUp, PermanentErrors: s.permanent, TransientErrors: s.restarts}
	if s.lr != nil {
		st := s.lr.Stats()
		p.LogReader = &st
		p.TransientErrors += int64(st.Restarts)
	}
	if s.agent != nil {
		st := s.agent.Stats()
		p.Agent = &st
		p.Applied = s.agentBase + st.Commands
		p.TransientErrors += int64(st.Restarts)
	}
	if s.agentErr != nil {
		p.AgentStopped = s.agentErr.Error()
	}
	p.CommandsPerSecond = s.rate.perSecond()
	return p
}

// sample records the applied count for the recent rate: ten seconds of
// one-second samples.
func (s *Supervisor) sample() {
	p := s.Progress()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rate.add(s.cfg.now(), p.Applied)
}

func (s *Supervisor) event(e Event) {
	e.At = s.cfg.now()
	if s.cfg.OnEvent != nil {
		s.cfg.OnEvent(e)
	}
}

// roleEnd is a role's return.
type roleEnd struct {
	role string
	err  error
}

// roleSet is the roles' goroutines, which the run owns and waits for.
type roleSet struct {
	ctx     context.Context
	ends    chan roleEnd
	wg      sync.WaitGroup
	running int
	// retry fires when the stopped agent is due to restart (AgentRetry).
	retry <-chan time.Time
}

// start runs a role in a goroutine of its own, which reports its return
// on ends.
func (rs *roleSet) start(role string, run func(context.Context) error) {
	rs.running++
	rs.wg.Add(1)
	go func() { defer rs.wg.Done(); rs.ends <- roleEnd{role, run(rs.ctx)} }() // waited for in Supervisor.run
}

// run owns the roles' goroutines.
func (s *Supervisor) run(ctx, parent context.Context) {
	defer close(s.done)
	defer s.closeWaiter()
	rs := &roleSet{ctx: ctx, ends: make(chan roleEnd, 2)}
	if s.lr != nil {
		rs.start(roleLogReader, s.lr.Run)
	}
	if s.agent != nil {
		rs.start(roleAgent, s.agent.Run)
	}
	var poll <-chan time.Time
	if s.cfg.UntilCaughtUp && s.waiter != nil {
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		poll = t.C
	}
	rate := time.NewTicker(time.Second)
	defer rate.Stop()
	s.sample()
	stopping := ctx.Done()
	for rs.running > 0 {
		select {
		case e := <-rs.ends:
			rs.running--
			if ctx.Err() != nil {
				continue // stopping: every role returns the context's error
			}
			s.roleEnded(rs, e)
		case <-rs.retry:
			rs.retry = nil
			s.restartAgent(rs)
		case <-poll:
			s.checkCaughtUp(ctx)
		case <-rate.C:
			s.sample()
		case <-stopping:
			stopping = nil // the roles see it too, and return
		}
	}
	rs.wg.Wait()
	s.settle(parent)
}

// closeWaiter closes the watcher's connections once no caller uses them.
func (s *Supervisor) closeWaiter() {
	if s.waiter != nil {
		s.wmu.Lock()
		s.waiter.Close()
		s.wmu.Unlock()
	}
}

// finish ends the run with err, unless an error came first.
func (s *Supervisor) finish(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.mu.Unlock()
	s.cancel()
}

// roleEnded decides what a role's end means for the run: a log reader's
// ends it; an agent's ends it when nothing else is left to do, or waits
// for its restart.
func (s *Supervisor) roleEnded(rs *roleSet, e roleEnd) {
	switch e.role {
	case roleLogReader:
		err := fmt.Errorf("log reader: %w", e.err)
		if e.err == nil {
			err = errors.New("log reader: stopped")
		}
		s.mu.Lock()
		s.permanent++
		s.mu.Unlock()
		s.event(Event{Role: "log reader", State: "stopped", Err: e.err})
		s.finish(err)
	case roleAgent:
		if e.err == nil { // caught up (agent alone, UntilCaughtUp)
			s.mu.Lock()
			s.caughtUp = true
			s.mu.Unlock()
			s.finish(nil)
			return
		}
		s.mu.Lock()
		s.agentErr = e.err
		s.permanent++
		s.mu.Unlock()
		s.event(Event{Role: "distribution agent", State: "stopped", Err: e.err})
		switch {
		case s.lr == nil || s.cfg.UntilCaughtUp:
			s.finish(fmt.Errorf("distribution agent: %w", e.err))
		case s.cfg.AgentRetry > 0:
			rs.retry = time.After(s.cfg.AgentRetry)
		}
	}
}

// restartAgent starts a new agent in place of the stopped one, carrying
// its counts over.
func (s *Supervisor) restartAgent(rs *roleSet) {
	a, err := s.newAgent()
	if err != nil {
		s.finish(fmt.Errorf("distribution agent: %w", err))
		return
	}
	s.mu.Lock()
	st := s.agent.Stats()
	s.agentBase += st.Commands
	s.restarts += int64(st.Restarts)
	s.agent, s.agentErr = a, nil
	s.mu.Unlock()
	s.event(Event{Role: "distribution agent", State: "restarting"})
	rs.start(roleAgent, a.Run)
}

// checkCaughtUp ends the run once the subscriber (or, with the log reader
// alone, the distribution database) holds everything up to the target.
func (s *Supervisor) checkCaughtUp(ctx context.Context) {
	var ok bool
	var err error
	s.wmu.Lock()
	if s.agent != nil {
		ok, err = s.waiter.CaughtUp(ctx, s.target)
	} else {
		ok, err = s.waiter.Stored(ctx, s.target)
	}
	s.wmu.Unlock()
	if err == nil && ok {
		s.mu.Lock()
		s.caughtUp = true
		s.mu.Unlock()
		s.finish(nil)
	}
}

// settle says why the run ended when no role said so first.
func (s *Supervisor) settle(parent context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err == nil && !s.caughtUp {
		switch {
		case s.agentErr != nil:
			s.err = fmt.Errorf("distribution agent: %w", s.agentErr)
		case parent.Err() != nil:
			s.err = parent.Err()
		}
	}
}

// WaitCaughtUp waits until every transaction committed on the publisher
// before target is applied on the subscriber, polling every poll; it fails
// when the run ends first, or when the agent stops.
func (s *Supervisor) WaitCaughtUp(ctx context.Context, target LSN, poll time.Duration) error {
	if s.waiter == nil {
		return errors.New("wait for the subscriber: this run has no watcher (it runs the agent alone)")
	}
	return s.pollWatcher(ctx, poll, "the subscriber caught up",
		func() (bool, error) { return s.waiter.CaughtUp(ctx, target) },
		func() error {
			if p := s.Progress(); p.AgentStopped != "" {
				return fmt.Errorf("distribution agent: %s", p.AgentStopped)
			}
			return nil
		})
}

// WaitStored waits until the log reader has stored every transaction
// committed on the publisher before target.
func (s *Supervisor) WaitStored(ctx context.Context, target LSN, poll time.Duration) error {
	if s.waiter == nil {
		return errors.New("wait for the log reader: this run has no watcher")
	}
	return s.pollWatcher(ctx, poll, "the log reader stored everything",
		func() (bool, error) { return s.waiter.Stored(ctx, target) }, nil)
}

// pollWatcher asks done (on the watcher's connection, one caller at a time)
// every poll until it says yes or fails, the run ends (before what it waits
// for), or after, when given, finds a reason to give up.
func (s *Supervisor) pollWatcher(ctx context.Context, poll time.Duration, what string, done func() (bool, error), after func() error) error {
	for {
		s.wmu.Lock()
		ok, err := done()
		s.wmu.Unlock()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.done:
			if err := s.Err(); err != nil {
				return err
			}
			return errors.New("the replication stopped before " + what)
		case <-time.After(poll):
		}
		if after != nil {
			if err := after(); err != nil {
				return err
			}
		}
	}
}
