package agent

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
)

// relay exposes a server that listens on the agent's loopback at the
// agent's own address, for the other hosts of a run: the server itself
// never listens beyond loopback (so dbrig's servers stay unreachable from
// other machines unless a study places them on a host), and the relay lives
// only as long as the instance. It forwards bytes both ways, passing on
// half-closes; it adds a copy on the server's host, nothing else.
type relay struct {
	ln       net.Listener
	upstream string
	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
}

func newRelay(listen, upstream string) (*relay, error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &relay{ln: ln, upstream: upstream, ctx: ctx, cancel: cancel}
	r.wg.Go(r.accept)
	return r, nil
}

func (r *relay) addr() *net.TCPAddr { return r.ln.Addr().(*net.TCPAddr) }

func (r *relay) accept() {
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		r.wg.Go(func() { r.serve(c) })
	}
}

func (r *relay) serve(down net.Conn) {
	defer down.Close()
	var d net.Dialer
	up, err := d.DialContext(r.ctx, "tcp", r.upstream)
	if err != nil {
		return
	}
	defer up.Close()
	if tc, ok := down.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	stop := context.AfterFunc(r.ctx, func() { down.Close(); up.Close() })
	defer stop()
	var wg sync.WaitGroup
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
	}
	wg.Go(func() { pipe(up, down) })
	pipe(down, up)
	wg.Wait()
}

// close stops accepting, cuts every connection and waits for its
// goroutines.
func (r *relay) close() error {
	r.cancel()
	err := r.ln.Close()
	r.wg.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}
