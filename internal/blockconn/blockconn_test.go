package blockconn

import (
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// peer listens on network and returns the address and the accepted
// server side of the first connection.
func peer(t *testing.T, network string) (string, <-chan net.Conn) {
	t.Helper()
	addr := "127.0.0.1:0"
	if network == "unix" {
		addr = filepath.Join(t.TempDir(), "s")
	}
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted := make(chan net.Conn, 1)
	go func() { // ends with the listener
		c, err := ln.Accept()
		if err == nil {
			t.Cleanup(func() { c.Close() })
			accepted <- c
		}
		close(accepted)
	}()
	return ln.Addr().String(), accepted
}

func dialed(t *testing.T, network string) (*Conn, net.Conn) {
	t.Helper()
	addr, accepted := peer(t, network)
	c, err := Dial(t.Context(), network, addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c.(*Conn), <-accepted
}

func TestRoundTripsAndEOF(t *testing.T) {
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) {
			c, srv := dialed(t, network)
			if n, err := c.Write([]byte("ping")); n != 4 || err != nil {
				t.Fatalf("write: %d, %v", n, err)
			}
			buf := make([]byte, 16)
			if n, err := io.ReadFull(srv, buf[:4]); n != 4 || err != nil || string(buf[:4]) != "ping" {
				t.Fatalf("server read %q, %v", buf[:n], err)
			}
			srv.Write([]byte("pong"))
			if n, err := io.ReadFull(c, buf[:4]); n != 4 || err != nil || string(buf[:4]) != "pong" {
				t.Fatalf("client read %q, %v", buf[:n], err)
			}
			srv.Close()
			if _, err := c.Read(buf); err != io.EOF {
				t.Errorf("after the peer closed: %v, want EOF", err)
			}
			if c.RemoteAddr() == nil || c.LocalAddr() == nil {
				t.Error("no addresses")
			}
		})
	}
}

// readResult runs a Read in the background.
func readResult(c *Conn) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 8))
		done <- err
	}()
	return done
}

func TestAWaitingReadEnds(t *testing.T) {
	cases := []struct {
		name string
		end  func(c *Conn)
		want func(error) bool
	}{
		{"interrupt", func(c *Conn) { c.Interrupt() }, func(err error) bool { return err != nil }},
		{"deadline now", func(c *Conn) { _ = c.SetDeadline(time.Now()) }, func(err error) bool { return err != nil }},
		{"close", func(c *Conn) { _ = c.Close() }, func(err error) bool { return err != nil }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := dialed(t, "unix")
			done := readResult(c)
			time.Sleep(50 * time.Millisecond) // the read is waiting in the kernel
			tc.end(c)
			select {
			case err := <-done:
				if !tc.want(err) {
					t.Errorf("read returned %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the waiting read did not return")
			}
			if _, err := c.Write([]byte("x")); err == nil {
				t.Error("a write after the end succeeded")
			}
		})
	}
}

func TestReadDeadlineTimesOut(t *testing.T) {
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) {
			c, _ := dialed(t, network)
			if err := c.SetReadDeadline(time.Now().Add(50 * time.Millisecond)); err != nil {
				t.Fatal(err)
			}
			_, err := c.Read(make([]byte, 8))
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() || !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("read past the deadline: %v, want a timeout", err)
			}
			// No deadline: the connection works again.
			if err := c.SetDeadline(time.Time{}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Write([]byte("x")); err != nil {
				t.Errorf("write after the deadline was cleared: %v", err)
			}
			if err := c.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
			if err := c.Close(); !errors.Is(err, net.ErrClosed) {
				t.Errorf("second close: %v, want net.ErrClosed", err)
			}
		})
	}
}

// voluntarySwitches is how many times the calling thread has slept.
func voluntarySwitches(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/thread-self/status")
	if err != nil {
		t.Skipf("no thread status to count switches with: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "voluntary_ctxt_switches:"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no voluntary_ctxt_switches in /proc/thread-self/status")
	return 0
}

// TestReadSleepsOncePerAnswer: a reader waiting on a unix socket wakes for
// the answer only. The peer here takes each request while the reader
// waits, then answers: taking it gives back room in the reader's send
// buffer, which wakes a reader asleep in read(2) for nothing (two sleeps a
// round trip, where pgbench's ppoll sleeps once).
func TestReadSleepsOncePerAnswer(t *testing.T) {
	t.Parallel()
	c, srv := dialed(t, "unix")
	const rounds = 40
	served := make(chan error, 1)
	go func() {
		buf := make([]byte, 4)
		for range rounds {
			time.Sleep(time.Millisecond) // the reader is waiting by now
			if _, err := io.ReadFull(srv, buf); err != nil {
				served <- err
				return
			}
			time.Sleep(time.Millisecond) // and waits again for the answer
			if _, err := srv.Write([]byte("pong")); err != nil {
				served <- err
				return
			}
		}
		served <- nil
	}()
	runtime.LockOSThread() // the switches counted are this thread's
	defer runtime.UnlockOSThread()
	buf := make([]byte, 4)
	before := voluntarySwitches(t)
	for range rounds {
		if _, err := c.Write([]byte("ping")); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(c, buf); err != nil {
			t.Fatal(err)
		}
	}
	slept := voluntarySwitches(t) - before
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	perTrip := float64(slept) / rounds
	t.Logf("the reader slept %.2f times a round trip", perTrip)
	if perTrip > 1.5 {
		t.Errorf("the reader slept %.2f times a round trip, want about once (%d in %d round trips)", perTrip, slept, rounds)
	}
}

// TestAnEmptyReadDoesNotWait: a read into no room returns at once, as
// read(2) does, and does not wait for data to come.
func TestAnEmptyReadDoesNotWait(t *testing.T) {
	t.Parallel()
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) {
			c, _ := dialed(t, network)
			done := make(chan error, 1)
			go func() {
				_, err := c.Read(nil)
				done <- err
			}()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("empty read: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("an empty read waited for data") // the clean-up's Close ends it
			}
		})
	}
}

// TestAReadAfterAPastDeadlineEndsAsOnTCP: a deadline set in the past shuts
// the connection down, and a read after it ends in EOF on either network
// (pgconn closes a connection on EOF, and keeps one whose read timed out).
func TestAReadAfterAPastDeadlineEndsAsOnTCP(t *testing.T) {
	t.Parallel()
	for _, network := range []string{"tcp", "unix"} {
		t.Run(network, func(t *testing.T) {
			c, _ := dialed(t, network)
			if err := c.SetDeadline(time.Now()); err != nil {
				t.Fatal(err)
			}
			if _, err := c.Read(make([]byte, 8)); !errors.Is(err, io.EOF) {
				t.Errorf("read after a past deadline: %v, want EOF", err)
			}
		})
	}
}
