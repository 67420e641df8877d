package agent

import (
	"context"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/link"
	"github.com/dbrig/dbrig/internal/load"
	"github.com/dbrig/dbrig/internal/topology"
)

// echoer is a load workload without a database: each operation sends a
// byte to the login's address and waits for it to come back.
type echoer struct{ addr string }

func (e echoer) Mix() []load.TxType { return []load.TxType{{Name: "echo", Weight: 1}} }
func (e echoer) NewWorker(ctx context.Context, _ int) (load.Worker, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, "tcp", e.addr)
	if err != nil {
		return nil, err
	}
	return &echoWorker{c: c}, nil
}

type echoWorker struct{ c net.Conn }

func (w *echoWorker) Do(ctx context.Context, _ int) error {
	b := []byte{1}
	if _, err := w.c.Write(b); err != nil {
		return err
	}
	_, err := io.ReadFull(w.c, b)
	return err
}
func (w *echoWorker) Close() error { return w.c.Close() }

// echoServer answers every byte it reads, until the test ends.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { defer c.Close(); _, _ = io.Copy(c, c) })
		}
	})
	return ln.Addr().String()
}

// TestAgentsRunTheLinkInFrontOfTheirUsers: with a link in the job, each
// agent's users reach the server through a link the agent runs itself (no
// operation is faster than its round trip), each agent sends back what its
// link carried, and the outcome's link is their sum.
func TestAgentsRunTheLinkInFrontOfTheirUsers(t *testing.T) {
	t.Parallel()
	upstream := echoServer(t)
	const rtt = 4 * time.Millisecond
	var ps []*inProcess
	for _, name := range []string{"a1", "a2"} {
		p := startInProcess(t, name, "v1", 0, 0)
		p.workloads["echo"] = func(job WorkloadJob) (load.Workload, error) { return echoer{addr: job.Login.Addr()}, nil }
		ps = append(ps, p)
	}
	agents := connectAll(t, ps...)
	path, err := PathOf(engine.Conn{Engine: "postgres", Host: "127.0.0.1", Port: 1},
		endpointOverLink("client-db", upstream, link.Config{RTT: rtt, Seed: 3}))
	if err != nil {
		t.Fatal(err)
	}
	if got := path.Login.Addr(); got != upstream {
		t.Fatalf("the agents' login goes to %s, not the server's own address %s", got, upstream)
	}
	out, err := RunLoad(t.Context(), agents, LoadSpec{Workload: "echo", Login: path.Login, Link: path.Link,
		Config: load.Config{Users: 4, WarmUp: 200 * time.Millisecond, Duration: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	var forward, reverse int64
	for _, a := range out.Agents {
		if a.Link == nil || a.Link.Forward.Bytes == 0 || a.Link.Reverse.Bytes == 0 || a.Link.Connections != 2 {
			t.Fatalf("agent %s: its link carried %+v", a.Name, a.Link)
		}
		forward, reverse = forward+a.Link.Forward.Bytes, reverse+a.Link.Reverse.Bytes
	}
	if out.Link == nil || out.Link.Forward.Bytes != forward || out.Link.Reverse.Bytes != reverse || out.Link.Connections != 4 {
		t.Errorf("the outcome's link %+v, the agents' sum %d/%d bytes over 4 connections", out.Link, forward, reverse)
	}
	if got := out.Carried(path)["client-db"]; got.Forward.Bytes != forward {
		t.Errorf("carried under the link's name: %d bytes forward, want %d", got.Forward.Bytes, forward)
	}
	// A lower bound only: a busy machine is slower, never faster.
	if low := out.Result.Overall.Latency.Quantile(0); out.Result.Overall.Ops == 0 || low < rtt {
		t.Errorf("%d operations, the fastest %v: below the link's round trip %v", out.Result.Overall.Ops, low, rtt)
	}
}

// endpointOverLink is a point's endpoint reached over the link name, as
// the topology gives it.
func endpointOverLink(name, upstream string, cfg link.Config) topology.Endpoint {
	return topology.Endpoint{Conn: engine.Conn{Engine: "postgres", Host: "127.0.0.1", Port: 2}, Link: name, Transport: "link", Upstream: upstream, LinkConfig: cfg}
}

// TestAgentsRunOnePointAfterAnother: a sweep's points run one after the
// other on the same agents, each with its own link; the second finds the
// agents free and its own link's round trip in its figures.
func TestAgentsRunOnePointAfterAnother(t *testing.T) {
	t.Parallel()
	upstream := echoServer(t)
	p := startInProcess(t, "a1", "v1", 0, 0)
	p.workloads["echo"] = func(job WorkloadJob) (load.Workload, error) { return echoer{addr: job.Login.Addr()}, nil }
	agents := connectAll(t, p)
	for _, rtt := range []time.Duration{2 * time.Millisecond, 6 * time.Millisecond} {
		path, err := PathOf(engine.Conn{Engine: "postgres", Host: "127.0.0.1", Port: 1}, endpointOverLink("client-db", upstream, link.Config{RTT: rtt}))
		if err != nil {
			t.Fatal(err)
		}
		out, err := RunLoad(t.Context(), agents, LoadSpec{Workload: "echo", Login: path.Login, Link: path.Link,
			Config: load.Config{Users: 2, WarmUp: 100 * time.Millisecond, Duration: 500 * time.Millisecond}})
		if err != nil {
			t.Fatalf("the point over a %v link: %v", rtt, err)
		}
		if low := out.Result.Overall.Latency.Quantile(0); out.Result.Overall.Ops == 0 || low < rtt {
			t.Errorf("%d operations, the fastest %v: below its link's round trip %v", out.Result.Overall.Ops, low, rtt)
		}
	}
}
