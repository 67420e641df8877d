package link

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/units"
)

// These tests measure the link on the wall clock through real loopback
// sockets. The emulation can only be late, never early: a goroutine wakes a
// little after its deadline, more so on a busy machine, and the test's own
// sender and receiver can be kept off the CPU too. So the tolerances are
// asymmetric: loose below the model (-15%, though an idle machine measures
// within 1%), tight above it (+2%: faster than the model is a bug).

// bulk sends n bytes from the client through a link with cfg to a server
// that counts them, and returns the steady rate the server saw: the slope of
// a least-squares line through (time, bytes received) over the middle 80%
// of the transfer. That leaves out the start-up (handshake, first delay) and
// is not thrown by a single late delivery the way first-to-last timing is.
func bulk(t *testing.T, cfg Config, n int) (units.Rate, Stats) {
	t.Helper()
	type point struct {
		at  time.Time
		sum int
	}
	results := make(chan []point, 1)
	up := serveTCP(t, func(c net.Conn) {
		var pts []point
		buf := make([]byte, 256<<10)
		sum := 0
		for {
			k, err := c.Read(buf)
			if k > 0 {
				sum += k
				pts = append(pts, point{time.Now(), sum})
			}
			if err != nil {
				break
			}
		}
		results <- pts
	})
	p := startLink(t, up, cfg)
	c := dial(t, p.Addr())
	if _, err := c.Write(make([]byte, n)); err != nil {
		t.Fatalf("write %d bytes: %v", n, err)
	}
	c.CloseWrite()
	var pts []point
	select {
	case pts = <-results:
	case <-time.After(30 * time.Second):
		t.Fatalf("bulk transfer of %d bytes through %v did not finish in 30s", n, cfg)
	}
	if len(pts) == 0 || pts[len(pts)-1].sum != n {
		t.Fatalf("server received %d reads, want %d bytes in all", len(pts), n)
	}
	var sx, sy, sxx, sxy, k float64
	for _, pt := range pts {
		if pt.sum < n/10 || pt.sum > n*9/10 {
			continue
		}
		x, y := pt.at.Sub(pts[0].at).Seconds(), float64(pt.sum)
		sx, sy, sxx, sxy, k = sx+x, sy+y, sxx+x*x, sxy+x*y, k+1
	}
	slope := (k*sxy - sx*sy) / (k*sxx - sx*sx)
	return units.Rate(slope * 8), p.Stats()
}

func TestFidelityWindow(t *testing.T) {
	for _, tt := range []struct {
		rtt            time.Duration
		window, sndbuf units.Size
	}{
		{50 * time.Millisecond, LegacyWindow, 0},
		{20 * time.Millisecond, 256 * units.KiB, 0},
		// The 2003 stack: the 8 KB send buffer bounds what is in flight.
		{50 * time.Millisecond, LegacyWindow, LegacySendBuffer},
	} {
		cfg := Config{RTT: tt.rtt, Window: tt.window, SendBuffer: tt.sndbuf, Rate: units.Gbit}
		want, inFlight := cfg.BulkRate(), cfg.InFlight()
		// The lower bound on the best of three attempts: a busy machine
		// only slows a transfer (0.67 of the model once, beside the
		// parallel suite), while one faster than the model fails at once.
		best := 0.0
		for attempt := 1; attempt <= 3 && best < 0.85; attempt++ {
			// Whole windows, so the last round trip is a full one.
			got, st := bulk(t, cfg, int(inFlight)*int(2*time.Second/tt.rtt))
			ratio := float64(got) / float64(want)
			t.Logf("%s, attempt %d: %s, model %s, ratio %.4f; max in flight %d, %d window stalls",
				cfg, attempt, got, want, ratio, st.Forward.MaxInFlight, st.Forward.WindowStalls)
			if ratio > 1.02 {
				t.Errorf("%s: %s, faster than the model's %s (+2%%)", cfg, got, want)
			}
			if st.Forward.MaxInFlight != int64(inFlight) {
				t.Errorf("%s: max in flight %d, want %d", cfg, st.Forward.MaxInFlight, inFlight)
			}
			best = max(best, ratio)
		}
		if best < 0.85 {
			t.Errorf("%s: at best %.4f of the model's %s in 3 attempts (-15%%)", cfg, best, want)
		}
	}
}

func TestFidelityRate(t *testing.T) {
	for _, rate := range []units.Rate{20 * units.Mbit, 100 * units.Mbit} {
		cfg := Config{RTT: 10 * time.Millisecond, Window: AutotunedWindow, Rate: rate}
		n := int(rate.BytesPerSecond() * 0.6)
		// The lower bound on the best of three attempts, as the window's
		// test does: a busy machine can starve the receiver in one (0.596 of
		// 100 Mbit/s once at load average 31, on code that passed 2 of 3),
		// never make the link faster than its rate, so every attempt is
		// held to the upper bound.
		best := 0.0
		for attempt := 1; attempt <= 3 && best < 0.85; attempt++ {
			start := time.Now()
			got, st := bulk(t, cfg, n)
			// The whole transfer, from before the link started to after the
			// last byte arrived: a busy machine only lengthens it, so it can
			// never beat the rate. The receiver's own slope can, when its
			// reads come late and in bursts (103.8 % once at load average 14),
			// so it is held to the rate only from below.
			whole := units.Rate(float64(n) * 8 / time.Since(start).Seconds())
			ratio := float64(got) / float64(rate)
			best = max(best, ratio)
			t.Logf("rate %s, attempt %d: %s, ratio %.4f; whole transfer %s; Throughput() %s", rate, attempt, got, ratio, whole, st.Forward.Throughput())
			if whole > rate*102/100 {
				t.Errorf("rate %s: the whole transfer ran at %s, faster than the rate (+2%%)", rate, whole)
			}
		}
		if best < 0.85 {
			t.Errorf("rate %s: at best %.4f of the rate in 3 attempts (-15%%)", rate, best)
		}
	}
}

// pingPong runs n request/response exchanges of the given sizes after one
// warm-up exchange (which also pays the handshake) and returns their times.
func pingPong(t *testing.T, p *Proxy, n, req, rsp int) []time.Duration {
	t.Helper()
	c := dial(t, p.Addr())
	reqBuf, rspBuf := make([]byte, req), make([]byte, rsp)
	var rtts []time.Duration
	for i := range n + 1 {
		start := time.Now()
		if _, err := c.Write(reqBuf); err != nil {
			t.Fatalf("exchange %d: write: %v", i, err)
		}
		if _, err := io.ReadFull(c, rspBuf); err != nil {
			t.Fatalf("exchange %d: read: %v", i, err)
		}
		if i > 0 {
			rtts = append(rtts, time.Since(start))
		}
	}
	return rtts
}

// respond answers every req-byte request with rsp bytes.
func respond(req, rsp int) func(net.Conn) {
	return func(c net.Conn) {
		in, out := make([]byte, req), make([]byte, rsp)
		for {
			if _, err := io.ReadFull(c, in); err != nil {
				return
			}
			if _, err := c.Write(out); err != nil {
				return
			}
		}
	}
}

func TestFidelityPingPong(t *testing.T) {
	for _, cfg := range []Config{
		{RTT: 20 * time.Millisecond},
		{RTT: 20 * time.Millisecond, Rate: 10 * units.Mbit},
		{RTT: time.Millisecond, Rate: units.Gbit},
	} {
		up := serveTCP(t, respond(100, 1000))
		p := startLink(t, up, cfg)
		rtts := pingPong(t, p, 40, 100, 1000)
		want := cfg.EffectiveRTT()
		if cfg.Rate > 0 {
			want += time.Duration(1100 * 8e9 / float64(cfg.Rate))
		}
		// Never early: that would break the physics. Late by the wake-up of
		// the test's own client and server goroutines after each idle wait
		// (tens to hundreds of microseconds on a VM, more when busy), which a
		// real network's endpoints pay too, and by the link's own error,
		// which its stats report separately.
		for i, rtt := range rtts {
			if rtt < want {
				t.Errorf("%v: exchange %d took %v, less than the model's %v", cfg, i, rtt, want)
			}
		}
		// Single exchanges can be late by the OS's time slice when the
		// machine's cores are saturated. The median may exceed the model only
		// by the endpoints' wake-ups (1 ms is ample) and by the link's own
		// lateness, which it measures: two deliveries per exchange. On a quiet
		// machine that lateness is tens of microseconds; when the OS keeps the
		// proxy off the CPU it grows, and this bound with it. A model error
		// (a delay counted twice, a lost wake-up) is not explained by it.
		slices.Sort(rtts)
		med, p90 := rtts[len(rtts)/2], rtts[len(rtts)*9/10]
		st := p.Stats()
		late := max(st.Forward.MeanLateness, st.Reverse.MeanLateness)
		if bound := want + time.Millisecond + 2*late; med > bound {
			t.Errorf("%v: exchanges took median %v, want within %v + 1ms + twice the link's mean lateness %v = %v",
				cfg, med, want, late, bound)
		}
		t.Logf("%v: model %v; measured median %v (+%v), p90 +%v, max +%v; link's own lateness mean %v / %v, max %v / %v",
			cfg, want, med, med-want, p90-want, rtts[len(rtts)-1]-want,
			st.Forward.MeanLateness, st.Reverse.MeanLateness, st.Forward.MaxLateness, st.Reverse.MaxLateness)
	}
}

// TestContentAndOrder sends random data in random write sizes both ways at
// once through several links and checks every byte arrives, in order.
func TestContentAndOrder(t *testing.T) {
	up := serveTCP(t, echo)
	for _, cfg := range []Config{
		{},
		{RTT: 2 * time.Millisecond, Rate: 200 * units.Mbit, Window: 256 * units.KiB},
		{RTT: 4 * time.Millisecond, Jitter: 3 * time.Millisecond, Loss: 0.01, RTO: 5 * time.Millisecond, MSS: 536},
		{RTT: time.Millisecond, Rate: 100 * units.Mbit, Duplex: HalfDuplex},
		{RTT: time.Millisecond, Rate: 100 * units.Mbit, Duplex: Mismatch, RTO: 2 * time.Millisecond},
	} {
		p := startLink(t, up, cfg)
		c := dial(t, p.Addr())
		rng := rand.New(rand.NewPCG(1, 2))
		data := make([]byte, 2<<20)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		var werr error
		var wg sync.WaitGroup
		wg.Go(func() {
			for rest := data; len(rest) > 0; {
				n := min(len(rest), 1+rng.IntN(40000))
				if _, werr = c.Write(rest[:n]); werr != nil {
					return
				}
				rest = rest[n:]
			}
			werr = c.CloseWrite()
		})
		h := sha256.New()
		n, err := io.Copy(h, c)
		wg.Wait()
		if werr != nil || err != nil {
			t.Fatalf("%v: write: %v, read: %v", cfg, werr, err)
		}
		if want := sha256.Sum256(data); n != int64(len(data)) || !bytes.Equal(h.Sum(nil), want[:]) {
			t.Errorf("%v: echoed %d bytes with a different checksum, want the %d sent", cfg, n, len(data))
		}
		st := p.Stats()
		if st.Forward.Bytes != int64(len(data)) || st.Reverse.Bytes != int64(len(data)) {
			t.Errorf("%v: stats count %d forward and %d reverse bytes, want %d each", cfg, st.Forward.Bytes, st.Reverse.Bytes, len(data))
		}
		if cfg.Loss > 0 && st.Forward.LostSegments == 0 {
			t.Errorf("%v: no segment lost", cfg)
		}
		t.Logf("%v: %d segments forward, %d lost; max jitter %v", cfg, st.Forward.Segments, st.Forward.LostSegments, st.Forward.MaxJitter)
	}
}

func TestHalfClosePropagates(t *testing.T) {
	for _, cfg := range []Config{{}, {RTT: 10 * time.Millisecond}} {
		// The server reads until EOF, then answers and closes its side.
		up := serveTCP(t, func(c net.Conn) {
			got, _ := io.ReadAll(c)
			c.Write(append([]byte("got "), got...))
			c.(*net.TCPConn).CloseWrite()
			io.Copy(io.Discard, c)
		})
		p := startLink(t, up, cfg)
		c := dial(t, p.Addr())
		c.Write([]byte("hello"))
		c.CloseWrite()
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		got, err := io.ReadAll(c)
		if err != nil || string(got) != "got hello" {
			t.Errorf("%v: client read %q, %v; want \"got hello\" and EOF", cfg, got, err)
		}
	}
}

func TestResetPropagates(t *testing.T) {
	for _, cfg := range []Config{{}, {RTT: 4 * time.Millisecond, Rate: 100 * units.Mbit}} {
		t.Run("server resets/"+cfg.String(), func(t *testing.T) {
			up := serveTCP(t, func(c net.Conn) {
				io.ReadFull(c, make([]byte, 5))
				c.(*net.TCPConn).SetLinger(0)
				c.Close()
			})
			p := startLink(t, up, cfg)
			c := dial(t, p.Addr())
			c.Write([]byte("hello"))
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := c.Read(make([]byte, 1)); !isReset(err) {
				t.Errorf("client read %v, want connection reset", err)
			}
		})
		t.Run("client resets/"+cfg.String(), func(t *testing.T) {
			errs := make(chan error, 1)
			up := serveTCP(t, func(c net.Conn) {
				c.SetReadDeadline(time.Now().Add(5 * time.Second))
				_, err := io.Copy(io.Discard, c)
				errs <- err
			})
			p := startLink(t, up, cfg)
			c := dial(t, p.Addr())
			c.Write([]byte("hello"))
			time.Sleep(20 * time.Millisecond)
			c.SetLinger(0)
			c.Close()
			if err := <-errs; !isReset(err) {
				t.Errorf("server read %v, want connection reset", err)
			}
		})
		t.Run("ResetConnections/"+cfg.String(), func(t *testing.T) {
			errs := make(chan error, 10)
			up := serveTCP(t, func(c net.Conn) {
				c.SetDeadline(time.Now().Add(5 * time.Second))
				_, err := io.Copy(c, c)
				errs <- err
			})
			p := startLink(t, up, cfg)
			c := dial(t, p.Addr())
			c.SetDeadline(time.Now().Add(5 * time.Second))
			c.Write([]byte("hello"))
			if _, err := io.ReadFull(c, make([]byte, 5)); err != nil {
				t.Fatalf("echo before the reset: %v", err)
			}
			p.ResetConnections()
			if _, err := c.Read(make([]byte, 1)); !isReset(err) {
				t.Errorf("client read %v after ResetConnections, want connection reset", err)
			}
			if err := <-errs; !isReset(err) {
				t.Errorf("server read %v after ResetConnections, want connection reset", err)
			}
			// The link still carries new connections.
			c = dial(t, p.Addr())
			c.SetDeadline(time.Now().Add(5 * time.Second))
			c.Write([]byte("again"))
			if _, err := io.ReadFull(c, make([]byte, 5)); err != nil {
				t.Errorf("echo on a new connection after ResetConnections: %v", err)
			}
		})
	}
}

func TestUnixUpstream(t *testing.T) {
	path := filepath.Join(t.TempDir(), ".s.PGSQL.5432")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatalf("listen on unix socket: %v", err)
	}
	serveOn(t, ln, echo)
	for _, cfg := range []Config{{}, {RTT: 2 * time.Millisecond}} {
		p := startLink(t, "unix:"+path, cfg)
		c := dial(t, p.Addr())
		c.Write([]byte("over a unix socket"))
		c.CloseWrite()
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if got, err := io.ReadAll(c); err != nil || string(got) != "over a unix socket" {
			t.Errorf("%v: echo through unix upstream: %q, %v", cfg, got, err)
		}
	}
}

func TestManyConnectionsThenClose(t *testing.T) {
	up := serveTCP(t, echo)
	for _, cfg := range []Config{{}, {RTT: 2 * time.Millisecond, Window: LegacyWindow, Rate: units.Gbit}} {
		before := settleGoroutines(0, 0)
		p, err := Listen(t.Context(), "127.0.0.1:0", up, cfg)
		if err != nil {
			t.Fatal(err)
		}
		const n = 200
		conns := make([]net.Conn, n)
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := range n {
			c, err := net.Dial("tcp", p.Addr())
			if err != nil {
				t.Fatalf("dial connection %d: %v", i, err)
			}
			conns[i] = c
			wg.Go(func() {
				msg := []byte(strings.Repeat("x", 1000+i))
				c.Write(msg)
				if _, err := io.ReadFull(c, make([]byte, len(msg))); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("%v: echo: %v", cfg, err)
		}
		st := p.Stats()
		if st.Connections != n || st.ActiveConnections != n {
			t.Errorf("%v: %d connections, %d active; want %d and %d", cfg, st.Connections, st.ActiveConnections, n, n)
		}
		// Close with all connections open: it must end every goroutine.
		if err := p.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		if got := p.Stats().ActiveConnections; got != 0 {
			t.Errorf("%v: %d connections active after Close", cfg, got)
		}
		for _, c := range conns {
			c.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := c.Read(make([]byte, 1)); err == nil {
				t.Errorf("%v: a connection still reads after Close", cfg)
				break
			}
			c.Close()
		}
		if after := settleGoroutines(before, 5*time.Second); after > before {
			t.Errorf("%v: %d goroutines before, %d after Close", cfg, before, after)
		}
	}
}

func TestContextCancelCloses(t *testing.T) {
	up := serveTCP(t, echo)
	ctx, cancel := context.WithCancel(t.Context())
	p, err := Listen(ctx, "127.0.0.1:0", up, Config{RTT: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	c := dial(t, p.Addr())
	c.Write([]byte("x"))
	io.ReadFull(c, make([]byte, 1))
	cancel()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("read after the context was cancelled: %v, want the connection closed", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", p.Addr(), time.Second)
		if err != nil {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatalf("the link still accepts connections after its context was cancelled")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := p.Close(); err != nil {
		t.Errorf("Close after cancel: %v", err)
	}
}

func TestListenErrors(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, tt := range []struct {
		listen, upstream string
		cfg              Config
		want             string
	}{
		{taken.Addr().String(), "127.0.0.1:1", Config{}, taken.Addr().String()},
		{"127.0.0.1:0", "unix:", Config{}, "upstream"},
		{"127.0.0.1:0", "127.0.0.1:1", Config{Window: 100}, "window"},
		{"127.0.0.1:0", "127.0.0.1:1", Config{Loss: 1}, "loss"},
	} {
		p, err := Listen(t.Context(), tt.listen, tt.upstream, tt.cfg)
		if err == nil {
			p.Close()
			t.Errorf("Listen(%q, %q, %v) succeeded, want an error", tt.listen, tt.upstream, tt.cfg)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Listen(%q, %q, %v): %v, want it to mention %q", tt.listen, tt.upstream, tt.cfg, err, tt.want)
		}
	}
}

func TestUpstreamDownResetsClient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	p := startLink(t, dead, Config{})
	c, err := net.DialTimeout("tcp", p.Addr(), 5*time.Second)
	if err != nil {
		if !isReset(err) {
			t.Errorf("dial a link whose upstream is down: %v, want success or a reset", err)
		}
		return // the reset came before the dial had finished
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); !isReset(err) && err != io.EOF {
		t.Errorf("read through a link whose upstream is down: %v, want a reset", err)
	}
}

// TestReceiveBufferHoldsAMillisecondAtTheRate: an impaired link's legs ask
// for a receive buffer of what arrives in a millisecond at the link's rate
// (at least 32 KiB, at most a window), and leave the kernel's autotuning on
// past 1 MiB: with 32 KiB a 10 Gbit/s link's reader was woken so often that
// it carried 0.41 of the rate.
func TestReceiveBufferHoldsAMillisecondAtTheRate(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		profile string
		want    int
	}{
		{"lan-1g", 125000},
		{"tukwila-dublin+legacy-window", LegacyWindow},
		{"rtt-77ms", 125000},
		{"lan-10g", 0},
		{"infiniband", 0},
	} {
		cfg, err := ParseProfile(tt.profile)
		if err != nil {
			t.Fatal(err)
		}
		if got := receiveBuffer(cfg); got != tt.want {
			t.Errorf("%s: receive buffer %d, want %d", tt.profile, got, tt.want)
		}
	}
	for _, tt := range []struct {
		cfg  Config
		want int
	}{
		{Config{RTT: 10 * time.Millisecond, Rate: 20 * units.Mbit, Window: AutotunedWindow}, minRcvBuf},
		{Config{RTT: time.Millisecond, Window: AutotunedWindow}, 0},
		{Config{RTT: time.Millisecond}, 0},
	} {
		if got := receiveBuffer(tt.cfg); got != tt.want {
			t.Errorf("%v: receive buffer %d, want %d", tt.cfg, got, tt.want)
		}
	}
}
