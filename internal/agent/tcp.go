package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"time"
)

// Agents in a cluster (a Kubernetes Indexed Job) cannot be reached by ssh:
// they dial the coordinator instead, at its service's address, and speak
// the same protocol on the TCP connection. Each says its index (the Job's
// JOB_COMPLETION_INDEX) and the run's token; the coordinator takes their
// shares in index order.

// Accept listens on addr until n agents with the token have connected (or
// ctx ends) and returns them in index order.
func Accept(ctx context.Context, addr string, n int, opts HandshakeOptions) ([]*Agent, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listen for agents on %s: %w", addr, err)
	}
	defer ln.Close()
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	var agents []*Agent
	seen := map[int]bool{}
	for len(agents) < n {
		c, err := ln.Accept()
		if err != nil {
			_ = CloseAll(context.WithoutCancel(ctx), agents)
			if ctx.Err() != nil {
				return nil, fmt.Errorf("waiting for agents (%d of %d connected): %w", len(agents), n, ctx.Err())
			}
			return nil, err
		}
		tc := c.(*net.TCPConn)
		a, err := Connect(ctx, Transport{Name: c.RemoteAddr().String(), R: c, W: tc, Close: tc.CloseWrite,
			Kill: func() { c.Close() }, Wait: func() error { return c.Close() }}, opts)
		if err != nil {
			continue // not one of ours, or of another build: it was told why
		}
		if a.Hello.Index < 0 || a.Hello.Index >= n || seen[a.Hello.Index] {
			_ = a.Close(ctx)
			continue
		}
		seen[a.Hello.Index] = true
		agents = append(agents, a)
	}
	slices.SortFunc(agents, func(a, b *Agent) int { return a.Hello.Index - b.Hello.Index })
	return agents, nil
}

// Dial connects an agent to its coordinator, trying again until ctx ends
// (the coordinator's pod may start after the agents'), and serves it.
func Dial(ctx context.Context, addr string, opts ServeOptions) error {
	var d net.Dialer
	for {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err == nil {
			defer c.Close()
			if opts.Address == "" {
				opts.Address, _, _ = net.SplitHostPort(c.LocalAddr().String())
			}
			return Serve(ctx, c, c, opts)
		}
		select {
		case <-ctx.Done():
			return errors.Join(fmt.Errorf("reach the coordinator at %s: %w", addr, err), ctx.Err())
		case <-time.After(time.Second):
		}
	}
}
