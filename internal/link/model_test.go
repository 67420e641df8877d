package link

import (
	"math"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/units"
)

// These tests drive the model directly on virtual time: no goroutines, no
// sockets, exact arithmetic.

var t0 = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// sender is a bulk sender on virtual time: it puts data into its flow as
// fast as the window lets it, the way the proxy's reader does.
type sender struct {
	f     *flow
	left  int
	now   time.Time
	segs  []segment
	reads int
}

// step admits one read, or waits for the window; it reports false when the
// sender has nothing left.
func (s *sender) step(readSize int) bool {
	if s.left == 0 {
		return false
	}
	c := s.f.credit(s.now)
	if c <= 0 {
		s.now = s.f.nextCredit()
		return true
	}
	n := min(int(c), s.left, readSize)
	s.segs = s.f.admit(s.now, n, s.segs)
	s.left -= n
	s.reads++
	return true
}

// simulate runs the senders interleaved in time order until all are done.
func simulate(senders ...*sender) {
	for {
		var next *sender
		for _, s := range senders {
			if s.left > 0 && (next == nil || s.now.Before(next.now)) {
				next = s
			}
		}
		if next == nil {
			return
		}
		next.step(chunkSize)
	}
}

// steadyRate is the rate at which segs were delivered after the first
// delivery instant: exact for a periodic transfer, free of start-up effects.
func steadyRate(t *testing.T, segs []segment) units.Rate {
	t.Helper()
	first, last := segs[0].deliver, segs[len(segs)-1].deliver
	var bytes int
	for _, s := range segs {
		if s.deliver.After(first) {
			bytes += s.n
		}
	}
	if !last.After(first) {
		t.Fatalf("all %d segments delivered at one instant", len(segs))
	}
	return units.Rate(float64(bytes) * 8 / last.Sub(first).Seconds())
}

func newTestFlows(t *testing.T, cfg Config) (fwd, rev *flow, rec *recorder) {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	m := newMedium(cfg)
	rec = newRecorder(t0, time.Millisecond)
	return newFlow(m, rec, forward), newFlow(m, rec, reverse), rec
}

func within(got, want, tol float64) bool { return math.Abs(got-want) <= tol*math.Abs(want) }

func TestModelBulkRate(t *testing.T) {
	mss := 8 * DefaultMSS / 1e6 // one segment's bits, in Mbit
	tests := []struct {
		name string
		cfg  Config
		want units.Rate // exact steady rate of the model
	}{
		// The seed figure: 65,535 bytes per 100 ms whatever the bandwidth.
		{"legacy window 100ms", Config{RTT: 100 * time.Millisecond, Window: LegacyWindow}, 5.24288 * units.Mbit},
		{"legacy window 100ms on 1gbit", Config{RTT: 100 * time.Millisecond, Window: LegacyWindow, Rate: units.Gbit},
			units.Rate(LegacyWindow * 8 / (0.1 + mss/1e3))},
		{"legacy window 77ms", Config{RTT: 77 * time.Millisecond, Window: LegacyWindow}, units.Rate(LegacyWindow * 8 / 0.077)},
		// The 2003 stack: its 8 KB send buffer, not its window, bounds what is in flight.
		{"legacy stack 77ms", Config{RTT: 77 * time.Millisecond, Window: LegacyWindow, SendBuffer: LegacySendBuffer}, units.Rate(LegacySendBuffer * 8 / 0.077)},
		{"send buffer above the window", Config{RTT: 77 * time.Millisecond, Window: LegacyWindow, SendBuffer: AutotunedWindow}, units.Rate(LegacyWindow * 8 / 0.077)},
		{"asymmetric delays", Config{ForwardDelay: 70 * time.Millisecond, ReverseDelay: 30 * time.Millisecond, Window: 256 * units.KiB},
			units.Rate(256 * 1024 * 8 / 0.1)},
		// With a window well above the bandwidth-delay product the rate rules.
		{"rate 50mbit big window", Config{RTT: 50 * time.Millisecond, Window: AutotunedWindow, Rate: 50 * units.Mbit}, 50 * units.Mbit},
		{"rate 1gbit autotuned 77ms", Config{RTT: 77 * time.Millisecond, Window: AutotunedWindow, Rate: units.Gbit}, units.Gbit},
		{"rate with overhead", Config{RTT: 10 * time.Millisecond, Rate: 10 * units.Mbit, Overhead: 52},
			units.Rate(10e6 * DefaultMSS / (DefaultMSS + 52))},
		{"unlimited window is the proxy's queue", Config{RTT: 10 * time.Millisecond, Rate: 100 * units.Mbit}, 100 * units.Mbit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fwd, _, rec := newTestFlows(t, tt.cfg)
			left := 64 << 20
			if w := int(tt.cfg.InFlight()); w > 0 {
				left -= left % w // whole windows, so the last round trip is a full one
			}
			s := &sender{f: fwd, left: left, now: t0}
			simulate(s)
			got := steadyRate(t, s.segs)
			if !within(float64(got), float64(tt.want), 0.01) {
				t.Errorf("steady rate %s, want %s (±1%%); config %v", got, tt.want, tt.cfg)
			}
			// The model's rate agrees with Config.BulkRate, which the studies
			// use for predictions, within serialization effects.
			if br := tt.cfg.BulkRate(); br > 0 && !within(float64(got), float64(br), 0.02) {
				t.Errorf("steady rate %s differs from Config.BulkRate %s by more than 2%%", got, br)
			}
			st := rec.snapshot().Forward
			if w := int64(tt.cfg.InFlight()); w > 0 && st.MaxInFlight != w {
				t.Errorf("max in flight %d, want the window or send buffer %d", st.MaxInFlight, w)
			}
			t.Logf("%s: %s (Config.BulkRate %s), max in flight %d", tt.cfg, got, tt.cfg.BulkRate(), st.MaxInFlight)
		})
	}
}

func TestModelPingPongPaysOneRTT(t *testing.T) {
	tests := []struct {
		name     string
		cfg      Config
		req, rsp int
	}{
		{"77ms unlimited rate", Config{RTT: 77 * time.Millisecond}, 100, 300},
		{"20ms 1mbit", Config{RTT: 20 * time.Millisecond, Rate: units.Mbit}, 100, 1000},
		{"lan 0.2ms 1gbit multi-segment", Config{RTT: 200 * time.Microsecond, Rate: units.Gbit, Window: AutotunedWindow}, 5000, 20000},
		{"asymmetric", Config{ForwardDelay: 5 * time.Millisecond, ReverseDelay: 15 * time.Millisecond, Rate: 10 * units.Mbit}, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fwd, rev, _ := newTestFlows(t, tt.cfg)
			ser := func(n int) time.Duration {
				if tt.cfg.Rate == 0 {
					return 0
				}
				return time.Duration(float64(n) * 8e9 / float64(tt.cfg.Rate))
			}
			now := t0
			for i := range 5 {
				req := fwd.admit(now, tt.req, nil)
				arrived := req[len(req)-1].deliver
				rsp := rev.admit(arrived, tt.rsp, nil)
				back := rsp[len(rsp)-1].deliver
				want := tt.cfg.EffectiveRTT() + ser(tt.req) + ser(tt.rsp)
				if got := back.Sub(now); got != want {
					t.Errorf("exchange %d took %v, want RTT+serialization %v", i, got, want)
				}
				now = back.Add(time.Second) // idle; the next exchange gets no credit for it
			}
		})
	}
}

func TestModelNoIdleCredit(t *testing.T) {
	cfg := Config{RTT: 10 * time.Millisecond, Rate: units.Mbit} // 1 byte = 8 µs
	fwd, _, _ := newTestFlows(t, cfg)
	// After a long idle period a small message still takes its time on the
	// wire (a token bucket would have let it through at once).
	now := t0.Add(time.Hour)
	segs := fwd.admit(now, 1000, nil)
	if got, want := segs[0].deliver.Sub(now), 5*time.Millisecond+8*time.Millisecond; got != want {
		t.Errorf("1000 bytes at 1 Mbit/s after idling: delivered after %v, want %v", got, want)
	}
	// A second message right behind it queues behind the first.
	segs = fwd.admit(now, 1000, nil)
	if got, want := segs[0].deliver.Sub(now), 5*time.Millisecond+16*time.Millisecond; got != want {
		t.Errorf("second message: delivered after %v, want %v", got, want)
	}
	// A write larger than the MSS is cut into segments, each serialized.
	segs = fwd.admit(now.Add(time.Hour), 3*DefaultMSS+10, nil)
	if len(segs) != 4 || segs[3].n != 10 {
		t.Fatalf("3 MSS + 10 bytes cut into %d segments (last %d bytes), want 4 (last 10)", len(segs), segs[len(segs)-1].n)
	}
	for i := 1; i < len(segs); i++ {
		if got, want := segs[i].deliver.Sub(segs[i-1].deliver), time.Duration(segs[i].n)*8*time.Microsecond; got != want {
			t.Errorf("segment %d delivered %v after the one before, want its serialization %v", i, got, want)
		}
	}
}

func TestModelHalfDuplex(t *testing.T) {
	const rate = 10 * units.Mbit
	for _, tt := range []struct {
		duplex Duplex
		share  float64 // of the rate, per direction, when both are busy
	}{
		{FullDuplex, 1},
		{HalfDuplex, 0.5},
	} {
		t.Run(tt.duplex.String(), func(t *testing.T) {
			cfg := Config{RTT: 10 * time.Millisecond, Rate: rate, Window: AutotunedWindow, Duplex: tt.duplex}
			fwd, rev, _ := newTestFlows(t, cfg)
			a := &sender{f: fwd, left: 4 << 20, now: t0}
			b := &sender{f: rev, left: 4 << 20, now: t0}
			// Interleave the two directions read by read, as two busy readers do.
			for a.left > 0 || b.left > 0 {
				a.step(DefaultMSS)
				b.step(DefaultMSS)
			}
			for _, s := range []*sender{a, b} {
				got := steadyRate(t, s.segs)
				if !within(float64(got), float64(rate)*tt.share, 0.01) {
					t.Errorf("%s direction: %s, want %.0f%% of %s", s.f.dir, got, tt.share*100, rate)
				}
			}
			// One direction alone has the whole medium even when half duplex.
			fwd, _, _ = newTestFlows(t, cfg)
			solo := &sender{f: fwd, left: 4 << 20, now: t0}
			simulate(solo)
			if got := steadyRate(t, solo.segs); !within(float64(got), float64(rate), 0.01) {
				t.Errorf("one direction alone: %s, want %s", got, rate)
			}
		})
	}
}

func TestModelLossStallsWithDoubling(t *testing.T) {
	cfg := Config{RTT: 10 * time.Millisecond, Loss: 0.3, Seed: 7}
	fwd, _, rec := newTestFlows(t, cfg)
	rto := cfg.RetransmitTimeout()
	if rto != 210*time.Millisecond {
		t.Fatalf("RTO %v, want RTT + 200ms", rto)
	}
	counts := map[int]int{} // failed transmissions per segment -> segments
	var lost int
	now := t0
	for range 2000 {
		segs := fwd.admit(now, 100, nil)
		stall := segs[0].deliver.Sub(now) - 5*time.Millisecond
		// A segment lost k times waits rto + 2rto + ... + 2^(k-1) rto.
		k := 0
		for sum := time.Duration(0); sum < stall; k++ {
			sum += min(rto<<k, maxRTO)
			if sum > stall {
				t.Fatalf("stall %v is not a sum of doubling RTOs of %v", stall, rto)
			}
		}
		counts[k]++
		lost += k
		now = now.Add(time.Hour) // far apart: no segment waits behind another
	}
	if got := rec.snapshot().Forward.LostSegments; got != int64(lost) {
		t.Errorf("LostSegments %d, want %d", got, lost)
	}
	// P(lost at least once) = 0.3, P(at least twice) = 0.09, ...
	if got := float64(2000-counts[0]) / 2000; !within(got, 0.3, 0.15) {
		t.Errorf("%.1f%% of segments lost, want about 30%%", got*100)
	}
	if counts[2] == 0 || counts[3] == 0 {
		t.Errorf("no doubled RTO seen: segments by number of losses %v", counts)
	}
	t.Logf("segments by number of losses: %v", counts)

	// A lost segment holds everything behind it.
	fwd, _, _ = newTestFlows(t, Config{RTT: 10 * time.Millisecond, Loss: 0.5, Seed: 3, Rate: units.Mbit})
	segs := fwd.admit(t0, 50*DefaultMSS, nil)
	held := 0
	for i := 1; i < len(segs); i++ {
		if segs[i].deliver.Before(segs[i-1].deliver) {
			t.Fatalf("segment %d delivered before segment %d", i, i-1)
		}
		if segs[i].deliver == segs[i-1].deliver {
			held++
		}
	}
	if held == 0 {
		t.Errorf("no segment held behind a lost one in %d segments at 50%% loss", len(segs))
	}
}

func TestModelJitterKeepsOrder(t *testing.T) {
	const jitter = 5 * time.Millisecond
	for _, rate := range []units.Rate{0, 10 * units.Mbit} {
		cfg := Config{RTT: 20 * time.Millisecond, Jitter: jitter, Rate: rate, Seed: 11}
		fwd, _, rec := newTestFlows(t, cfg)
		var segs []segment
		now := t0
		var maxExtra time.Duration
		for i := range 5000 {
			before := len(segs)
			segs = fwd.admit(now, 700, segs)
			// Without a rate the wire adds nothing: the extra delay is jitter.
			if rate == 0 {
				maxExtra = max(maxExtra, segs[before].deliver.Sub(now)-10*time.Millisecond)
			}
			now = now.Add(time.Duration(i%7) * 300 * time.Microsecond)
		}
		for i := 1; i < len(segs); i++ {
			if segs[i].deliver.Before(segs[i-1].deliver) {
				t.Fatalf("rate %s: segment %d delivered before segment %d", rate, i, i-1)
			}
		}
		got := rec.snapshot().Forward.MaxJitter
		if got > jitter || got < jitter*9/10 {
			t.Errorf("rate %s: max jitter produced %v, want close to and at most %v", rate, got, jitter)
		}
		if maxExtra > jitter {
			t.Errorf("rate %s: a segment was delayed %v beyond its one-way delay, more than the jitter %v", rate, maxExtra, jitter)
		}
	}
}

func TestModelDuplexMismatch(t *testing.T) {
	cfg := Config{RTT: 2 * time.Millisecond, Rate: 10 * units.Mbit, Window: AutotunedWindow, Duplex: Mismatch, Seed: 1}
	// One direction at a time never collides.
	for _, d := range []direction{forward, reverse} {
		fwd, rev, rec := newTestFlows(t, cfg)
		f := map[direction]*flow{forward: fwd, reverse: rev}[d]
		simulate(&sender{f: f, left: 1 << 20, now: t0})
		if st := rec.snapshot(); st.Forward.LostSegments+st.Reverse.LostSegments != 0 {
			t.Errorf("%s alone: %d+%d segments lost, want none", d, st.Forward.LostSegments, st.Reverse.LostSegments)
		}
	}
	// Both directions at once: the full-duplex end's frames collide with the
	// half-duplex end's and are lost there; while the half-duplex end keeps
	// sending, the retransmissions collide too and the timeout doubles.
	fwd, rev, rec := newTestFlows(t, cfg)
	a := &sender{f: fwd, left: 1 << 20, now: t0}
	b := &sender{f: rev, left: 1 << 20, now: t0}
	for a.left > 0 || b.left > 0 {
		b.step(DefaultMSS)
		a.step(DefaultMSS)
	}
	st := rec.snapshot()
	if st.Reverse.LostSegments != 0 {
		t.Errorf("reverse (half-duplex end) lost %d segments; it defers instead", st.Reverse.LostSegments)
	}
	collided := 0
	for _, s := range a.segs {
		if s.deliver.Sub(t0) > cfg.RetransmitTimeout() {
			collided++
		}
	}
	if collided == 0 || st.Forward.LostSegments <= int64(collided) {
		t.Errorf("both directions busy: %d forward segments delayed beyond an RTO, %d losses; want collisions and repeated ones",
			collided, st.Forward.LostSegments)
	}
	fwdDone := a.segs[len(a.segs)-1].deliver.Sub(t0)
	revDone := b.segs[len(b.segs)-1].deliver.Sub(t0)
	// Alone, 1 MiB takes 0.84 s at 10 Mbit/s; sharing a half-duplex medium
	// both would finish by 1.7 s. The mismatch must do worse than sharing.
	if fwdDone < 2*time.Second {
		t.Errorf("forward done after %v despite %d collisions, want worse than half duplex (1.7s)", fwdDone, st.Forward.LostSegments)
	}
	t.Logf("mismatch, both busy: %d forward transmissions lost; forward done after %v, reverse after %v (alone: 0.84s each)",
		st.Forward.LostSegments, fwdDone, revDone)
}

func TestModelShadowCollisions(t *testing.T) {
	// A server frame of 1,000 bytes on the air from t0 for about 0.8 ms at
	// 10 Mbit/s; a client frame that starts under it would collide at a
	// duplex mismatch, one 2 ms later would not. A full-duplex link with a
	// rate loses neither but counts the first as a shadow collision; a link
	// without a rate has no airtime to overlap; a mismatch loses it.
	for _, tt := range []struct {
		name         string
		cfg          Config
		shadow, lost int64
	}{
		{"full duplex with a rate", Config{RTT: time.Millisecond, Rate: 10 * units.Mbit, Seed: 1}, 1, 0},
		{"no rate", Config{RTT: time.Millisecond, Seed: 1}, 0, 0},
		{"mismatch", Config{RTT: time.Millisecond, Rate: 10 * units.Mbit, Duplex: Mismatch, Seed: 1}, 0, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fwd, rev, rec := newTestFlows(t, tt.cfg)
			rev.notBefore, fwd.notBefore = t0, t0 // the handshake is not what is tested
			rev.admit(t0, 1000, nil)
			fwd.admit(t0.Add(100*time.Microsecond), 100, nil)
			fwd.admit(t0.Add(2*time.Millisecond), 100, nil)
			st := rec.snapshot()
			if st.Forward.ShadowCollisions != tt.shadow || st.Forward.LostSegments != tt.lost {
				t.Errorf("shadow collisions %d, lost %d; want %d and %d", st.Forward.ShadowCollisions, st.Forward.LostSegments, tt.shadow, tt.lost)
			}
			if st.Reverse.ShadowCollisions != 0 {
				t.Errorf("reverse: %d shadow collisions; only client frames collide", st.Reverse.ShadowCollisions)
			}
		})
	}
}
