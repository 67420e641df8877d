package engine

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/dbrig/dbrig/internal/blockconn"
)

// CountingConn counts the bytes a connection carries each way, TLS
// included: what the link between client and server carries. Counters are
// atomic because a driver may read in a goroutine of its own (pgconn does
// while it writes a large message).
type CountingConn struct {
	net.Conn
	out, in atomic.Int64
}

func (c *CountingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.in.Add(int64(n))
	return n, err
}

func (c *CountingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.out.Add(int64(n))
	return n, err
}

// Traffic is the bytes written and read so far.
func (c *CountingConn) Traffic() (out, in int64) { return c.out.Load(), c.in.Load() }

// SessionDialer dials a session's connection as o asks (a blocking socket,
// counted bytes) for a driver's dial hook, and hands the connection to
// dialed, for the session's deadlines and counters.
func SessionDialer(o SessionOptions, dialed func(net.Conn)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var c net.Conn
		var err error
		if o.Blocking {
			c, err = blockconn.Dial(ctx, network, addr)
		} else {
			var d net.Dialer
			c, err = d.DialContext(ctx, network, addr)
		}
		if err != nil {
			return nil, err
		}
		if o.Traffic {
			c = &CountingConn{Conn: c}
		}
		dialed(c)
		return c, nil
	}
}

// TrafficOf is the bytes a connection SessionDialer made carried so far
// (zero when they were not counted).
func TrafficOf(c net.Conn) (out, in int64) {
	if cc, ok := c.(*CountingConn); ok {
		return cc.Traffic()
	}
	return 0, 0
}

// ContextWatch makes the end of the context a blocking session's
// statements run under interrupt the one in flight, through the
// connection's deadline: one callback per context (a run's), where a
// driver registers and removes one around every statement.
type ContextWatch struct {
	stop    func() bool
	watched context.Context
}

// Watch watches ctx for conn, unless it is the context watched already.
func (w *ContextWatch) Watch(ctx context.Context, conn net.Conn) {
	if ctx == w.watched {
		return
	}
	w.Stop()
	w.watched = ctx
	if conn != nil {
		w.stop = context.AfterFunc(ctx, func() { _ = conn.SetDeadline(time.Now()) }) // shuts a blocking socket down
	}
}

// Stop ends the watch.
func (w *ContextWatch) Stop() {
	if w.stop != nil {
		w.stop()
		w.stop = nil
	}
}

// Watched is the context watched, or none.
func (w *ContextWatch) Watched() context.Context {
	if w.watched != nil {
		return w.watched
	}
	return context.Background()
}

// Failed classifies a session's failed statement's error; on a blocking
// session it says that the end of ctx interrupted the statement when that
// is what did (the error is then the socket's).
func Failed(ctx context.Context, blocking bool, err error, classify func(error) (ErrorClass, error)) error {
	if err == nil {
		return nil
	}
	if blocking && ctx.Err() != nil {
		err = fmt.Errorf("%w (%w)", ctx.Err(), err)
	}
	return Classified(err, classify)
}
