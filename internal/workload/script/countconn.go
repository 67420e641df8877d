package script

import (
	"context"
	"net"
	"sync/atomic"

	"github.com/dbrig/dbrig/internal/blockconn"
)

// countingConn counts the bytes a connection carries each way, TLS
// included: what the link between client and server carries. Counters are
// atomic because a driver may read in a goroutine of its own (pgconn does
// while it writes a large message).
type countingConn struct {
	net.Conn
	out, in atomic.Int64
}

func (c *countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.in.Add(int64(n))
	return n, err
}

func (c *countingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.out.Add(int64(n))
	return n, err
}

// dialCounting dials on a blocking socket (see blockconn: a load's user
// waits for one answer at a time, which the runtime's poller makes
// dearer) and counts what the connection carries.
func dialCounting(ctx context.Context, network, addr string) (*countingConn, error) {
	c, err := blockconn.Dial(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c}, nil
}
