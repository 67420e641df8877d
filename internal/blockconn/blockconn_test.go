package blockconn

import (
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
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
	c, _ := dialed(t, "tcp")
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
}
