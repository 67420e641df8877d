package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/link"
	"github.com/dbrig/dbrig/internal/load"
)

// Workload makes an agent's share of a load workload.
type Workload func(job WorkloadJob) (load.Workload, error)

// WorkloadJob is what a workload needs to make an agent's share.
type WorkloadJob struct {
	// Params are the workload's parameters, in its own JSON form.
	Params json.RawMessage
	// Login is the server's login, as this host reaches it.
	Login engine.Conn
	// Index is this agent's share, of Agents; Seed its own seed (the
	// load's seed for its random choices, different on every agent);
	// Users its share's users (its clients, which a script's seeds
	// depend on).
	Index, Agents int
	Seed          uint64
	Users         int
}

// ServeOptions configure an agent.
type ServeOptions struct {
	// Version is dbrig's build; a coordinator of another is refused.
	Version string
	// Workloads are the load workloads the agent runs, by name.
	Workloads map[string]Workload
	// Engines start a site's instances.
	Engines *engine.Registry
	// BaseDir holds the instances' directories (default: the system's
	// temporary directory).
	BaseDir string
	// Silence is how long the coordinator may say nothing (it pings every
	// second) before the agent takes it for gone and stops its load and its
	// servers; 0 means DefaultSilence.
	Silence time.Duration
	// Address is where the agent's servers are exposed to other hosts;
	// empty means the address the coordinator reached the agent by
	// (SSH_CONNECTION's, or the TCP connection's).
	Address string
	// Index is the agent's share when it was given one (-1 otherwise);
	// Token authenticates it to a coordinator it dials.
	Index int
	Token string
	Log   *slog.Logger
}

// DefaultSilence is how long an agent waits for a word from its coordinator.
const DefaultSilence = 5 * time.Second

// pingEvery is how often a coordinator pings each agent.
const pingEvery = time.Second

// SSHAddress returns the server-side address of the ssh session this
// process runs in ("" when it is not in one).
func SSHAddress(getenv func(string) string) string {
	f := strings.Fields(getenv("SSH_CONNECTION"))
	if len(f) == 4 {
		return f[2]
	}
	return ""
}

// server is one agent's session with its coordinator.
type server struct {
	opts ServeOptions
	ch   *channel
	log  *slog.Logger

	startCh    chan Start
	loadMu     sync.Mutex
	loading    bool
	cancelLoad context.CancelFunc

	instMu    sync.Mutex
	instances map[string]*hosted
	work      sync.WaitGroup
}

type hosted struct {
	inst   engine.Instance
	relays []*relay
}

// Serve runs an agent on one control channel until the coordinator says
// goodbye, closes the channel, falls silent, or ctx ends; then it stops its
// load and every server it started, and returns. The error says why it
// ended when that was not a goodbye.
func Serve(ctx context.Context, r io.Reader, w io.Writer, opts ServeOptions) error {
	if opts.Silence == 0 {
		opts.Silence = DefaultSilence
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	s := &server{opts: opts, ch: newChannel(r, w), log: opts.Log, startCh: make(chan Start, 1), instances: map[string]*hosted{}}
	host, _ := os.Hostname()
	hello := Hello{Version: opts.Version, Protocol: Protocol, Host: host, PID: os.Getpid(), CPUs: runtime.NumCPU(),
		Address: opts.Address, Index: opts.Index, Token: opts.Token}
	if err := s.ch.write(Message{Type: TypeHello, Hello: &hello}); err != nil {
		return fmt.Errorf("agent: say hello: %w", err)
	}

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	msgs := make(chan Message, 64)
	go s.readMessages(ctx, cancel, msgs) // ends when the channel does: the caller closes it, or the coordinator
	defer func() {
		cancel(errors.New("the agent is stopping")) // the load and every op end with the session
		s.shutdown()
	}()

	silence := time.NewTimer(opts.Silence)
	defer silence.Stop()
	greeted := false
	for {
		select {
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-silence.C:
			return fmt.Errorf("no word from the coordinator for %s: it is gone", opts.Silence)
		case m, ok := <-msgs:
			if !ok {
				return context.Cause(ctx)
			}
			silence.Reset(opts.Silence)
			if !greeted {
				if err := s.checkGreeting(m, hello); err != nil {
					return err
				}
				greeted = true
				continue
			}
			if done := s.handle(ctx, m); done {
				return nil
			}
		}
	}
}

// readMessages passes the coordinator's messages on to msgs, closed when
// the channel ends (which cancels ctx with the reason). A ping is
// answered here, not behind other work, so the clock measurement sees
// only the channel's delay.
func (s *server) readMessages(ctx context.Context, cancel context.CancelCauseFunc, msgs chan<- Message) {
	defer close(msgs)
	for {
		m, err := s.ch.read()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = errors.New("the coordinator closed the control channel")
			}
			cancel(err)
			return
		}
		if m.Type == TypePing && m.Clock != nil {
			c := *m.Clock
			c.Agent = time.Now().UnixNano()
			if err := s.ch.write(Message{Type: TypePong, Clock: &c}); err != nil {
				cancel(fmt.Errorf("the coordinator is gone: %w", err))
				return
			}
		}
		select {
		case msgs <- m:
		case <-ctx.Done():
			return
		}
	}
}

// checkGreeting refuses a coordinator whose first message is not its
// hello, or whose version or protocol differs from the agent's (telling
// it why).
func (s *server) checkGreeting(m Message, hello Hello) error {
	if m.Type != TypeHello || m.Hello == nil {
		return fmt.Errorf("the coordinator's first message is %q, not hello", m.Type)
	}
	if m.Hello.Version != s.opts.Version || m.Hello.Protocol != Protocol {
		err := &VersionError{Host: hello.Host, Agent: hello, Coordinator: *m.Hello}
		_ = s.ch.write(Message{Type: TypeError, Error: err.Error()})
		return err
	}
	return nil
}

// handle acts on one message; it reports whether the coordinator said
// goodbye.
func (s *server) handle(ctx context.Context, m Message) bool {
	switch m.Type {
	case TypePing:
	case TypeBye:
		return true
	case TypeLoad:
		s.loadMu.Lock()
		busy := s.loading
		s.loading = true
		s.loadMu.Unlock()
		if busy || m.Load == nil {
			_ = s.ch.write(Message{Type: TypeError, Error: "agent: a load is already running, or the job is empty"})
			return false
		}
		s.work.Go(func() { s.endLoad(s.runLoad(ctx, *m.Load)) })
	case TypeStart:
		if m.Start != nil {
			select {
			case s.startCh <- *m.Start:
			default:
			}
		}
	case TypeStop:
		s.stopLoad()
	case TypeOp:
		if m.Op != nil {
			op, id := *m.Op, m.ID
			s.work.Go(func() { s.answer(ctx, id, op) })
		}
	}
	return false
}

// stopLoad interrupts the running load, if any: its result, partial, still
// goes to the coordinator.
func (s *server) stopLoad() {
	s.loadMu.Lock()
	c := s.cancelLoad
	s.loadMu.Unlock()
	if c != nil {
		c()
	}
}

// runLoad runs one share and returns its last word for the coordinator:
// the result, or why there is none.
func (s *server) runLoad(ctx context.Context, job LoadJob) Message {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s.loadMu.Lock()
	s.cancelLoad = cancel
	s.loadMu.Unlock()
	select {
	case <-s.startCh: // a start a stopped share never took is not this one's
	default:
	}
	fail := func(err error) Message { return Message{Type: TypeError, Error: fmt.Sprintf("agent: %v", err)} }
	mk, ok := s.opts.Workloads[job.Workload]
	if !ok {
		return fail(fmt.Errorf("no load workload %q", job.Workload))
	}
	login := job.Login.Open()
	var proxy *link.Proxy
	if job.Link != nil {
		p, through, err := job.Link.listen(ctx, login)
		if err != nil {
			return fail(err)
		}
		defer p.Close() // on every path; after a result it is closed already
		proxy, login = p, through
	}
	wl, err := mk(WorkloadJob{Params: job.Params, Login: login, Index: job.Index, Agents: job.Agents, Seed: job.Config.Seed, Users: job.Config.Users})
	if err != nil {
		return fail(err)
	}
	cfg := job.Config.loadConfig()
	cfg.OnInterval = func(iv load.Interval) { _ = s.ch.write(Message{Type: TypeInterval, Interval: &iv}) }
	cfg.Ready = func(ctx context.Context) error { return s.awaitStart(ctx, wl, cfg) }
	r, err := load.NewRunner(cfg, wl)
	if err != nil {
		return fail(err)
	}
	res, err := r.Run(ctx)
	if res == nil {
		if err == nil {
			return Message{}
		}
		return fail(err)
	}
	// The series went out second by second; the result carries the whole
	// run's distributions.
	res.Series = nil
	m := Message{Type: TypeResult, Result: res, Link: carried(proxy)}
	if rep, ok := wl.(Reporter); ok {
		m.Extra = rep.Extra()
	}
	return m
}

// awaitStart says the share is ready, waits for the common start instant
// and says when it started.
func (s *server) awaitStart(ctx context.Context, wl load.Workload, cfg load.Config) error {
	if err := s.ch.write(Message{Type: TypeReady}); err != nil {
		return err
	}
	var st Start
	select {
	case st = <-s.startCh:
	case <-ctx.Done():
		return ctx.Err()
	}
	t := time.NewTimer(time.Until(time.Unix(0, st.At)))
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	now := time.Now()
	if rep, ok := wl.(Reporter); ok {
		from := now.Add(cfg.WarmUp)
		rep.Measuring(from, from.Add(cfg.Duration))
	}
	return s.ch.write(Message{Type: TypeStarted, Clock: &Clock{Agent: now.UnixNano()}})
}

// endLoad frees the agent for the next share (a sweep's next point) before
// it sends the last word, so that the coordinator's next job, which may
// follow at once, finds it free.
func (s *server) endLoad(last Message) {
	s.loadMu.Lock()
	s.loading, s.cancelLoad = false, nil
	s.loadMu.Unlock()
	if last.Type != "" {
		_ = s.ch.write(last)
	}
}

// carried closes the agent's link, so that its figures are final, and
// returns them (nil without a link).
func carried(p *link.Proxy) *link.Stats {
	if p == nil {
		return nil
	}
	_ = p.Close()
	st := p.Stats()
	return &st
}

// answer runs one op about the site's instances and replies.
func (s *server) answer(ctx context.Context, id int64, op Op) {
	rep, err := s.do(ctx, op)
	if err != nil {
		rep.Error = err.Error()
	}
	_ = s.ch.write(Message{Type: TypeReply, ID: id, Reply: &rep})
}

func (s *server) instance(name string) (engine.Instance, error) {
	s.instMu.Lock()
	defer s.instMu.Unlock()
	h, ok := s.instances[name]
	if !ok {
		return nil, fmt.Errorf("agent: no instance %q runs here", name)
	}
	return h.inst, nil
}

func (s *server) do(ctx context.Context, op Op) (Reply, error) {
	switch op.Name {
	case "start":
		return s.startInstance(ctx, op)
	case "stop":
		s.instMu.Lock()
		h, ok := s.instances[op.Instance]
		delete(s.instances, op.Instance)
		s.instMu.Unlock()
		if !ok {
			return Reply{}, nil
		}
		return Reply{}, h.stop(ctx)
	}
	inst, err := s.instance(op.Instance)
	if err != nil {
		return Reply{}, err
	}
	switch op.Name {
	case "create_db":
		return Reply{}, inst.CreateDatabase(ctx, op.Database)
	case "drop_db":
		return Reply{}, inst.DropDatabase(ctx, op.Database)
	case "exec":
		return Reply{}, inst.Exec(ctx, op.Database, op.SQL...)
	case "setting":
		v, err := inst.Setting(ctx, op.Setting)
		return Reply{Value: v}, err
	case "reconfigure":
		restarted, err := inst.Reconfigure(ctx, op.Settings)
		return Reply{Restarted: restarted}, err
	}
	return Reply{}, fmt.Errorf("agent: unknown op %q", op.Name)
}

func (s *server) startInstance(ctx context.Context, op Op) (Reply, error) {
	if s.opts.Engines == nil {
		return Reply{}, errors.New("agent: this agent starts no servers")
	}
	eng, ok := s.opts.Engines.Lookup(op.Config.Engine)
	if !ok {
		return Reply{}, fmt.Errorf("agent: unknown engine %q (this agent has: %s)", op.Config.Engine, strings.Join(s.opts.Engines.Names(), ", "))
	}
	s.instMu.Lock()
	_, dup := s.instances[op.Config.Name]
	s.instMu.Unlock()
	if dup {
		return Reply{}, fmt.Errorf("agent: instance %q already runs here", op.Config.Name)
	}
	// The server outlives this op: it stops with the agent or on "stop".
	inst, err := eng.Start(context.WithoutCancel(ctx), op.Config, engine.StartOptions{BaseDir: s.opts.BaseDir, Keep: op.Keep, Log: s.log})
	if err != nil {
		return Reply{}, err
	}
	h := &hosted{inst: inst}
	expose := func(c engine.Conn) (engine.Sealed, error) {
		addr := s.opts.Address
		if addr == "" {
			addr = "127.0.0.1"
		}
		r, err := newRelay(net.JoinHostPort(addr, "0"), c.Addr())
		if err != nil {
			return engine.Sealed{}, fmt.Errorf("agent: expose instance %q on %s: %w", op.Config.Name, addr, err)
		}
		h.relays = append(h.relays, r)
		sealed := c.Seal()
		sealed.Host, sealed.Port = addr, r.addr().Port
		return sealed, nil
	}
	st := &StartedServer{Version: inst.Version(), LogPath: inst.LogPath()}
	st.Login, err = expose(inst.Login(""))
	if err == nil {
		if m, ok := inst.(engine.Monitored); ok {
			if c, ok := m.MonitorLogin(""); ok {
				st.MonitorOK = true
				if c.Addr() == inst.Login("").Addr() {
					st.Monitor = st.Login
					st.Monitor.User, st.Monitor.Database = c.User, c.Database
				} else {
					st.Monitor, err = expose(c)
				}
			}
		}
	}
	if err != nil {
		_ = h.stop(context.WithoutCancel(ctx))
		return Reply{}, err
	}
	s.instMu.Lock()
	s.instances[op.Config.Name] = h
	s.instMu.Unlock()
	return Reply{Started: st}, nil
}

func (h *hosted) stop(ctx context.Context) error {
	var errs []error
	for _, r := range h.relays {
		errs = append(errs, r.close())
	}
	errs = append(errs, h.inst.Stop(ctx))
	return errors.Join(errs...)
}

// shutdown stops the load and every server, whatever ended the session.
// Ops still running finish first (a server being started is then stopped).
func (s *server) shutdown() {
	s.stopLoad()
	s.work.Wait()
	s.instMu.Lock()
	insts := s.instances
	s.instances = map[string]*hosted{}
	s.instMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for name, h := range insts {
		wg.Go(func() {
			if err := h.stop(ctx); err != nil {
				s.log.Warn("stop instance", "instance", name, "err", err)
			}
		})
	}
	wg.Wait()
}
