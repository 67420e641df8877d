// Package blockconn is a net.Conn on a blocking socket: each Read and Write
// sleeps in the kernel until it is done, as a C client's recv and send do.
// A Write is one system call; a Read is one on TCP, and on a unix socket a
// ppoll for data and then the read, as pgbench waits (see waitReadable).
//
// Go's own connections are non-blocking: a Read that finds no data parks
// the goroutine and the runtime's network poller (epoll) wakes it, which on
// a connection that carries one small request at a time costs an epoll
// wait, a futex wake-up and a trip through the scheduler per round trip.
// On one connection doing pgbench -S's lookup over a unix socket, the
// client spent 19.6 µs of CPU per round trip through Go's poller and 11.3
// µs on a blocking socket (medians of five rounds in one run, with pgbench
// at 6.9 µs), and perf counted 3.4 against 1.7 context switches per round
// trip; with 2 to 8 connections the two were within 10 % of each other. A
// blocking socket costs one thread per connection that is waiting, which a
// load driver with one connection per virtual user can afford.
//
// Deadlines are kept as the socket's SO_RCVTIMEO and SO_SNDTIMEO (and the
// read deadline as ppoll's timeout), applied from the next call on; a
// deadline in the past shuts the socket down, which also ends a call
// already waiting (a blocking socket has no other way to interrupt one), so
// the connection is unusable afterwards. Database drivers
// treat an interrupted connection as broken anyway.
package blockconn

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Conn is a connected blocking socket.
type Conn struct {
	fd            int
	local, remote net.Addr
	network       string
	// mu is held shared by every Read and Write and exclusively by Close,
	// so the descriptor is closed only when no call is using it (a number
	// closed under a waiting call could be reused by another file).
	mu       sync.RWMutex
	closed   bool
	shutOnce sync.Once
	// pollFirst makes a Read wait in ppoll for data before it reads (unix
	// sockets; see waitReadable), and readDeadline is the read deadline
	// that wait keeps (unix nanoseconds, 0 for none).
	pollFirst    bool
	readDeadline atomic.Int64
}

// Dial connects as net.Dialer does (TCP or a unix socket, honouring ctx)
// and returns the connection on a blocking socket of its own.
func Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	defer c.Close() // the duplicate below lives on
	raw, err := syscallConn(c)
	if err != nil {
		return nil, err
	}
	var fd int
	var dupErr error
	if err := raw.Control(func(orig uintptr) {
		fd, dupErr = unix.FcntlInt(orig, unix.F_DUPFD_CLOEXEC, 0)
	}); err != nil {
		return nil, err
	}
	if dupErr != nil {
		return nil, fmt.Errorf("duplicate the socket of %s: %w", addr, dupErr)
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("make the socket of %s blocking: %w", addr, err)
	}
	if network == "tcp" || network == "tcp4" || network == "tcp6" {
		// As net does: no Nagle delay on a request-response protocol.
		_ = unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	}
	return &Conn{fd: fd, local: c.LocalAddr(), remote: c.RemoteAddr(), network: network, pollFirst: network == "unix"}, nil
}

type rawConn interface {
	Control(func(fd uintptr)) error
}

func syscallConn(c net.Conn) (rawConn, error) {
	switch x := c.(type) {
	case *net.TCPConn:
		return x.SyscallConn()
	case *net.UnixConn:
		return x.SyscallConn()
	}
	return nil, fmt.Errorf("%T is not a socket", c)
}

// Read reads once, waiting in the kernel for data.
func (c *Conn) Read(b []byte) (int, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed {
		return 0, c.opError("read", net.ErrClosed)
	}
	if c.pollFirst && len(b) > 0 {
		if err := c.waitReadable(); err != nil {
			return 0, c.opError("read", err)
		}
	}
	for {
		n, err := unix.Read(c.fd, b)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return 0, c.opError("read", os.ErrDeadlineExceeded)
		case err != nil:
			return 0, c.opError("read", os.NewSyscallError("read", err))
		case n == 0 && len(b) > 0:
			return 0, io.EOF
		}
		return n, nil
	}
}

// waitReadable waits until the socket has something to read (data, the
// peer's end or an error), or its read deadline passes. Past the deadline it
// does not wait and leaves the read to say what the socket holds: a deadline
// set in the past shut it down, and its read ends in EOF as on TCP, which
// pgconn takes for a broken connection where it would keep one that timed
// out.
//
// A unix socket wakes a reader that sleeps in read(2) whenever room comes
// back in its send buffer, that is whenever the server takes the request
// the client just wrote: the read finds nothing, sleeps again and wakes a
// second time for the answer. poll's wait is woken for POLLIN only, as
// pgbench's ppoll is: pgbench's select-only under the script runner at 2
// users went from 1.35-1.79 to 1.05 context switches a transaction (pgbench
// itself 1.00), for one more system call a read.
func (c *Conn) waitReadable() error {
	fds := [1]unix.PollFd{{Fd: int32(c.fd), Events: unix.POLLIN}}
	for {
		var timeout *unix.Timespec
		if dl := c.readDeadline.Load(); dl != 0 {
			left := time.Until(time.Unix(0, dl))
			if left <= 0 {
				return nil
			}
			ts := unix.NsecToTimespec(left.Nanoseconds())
			timeout = &ts
		}
		n, err := unix.Ppoll(fds[:], timeout, nil)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return os.NewSyscallError("ppoll", err)
		case n == 0:
			return os.ErrDeadlineExceeded
		}
		return nil
	}
}

// Write writes all of b, waiting in the kernel for room.
func (c *Conn) Write(b []byte) (int, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed {
		return 0, c.opError("write", net.ErrClosed)
	}
	done := 0
	for done < len(b) {
		n, err := unix.Write(c.fd, b[done:])
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return done, c.opError("write", os.ErrDeadlineExceeded)
		case err != nil:
			return done, c.opError("write", os.NewSyscallError("write", err))
		}
		done += n
	}
	return done, nil
}

func (c *Conn) opError(op string, err error) error {
	return &net.OpError{Op: op, Net: c.network, Source: c.local, Addr: c.remote, Err: err}
}

// shutdown ends both directions, which wakes any call waiting on the socket.
func (c *Conn) shutdown() {
	c.shutOnce.Do(func() { _ = unix.Shutdown(c.fd, unix.SHUT_RDWR) })
}

// Close shuts the socket down, waits for calls in progress to return, and
// closes it.
func (c *Conn) Close() error {
	c.mu.RLock()
	closed := c.closed
	if !closed {
		c.shutdown()
	}
	c.mu.RUnlock()
	if closed {
		return c.opError("close", net.ErrClosed)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return c.opError("close", net.ErrClosed)
	}
	c.closed = true
	return unix.Close(c.fd)
}

// Interrupt ends any call waiting on the connection, and every later one:
// the connection is shut down (not yet closed).
func (c *Conn) Interrupt() {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if !c.closed {
		c.shutdown()
	}
}

func (c *Conn) LocalAddr() net.Addr  { return c.local }
func (c *Conn) RemoteAddr() net.Addr { return c.remote }

// SetDeadline sets both directions' deadline (see the package comment).
func (c *Conn) SetDeadline(t time.Time) error {
	return errors.Join(c.SetReadDeadline(t), c.SetWriteDeadline(t))
}

func (c *Conn) SetReadDeadline(t time.Time) error {
	var dl int64
	if !t.IsZero() {
		dl = t.UnixNano()
	}
	c.readDeadline.Store(dl)
	return c.setTimeout(unix.SO_RCVTIMEO, t)
}

func (c *Conn) SetWriteDeadline(t time.Time) error { return c.setTimeout(unix.SO_SNDTIMEO, t) }

func (c *Conn) setTimeout(opt int, t time.Time) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.closed {
		return c.opError("set deadline", net.ErrClosed)
	}
	var tv unix.Timeval
	if !t.IsZero() {
		d := time.Until(t)
		if d <= 0 {
			c.shutdown()
			return nil
		}
		tv = unix.NsecToTimeval(max(d, time.Microsecond).Nanoseconds())
	}
	return unix.SetsockoptTimeval(c.fd, unix.SOL_SOCKET, opt, &tv)
}
