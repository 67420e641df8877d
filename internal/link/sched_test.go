package link

import (
	"bytes"
	"io"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dbrig/dbrig/internal/units"
)

// These tests run the proxy's real goroutines (reader, scheduler, window
// gate) between in-memory connections on synctest's fake clock, so every
// time they check is exact.

func TestLinkPingPongExact(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := Config{RTT: 20 * time.Millisecond, Rate: 10 * units.Mbit}
		_, client, server := memLink(t, cfg)
		go func() {
			req := make([]byte, 100)
			for {
				if _, err := io.ReadFull(server, req); err != nil {
					return
				}
				server.Write(make([]byte, 200))
			}
		}()
		// At 10 Mbit/s 100 bytes take 80 µs on the wire and 200 bytes 160 µs.
		exchange := cfg.RTT + 240*time.Microsecond
		rsp := make([]byte, 200)
		for i := range 5 {
			start := time.Now()
			client.Write(make([]byte, 100))
			if _, err := io.ReadFull(client, rsp); err != nil {
				t.Fatalf("exchange %d: %v", i, err)
			}
			want := exchange
			if i == 0 {
				want += cfg.RTT // a new connection first pays the TCP handshake
			}
			if got := time.Since(start); got != want {
				t.Errorf("exchange %d took %v, want %v", i, got, want)
			}
			time.Sleep(time.Second) // idle time earns no credit
		}
	})
}

func TestLinkWindowExact(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const windows = 40
		cfg := Config{RTT: 100 * time.Millisecond, Window: LegacyWindow}
		p, client, server := memLink(t, cfg)
		start := time.Now()
		go func() {
			client.Write(make([]byte, windows*LegacyWindow))
			client.CloseWrite()
		}()
		if _, err := io.ReadFull(server, make([]byte, windows*LegacyWindow)); err != nil {
			t.Fatalf("receive %d windows: %v", windows, err)
		}
		// The handshake takes one RTT, then each window is delivered half an
		// RTT after it is sent and acknowledged half an RTT later.
		if got, want := time.Since(start), cfg.RTT*3/2+(windows-1)*cfg.RTT; got != want {
			t.Errorf("%d windows took %v, want %v", windows, got, want)
		}
		// The FIN follows the last data at once.
		if n, err := server.Read(make([]byte, 1)); n != 0 || err != io.EOF {
			t.Fatalf("after the data: read %d bytes, %v; want EOF", n, err)
		}
		if got, want := time.Since(start), cfg.RTT*3/2+(windows-1)*cfg.RTT; got != want {
			t.Errorf("FIN after %v, want %v", got, want)
		}
		st := p.Stats().Forward
		rate := units.Rate(float64((windows-1)*LegacyWindow) * 8 / st.LastDelivery.Sub(st.FirstDelivery).Seconds())
		if rate != 5.24280*units.Mbit {
			t.Errorf("steady rate %v bit/s, want 65535 B / 100 ms = 5242800 bit/s", float64(rate))
		}
		// The series books bytes when they are delivered (every 100 ms from
		// 150 ms on), not when they are read (at 0 and from 200 ms on).
		for i, b := range st.Series {
			want := int64(0)
			if i >= 150 && (i-150)%100 == 0 {
				want = LegacyWindow
			}
			if b != want {
				t.Fatalf("series bucket %d ms holds %d bytes, want %d", i, b, want)
			}
		}
		// The sender waits once per window but the last: two RTTs for the
		// first (with the handshake), one for each other.
		if want := windows * cfg.RTT; st.WindowStalls != windows-1 || st.StallTime != want {
			t.Errorf("%d window stalls for %v, want %d for %v", st.WindowStalls, st.StallTime, windows-1, want)
		}
		if st.MaxInFlight != LegacyWindow {
			t.Errorf("max in flight %d, want %d", st.MaxInFlight, LegacyWindow)
		}
	})
}

func TestLinkFINFollowsData(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := Config{ForwardDelay: 30 * time.Millisecond, ReverseDelay: 10 * time.Millisecond}
		_, client, server := memLink(t, cfg)
		time.Sleep(time.Second) // past the handshake
		msg := bytes.Repeat([]byte("abc"), 10000)
		start := time.Now()
		client.Write(msg)
		client.CloseWrite()
		got, err := io.ReadAll(server) // returns at the FIN
		if err != nil || !bytes.Equal(got, msg) {
			t.Fatalf("server read %d bytes (%v), want the %d sent", len(got), err, len(msg))
		}
		if took := time.Since(start); took != cfg.ForwardDelay {
			t.Errorf("data and FIN arrived after %v, want the forward delay %v", took, cfg.ForwardDelay)
		}
		// The other direction still works after the half close.
		start = time.Now()
		server.Write([]byte("bye"))
		server.CloseWrite()
		got, err = io.ReadAll(client)
		if err != nil || string(got) != "bye" {
			t.Fatalf("client read %q (%v), want \"bye\"", got, err)
		}
		if took := time.Since(start); took != cfg.ReverseDelay {
			t.Errorf("reply and FIN arrived after %v, want the reverse delay %v", took, cfg.ReverseDelay)
		}
	})
}

func TestLinkSharedMedium(t *testing.T) {
	// Two connections on one 8 Mbit/s link share its wire: a 1 MB transfer on
	// one delays a small message on the other by its queue.
	synctest.Test(t, func(t *testing.T) {
		cfg := Config{RTT: 10 * time.Millisecond, Rate: 8 * units.Mbit} // 1 byte per µs
		p, err := newProxy(cfg, withClock(timerClock{}))
		if err != nil {
			t.Fatal(err)
		}
		var clients, servers [2]*memConn
		for i := range 2 {
			c, pc := memPipe(1 << 20)
			ps, s := memPipe(1 << 20)
			clients[i], servers[i] = c, s
			p.wg.Go(func() { p.handle(pc, ps) })
		}
		defer p.Close()
		time.Sleep(time.Second)
		start := time.Now()
		clients[0].Write(make([]byte, 1000000)) // fits the pipe: one read of up to 64 KiB at a time
		synctest.Wait()
		clients[1].Write([]byte("x"))
		buf := make([]byte, 1)
		if _, err := io.ReadFull(servers[1], buf); err != nil {
			t.Fatal(err)
		}
		// The reader has taken what it read so far into the queue: at least
		// one 64 KiB read, serialized ahead of the small message.
		if took := time.Since(start); took < 5*time.Millisecond+chunkSize*time.Microsecond {
			t.Errorf("small message after a bulk write on another connection took %v, want it queued behind at least %v", took, chunkSize*time.Microsecond)
		}
		for _, c := range clients {
			c.Close()
		}
		for _, s := range servers {
			s.Close()
		}
	})
}

// TestLinkLatenessLeavesOutTheReceiversTime: the link's lateness is when
// its write began against the model's time. A receiver that takes its
// bytes late (here a full pipe read after a second; on a socket, a
// receiver the kernel wakes on the link's CPU and runs before the write
// returns) does not make the link late: the bytes were there on time.
func TestLinkLatenessLeavesOutTheReceiversTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p, err := newProxy(Config{RTT: 20 * time.Millisecond}, withClock(timerClock{}))
		if err != nil {
			t.Fatal(err)
		}
		client, pc := memPipe(64 << 10)
		ps, server := memPipe(1000) // the write of 10,000 bytes fills it
		p.wg.Go(func() { p.handle(pc, ps) })
		defer p.Close()
		defer client.Close()
		time.Sleep(time.Second) // past the handshake
		client.Write(make([]byte, 10000))
		time.Sleep(time.Second)
		if _, err := io.ReadFull(server, make([]byte, 10000)); err != nil {
			t.Fatal(err)
		}
		server.Close()
		if late := p.Stats().Forward.MaxLateness; late != 0 {
			t.Errorf("the link was %v late delivering to a receiver that read a second later, want 0", late)
		}
	})
}

// TestLinkStreamIsNotSpunFor: on a short delay a server's stream of small
// messages comes further apart than the one-way delay, each answering
// nothing: the scheduler must not spin for each (a spin per message took
// the CPU from the server, which then sent its messages further apart
// still), while each reply of an exchange at the same pace is still spun
// for, and both keep the model's delivery times.
func TestLinkStreamIsNotSpunFor(t *testing.T) {
	const (
		messages = 200
		gap      = 50 * time.Microsecond // infiniband's one-way delay is 10 µs
	)
	cfg, err := ParseProfile("infiniband")
	if err != nil {
		t.Fatal(err)
	}
	oneWay := cfg.EffectiveRTT()/2 + cfg.SerializationTime(100)
	synctest.Test(t, func(t *testing.T) {
		p, client, server := memLink(t, cfg)
		time.Sleep(time.Second) // past the handshake
		sent := make(chan struct{})
		go func() {
			defer close(sent)
			for i := range messages {
				if i > 0 {
					time.Sleep(gap)
				}
				server.Write(make([]byte, 100))
			}
		}()
		defer func() { <-sent }()
		start := time.Now()
		buf := make([]byte, 100)
		for i := range messages {
			if _, err := io.ReadFull(client, buf); err != nil {
				t.Fatal(err)
			}
			if got, want := time.Since(start), time.Duration(i)*gap+oneWay; got != want {
				t.Fatalf("message %d of the stream arrived after %v, want %v", i, got, want)
			}
		}
		if spun := p.Stats().Reverse.Spun.Writes; spun > 1 {
			t.Errorf("the scheduler spun for %d of a stream's %d messages, want at most the first", spun, messages)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		p, client, server := memLink(t, cfg)
		time.Sleep(time.Second)
		go func() {
			buf := make([]byte, 100)
			for {
				if _, err := io.ReadFull(server, buf); err != nil {
					return
				}
				server.Write(buf)
			}
		}()
		buf := make([]byte, 100)
		for range messages {
			client.Write(buf)
			if _, err := io.ReadFull(client, buf); err != nil {
				t.Fatal(err)
			}
			time.Sleep(gap)
		}
		if spun := p.Stats().Reverse.Spun.Writes; spun != messages {
			t.Errorf("the scheduler spun for %d of an exchange's %d replies, want each", spun, messages)
		}
	})
}
