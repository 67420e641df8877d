package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Agent is the coordinator's end of one agent's control channel.
type Agent struct {
	// Name is the agent as the user gave it (user@host:port).
	Name string
	// Hello is what the agent said of itself.
	Hello Hello
	// Offset is the agent's clock minus the coordinator's, and RTT the
	// control channel's round trip, measured at the handshake (the offset
	// is exact to within RTT/2).
	Offset, RTT time.Duration

	ch       *channel
	closeIn  func() error // closes the agent's input: a goodbye it cannot miss
	wait     func() error // waits for the transport (the ssh process) to end
	kill     func()       // ends the transport at once
	stderr   *tail
	events   chan Message
	pongs    chan Message
	mu       sync.Mutex
	nextID   int64
	replies  map[int64]chan Message
	done     chan struct{} // closed when the read loop ends
	err      error         // why it ended; set before done is closed
	closing  atomic.Bool
	stopPing context.CancelFunc
	closed   sync.Once
	closeErr error
}

// Transport is a started agent process (or connection) as the coordinator
// holds it.
type Transport struct {
	Name  string
	R     io.Reader
	W     io.WriteCloser
	Wait  func() error
	Kill  func()
	Tail  *tail // the transport's own error output (ssh's), for messages
	Close func() error
}

// HandshakeOptions check an agent when it connects.
type HandshakeOptions struct {
	Version string
	// Token, when set, must be the agent's (agents that dialled over TCP).
	Token string
	// Timeout bounds the agent's hello (ssh's connection and the agent's
	// start); 0 means 30 s.
	Timeout time.Duration
	// Silence: an agent that says nothing for this long (it answers a ping
	// every second) is lost; 0 means 10 s.
	Silence time.Duration
}

// Connect speaks to an agent over a started transport: hellos, the version
// check, the clock offset. On error the transport is ended.
func Connect(ctx context.Context, t Transport, opts HandshakeOptions) (*Agent, error) {
	if opts.Timeout == 0 {
		opts.Timeout = 30 * time.Second
	}
	if opts.Silence == 0 {
		opts.Silence = 10 * time.Second
	}
	a := &Agent{Name: t.Name, ch: newChannel(t.R, t.W), closeIn: t.W.Close, wait: t.Wait, kill: t.Kill, stderr: t.Tail,
		events: make(chan Message, 1024), pongs: make(chan Message, 16), replies: map[int64]chan Message{}, done: make(chan struct{})}
	if a.wait == nil {
		a.wait = func() error { return nil }
	}
	if a.kill == nil {
		a.kill = func() {}
	}
	if t.Close != nil {
		a.closeIn = t.Close
	}
	fail := func(err error) (*Agent, error) {
		a.kill()
		_ = a.closeIn()
		_ = a.wait()
		return nil, fmt.Errorf("agent %s: %w", a.Name, a.explain(err))
	}
	// The hello, with a deadline: a read cannot be cancelled, so the
	// transport is ended when the time runs out.
	type first struct {
		m   Message
		err error
	}
	got := make(chan first, 1)
	go func() { m, err := a.ch.read(); got <- first{m, err} }()
	timer := time.NewTimer(opts.Timeout)
	defer timer.Stop()
	var m Message
	select {
	case f := <-got:
		if f.err != nil {
			return fail(f.err)
		}
		m = f.m
	case <-timer.C:
		a.kill()
		<-got
		return fail(fmt.Errorf("no hello within %s", opts.Timeout))
	case <-ctx.Done():
		a.kill()
		<-got
		return fail(ctx.Err())
	}
	if m.Type == TypeError {
		return fail(errors.New(m.Error))
	}
	if m.Type != TypeHello || m.Hello == nil {
		return fail(fmt.Errorf("the agent's first message is %q, not hello: is this dbrig agent?", m.Type))
	}
	a.Hello = *m.Hello
	mine := Hello{Version: opts.Version, Protocol: Protocol}
	if a.Hello.Version != opts.Version || a.Hello.Protocol != Protocol {
		_ = a.ch.write(Message{Type: TypeHello, Hello: &mine}) // the agent says its side too, in its log
		return fail(&VersionError{Host: a.Name, Agent: a.Hello, Coordinator: mine})
	}
	if opts.Token != "" && a.Hello.Token != opts.Token {
		return fail(errors.New("the agent's token is not this run's (DBRIG_AGENT_TOKEN)"))
	}
	if err := a.ch.write(Message{Type: TypeHello, Hello: &mine}); err != nil {
		return fail(err)
	}
	go a.readLoop(opts.Silence)
	if err := a.measureClock(ctx); err != nil {
		a.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("agent %s: measure its clock: %w", a.Name, err)
	}
	pctx, stop := context.WithCancel(context.Background())
	a.stopPing = stop
	go a.pingLoop(pctx)
	return a, nil
}

// explain adds the transport's own last words (ssh's "Connection refused",
// "dbrig: command not found") to an error.
func (a *Agent) explain(err error) error {
	if a.stderr != nil {
		if s := a.stderr.String(); s != "" {
			return fmt.Errorf("%w (%s)", err, s)
		}
	}
	return err
}

func (a *Agent) readLoop(silence time.Duration) {
	var lastHeard atomic.Int64
	lastHeard.Store(time.Now().UnixNano())
	watch := make(chan struct{})
	go func() { // ends the transport when the agent falls silent
		t := time.NewTicker(silence / 4)
		defer t.Stop()
		for {
			select {
			case <-watch:
				return
			case <-t.C:
				if time.Since(time.Unix(0, lastHeard.Load())) > silence && !a.closing.Load() {
					a.setErr(fmt.Errorf("%w: no word from the agent for %s", ErrLost, silence))
					a.kill()
					_ = a.closeIn()
					return
				}
			}
		}
	}()
	defer close(watch)
	for {
		m, err := a.ch.read()
		if err != nil {
			if a.closing.Load() {
				err = nil
			} else if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				err = ErrLost
			}
			a.setErr(err)
			a.mu.Lock()
			for _, r := range a.replies {
				close(r)
			}
			a.replies = map[int64]chan Message{}
			a.mu.Unlock()
			close(a.done)
			return
		}
		lastHeard.Store(time.Now().UnixNano())
		switch m.Type {
		case TypePong:
			select {
			case a.pongs <- m:
			default:
			}
		case TypeReply:
			a.mu.Lock()
			r, ok := a.replies[m.ID]
			delete(a.replies, m.ID)
			a.mu.Unlock()
			if ok {
				r <- m
			}
		default:
			a.events <- m // the run reads them; a stalled run stalls the agent's writes
		}
	}
}

func (a *Agent) setErr(err error) {
	a.mu.Lock()
	if a.err == nil {
		a.err = err
	}
	a.mu.Unlock()
}

// Err says why the control channel ended (nil while it is open, or after a
// clean close).
func (a *Agent) Err() error {
	select {
	case <-a.done:
	default:
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err == nil {
		return nil
	}
	return a.explain(a.err)
}

// Done is closed when the control channel has ended.
func (a *Agent) Done() <-chan struct{} { return a.done }

func (a *Agent) pingLoop(ctx context.Context) {
	t := time.NewTicker(pingEvery)
	defer t.Stop()
	for seq := int64(1 << 32); ; seq++ {
		select {
		case <-ctx.Done():
			return
		case <-a.done:
			return
		case <-t.C:
			if a.ch.write(Message{Type: TypePing, Clock: &Clock{Seq: seq, Sent: time.Now().UnixNano()}}) != nil {
				return
			}
		}
	}
}

// measureClock sends pings one after the other and keeps the sample with
// the shortest round trip: offset = agent's clock - the midpoint of the
// coordinator's send and receive (NTP's rule; exact to within RTT/2).
func (a *Agent) measureClock(ctx context.Context) error {
	const samples = 8
	best := time.Duration(-1)
	for seq := int64(1); seq <= samples; seq++ {
		sent := time.Now()
		if err := a.ch.write(Message{Type: TypePing, Clock: &Clock{Seq: seq, Sent: sent.UnixNano()}}); err != nil {
			return err
		}
		for {
			var m Message
			select {
			case m = <-a.pongs:
			case <-a.done:
				return a.Err()
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(10 * time.Second):
				return errors.New("no answer to a ping within 10 s")
			}
			if m.Clock == nil || m.Clock.Seq != seq {
				continue
			}
			recv := time.Now()
			rtt := recv.Sub(sent)
			if best < 0 || rtt < best {
				best = rtt
				mid := sent.UnixNano() + int64(rtt)/2
				a.Offset, a.RTT = time.Duration(m.Clock.Agent-mid), rtt
			}
			break
		}
	}
	return nil
}

// send writes a message to the agent.
func (a *Agent) send(m Message) error {
	if err := a.ch.write(m); err != nil {
		if e := a.Err(); e != nil {
			return e
		}
		return fmt.Errorf("%w: %v", ErrLost, err)
	}
	return nil
}

// call sends an op and waits for its reply.
func (a *Agent) call(ctx context.Context, op Op) (Reply, error) {
	a.mu.Lock()
	a.nextID++
	id := a.nextID
	r := make(chan Message, 1)
	a.replies[id] = r
	a.mu.Unlock()
	if err := a.send(Message{Type: TypeOp, ID: id, Op: &op}); err != nil {
		return Reply{}, err
	}
	select {
	case m, ok := <-r:
		if !ok || m.Reply == nil {
			if err := a.Err(); err != nil {
				return Reply{}, err
			}
			return Reply{}, ErrLost
		}
		if m.Reply.Error != "" {
			return *m.Reply, errors.New(m.Reply.Error)
		}
		return *m.Reply, nil
	case <-ctx.Done():
		a.mu.Lock()
		delete(a.replies, id)
		a.mu.Unlock()
		return Reply{}, ctx.Err()
	}
}

// Traffic is what the control channel carried so far.
func (a *Agent) Traffic() Traffic { return a.ch.traffic() }

// Close says goodbye, closes the agent's input and waits for it to stop its
// load and servers and end (ctx bounds the wait; then the transport is
// ended). Safe to call more than once and on every exit path.
func (a *Agent) Close(ctx context.Context) error {
	a.closed.Do(func() {
		a.closing.Store(true)
		if a.stopPing != nil {
			a.stopPing()
		}
		_ = a.ch.write(Message{Type: TypeBye})
		_ = a.closeIn()
		ctx, cancel := context.WithTimeout(ctx, 90*time.Second) // a server's stop takes seconds
		defer cancel()
		waited := make(chan error, 1)
		go func() { <-a.done; waited <- a.wait() }()
		select {
		case err := <-waited:
			a.closeErr = err
		case <-ctx.Done():
			a.kill()
			a.closeErr = errors.Join(<-waited, fmt.Errorf("agent %s did not end in time: ended it", a.Name))
		}
		if a.closeErr != nil && !errors.Is(a.closeErr, ErrLost) {
			a.closeErr = fmt.Errorf("agent %s: %w", a.Name, a.explain(a.closeErr))
		}
	})
	return a.closeErr
}

// CloseAll closes every agent at once and joins their errors.
func CloseAll(ctx context.Context, agents []*Agent) error {
	errs := make([]error, len(agents))
	var wg sync.WaitGroup
	for i, a := range agents {
		if a != nil {
			wg.Go(func() { errs[i] = a.Close(ctx) })
		}
	}
	wg.Wait()
	return errors.Join(errs...)
}

// tail keeps the last few lines a transport wrote on its error output.
type tail struct {
	mu    sync.Mutex
	lines []string
	part  string
}

// NewTail returns a writer that keeps the last lines written to it.
func NewTail() *tail { return &tail{} }

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := t.part + string(p)
	parts := strings.Split(s, "\n")
	t.part = parts[len(parts)-1]
	for _, l := range parts[:len(parts)-1] {
		if l = strings.TrimSpace(l); l != "" {
			t.lines = append(t.lines, l)
		}
	}
	if len(t.lines) > 5 {
		t.lines = slices.Clone(t.lines[len(t.lines)-5:])
	}
	return len(p), nil
}

// String is the last lines, joined with "; ".
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	lines := t.lines
	if p := strings.TrimSpace(t.part); p != "" {
		lines = append(slices.Clone(lines), p)
	}
	return strings.Join(lines, "; ")
}
