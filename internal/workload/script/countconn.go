package script

import (
	"context"
	"net"
	"sync/atomic"

	"github.com/dbrig/dbrig/internal/blockconn"
)

// countingConn counts the bytes a connection carries each way, TLS
// included, and the turns of the conversation: what the link between client
// and server carries and waits for. Counters are atomic because a driver
// may read in a goroutine of its own (pgconn does while it writes a large
// message).
type countingConn struct {
	net.Conn
	out, in atomic.Int64
	// turns counts the writes that follow a read (or open the
	// conversation): each is a round trip the link adds its delay to,
	// whatever the driver's calls were. A pipeline's statements written
	// back to back before its results are read make one turn.
	turns atomic.Int64
	// answered is set by a read and cleared by the write after it.
	answered atomic.Bool
}

func (c *countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.in.Add(int64(n))
		c.answered.Store(true)
	}
	return n, err
}

func (c *countingConn) Write(b []byte) (int, error) {
	// The turn is taken before the bytes go: a driver reading in a
	// goroutine of its own may read the answer before Write returns.
	if len(b) > 0 && c.answered.Swap(false) {
		c.turns.Add(1)
	}
	n, err := c.Conn.Write(b)
	c.out.Add(int64(n))
	return n, err
}

// wireKey holds, in the context a session connects under, where
// dialCounting leaves the connection it made: the worker reads the turns
// from it without knowing the engine's session.
type wireKey struct{}

// withWire returns a context under which dialCounting stores its
// connection in *wire.
func withWire(ctx context.Context, wire **countingConn) context.Context {
	return context.WithValue(ctx, wireKey{}, wire)
}

// dialCounting dials on a blocking socket (see blockconn: a load's user
// waits for one answer at a time, which the runtime's poller makes
// dearer) and counts what the connection carries.
func dialCounting(ctx context.Context, network, addr string) (*countingConn, error) {
	c, err := blockconn.Dial(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	cc := &countingConn{Conn: c}
	cc.answered.Store(true) // the first write opens the conversation
	if wire, ok := ctx.Value(wireKey{}).(**countingConn); ok {
		*wire = cc
	}
	return cc, nil
}
