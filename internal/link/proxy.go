package link

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dbrig/dbrig/internal/spareproc"
)

// Option changes how a Proxy runs (not the link's physics, which is Config).
type Option func(*options)

type options struct {
	seriesInterval time.Duration
	logger         *slog.Logger
	clock          clock
}

// WithSeriesInterval sets the width of the buckets of DirStats.Series
// (default 10ms).
func WithSeriesInterval(d time.Duration) Option {
	return func(o *options) {
		if d > 0 {
			o.seriesInterval = d
		}
	}
}

// WithLogger logs connection failures (dial errors, resets) to l at debug
// and warning level. By default nothing is logged.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.logger = l
		}
	}
}

// withClock replaces the precise wall clock, for tests on a fake clock.
func withClock(c clock) Option { return func(o *options) { o.clock = c } }

const (
	// chunkSize is the largest read from a socket, but for bigChunkSize
	// during a bulk transfer.
	chunkSize    = 64 << 10
	bigChunkSize = 256 << 10
	// minRcvBuf is the smallest kernel receive buffer of an impaired link's
	// legs, and autotunedRcvBuf the buffer past which the kernel's
	// autotuning is left on instead; see receiveBuffer.
	minRcvBuf       = 32 << 10
	autotunedRcvBuf = 1 << 20
	// maxBatch bounds one write of delivered segments.
	maxBatch = 1 << 20
	// readAhead bounds how much a reader holds beyond the window.
	readAhead   = 1 << 20
	dialTimeout = 10 * time.Second
)

// Proxy is a running emulated link: a TCP listener whose connections are
// forwarded to the upstream through the link model.
type Proxy struct {
	cfg       Config
	upstream  string
	network   string // of the upstream: "tcp" or "unix"
	address   string
	impaired  bool
	rcvBuf    int // the legs' SO_RCVBUF; 0: the kernel's autotuning
	ln        net.Listener
	clock     clock
	wall      *wallClock // owned and closed by Close; nil when a clock was given
	members   []*medium  // one per bonded member; each connection rides one
	rec       *recorder
	log       *slog.Logger
	ctx       context.Context // cancelled by Close, to stop dials
	cancel    context.CancelFunc
	chunks    sync.Pool      // of *chunk, chunkSize
	bigChunks sync.Pool      // of *chunk, bigChunkSize
	wg        sync.WaitGroup // every goroutine of the proxy
	closeOnce sync.Once
	closeErr  error
	// releaseSpare ends the link's hold on a spare P (spareproc): a
	// listening link relays users' round trips from inside the process.
	releaseSpare func()

	mu        sync.Mutex
	conns     map[*conn]struct{}
	closed    bool
	stopAfter func() bool // unregisters the ctx watcher
}

// Listen starts an emulated link: it listens on listenAddr (such as
// "127.0.0.1:0") and forwards every connection to upstream ("host:port", or
// "unix:/path/to/socket") through the model cfg. The link closes when ctx is
// done or Close is called.
func Listen(ctx context.Context, listenAddr, upstream string, cfg Config, opts ...Option) (*Proxy, error) {
	network, address := "tcp", upstream
	if path, ok := strings.CutPrefix(upstream, "unix:"); ok {
		network, address = "unix", path
	}
	if address == "" {
		return nil, fmt.Errorf("link: upstream %q: want host:port or unix:/path", upstream)
	}
	p, err := newProxy(cfg, opts...)
	if err != nil {
		return nil, err
	}
	p.upstream, p.network, p.address = upstream, network, address
	lc := net.ListenConfig{Control: p.control}
	ln, err := lc.Listen(ctx, "tcp", listenAddr)
	if err != nil {
		p.Close()
		if oe := (*net.OpError)(nil); errors.As(err, &oe) {
			err = oe.Err // without "listen tcp <addr>:" again
		}
		return nil, fmt.Errorf("link: listen on %s: %w", listenAddr, err)
	}
	p.ln = ln
	p.releaseSpare = spareproc.Hold()
	p.wg.Go(p.accept)
	p.mu.Lock()
	p.stopAfter = context.AfterFunc(ctx, func() { p.Close() })
	p.mu.Unlock()
	return p, nil
}

// newProxy makes a proxy that is not listening yet; tests hand it
// connections with handle.
func newProxy(cfg Config, opts ...Option) (*Proxy, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("link: invalid config: %w", err)
	}
	o := options{seriesInterval: 10 * time.Millisecond, logger: slog.New(slog.DiscardHandler)}
	for _, opt := range opts {
		opt(&o)
	}
	p := &Proxy{cfg: cfg, impaired: cfg.Impaired(), rcvBuf: receiveBuffer(cfg), clock: o.clock, members: newMembers(cfg), log: o.logger,
		conns: make(map[*conn]struct{})}
	if p.clock == nil {
		wc, err := newWallClock()
		if err != nil {
			return nil, fmt.Errorf("link: %w", err)
		}
		p.clock, p.wall = wc, wc
	}
	p.rec = newRecorder(p.clock.Now(), o.seriesInterval)
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.chunks.New = func() any { return &chunk{buf: make([]byte, chunkSize)} }
	p.bigChunks.New = func() any { return &chunk{buf: make([]byte, bigChunkSize)} }
	return p, nil
}

// Addr returns the address the link listens on, such as "127.0.0.1:54321".
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Config returns the link's model.
func (p *Proxy) Config() Config { return p.cfg }

// Stats returns a consistent snapshot of what the link has carried so far.
func (p *Proxy) Stats() Stats { return p.rec.snapshot() }

// ResetConnections resets every live connection: both ends see a TCP reset,
// as when a link fails in the middle of a transfer. New connections are
// still accepted.
func (p *Proxy) ResetConnections() {
	for _, c := range p.live() {
		c.abort(true)
	}
}

// Close stops accepting, closes every connection and waits until every
// goroutine of the link has stopped. It is safe to call more than once.
func (p *Proxy) Close() error {
	p.closeOnce.Do(func() {
		p.mu.Lock()
		p.closed = true
		stop := p.stopAfter
		p.mu.Unlock()
		if stop != nil {
			stop()
		}
		p.cancel()
		if p.ln != nil {
			if err := p.ln.Close(); err != nil {
				p.closeErr = fmt.Errorf("link: close listener: %w", err)
			}
		}
		for _, c := range p.live() {
			c.abort(false)
		}
		p.wg.Wait()
		if p.wall != nil {
			p.wall.close()
		}
		if p.releaseSpare != nil {
			p.releaseSpare()
		}
	})
	return p.closeErr
}

func (p *Proxy) live() []*conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	cs := make([]*conn, 0, len(p.conns))
	for c := range p.conns {
		cs = append(cs, c)
	}
	return cs
}

// rcvBufSpan is how long the kernel receive buffer of an impaired link's
// legs holds at the link's rate: the time its reader may wait for the CPU
// before the sender stalls.
const rcvBufSpan = time.Millisecond

// receiveBuffer returns the kernel receive buffer of an impaired link's legs,
// or 0 to leave it to the kernel's autotuning. It is small, so that a full
// window pushes back on the sender instead of piling up in the proxy's
// kernel buffers, but no smaller than what arrives at the link's rate in
// rcvBufSpan: a reader woken for every 32 KiB cannot keep up with 10 Gbit/s,
// and its sender's stalls then hold the link below its rate. A window-limited
// link needs no more than a window. Past autotunedRcvBuf the kernel sizes it:
// a buffer asked for is capped at net.core.rmem_max (208 KiB on a stock
// kernel), autotuning is not.
func receiveBuffer(cfg Config) int {
	want := int64(autotunedRcvBuf)
	if cfg.Rate > 0 {
		want = int64(cfg.Rate.BytesPerSecond() * rcvBufSpan.Seconds())
	}
	if cfg.Window > 0 {
		want = min(want, int64(cfg.Window))
	}
	if want >= autotunedRcvBuf {
		return 0
	}
	return int(max(want, minRcvBuf))
}

// control sets an impaired link's receive buffer on the listener (accepted
// sockets inherit it) and on upstream sockets before they connect, so that
// the window scale they advertise matches.
func (p *Proxy) control(_, _ string, rc syscall.RawConn) error {
	if !p.impaired || p.rcvBuf == 0 {
		return nil
	}
	var serr error
	err := rc.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUF, p.rcvBuf)
	})
	return errors.Join(err, serr)
}

func (p *Proxy) accept() {
	var backoff time.Duration
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if p.ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of descriptors or the like: wait and retry, as net/http does.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			p.log.Warn("link: accept", "listen", p.ln.Addr().String(), "err", err, "retry_in", backoff)
			select {
			case <-time.After(backoff):
			case <-p.ctx.Done():
				return
			}
			continue
		}
		backoff = 0
		p.wg.Go(func() { p.serve(c) })
	}
}

// serve dials the upstream for one accepted client and runs the connection.
func (p *Proxy) serve(client net.Conn) {
	ctx, cancel := context.WithTimeout(p.ctx, dialTimeout)
	d := net.Dialer{Control: p.control}
	server, err := d.DialContext(ctx, p.network, p.address)
	cancel()
	if err != nil {
		p.log.Warn("link: dial upstream", "upstream", p.upstream, "err", err)
		reset(client)
		client.Close()
		return
	}
	p.handle(client, server)
}

// handle forwards between a client and an upstream connection until both
// directions have finished or the connection is reset or closed.
func (p *Proxy) handle(client, server net.Conn) {
	c := p.newConn(client, server)
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		c.abort(false)
		return
	}
	p.conns[c] = struct{}{}
	p.mu.Unlock()
	p.rec.connOpened()
	c.run()
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	p.rec.connClosed()
}

// conn is one connection through the link: a client leg and an upstream leg.
type conn struct {
	p    *Proxy
	legs [2]net.Conn // client, server
	done chan struct{}
	once sync.Once
	dirs []*dirState // forward, reverse; nil when the link is not impaired
}

// dirState is one direction of an impaired connection.
type dirState struct {
	f  *flow
	in *inbox
}

func (p *Proxy) newConn(client, server net.Conn) *conn {
	c := &conn{p: p, legs: [2]net.Conn{client, server}, done: make(chan struct{})}
	if !p.impaired {
		return c
	}
	opened := p.clock.Now()
	med := p.members[memberOf(client.RemoteAddr(), client.LocalAddr(), len(p.members))]
	for _, d := range []direction{forward, reverse} {
		f := newFlow(med, p.rec, d)
		// The connection pays the TCP handshake: the client may send once its
		// SYN-ACK is back (one RTT), the server once the final ACK reaches it.
		f.notBefore = opened.Add(f.delay + f.ackDelay)
		if d == reverse {
			f.notBefore = f.notBefore.Add(f.ackDelay)
		}
		// Reading ahead by up to a window (at most readAhead) lets the
		// scheduler admit a whole window the instant it opens.
		c.dirs = append(c.dirs, &dirState{f: f, in: newInbox(int(min(max(f.window, chunkSize), readAhead)))})
	}
	return c
}

// abort closes both legs, first making them send a reset when reset is set,
// and stops every goroutine of the connection.
func (c *conn) abort(rst bool) {
	c.once.Do(func() {
		close(c.done)
		for _, d := range c.dirs {
			signal(d.in.notify) // a sleeping scheduler wakes on its inbox
		}
		for _, l := range c.legs {
			if rst {
				reset(l)
			}
			l.Close()
		}
	})
}

// fail ends the connection after an error on one leg: the other leg is reset,
// so a reset (or a broken pipe) on one side reaches the other.
func (c *conn) fail(op string, d direction, err error) {
	select {
	case <-c.done:
		return // closing anyway: the error is our own doing
	default:
	}
	c.p.log.Debug("link: connection reset", "op", op, "direction", d.String(), "err", err)
	c.abort(true)
}

func (c *conn) run() {
	var wg sync.WaitGroup
	for _, d := range []direction{forward, reverse} {
		src, dst := c.legs[0], c.legs[1]
		if d == reverse {
			src, dst = dst, src
		}
		if c.dirs == nil {
			wg.Go(func() { c.copyDirect(d, src, dst) })
			continue
		}
		ds, other := c.dirs[d], c.dirs[1-d]
		wg.Go(func() { c.read(d, ds.in, src) })
		wg.Go(func() { c.schedule(ds.f, ds.in, other.in, dst) })
	}
	wg.Wait()
	c.abort(false)
}

// copyDirect forwards one direction of a link that changes nothing: no
// model, no queue, but the bytes are still counted. It reads into a small
// buffer, and into a large one only while reads fill the buffer (a bulk
// transfer, where fewer, larger copies are faster), so that idle and
// interactive connections hold little memory.
func (c *conn) copyDirect(d direction, src, dst net.Conn) {
	small := c.p.chunks.Get().(*chunk)
	defer c.p.chunks.Put(small)
	var big *chunk
	defer func() {
		if big != nil {
			c.p.bigChunks.Put(big)
		}
	}()
	buf := small.buf
	mss := c.p.cfg.SegmentSize()
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				c.fail("write", d, werr)
				return
			}
			c.p.rec.delivered(d, n, (n+mss-1)/mss, c.p.clock.Now(), 0, false)
		}
		switch {
		case n == len(buf) && big == nil:
			big = c.p.bigChunks.Get().(*chunk)
			buf = big.buf
		case n < len(small.buf) && big != nil:
			c.p.bigChunks.Put(big)
			big, buf = nil, small.buf
		}
		if err != nil {
			if err == io.EOF {
				closeWrite(dst)
				return
			}
			c.fail("read", d, err)
			return
		}
	}
}

// read is a direction's reader: it reads the source and stamps each read
// with its arrival time. It reads ahead of the window by at most the inbox's
// budget, then stops, so the sender's socket fills and its writes block as
// they would on a real path.
func (c *conn) read(d direction, in *inbox, src net.Conn) {
	r := newStampedReader(src, c.p.clock, c.p.wall != nil)
	// Reads fill large chunks during a bulk transfer (a read filled the
	// chunk before), where fewer system calls carry the rate, but only
	// where the read-ahead is large beside them.
	bulkOK, bulk := in.budget >= 4*bigChunkSize, false
	for in.waitRoom(c.done) {
		ch := c.p.getChunk(bulk)
		n, at, err := r.Read(ch.buf)
		if n > 0 {
			in.push(arrival{c: ch, n: n, at: at})
		} else {
			c.p.putChunk(ch)
		}
		bulk = bulkOK && n == len(ch.buf) || bulk && n > chunkSize
		if err != nil {
			if err == io.EOF {
				in.push(arrival{fin: true, at: at})
				return
			}
			c.fail("read", d, err)
			return
		}
	}
}

// schedule is the one scheduler of a direction. It owns the direction's
// model: it admits what the reader stamped as the window allows, at the
// exact time the data and the window credit were both there (so a late
// wake-up does not stretch a round trip), and writes each segment to the
// receiver at its delivery time, in order. The FIN is passed on with
// CloseWrite once everything ahead of it is delivered. replies is the
// other direction's inbox, whose reads tell a stream from an exchange.
func (c *conn) schedule(f *flow, in, replies *inbox, dst net.Conn) {
	s := &scheduler{c: c, f: f, in: in, replies: replies, dst: dst, clk: c.p.clock}
	s.run()
}

// scheduler is a direction's scheduling state, which lives as long as the
// connection and is kept between its passes: one pass admits, delivers
// what is due and sleeps until there is more to do.
type scheduler struct {
	c       *conn
	f       *flow
	in      *inbox
	replies *inbox // the other direction's
	dst     net.Conn
	clk     clock

	pending    []arrival // read, not yet admitted
	out        []item    // admitted; out[head:] not yet delivered
	head       int
	segs       []segment // reused by every admission
	bufs       net.Buffers
	vt         time.Time // the model's time of the last admission
	stallStart time.Time // when the window last filled with data waiting
	// lastAt is the arrival of the last read, and repliesSeen the other
	// direction's reads counted then; streaming is set when the last read
	// is part of a stream (see streams).
	lastAt      time.Time
	repliesSeen int64
	streaming   bool
	// spun is set when the last sleep was precise and reached its deadline:
	// the next write is on the precise path.
	spun bool
}

// batch is the run of due items one write delivers: out[head:end].
type batch struct {
	end, bytes, segs int
	fin              bool // the FIN ends the batch: the direction is done
}

func (s *scheduler) run() {
	for {
		s.pending = s.in.take(s.pending)
		now := s.clk.Now()
		creditAt := s.admit(now)
		fin, ok := s.deliverDue(now)
		if !ok {
			return
		}
		if fin {
			closeWrite(s.dst)
			return
		}
		if !s.wait(creditAt) {
			return
		}
	}
}

// admit admits pending reads up to now as the window allows. It returns
// when the window next opens if data waits for it past now, else zero.
func (s *scheduler) admit(now time.Time) (creditAt time.Time) {
	for len(s.pending) > 0 {
		a := &s.pending[0]
		t := later(s.vt, a.at)
		if a.fin {
			s.out = append(s.out, item{fin: true, deliver: s.f.finDelivery(t)})
			s.pending = s.pending[1:]
			return time.Time{} // nothing follows a FIN
		}
		t, credit, open := s.creditFrom(t, now)
		if !open {
			return t
		}
		s.admitPart(a, t, credit)
	}
	return time.Time{}
}

// creditFrom returns the time from t on at which data may be admitted and
// the window's credit then: at t, or, when the window is full, at its next
// opening, which ends a stall. It reports open false, with the opening's
// time, when the window opens only after now.
func (s *scheduler) creditFrom(t, now time.Time) (at time.Time, credit int64, open bool) {
	if credit = s.f.credit(t); credit > 0 {
		return t, credit, true
	}
	if s.stallStart.IsZero() {
		s.stallStart = t
	}
	at = s.f.nextCredit()
	if at.After(now) {
		return at, 0, false
	}
	credit = s.f.credit(at)
	s.c.p.rec.stalled(s.f.dir, at.Sub(s.stallStart))
	s.stallStart = time.Time{}
	return at, credit, true
}

// admitPart admits as much of the head read a as credit allows at t and
// queues its segments for delivery; a fully admitted read leaves pending.
func (s *scheduler) admitPart(a *arrival, t time.Time, credit int64) {
	s.vt = t
	k := int(min(credit, int64(a.n-a.off)))
	s.segs = s.f.admit(t, k, s.segs[:0])
	for i, sg := range s.segs {
		s.out = append(s.out, item{c: a.c, off: a.off + sg.off, n: sg.n, deliver: sg.deliver,
			last: i == len(s.segs)-1 && a.off+k == a.n})
	}
	if a.off == 0 {
		s.streaming = s.streams(a.at)
	}
	a.off += k
	s.in.release(k)
	if a.off == a.n {
		s.pending[0] = arrival{}
		s.pending = s.pending[1:]
	}
}

// deliverDue writes what is due at now in one write and frees what it
// wrote. It reports whether the FIN was reached, and ok false when the
// write failed (the connection is then failed).
func (s *scheduler) deliverDue(now time.Time) (fin, ok bool) {
	b := s.collectDue(now)
	if b.bytes > 0 {
		// The bytes reach the receiver's socket as the write begins; the
		// kernel then wakes the receiver, often on this CPU and before the
		// write returns (a sync wake-up), so the return would count the
		// receiver's own run as the link's lateness.
		at := s.clk.Now()
		wb := s.bufs // WriteTo consumes its receiver
		if _, err := wb.WriteTo(s.dst); err != nil {
			s.c.fail("write", s.f.dir, err)
			return false, false
		}
		s.c.p.rec.delivered(s.f.dir, b.bytes, b.segs, at, at.Sub(s.out[s.head].deliver), s.spun)
	}
	s.spun = false
	s.retire(b.end)
	return b.fin, true
}

// collectDue gathers the items due at now into bufs, coalescing the pieces
// of one read, up to maxBatch bytes or the FIN.
func (s *scheduler) collectDue(now time.Time) batch {
	out, bufs := s.out, s.bufs[:0]
	b := batch{end: s.head}
	for b.end < len(out) && !out[b.end].deliver.After(now) && b.bytes < maxBatch {
		it := out[b.end]
		b.end++
		if it.fin {
			b.fin = true
			break
		}
		if k := len(bufs) - 1; k >= 0 && out[b.end-2].c == it.c && out[b.end-2].off+out[b.end-2].n == it.off {
			bufs[k] = bufs[k][:len(bufs[k])+it.n]
		} else {
			bufs = append(bufs, it.c.buf[it.off:it.off+it.n])
		}
		b.bytes += it.n
		b.segs++
	}
	s.bufs = bufs
	return b
}

// retire frees the chunks of the delivered items out[head:end] and
// reclaims their room in out.
func (s *scheduler) retire(end int) {
	for ; s.head < end; s.head++ {
		if s.out[s.head].last {
			s.c.p.putChunk(s.out[s.head].c)
		}
		s.out[s.head] = item{}
	}
	if s.head == len(s.out) {
		s.out, s.head = s.out[:0], 0
	} else if s.head > 1024 && s.head*2 > len(s.out) {
		s.out = s.out[:copy(s.out, s.out[s.head:])]
		s.head = 0
	}
}

// wait sleeps until the next delivery or window credit (creditAt), or
// until the reader brings something. It reports false when the connection
// ends.
func (s *scheduler) wait(creditAt time.Time) bool {
	next, precise := s.nextWake(creditAt)
	select {
	case <-s.c.done:
		return false
	default:
	}
	if next.IsZero() {
		select {
		case <-s.in.notify:
			return true
		case <-s.c.done:
			return false
		}
	}
	if len(s.pending) > 0 && creditAt.IsZero() {
		return true // more to admit: a batch was cut short
	}
	s.spun = s.clk.SleepUntil(next, precise, s.in.notify) && precise
	return true
}

// nextWake returns the earlier of creditAt and the head's delivery, and
// whether to spin for it.
func (s *scheduler) nextWake(creditAt time.Time) (next time.Time, precise bool) {
	next = creditAt
	if s.head < len(s.out) && (next.IsZero() || s.out[s.head].deliver.Before(next)) {
		next = s.out[s.head].deliver
		// Spin for precision only when the head is all there is: the end of
		// a message, whose arrival the receiver acts on. A backed-up stream
		// keeps its average rate by absolute deadlines without spinning,
		// and admissions are stamped with exact times whenever they run.
		// A message of a stream of small writes (a server sending each
		// row as it goes) is not spun for: a stream is paced by its
		// deadlines anyway.
		precise = s.head == len(s.out)-1 && len(s.pending) == 0 && !s.streaming
	}
	return next, precise
}

// streamGap is the longest gap between two reads of a stream that nothing
// from the other side came between. A spin takes at most maxSpin, so past
// it spinning for each message of a stream takes under a third of a CPU.
const streamGap = time.Millisecond

// streams reports whether a read that arrived at at is part of a stream of
// small writes, and notes it as the last read. It is when it follows the
// read before within one one-way delay (too soon to answer anything), or
// within streamGap with nothing read from the other side in between (it
// answers nothing). Spinning for each message of a stream takes a CPU from
// the sender: on a short delay (infiniband's 10 µs, lan-1g's 100 µs) a
// server slowed by it sent its messages further apart than the delay, so
// that each was spun for again, and a stream of 124-byte notices stayed at
// 8 to 24 KB per 10 ms where the same server streamed 150 KB when it once
// got ahead.
func (s *scheduler) streams(at time.Time) bool {
	replies := s.replies.reads.Load()
	gap := at.Sub(s.lastAt)
	stream := !s.lastAt.IsZero() && (gap < s.f.delay || gap < streamGap && replies == s.repliesSeen)
	s.lastAt, s.repliesSeen = at, replies
	return stream
}

// chunk is the buffer of one read; its segments point into it.
type chunk struct{ buf []byte }

func (p *Proxy) getChunk(big bool) *chunk {
	if big {
		return p.bigChunks.Get().(*chunk)
	}
	return p.chunks.Get().(*chunk)
}

func (p *Proxy) putChunk(c *chunk) {
	if len(c.buf) == bigChunkSize {
		p.bigChunks.Put(c)
		return
	}
	p.chunks.Put(c)
}

// arrival is one read (or the FIN) and when it arrived.
type arrival struct {
	c      *chunk
	off, n int // off: bytes already admitted
	at     time.Time
	fin    bool
}

// item is one admitted segment waiting for delivery, or the FIN.
type item struct {
	c       *chunk
	off, n  int
	deliver time.Time
	last    bool // the last segment of its chunk: the chunk is free once written
	fin     bool
}

// inbox passes reads from a direction's reader to its scheduler and bounds
// how far the reader may read ahead of the window.
type inbox struct {
	mu       sync.Mutex
	arrivals []arrival
	held     int // bytes read and not yet admitted
	budget   int
	reads    atomic.Int64  // reads pushed so far, for the other direction's scheduler
	notify   chan struct{} // to the scheduler: something arrived (or the connection ends)
	room     chan struct{} // to the reader: bytes were admitted
}

func newInbox(budget int) *inbox {
	return &inbox{budget: budget, notify: make(chan struct{}, 1), room: make(chan struct{}, 1)}
}

func (in *inbox) push(a arrival) {
	in.mu.Lock()
	in.arrivals = append(in.arrivals, a)
	in.held += a.n
	// Counted before the arrival can be taken: were the count bumped after
	// unlocking, a reader preempted between the two would let the request
	// be delivered and answered, and the other direction's scheduler take
	// the reply as part of a stream (no read seen in between) and not spin
	// for it.
	in.reads.Add(1)
	in.mu.Unlock()
	signal(in.notify)
}

// take moves every arrival to pending.
func (in *inbox) take(pending []arrival) []arrival {
	in.mu.Lock()
	pending = append(pending, in.arrivals...)
	clear(in.arrivals)
	in.arrivals = in.arrivals[:0]
	in.mu.Unlock()
	return pending
}

// release returns n admitted bytes to the reader's budget.
func (in *inbox) release(n int) {
	in.mu.Lock()
	in.held -= n
	in.mu.Unlock()
	signal(in.room)
}

// waitRoom blocks while the reader is a full budget ahead; it reports false
// when the connection ends.
func (in *inbox) waitRoom(done <-chan struct{}) bool {
	for {
		in.mu.Lock()
		ok := in.held < in.budget
		in.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-in.room:
		case <-done:
			return false
		}
	}
}

func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// closeWrite passes a FIN on.
func closeWrite(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
		return
	}
	c.Close()
}

// reset makes the next Close of a TCP connection send a reset (RST)
// instead of a FIN.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
}
