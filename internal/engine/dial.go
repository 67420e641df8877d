package engine

import (
	"context"
	"net"
	"sync/atomic"

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
