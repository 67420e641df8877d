package link

import (
	"math"
	"math/rand/v2"
	"sort"
	"sync"
	"time"
)

// direction is one way through the link.
type direction int

const (
	forward direction = iota // client to upstream
	reverse                  // upstream to client
)

func (d direction) String() string {
	if d == reverse {
		return "reverse"
	}
	return "forward"
}

// maxQueued bounds what one direction of one connection may hold when the
// window is unlimited, so a fast sender on a slow link cannot make the proxy
// buffer without end; the sender then waits as if the window were full.
const maxQueued = 64 << 20

// maxRTO caps the doubling retransmission timeout, as Linux's TCP_RTO_MAX,
// and maxRetries the losses of one segment, as tcp_retries2 (where Linux
// would give the connection up; the model lets the segment through).
const (
	maxRTO     = 120 * time.Second
	maxRetries = 15
)

// RetransmitTimeout is the stall a lost segment causes before its
// retransmission is delivered: Linux's srtt + max(4·rttvar, rto_min) on a
// steady path, that is the RTT plus the minimum RTO. It doubles for every
// loss of the same segment's retransmission.
func (c Config) RetransmitTimeout() time.Duration {
	return c.EffectiveRTT() + c.MinRTOOrDefault()
}

// SerializationTime is how long n payload bytes take to leave the sender at
// the link's rate, each segment's header bytes (Overhead) included, as the
// medium's airtime charges them one segment after another; 0 when the rate
// is unlimited. A model of a conversation adds it to each message.
func (c Config) SerializationTime(n int64) time.Duration {
	if c.Rate <= 0 || n <= 0 {
		return 0
	}
	mss := int64(c.SegmentSize())
	segments := (n + mss - 1) / mss
	return time.Duration(float64(n+segments*int64(c.Overhead)) * 8e9 / float64(c.Rate))
}

// medium is the wire that all connections of one link share: a serializer
// per direction, or one for both directions when the link is half duplex.
// Serializing every connection on one medium is what a real link does: a
// bulk transfer delays the small messages of another connection.
type medium struct {
	mu        sync.Mutex
	cfg       Config
	nsPerByte float64      // serialization time of one byte; 0 = unlimited rate
	free      [2]time.Time // when each serializer is next idle (half duplex uses free[0])
	rng       *rand.Rand

	// Duplex mismatch: the reverse (half-duplex end's) frames that may
	// still overlap a frame admitted late, in order of start (also kept on
	// a full-duplex link with a rate, for its shadow collisions), and its
	// recent airtime, decayed with time constant tau; freeAt is the arrival
	// of the frame that set each serializer's free time; maxAir is the
	// airtime of the largest segment.
	onAir        []interval
	revBusy, tau float64 // in nanoseconds
	revBusyAt    time.Time
	freeAt       [2]time.Time
	maxAir       time.Duration
}

type interval struct{ start, end time.Time }

func newMedium(cfg Config) *medium {
	seed := uint64(cfg.Seed)
	if cfg.Seed == 0 {
		seed = rand.Uint64()
	}
	m := &medium{cfg: cfg, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
	if cfg.Rate > 0 {
		m.nsPerByte = 8e9 / float64(cfg.Rate)
	}
	m.tau = float64(cfg.RetransmitTimeout())
	m.maxAir = m.airtime(time.Time{}, cfg.SegmentSize()).Sub(time.Time{})
	return m
}

// admitSlack is how late the proxy's schedulers may admit a frame after
// it arrived (a busy machine wakes them milliseconds late): the mismatch
// keeps the half-duplex end's frames that long, so a client frame admitted
// late still meets the frames it overlapped.
const admitSlack = 50 * time.Millisecond

// transmit puts a frame of n payload bytes that is ready at t on the wire of
// direction d and returns when it starts and when its last bit leaves. It
// never credits idle time: a frame starts no earlier than it arrives and no
// earlier than the frame before it ends.
//
// With a duplex mismatch the upstream end runs half duplex: its (reverse)
// frames defer to forward frames already on the wire (carrier sense), while
// the full-duplex client end sends whenever it likes; see collides.
// m.mu must be held.
func (m *medium) transmit(d direction, t time.Time, n int) (start, end time.Time) {
	if m.cfg.Duplex == Mismatch {
		return m.transmitMismatched(d, t, n)
	}
	i := d
	if m.cfg.Duplex == HalfDuplex {
		i = forward
	}
	start = later(t, m.free[i])
	end = m.airtime(start, n)
	m.free[i] = end
	if m.shadows() {
		m.pruneOnAir(t)
		if d == reverse {
			m.bookOnAir(start, end)
		}
	}
	return start, end
}

// shadows reports whether the medium counts shadow collisions: the client
// frames that start while a frame of the other direction is on the air,
// which a duplex mismatch would lose (collides). A full-duplex link with a
// rate counts them, so that the point of a study measured at full duplex
// tells how much of the frames' overlap its own timing leaves, before the
// same load runs through the mismatch (seed 002).
func (m *medium) shadows() bool { return m.cfg.CountsShadowCollisions() }

// pruneOnAir forgets the reverse frames that started long enough before t
// (the admission slack and the longest airtime) to overlap nothing
// admitted from now on. m.mu must be held.
func (m *medium) pruneOnAir(t time.Time) {
	cut := t.Add(-admitSlack - m.maxAir)
	k := sort.Search(len(m.onAir), func(k int) bool { return m.onAir[k].start.After(cut) })
	m.onAir = m.onAir[k:]
}

// bookOnAir keeps a reverse frame on the air from start to end, in order of
// start. m.mu must be held.
func (m *medium) bookOnAir(start, end time.Time) {
	k := sort.Search(len(m.onAir), func(k int) bool { return m.onAir[k].start.After(start) })
	m.onAir = append(m.onAir, interval{})
	copy(m.onAir[k+1:], m.onAir[k:])
	m.onAir[k] = interval{start, end}
}

// transmitMismatched is transmit at a duplex mismatch. The proxy's
// schedulers (one per direction of each connection) admit frames as they
// run, which on a busy machine is not the order the frames arrived in.
// A frame therefore queues behind the frame on its serializer, and the
// half-duplex end defers to a client frame on the air, only when that
// frame arrived first: otherwise two frames would be made to start at the
// same instant (both "waiting" for a frame that physically came after
// them) and collide, which no real wire does. m.mu must be held.
func (m *medium) transmitMismatched(d direction, t time.Time, n int) (start, end time.Time) {
	start = t
	if !m.freeAt[d].After(t) {
		start = later(start, m.free[d])
	}
	if d == reverse && !m.freeAt[forward].After(t) {
		start = later(start, m.free[forward])
	}
	end = m.airtime(start, n)
	if !m.free[d].After(end) {
		m.free[d], m.freeAt[d] = end, t
	}
	m.pruneOnAir(t)
	if d == reverse {
		m.bookOnAir(start, end)
		m.revBusy = m.revBusy*math.Exp(-float64(max(start.Sub(m.revBusyAt), 0))/m.tau) + float64(end.Sub(start))
		m.revBusyAt = later(m.revBusyAt, start)
	}
	return start, end
}

// airtime returns when a frame of n payload bytes that starts at start ends.
func (m *medium) airtime(start time.Time, n int) time.Time {
	if m.nsPerByte == 0 {
		return start
	}
	return start.Add(time.Duration(float64(n+m.cfg.Overhead) * m.nsPerByte))
}

// collides reports whether a forward frame on the air from start to end
// overlaps a reverse frame: with a duplex mismatch the half-duplex end sees a
// late collision and the frame is lost there.
//
// A retransmission goes out an RTO later, often beyond the reverse frames
// booked so far. It then collides with the probability that the half-duplex
// end is on the air: its recent share of airtime, fading with time constant
// tau beyond what is booked, since its future traffic is not known yet.
// m.mu must be held.
func (m *medium) collides(start, end, now time.Time, retransmission bool) bool {
	if m.cfg.Duplex != Mismatch {
		return false
	}
	if horizon := later(now, m.free[reverse]); retransmission && !start.Before(horizon) {
		// The last reverse frame may start after now (booked ahead): no decay.
		share := m.revBusy * math.Exp(-float64(max(now.Sub(m.revBusyAt), 0))/m.tau) / m.tau
		return m.rng.Float64() < share*math.Exp(-float64(start.Sub(horizon))/m.tau)
	}
	return m.overlapsOnAir(start, end)
}

// overlapsOnAir reports whether a frame on the air from start to end
// overlaps a reverse frame kept on the air. onAir is sorted by start; a
// frame lasts at most maxAir, so only those that started within maxAir
// before start can still be on the air. m.mu must be held.
func (m *medium) overlapsOnAir(start, end time.Time) bool {
	hi := sort.Search(len(m.onAir), func(k int) bool { return !m.onAir[k].start.Before(end) })
	for j := hi - 1; j >= 0 && !m.onAir[j].start.Before(start.Add(-m.maxAir)); j-- {
		if m.onAir[j].end.After(start) {
			return true
		}
	}
	return false
}

// flow is one direction of one connection: the byte stream's in-order
// delivery, its window and its retransmission state. Only the direction's
// scheduler goroutine uses a flow, so it has no lock of its own.
type flow struct {
	m        *medium
	rec      *recorder
	dir      direction
	delay    time.Duration // one-way propagation delay of this direction
	ackDelay time.Duration // one-way delay of the acknowledgement (the other direction)
	window   int64
	mss      int
	rto      time.Duration
	// notBefore is when the sender may first transmit: the connection's
	// handshake must be over.
	notBefore time.Time

	inFlight    int64
	acks        []ack // credits to return, in time order
	ackHead     int
	lastJitter  time.Time // delivery time before loss stalls, for the jitter clamp
	lastDeliver time.Time
}

type ack struct {
	at time.Time
	n  int64
}

// segment is one MSS-sized piece of a read and the time it is delivered.
type segment struct {
	off, n  int
	deliver time.Time
}

func newFlow(m *medium, rec *recorder, d direction) *flow {
	cfg := m.cfg
	fwd, rev := cfg.OneWay()
	f := &flow{m: m, rec: rec, dir: d, delay: fwd, ackDelay: rev, window: int64(cfg.InFlight()),
		mss: cfg.SegmentSize(), rto: cfg.RetransmitTimeout()}
	if d == reverse {
		f.delay, f.ackDelay = rev, fwd
	}
	if f.window <= 0 {
		f.window = maxQueued
	}
	return f
}

// credit returns how many bytes the window lets the sender put into the link
// at now, after returning the acknowledgements that have arrived by then.
func (f *flow) credit(now time.Time) int64 {
	for f.ackHead < len(f.acks) && !f.acks[f.ackHead].at.After(now) {
		f.inFlight -= f.acks[f.ackHead].n
		f.ackHead++
	}
	if f.ackHead == len(f.acks) {
		f.acks, f.ackHead = f.acks[:0], 0
	} else if f.ackHead > 1024 && f.ackHead*2 > len(f.acks) {
		f.acks = f.acks[:copy(f.acks, f.acks[f.ackHead:])]
		f.ackHead = 0
	}
	return f.window - f.inFlight
}

// nextCredit returns when the oldest byte in flight is acknowledged; only
// meaningful while something is in flight.
func (f *flow) nextCredit() time.Time {
	if f.ackHead == len(f.acks) {
		return time.Time{}
	}
	return f.acks[f.ackHead].at
}

// admit sends n bytes that arrived at now into the link: it cuts them into
// segments, serializes, delays, jitters and loses each, appends them to segs
// and returns it. The caller keeps n within credit(now).
func (f *flow) admit(now time.Time, n int, segs []segment) []segment {
	var lost, shadow int64
	var maxJitter time.Duration
	m := f.m
	m.mu.Lock()
	for off := 0; off < n; off += f.mss {
		size := min(f.mss, n-off)
		start, end := m.transmit(f.dir, later(now, f.notBefore), size)
		if f.dir == forward && m.shadows() && m.overlapsOnAir(start, end) {
			shadow++
		}
		var stall time.Duration
		rto := f.rto
		for tries := 0; tries < maxRetries && f.lost(start.Add(stall), end.Add(stall), now, stall > 0); tries++ {
			// The segment and everything behind it wait for its retransmission,
			// which can itself be lost or collide: then the timeout doubles, as
			// TCP backs off.
			lost++
			stall += rto
			rto = min(2*rto, maxRTO)
		}
		base := end.Add(f.delay)
		at := base
		if m.cfg.Jitter > 0 {
			at = at.Add(time.Duration(m.rng.Int64N(int64(m.cfg.Jitter) + 1)))
		}
		// A byte stream cannot reorder: a segment is never delivered before
		// the one ahead of it. The jitter produced is what remains of the
		// sample after that clamp, measured before any loss stall.
		at = later(at, f.lastJitter)
		f.lastJitter = at
		maxJitter = max(maxJitter, at.Sub(base))
		deliver := later(at.Add(stall), f.lastDeliver)
		f.lastDeliver = deliver
		segs = append(segs, segment{off: off, n: size, deliver: deliver})
		f.acks = append(f.acks, ack{at: deliver.Add(f.ackDelay), n: int64(size)})
	}
	m.mu.Unlock()
	f.inFlight += int64(n)
	f.rec.admitted(f.dir, lost, shadow, maxJitter, f.inFlight)
	return segs
}

// lost draws whether a transmission on the air from start to end is lost:
// by a collision (duplex mismatch, forward frames only) or by chance.
// f.m.mu must be held.
func (f *flow) lost(start, end, now time.Time, retransmission bool) bool {
	return f.dir == forward && f.m.collides(start, end, now, retransmission) || f.m.lose()
}

// finDelivery returns when a FIN sent at now reaches the other end: after
// the one-way delay and never before the data ahead of it.
func (f *flow) finDelivery(now time.Time) time.Time {
	return later(now.Add(f.delay), f.lastDeliver)
}

// lose draws one Bernoulli loss. m.mu must be held.
func (m *medium) lose() bool {
	return m.cfg.Loss > 0 && m.rng.Float64() < m.cfg.Loss
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
