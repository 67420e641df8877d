package link

import (
	"context"
	"errors"
	"io"
	"net"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"
)

// memPipe returns the two ends of an in-memory, buffered, full-duplex
// connection that supports CloseWrite. Unlike a socket it blocks only on a
// sync.Cond, so a testing/synctest bubble can advance its fake clock while
// the proxy waits on it. limit is each direction's buffer, like a socket's.
func memPipe(limit int) (*memConn, *memConn) {
	ab, ba := newMemBuf(limit), newMemBuf(limit)
	return &memConn{rd: ba, wr: ab}, &memConn{rd: ab, wr: ba}
}

type memBuf struct {
	mu     sync.Mutex
	cond   sync.Cond
	data   []byte
	limit  int
	eof    bool // the writer closed its side
	closed bool // the reader closed its side
}

func newMemBuf(limit int) *memBuf {
	b := &memBuf{limit: limit}
	b.cond.L = &b.mu
	return b
}

type memConn struct{ rd, wr *memBuf }

func (c *memConn) Read(p []byte) (int, error) {
	b := c.rd
	b.mu.Lock()
	defer b.mu.Unlock()
	for len(b.data) == 0 && !b.eof && !b.closed {
		b.cond.Wait()
	}
	if b.closed {
		return 0, net.ErrClosed
	}
	if len(b.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p, b.data)
	b.data = b.data[n:]
	b.cond.Broadcast()
	return n, nil
}

func (c *memConn) Write(p []byte) (int, error) {
	b := c.wr
	b.mu.Lock()
	defer b.mu.Unlock()
	written := 0
	for len(p) > 0 {
		for len(b.data) >= b.limit && !b.closed && !b.eof {
			b.cond.Wait()
		}
		if b.closed {
			return written, syscall.EPIPE
		}
		if b.eof {
			return written, net.ErrClosed
		}
		n := min(len(p), b.limit-len(b.data))
		b.data = append(b.data, p[:n]...)
		p = p[n:]
		written += n
		b.cond.Broadcast()
	}
	return written, nil
}

func (c *memConn) CloseWrite() error {
	c.wr.mu.Lock()
	c.wr.eof = true
	c.wr.cond.Broadcast()
	c.wr.mu.Unlock()
	return nil
}

func (c *memConn) Close() error {
	c.CloseWrite()
	c.rd.mu.Lock()
	c.rd.closed = true
	c.rd.cond.Broadcast()
	c.rd.mu.Unlock()
	return nil
}

type memAddr struct{}

func (memAddr) Network() string { return "mem" }
func (memAddr) String() string  { return "mem" }

func (c *memConn) LocalAddr() net.Addr              { return memAddr{} }
func (c *memConn) RemoteAddr() net.Addr             { return memAddr{} }
func (c *memConn) SetDeadline(time.Time) error      { return nil }
func (c *memConn) SetReadDeadline(time.Time) error  { return nil }
func (c *memConn) SetWriteDeadline(time.Time) error { return nil }

// memLink runs a proxy on the fake clock between two in-memory connections
// and returns the client's and the server's ends. Call it inside a synctest
// bubble; the proxy is closed when the test ends.
func memLink(t testing.TB, cfg Config) (p *Proxy, client, server *memConn) {
	t.Helper()
	p, err := newProxy(cfg, withClock(timerClock{}), WithSeriesInterval(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	client, pc := memPipe(64 << 10)
	ps, server := memPipe(64 << 10)
	p.wg.Go(func() { p.handle(pc, ps) })
	t.Cleanup(func() {
		client.Close()
		server.Close()
		p.Close()
	})
	return p, client, server
}

// serveTCP runs handle on every connection to a new listener on a loopback
// port until the test ends, and returns the listener's address.
func serveTCP(t testing.TB, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	return serveOn(t, ln, handle)
}

func serveOn(t testing.TB, ln net.Listener, handle func(net.Conn)) string {
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				handle(c)
			})
		}
	})
	return ln.Addr().String()
}

// echo writes back everything it reads, then closes its write side.
func echo(c net.Conn) {
	io.Copy(c, c)
	c.(interface{ CloseWrite() error }).CloseWrite()
	io.Copy(io.Discard, c)
}

// startLink starts a proxy on a loopback port to upstream; it is closed when
// the test ends.
func startLink(t testing.TB, upstream string, cfg Config, opts ...Option) *Proxy {
	t.Helper()
	p, err := Listen(context.Background(), "127.0.0.1:0", upstream, cfg, opts...)
	if err != nil {
		t.Fatalf("start link to %s: %v", upstream, err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("close link: %v", err)
		}
	})
	return p
}

func dial(t testing.TB, addr string) *net.TCPConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c.(*net.TCPConn)
}

// settleGoroutines waits until at most want goroutines run, and returns the
// last count.
func settleGoroutines(want int, timeout time.Duration) int {
	deadline := time.Now().Add(timeout)
	for {
		n := runtime.NumGoroutine()
		if n <= want || time.Now().After(deadline) {
			return n
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// isReset reports whether err is a connection reset.
func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET)
}
