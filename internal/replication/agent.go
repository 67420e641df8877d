package replication

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/dbrig/dbrig/internal/units"
)

// AgentConfig configures a distribution agent.
type AgentConfig struct {
	// Targets are the agent's two connections. Which one crosses the WAN
	// is the mode: see Mode.AgentTargets.
	Targets
	// Publication names the subscription (default "dbrig").
	Publication string
	Options     AgentOptions
	// Mode is recorded in the statistics (it does not change what the
	// agent does: its targets do).
	Mode Mode
	// PollInterval is how often an idle agent looks for new commands when
	// no notification arrives (default 1 s).
	PollInterval time.Duration
	// ReportInterval is how often the agent records its progress in the
	// distribution database (default 1 s).
	ReportInterval time.Duration
	// UntilCaughtUp makes Run return nil once every command the
	// distribution database holds is applied.
	UntilCaughtUp bool
	// NoRetry returns the first error instead of reconnecting.
	NoRetry bool
	// Ready, when set, is called once the agent is connected and about to
	// read; with Gate it then waits until Gate is closed. Together they let
	// a measurement time the agent without its connection set-up.
	Ready  func()
	Gate   <-chan struct{}
	Logger *slog.Logger
}

// AgentStats describe what a distribution agent has done.
type AgentStats struct {
	Commands     int64 `json:"commands"`     // data commands applied (committed)
	Transactions int64 `json:"transactions"` // source transactions applied
	Commits      int64 `json:"commits"`      // subscriber transactions
	RoundTrips   int64 `json:"round_trips"`  // buffers sent (one Sync group, one answer each)
	ReadBytes    int64 `json:"read_bytes"`   // bytes of commands read from the distribution database (compressed, as stored)
	SentBytes    int64 `json:"sent_bytes"`   // SQL bytes sent to the subscriber
	Missing      int64 `json:"missing"`      // updates and deletes that found no row
	LastCmdID    int64 `json:"last_cmd_id"`  // the subscription's position
	LastLSN      LSN   `json:"last_lsn"`     // end LSN of the last applied source transaction
	// DurableCmdID is the last position the subscriber has flushed: what
	// the agent reports to the distribution database, and what the log
	// reader's cleanup deletes up to (see durability).
	DurableCmdID int64 `json:"durable_cmd_id"`
	// Pipeline is the writer's depth in use; RTT and Rate what auto measured.
	Pipeline int           `json:"pipeline"`
	RTT      time.Duration `json:"rtt_ns,omitempty"`
	Rate     units.Rate    `json:"rate_bps,omitempty"`
	// ReaderWait is the time the reader waited for a free buffer (the
	// writer is the bottleneck); WriterWait the time the writer waited for a
	// full one (the reader is).
	ReaderWait time.Duration `json:"reader_wait_ns"`
	WriterWait time.Duration `json:"writer_wait_ns"`
	Restarts   int           `json:"restarts"`
	Mode       string        `json:"mode"`
}

// DistributionAgent applies the distribution database's commands to the
// subscriber: a reader streams every pending command in one result set and
// renders it into command buffers; a writer applies one buffer per round
// trip (or keeps Pipeline buffers in flight) and releases it when the
// subscriber has answered. Progress is committed with the changes, and
// every connection resumes from the subscriber's own record, so every
// command is applied exactly once across crashes and reconnects; the agent
// reports as applied only what the subscriber has flushed, so cleanup never
// deletes a command a crash of the subscriber could lose.
type DistributionAgent struct {
	cfg     AgentConfig
	opts    AgentOptions
	place   place
	mu      sync.Mutex
	stats   AgentStats
	durable durability // under mu
	applied atomic.Int64
}

// NewDistributionAgent checks the configuration and returns an agent.
func NewDistributionAgent(cfg AgentConfig) (*DistributionAgent, error) {
	if cfg.Publication == "" {
		cfg.Publication = DefaultPublication
	}
	if err := validateName("publication", cfg.Publication); err != nil {
		return nil, &UsageError{Err: err}
	}
	if err := cfg.Options.Validate(); err != nil {
		return nil, &UsageError{Err: err}
	}
	if cfg.Distribution.Host == "" || cfg.Subscriber.Host == "" {
		return nil, usageErr("distribution agent: both the distribution database and the subscriber are needed")
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = time.Second
	}
	if cfg.ReportInterval <= 0 {
		cfg.ReportInterval = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	a := &DistributionAgent{cfg: cfg, opts: cfg.Options.withDefaults()}
	a.stats.Mode = cfg.Mode.String()
	return a, nil
}

// Stats returns a snapshot of the counters.
func (a *DistributionAgent) Stats() AgentStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stats
}

// Run applies commands until ctx is cancelled, an error that reconnecting
// does not cure (an *ApplyError when the subscriber refuses a command), or,
// with UntilCaughtUp, until nothing is pending.
func (a *DistributionAgent) Run(ctx context.Context) error {
	a.place = thisPlace(a.cfg.Mode.String())
	err := retryLoop(ctx, a.cfg.Logger, "distribution agent", a.cfg.NoRetry, a.runOnce, func() {
		a.mu.Lock()
		a.stats.Restarts++
		a.mu.Unlock()
	})
	cause := err
	if ctx.Err() != nil {
		cause = nil
	}
	markStopped(ctx, a.cfg.Distribution, roleAgent, a.cfg.Publication, cause)
	return err
}

// agentRun is one connected run: its goroutines and channels.
type agentRun struct {
	a      *DistributionAgent
	ctx    context.Context
	cancel context.CancelCauseFunc

	free     chan *buffer  // buffers the reader may fill
	filled   chan *buffer  // buffers for the writer
	inflight chan *buffer  // sent, awaiting the subscriber's answer
	slots    chan struct{} // one per buffer in flight
	depth    int           // the pipeline's: buffers in flight at most
	notify   chan struct{} // a notification arrived
	progress chan struct{} // the writer committed something

	conn net.Conn
	fe   *pgproto3.Frontend
	// readers are the reader's connections beyond its first
	// (AgentOptions.ReadStreams).
	readers []*pgconn.PgConn
}

// runOnce is one connected run: it resumes at the subscriber's record and
// applies commands until the reader stops (caught up, with UntilCaughtUp)
// or any of its goroutines fails.
func (a *DistributionAgent) runOnce(parent context.Context) (err error) {
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	c := a.connectAll(ctx)
	defer c.close(ctx)
	if err := c.err(); err != nil {
		return err
	}
	k := a.resume(c)
	rnd, err := setupRenderer(ctx, c.ctl, a.cfg.Publication, c.at.position.cmd, a.opts, k, a.place)
	if err != nil {
		return err
	}

	// The writer owns the subscriber connection from here on.
	if err := c.sub.SyncConn(ctx); err != nil {
		return fmt.Errorf("subscriber: %w", err)
	}
	hc, err := c.sub.Hijack()
	if err != nil {
		return fmt.Errorf("subscriber: %w", err)
	}
	c.sub = nil // closed through hc from now on
	defer hc.Conn.Close()
	stopClose := context.AfterFunc(ctx, func() { hc.Conn.Close() })
	defer stopClose()

	run := a.newRun(ctx, cancel, hc, c.readers, k)
	if err := a.passGate(ctx); err != nil {
		return err
	}
	if run.drive(c.dist, c.ctl, rnd) == nil {
		return nil
	}
	if parent.Err() != nil {
		return parent.Err()
	}
	return context.Cause(ctx) // the first error of any goroutine
}

// agentConns are one run's connections, with what opening them learnt.
type agentConns struct {
	// sub is the subscriber's (exclusive for this subscription), nil once
	// the writer has taken it over; dist the reader's, readers its further
	// ones (AgentOptions.ReadStreams); ctl the control connection.
	sub, dist, ctl *pgconn.PgConn
	readers        []*pgconn.PgConn
	at             subscriberRecord
	// rtt and rate are the path to the subscriber, measured for
	// PipelineAuto.
	rtt  time.Duration
	rate units.Rate

	subErr, distErr, ctlErr error
	readerErrs              []error
}

// connectAll opens the run's connections at once: across a WAN each costs
// its round trips (TCP, then the authentication exchange), so an agent
// started cold pays them once, not three times. What failed is in err.
func (a *DistributionAgent) connectAll(ctx context.Context) *agentConns {
	cfg, opts := a.cfg, a.opts
	c := &agentConns{readers: make([]*pgconn.PgConn, opts.ReadStreams-1)}
	c.readerErrs = make([]error, len(c.readers))
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { // the subscriber: exclusive for this subscription, and its position
		defer wg.Done()
		c.sub, c.at, c.subErr = a.openSubscriber(ctx)
		if c.subErr == nil && opts.Pipeline == PipelineAuto {
			if c.rtt, c.rate, c.subErr = measurePath(ctx, c.sub); c.subErr != nil {
				c.subErr = fmt.Errorf("measure the path to the subscriber: %w", c.subErr)
			}
		}
	}()
	go func() { // the reader's
		defer wg.Done()
		if c.dist, c.distErr = connectStreaming(ctx, cfg.Distribution, agentAppName(cfg.Publication)); c.distErr != nil {
			c.distErr = fmt.Errorf("distribution database: %w", c.distErr)
		}
	}()
	go func() { // the control connection: the log reader's notifications, progress
		defer wg.Done()
		if c.ctl, c.ctlErr = connect(ctx, cfg.Distribution, agentAppName(cfg.Publication)); c.ctlErr != nil {
			c.ctlErr = fmt.Errorf("distribution database: %w", c.ctlErr)
		}
	}()
	for i := range c.readers {
		wg.Add(1)
		go func() { // the reader's further connections
			defer wg.Done()
			c.readers[i], c.readerErrs[i] = connectStreaming(ctx, cfg.Distribution, agentAppName(cfg.Publication))
		}()
	}
	wg.Wait()
	return c
}

// err is why a connection could not be opened.
func (c *agentConns) err() error {
	if err := errors.Join(c.subErr, c.distErr, c.ctlErr); err != nil {
		return err
	}
	if err := errors.Join(c.readerErrs...); err != nil {
		return fmt.Errorf("distribution database: %w", err)
	}
	return nil
}

// close closes the connections the run still owns.
func (c *agentConns) close(ctx context.Context) {
	for _, conn := range append([]*pgconn.PgConn{c.dist, c.ctl}, c.readers...) {
		if conn != nil {
			conn.Close(context.WithoutCancel(ctx))
		}
	}
	if c.sub != nil {
		c.sub.Close(context.WithoutCancel(ctx))
	}
}

// resume starts the agent's books at the subscriber's record, and returns
// the pipeline's depth.
func (a *DistributionAgent) resume(c *agentConns) int {
	applied := c.at.position.cmd
	a.applied.Store(applied)
	k := a.opts.Pipeline
	if k == PipelineAuto {
		k = PipelineDepth(c.rtt, c.rate, a.opts.BufferSize)
		a.cfg.Logger.Info("pipeline sized from the bandwidth-delay product", "rtt", c.rtt, "rate", c.rate, "buffers_in_flight", k)
	}
	a.mu.Lock()
	a.stats.LastCmdID, a.stats.LastLSN = applied, c.at.position.lsn
	a.stats.RTT, a.stats.Rate, a.stats.Pipeline = c.rtt, c.rate, k
	a.durable.restart(c.at.position)
	a.durable.flushedTo(c.at.walFlush)
	a.noteDurable()
	a.mu.Unlock()
	return k
}

// newRun makes the run's channels and its pool of buffers, enough for k
// in flight and one being filled.
func (a *DistributionAgent) newRun(ctx context.Context, cancel context.CancelCauseFunc, hc *pgconn.HijackedConn, readers []*pgconn.PgConn, k int) *agentRun {
	opts := a.opts
	pool := max(opts.Buffers, k+1)
	run := &agentRun{
		a: a, ctx: ctx, cancel: cancel,
		free:     make(chan *buffer, pool),
		filled:   make(chan *buffer, pool),
		inflight: make(chan *buffer, pool),
		slots:    make(chan struct{}, k),
		depth:    k,
		notify:   make(chan struct{}, 1),
		progress: make(chan struct{}, 1),
		conn:     hc.Conn,
		fe:       hc.Frontend,
		readers:  readers,
	}
	for i := 0; i < pool; i++ {
		b := &buffer{msg: make([]byte, 0, opts.BufferSize+opts.BufferSize/4+64)}
		run.free <- b
	}
	return run
}

// passGate tells Ready the agent is connected and waits for Gate.
func (a *DistributionAgent) passGate(ctx context.Context) error {
	if a.cfg.Ready != nil {
		a.cfg.Ready()
	}
	if a.cfg.Gate != nil {
		select {
		case <-a.cfg.Gate:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// drive runs the writer and the control goroutines beside the reader, and
// returns once all have ended: nil when the reader caught up and the
// writer committed everything.
func (run *agentRun) drive(dist, ctl *pgconn.PgConn, rnd *renderer) error {
	var wg sync.WaitGroup
	if run.depth == 1 {
		// Stop and wait: one goroutine sends a buffer and reads its answer.
		wg.Add(1)
		go func() { defer wg.Done(); run.sendAndWait() }() // ends when filled closes or the connection fails
	} else {
		wg.Add(2)
		go func() { defer wg.Done(); run.send() }()    // closes inflight when filled closes
		go func() { defer wg.Done(); run.receive() }() // ends when inflight closes or the connection fails
	}
	wg.Add(1)
	go func() { defer wg.Done(); run.control(ctl) }()
	rerr := run.read(dist, rnd)
	close(run.filled)
	run.cancel(rerr) // nil: caught up, and the writer has committed everything
	wg.Wait()
	return rerr
}

// subscriberRecord is the subscription's position as the subscriber
// records it, with the WAL positions read in the same statement (the
// record's commit lies before the insert position).
type subscriberRecord struct {
	position commitPoint
	walFlush LSN
}

// openSubscriber connects to the subscriber, takes the subscription's
// lock (one agent at a time) and reads its position, in one round trip.
func (a *DistributionAgent) openSubscriber(ctx context.Context) (*pgconn.PgConn, subscriberRecord, error) {
	cfg := a.cfg
	var at subscriberRecord
	sub, err := connect(ctx, cfg.Subscriber, agentAppName(cfg.Publication))
	if err != nil {
		return nil, at, fmt.Errorf("subscriber: %w", err)
	}
	res, err := sub.Exec(ctx, "SELECT pg_try_advisory_lock(hashtext("+quoteLiteral(lockKey("agent", cfg.Publication))+")); "+
		"SELECT last_cmd_id, last_lsn, pg_current_wal_insert_lsn(), pg_current_wal_flush_lsn() FROM "+Schema+".subscription WHERE name = "+
		quoteLiteral(cfg.Publication)).ReadAll()
	switch {
	case err != nil:
		err = fmt.Errorf("subscriber %s: %w", cfg.Subscriber, err)
	case string(res[0].Rows[0][0]) != "t":
		err = &busyError{msg: fmt.Sprintf("another agent is applying subscription %q on %s", cfg.Publication, cfg.Subscriber)}
	case len(res[1].Rows) != 1:
		err = fmt.Errorf("subscriber %s has no subscription %q (run setup)", cfg.Subscriber, cfg.Publication)
	}
	if err == nil {
		at, err = parseSubscriberRecord(res[1].Rows[0])
	}
	if err != nil {
		sub.Close(context.WithoutCancel(ctx))
		return nil, at, err
	}
	return sub, at, nil
}

func parseSubscriberRecord(row [][]byte) (subscriberRecord, error) {
	var at subscriberRecord
	var err error
	if at.position.cmd, err = strconv.ParseInt(string(row[0]), 10, 64); err != nil {
		return at, fmt.Errorf("subscriber: the subscription's position %q: %w", row[0], err)
	}
	for i, dst := range []*LSN{&at.position.lsn, &at.position.local, &at.walFlush} {
		if *dst, err = ParseLSN(string(row[i+1])); err != nil {
			return at, fmt.Errorf("subscriber: read the subscription's position: %w", err)
		}
	}
	return at, nil
}

// setupRenderer prepares the control connection (it listens for the log
// reader, and records the agent's start) and loads what the reader needs to
// render commands: the tables' keys and the relations described before the
// subscription's position. All in one round trip.
func setupRenderer(ctx context.Context, ctl *pgconn.PgConn, publication string, applied int64, opts AgentOptions, k int, at place) (*renderer, error) {
	var id [6]byte
	rand.Read(id[:])
	r := &renderer{
		subscription: publication,
		commitBatch:  opts.CommitBatchSize,
		bufferSize:   opts.BufferSize,
		guard:        k > 1,
		runID:        hex.EncodeToString(id[:]),
		rels:         map[uint32]*relInfo{},
		prepared:     map[string]bool{},
		keys:         map[TableName][]string{},
		applied:      applied,
	}
	pub := quoteLiteral(publication)
	sql := "LISTEN " + quoteIdent(notifyChannel(publication)) + "; " +
		fmt.Sprintf("UPDATE %s.subscriptions SET agent_host = %s, agent_pid = %d, agent_started_at = %s, agent_mode = %s, agent_state = 'running', agent_error = NULL, agent_stopped_at = NULL WHERE name = %s; ",
			Schema, quoteLiteral(at.Host), at.PID, quoteLiteral(at.Started.UTC().Format(time.RFC3339Nano)), quoteLiteral(at.Mode), pub) +
		"SELECT schema_name, table_name, key_columns FROM " + Schema + ".tables WHERE publication = " + pub + "; " +
		"SELECT cmd_id, encode(data, 'base64') FROM " + relationsTable(publication) + " WHERE cmd_id <= " + itoa(applied) + " ORDER BY cmd_id"
	res, err := ctl.Exec(ctx, sql).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("prepare the control connection to the distribution database: %w", err)
	}
	for _, row := range res[2].Rows {
		t := TableName{Schema: string(row[0]), Name: string(row[1])}
		r.keys[t] = parseTextArray(string(row[2]))
	}
	for _, row := range res[3].Rows {
		var cmd int64
		fmt.Sscan(string(row[0]), &cmd)
		data, err := base64.StdEncoding.DecodeString(strings.ReplaceAll(string(row[1]), "\n", ""))
		if err != nil {
			return nil, fmt.Errorf("read the relations: %w", err)
		}
		if _, err := r.render(cmd, kindRelation, 0, data); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// parseTextArray reads a one-dimensional text[] in its text form.
func parseTextArray(s string) []string {
	s = strings.TrimSuffix(strings.TrimPrefix(s, "{"), "}")
	if s == "" {
		return nil
	}
	var out []string
	for len(s) > 0 {
		if s[0] == '"' {
			var b strings.Builder
			i := 1
			for ; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' && i+1 < len(s) {
					i++
				}
				b.WriteByte(s[i])
			}
			out = append(out, b.String())
			s = s[min(i+1, len(s)):]
		} else {
			i := strings.IndexByte(s, ',')
			if i < 0 {
				i = len(s)
			}
			out = append(out, s[:i])
			s = s[i:]
		}
		s = strings.TrimPrefix(s, ",")
	}
	return out
}

// agentReader is the reader's state between its steps: where it stands in
// the command stream, and the buffer it fills.
type agentReader struct {
	run *agentRun
	r   *renderer
	cdc *codec
	// seq numbers the buffers it starts.
	seq int64
	// lastRead is the last command rendered; n counts those of this pass.
	lastRead int64
	n        int
	// xactLSN is the final LSN of the source transaction being read.
	xactLSN LSN
	poll    *time.Timer
	probe   *idleTimer
}

// read is the reader: it streams the pending commands as one result set,
// renders them into buffers and hands each full buffer to the writer; then
// it waits for the log reader's notification (or polls) and reads again.
func (run *agentRun) read(dist *pgconn.PgConn, r *renderer) error {
	cfg := run.a.cfg
	rd := &agentReader{run: run, r: r}
	b, err := rd.next()
	if err != nil {
		return err
	}
	r.startBuffer(b)
	rd.lastRead = r.applied
	rd.poll = time.NewTimer(cfg.PollInterval)
	defer rd.poll.Stop()
	rd.probe = newIdleTimer(cfg.ReportInterval)
	defer rd.probe.stop()
	rd.cdc = getCodec()
	defer putCodec(rd.cdc)
	for {
		rd.n = 0
		if err := run.fetch(dist, rd.lastRead, rd.chunk); err != nil {
			if run.ctx.Err() != nil {
				return context.Cause(run.ctx)
			}
			return err
		}
		if err := rd.caughtUp(); err != nil {
			return err
		}
		if rd.n > 0 {
			cfg.Logger.Debug("read pending commands", "commands", rd.n, "up_to", rd.lastRead)
			rd.probe.disarm()
			continue
		}
		if cfg.UntilCaughtUp {
			return run.waitApplied(rd.lastRead)
		}
		if err := rd.idle(); err != nil {
			return err
		}
	}
}

// next takes a free buffer, counting the wait as the reader's.
func (rd *agentReader) next() (*buffer, error) {
	a, ctx := rd.run.a, rd.run.ctx
	start := time.Now()
	select {
	case b := <-rd.run.free:
		if d := time.Since(start); d > 0 {
			a.mu.Lock()
			a.stats.ReaderWait += d
			a.mu.Unlock()
		}
		rd.seq++
		b.reset(rd.seq)
		return b, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// hand gives the writer the current buffer and starts the next.
func (rd *agentReader) hand() error {
	r := rd.r
	r.seal()
	rd.run.filled <- r.cur // never blocks: filled holds the whole pool
	r.cur = nil
	b, err := rd.next()
	if err != nil {
		return err
	}
	r.startBuffer(b)
	return nil
}

// chunk renders the commands of one chunk of the stream.
func (rd *agentReader) chunk(first int64, data []byte) error {
	if first > rd.lastRead+1 {
		return fmt.Errorf("the distribution database's next command after %d is %d: commands %d to %d are gone (cleaned up before this subscriber applied them?)",
			rd.lastRead, first, rd.lastRead+1, first-1)
	}
	raw, err := rd.cdc.decode(data)
	if err != nil {
		return err
	}
	a := rd.run.a
	a.mu.Lock()
	a.stats.ReadBytes += int64(len(data))
	a.mu.Unlock()
	return eachMessage(raw, first, rd.apply)
}

// apply renders command cmd, the next after lastRead.
func (rd *agentReader) apply(cmd int64, msg []byte) error {
	if cmd <= rd.lastRead {
		return nil // applied before: the chunk straddles the position
	}
	if cmd != rd.lastRead+1 {
		return fmt.Errorf("the distribution database holds command %d after %d: commands %d to %d are gone (cleaned up before this subscriber applied them?)",
			cmd, rd.lastRead, rd.lastRead+1, cmd-1)
	}
	kind := msg[0]
	switch kind {
	case kindBegin:
		b, err := parseBegin(msg)
		if err != nil {
			return fmt.Errorf("command %d: %w", cmd, err)
		}
		rd.xactLSN = LSN(b.FinalLSN)
	case kindRelation:
		msg = append([]byte(nil), msg...) // kept beyond this chunk
		fallthrough
	default:
		if err := rd.renderAll(cmd, kind, msg); err != nil {
			return err
		}
	}
	rd.lastRead = cmd
	rd.n++
	return nil
}

// renderAll renders one command, handing the writer as many full buffers
// as it takes.
func (rd *agentReader) renderAll(cmd int64, kind byte, msg []byte) error {
	for {
		full, err := rd.r.render(cmd, kind, rd.xactLSN, msg)
		if err != nil || !full {
			return err
		}
		if err := rd.hand(); err != nil {
			return err
		}
	}
}

// caughtUp ends a pass, caught up with what was committed when its query
// began: it commits and sends what is buffered.
func (rd *agentReader) caughtUp() error {
	r := rd.r
	if r.inTxn {
		if r.xacts == 0 {
			return fmt.Errorf("the distribution database ends inside a source transaction (command %d)", rd.lastRead)
		}
		r.commit()
	}
	r.closeGroup()
	if r.cur.size() > 0 {
		return rd.hand()
	}
	return nil
}

// idle waits for the log reader's notification or the next poll; idle a
// while with commits not known durable, it sends a flush probe.
func (rd *agentReader) idle() error {
	run := rd.run
	if !rd.poll.Stop() {
		select {
		case <-rd.poll.C:
		default:
		}
	}
	rd.poll.Reset(run.a.cfg.PollInterval)
	select {
	case <-run.ctx.Done():
		return context.Cause(run.ctx)
	case <-run.notify:
	case <-rd.poll.C:
	case <-rd.probe.arm():
		rd.probe.fired()
		// The WAL writer may have flushed them, but nothing tells, so ask.
		if run.a.awaitingFlush() {
			rd.r.flushProbe()
			return rd.hand()
		}
	}
	return nil
}

// noteDurable copies the durable position into the statistics; a.mu is
// held.
func (a *DistributionAgent) noteDurable() {
	if a.durable.known {
		a.stats.DurableCmdID = a.durable.durable.cmd
	}
}

// awaitingFlush reports commits the subscriber acknowledged and has not
// yet been seen to flush.
func (a *DistributionAgent) awaitingFlush() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.durable.waiting()
}

// idleTimer fires once after d of idling; disarmed, it starts over.
type idleTimer struct {
	t     *time.Timer
	d     time.Duration
	armed bool
}

func newIdleTimer(d time.Duration) *idleTimer {
	t := time.NewTimer(d)
	t.Stop()
	return &idleTimer{t: t, d: d}
}

// arm starts the wait unless it runs already, and returns its channel.
func (it *idleTimer) arm() <-chan time.Time {
	if !it.armed {
		it.t.Reset(it.d)
		it.armed = true
	}
	return it.t.C
}

// fired records that the wait's value was received: the next arm waits d
// again.
func (it *idleTimer) fired() { it.armed = false }

// disarm stops the wait: the next arm waits d again.
func (it *idleTimer) disarm() {
	it.t.Stop()
	it.armed = false
}

func (it *idleTimer) stop() { it.t.Stop() }

// waitApplied waits until the writer has committed command cmd.
func (run *agentRun) waitApplied(cmd int64) error {
	for run.a.applied.Load() < cmd {
		select {
		case <-run.ctx.Done():
			return context.Cause(run.ctx)
		case <-run.progress:
		}
	}
	return nil
}

// nextFilled waits for the reader's next full buffer, counting the wait as
// the writer's; nil when the run ends.
func (run *agentRun) nextFilled() *buffer {
	start := time.Now()
	var b *buffer
	select {
	case b = <-run.filled:
	case <-run.ctx.Done():
		return nil
	}
	run.a.mu.Lock()
	run.a.stats.WriterWait += time.Since(start)
	run.a.mu.Unlock()
	return b
}

// write sends one buffer's message to the subscriber and counts it; false
// when the connection failed (the run is cancelled with the reason).
func (run *agentRun) write(msg []byte) bool {
	a := run.a
	if _, err := run.conn.Write(msg); err != nil {
		run.cancel(fmt.Errorf("send %d bytes to the subscriber %s: %w", len(msg), a.cfg.Subscriber, err))
		return false
	}
	a.mu.Lock()
	a.stats.SentBytes += int64(len(msg))
	a.stats.RoundTrips++
	a.mu.Unlock()
	return true
}

// send is the writer's sending half: it sends each filled buffer as one
// Query message once a pipeline slot is free.
func (run *agentRun) send() {
	defer close(run.inflight)
	for {
		b := run.nextFilled()
		if b == nil {
			return // closed, or the run ended
		}
		select {
		case run.slots <- struct{}{}:
		case <-run.ctx.Done():
			return
		}
		// In flight once written: the receiver then releases the buffer
		// after the write has read it (its answer cannot come sooner, but
		// only the channel tells the memory model so).
		if !run.write(b.finish()) {
			return
		}
		run.inflight <- b // never blocks: inflight holds the whole pool
	}
}

// sendAndWait is the seed's writer: it applies one buffer per round trip
// and releases it when the subscriber has answered.
func (run *agentRun) sendAndWait() {
	for {
		b := run.nextFilled()
		if b == nil {
			return // closed, or the run ended
		}
		if !run.write(b.finish()) {
			return
		}
		if err := run.answer(b); err != nil {
			run.cancel(err)
			return
		}
		run.free <- b
	}
}

// receive is the writer's receiving half: it reads the subscriber's answer
// to each buffer in order, records the commits, and releases the buffer.
func (run *agentRun) receive() {
	for b := range run.inflight {
		if err := run.answer(b); err != nil {
			run.cancel(err)
			// Drain without reading: the connection is closed by cancel.
			for range run.inflight {
			}
			return
		}
		<-run.slots
		run.free <- b
	}
}

// answer reads the responses to one buffer up to ReadyForQuery.
func (run *agentRun) answer(b *buffer) error {
	a := run.a
	done := 0 // statements completed
	var missing int64
	var failed error
	for {
		msg, err := run.fe.Receive()
		if err != nil {
			if run.ctx.Err() != nil {
				return context.Cause(run.ctx)
			}
			return fmt.Errorf("receive from the subscriber %s: %w", a.cfg.Subscriber, err)
		}
		switch m := msg.(type) {
		case *pgproto3.CommandComplete:
			if done < len(b.stmts) {
				st := b.stmts[done]
				if (st.kind == stmtUpdate || st.kind == stmtDelete) && strings.HasSuffix(string(m.CommandTag), " 0") {
					missing++
				}
			}
			done++
		case *pgproto3.DataRow:
			if done < len(b.stmts) && b.stmts[done].kind == stmtPosition && failed == nil {
				failed = b.readPositions(m.Values)
			}
		case *pgproto3.ErrorResponse:
			pgErr := pgconn.ErrorResponseToPgError(m)
			if failed == nil {
				st := stmtInfo{what: "a statement"}
				if done < len(b.stmts) {
					st = b.stmts[done]
				}
				if st.kind == stmtControl || st.kind == stmtPosition {
					failed = fmt.Errorf("%s on the subscriber %s: %w", st.describe(), a.cfg.Subscriber, pgErr)
				} else {
					failed = &ApplyError{FirstCmd: st.first, LastCmd: st.last, Statement: st.describe(), XactLSN: st.xactLSN, Err: pgErr}
				}
				if m.Severity == "FATAL" || m.Severity == "PANIC" {
					return failed
				}
			}
		case *pgproto3.ReadyForQuery:
			if failed != nil {
				return failed
			}
			run.committed(b, missing)
			return nil
		}
	}
}

// readPositions reads the subscriber's WAL insert and flush positions.
func (b *buffer) readPositions(values [][]byte) error {
	var err error
	if len(values) != 2 {
		return fmt.Errorf("the subscriber's WAL positions: %d values, want 2", len(values))
	}
	if b.walInsert, err = ParseLSN(string(values[0])); err == nil {
		b.walFlush, err = ParseLSN(string(values[1]))
	}
	if err != nil {
		return fmt.Errorf("the subscriber's WAL positions: %w", err)
	}
	return nil
}

// committed books a buffer the subscriber has applied, and what it tells
// of the subscriber's flushed WAL.
func (run *agentRun) committed(b *buffer, missing int64) {
	a := run.a
	a.mu.Lock()
	s := &a.stats
	s.Missing += missing
	for _, c := range b.commits {
		s.Commits++
		s.Transactions += c.xacts
		s.Commands += c.cmds
		s.LastCmdID, s.LastLSN = c.cmd, c.lsn
		c.local = b.walInsert
		if c.local == 0 { // no position read: only a flush probe confirms it
			c.local = math.MaxUint64
		}
		a.durable.acknowledged(c)
	}
	a.durable.flushedTo(b.walFlush)
	if b.flushProbe {
		a.durable.flushedAll()
	}
	a.noteDurable()
	a.mu.Unlock()
	if missing > 0 {
		a.cfg.Logger.Warn("updates or deletes found no row on the subscriber", "count", missing)
	}
	if n := len(b.commits); n > 0 {
		a.applied.Store(b.commits[n-1].cmd)
		select {
		case run.progress <- struct{}{}:
		default:
		}
	}
}

// control listens for the log reader's notifications and records the
// agent's progress in the distribution database.
func (run *agentRun) control(ctl *pgconn.PgConn) {
	a := run.a
	var reported int64 = -1
	for {
		wctx, cancel := context.WithTimeout(run.ctx, a.cfg.ReportInterval)
		err := ctl.WaitForNotification(wctx)
		cancel()
		if run.ctx.Err() != nil {
			return
		}
		switch {
		case err == nil:
			select {
			case run.notify <- struct{}{}:
			default:
			}
		case pgconn.Timeout(err):
		default:
			run.cancel(fmt.Errorf("control connection to %s: %w", a.cfg.Distribution, err))
			return
		}
		// Only what the subscriber has flushed: cleanup deletes up to it.
		a.mu.Lock()
		d, known := a.durable.durable, a.durable.known
		a.mu.Unlock()
		if known && d.cmd != reported {
			sql := fmt.Sprintf("UPDATE %s.subscriptions SET applied_cmd_id = %d, applied_lsn = '%s', updated_at = now() WHERE name = %s",
				Schema, d.cmd, d.lsn, quoteLiteral(a.cfg.Publication))
			if _, err := ctl.Exec(run.ctx, sql).ReadAll(); err != nil {
				if run.ctx.Err() != nil {
					return
				}
				run.cancel(fmt.Errorf("record progress in %s: %w", a.cfg.Distribution, err))
				return
			}
			reported = d.cmd
		}
	}
}

// measurePath measures the round-trip time to the subscriber (the best of a
// few empty queries) and the rate at which it takes bytes (the difference
// between a large and a small query, each a comment the server skips).
func measurePath(ctx context.Context, c *pgconn.PgConn) (time.Duration, units.Rate, error) {
	ping := func(sql string) (time.Duration, error) {
		start := time.Now()
		if _, err := c.Exec(ctx, sql).ReadAll(); err != nil {
			return 0, err
		}
		return time.Since(start), nil
	}
	rtt := time.Duration(math.MaxInt64)
	for i := 0; i < 5; i++ {
		d, err := ping("SELECT 1")
		if err != nil {
			return 0, 0, err
		}
		rtt = min(rtt, d)
	}
	comment := func(n int) string { return "/*" + strings.Repeat("x", n) + "*/ SELECT 1" }
	const small, maxLarge = 64 << 10, 4 << 20
	smallQ := comment(small)
	// Size the large probe to about eight round trips of the rate a small
	// probe suggests, so that a slow path (a 64 KiB window across a WAN)
	// is not held for seconds by a 4 MiB probe it cannot carry fast.
	ts, err := ping(smallQ)
	if err != nil {
		return 0, 0, err
	}
	large := maxLarge
	if extra := ts - rtt; extra > 0 {
		guess := float64(small) / extra.Seconds() // bytes per second
		large = int(min(max(guess*8*max(rtt.Seconds(), 0.01), 4*small), maxLarge))
	}
	largeQ := comment(large)
	best := time.Duration(math.MaxInt64)
	for i := 0; i < 2; i++ {
		ts, err := ping(smallQ)
		if err != nil {
			return 0, 0, err
		}
		tl, err := ping(largeQ)
		if err != nil {
			return 0, 0, err
		}
		best = min(best, max(tl-ts, time.Microsecond))
	}
	rate := units.Rate(float64(large-small) * 8 / best.Seconds())
	return rtt, rate, nil
}

// PipelineDepth is the number of buffers that keep the path full, what
// PipelineAuto chooses (exported so that a prediction made before a run
// takes the same depth): twice the bandwidth-delay product in buffers, plus one. A buffer in flight
// spends the round trip on the wire and then its own time in the
// subscriber, and the rate estimate errs low (the server reads the probe
// too); the factor two covers both (measured: on 77 ms at 1 Gbit/s, 150
// buffers of 40 KB in flight gave 1.4 s for 100,000 rows, 400 gave 0.86 s,
// 1,000 no better, window-bound).
func PipelineDepth(rtt time.Duration, rate units.Rate, bufferSize int) int {
	bdp := rate.BytesPerSecond() * rtt.Seconds()
	k := int(math.Ceil(2*bdp/float64(bufferSize))) + 1
	return min(max(k, 1), MaxPipeline)
}
