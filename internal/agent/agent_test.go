package agent

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/load"
	"github.com/dbrig/dbrig/internal/measure"
)

// sleeper is a load workload without a database: each operation sleeps a
// time that depends on the agent, so the agents' distributions differ.
type sleeper struct {
	base    time.Duration
	running *atomic.Int64 // operations in progress on this agent
}

func (s sleeper) Mix() []load.TxType { return []load.TxType{{Name: "nap", Weight: 1}} }
func (s sleeper) NewWorker(ctx context.Context, id int) (load.Worker, error) {
	return &napper{s: s, n: id}, nil
}

type napper struct {
	s sleeper
	n int
}

func (w *napper) Do(ctx context.Context, tx int) error {
	w.s.running.Add(1)
	defer w.s.running.Add(-1)
	w.n++
	t := time.NewTimer(w.s.base + time.Duration(w.n%7)*300*time.Microsecond)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
func (w *napper) Close() error { return nil }

// inProcess is an agent served in a goroutine over pipes.
type inProcess struct {
	transport Transport
	served    chan error
	running   atomic.Int64
	toAgent   *io.PipeWriter // the coordinator's writes
	fromAgent *io.PipeWriter // the agent's writes
	// workloads are the agent's; a test adds its own before it connects.
	workloads map[string]Workload
}

func startInProcess(t *testing.T, name, version string, base time.Duration, silence time.Duration) *inProcess {
	t.Helper()
	ar, cw := io.Pipe() // coordinator -> agent
	cr, aw := io.Pipe() // agent -> coordinator
	p := &inProcess{served: make(chan error, 1), toAgent: cw, fromAgent: aw}
	p.workloads = map[string]Workload{
		"sleep": func(WorkloadJob) (load.Workload, error) { return sleeper{base: base, running: &p.running}, nil },
		"tally": func(WorkloadJob) (load.Workload, error) {
			return &tallier{sleeper: sleeper{base: base, running: &p.running}, latency: measure.NewHistogram()}, nil
		},
	}
	opts := ServeOptions{Version: version, Index: -1, Silence: silence, Workloads: p.workloads}
	go func() {
		err := Serve(t.Context(), ar, aw, opts)
		aw.Close()
		ar.Close()
		p.served <- err
	}()
	p.transport = Transport{Name: name, R: cr, W: cw, Kill: func() { cw.Close(); cr.Close() }}
	t.Cleanup(func() { cw.Close(); cr.Close() })
	return p
}

func connectAll(t *testing.T, ps ...*inProcess) []*Agent {
	t.Helper()
	var agents []*Agent
	for _, p := range ps {
		a, err := Connect(t.Context(), p.transport, HandshakeOptions{Version: "v1", Silence: 3 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		agents = append(agents, a)
	}
	t.Cleanup(func() { _ = CloseAll(context.Background(), agents) })
	return agents
}

// TestRunLoadMergesAgentsWithoutLoss: two agents share 5 users; the merged
// result's counts are the sums of the agents', and its percentiles those
// of one distribution of every sample the agents recorded.
func TestRunLoadMergesAgentsWithoutLoss(t *testing.T) {
	a1 := startInProcess(t, "a1", "v1", time.Millisecond, 0)
	a2 := startInProcess(t, "a2", "v1", 4*time.Millisecond, 0)
	agents := connectAll(t, a1, a2)
	var seconds []load.Interval
	var mu sync.Mutex
	out, err := RunLoad(t.Context(), agents, LoadSpec{Workload: "sleep", Params: map[string]int{}, Config: load.Config{
		Users: 5, WarmUp: 500 * time.Millisecond, Duration: 2 * time.Second, Seed: 7, KeepSamples: true},
		OnInterval: func(iv load.Interval) { mu.Lock(); seconds = append(seconds, iv); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	if got := []int{out.Agents[0].Share.Users, out.Agents[1].Share.Users}; got[0] != 3 || got[1] != 2 {
		t.Errorf("shares %v, want 3 and 2 users", got)
	}
	var sum int64
	all := measure.NewHistogram()
	for _, ar := range out.Agents {
		sum += ar.Ops
		if ar.Ops == 0 || ar.Intervals < 3 {
			t.Errorf("agent %s: %d ops in %d intervals", ar.Name, ar.Ops, ar.Intervals)
		}
		// The skew is exact to RTT/2, and a busy machine that wakes the
		// agent late answers the control channel late too: the measured
		// round trip widens the tolerance. The RTT's own bound is one only
		// a hang reaches.
		if ar.RTT <= 0 || ar.RTT > time.Second || ar.StartSkew.Abs() > 100*time.Millisecond+ar.RTT {
			t.Errorf("agent %s: rtt %v, start skew %v", ar.Name, ar.RTT, ar.StartSkew)
		}
	}
	for _, v := range out.Samples {
		all.Record(time.Duration(v) * time.Microsecond)
	}
	res := out.Result
	if res.Overall.Ops != sum || int64(len(out.Samples)) != sum || res.Users != 5 {
		t.Fatalf("merged %d ops of %d users, agents %d, samples %d", res.Overall.Ops, res.Users, sum, len(out.Samples))
	}
	for _, q := range []float64{0.5, 0.99, 1} {
		if got, want := res.Overall.Latency.Quantile(q), all.Quantile(q); got != want {
			t.Errorf("q%v: merged %v, all samples %v", q, got, want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seconds) < 3 || len(seconds) != len(res.Series) {
		t.Errorf("%d merged seconds passed on, the result has %d", len(seconds), len(res.Series))
	}
	for _, p := range []*inProcess{a1, a2} {
		if n := p.running.Load(); n != 0 {
			t.Errorf("%d operations still running after the run", n)
		}
	}
}

// TestVersionMismatchIsRefused: an agent of another build is refused by the
// coordinator with both versions named, and the agent ends.
func TestVersionMismatchIsRefused(t *testing.T) {
	p := startInProcess(t, "old-host", "v0", time.Millisecond, 0)
	_, err := Connect(t.Context(), p.transport, HandshakeOptions{Version: "v1"})
	var ve *VersionError
	if !errors.As(err, &ve) || !strings.Contains(err.Error(), "runs dbrig v0, the coordinator dbrig v1") || !strings.Contains(err.Error(), "--install") {
		t.Fatalf("error %v; want a version refusal naming both and --install", err)
	}
	select {
	case <-p.served:
	case <-time.After(5 * time.Second):
		t.Fatal("the refused agent did not end")
	}
}

// TestLostAgentFailsTheRunAndStopsIt: one agent's channel is cut in the
// middle of the run: the run fails naming it, the other agent is stopped,
// and the cut agent stops its load within seconds.
func TestLostAgentFailsTheRunAndStopsIt(t *testing.T) {
	// Only a2 is cut: a1 waits far longer than a busy machine can hold up
	// the coordinator's pings, so that a1's own silence never ends it first.
	a1 := startInProcess(t, "a1", "v1", time.Millisecond, 30*time.Second)
	a2 := startInProcess(t, "a2", "v1", time.Millisecond, time.Second)
	agents := connectAll(t, a1, a2)
	cut := time.AfterFunc(1500*time.Millisecond, func() { a2.toAgent.Close(); a2.fromAgent.Close() })
	defer cut.Stop()
	start := time.Now()
	_, err := RunLoad(t.Context(), agents, LoadSpec{Workload: "sleep", Config: load.Config{Users: 4, Duration: time.Minute}})
	if err == nil || !errors.Is(err, ErrLost) || !strings.Contains(err.Error(), "agent a2") || !strings.Contains(err.Error(), "run failed") {
		t.Fatalf("run error %v; want agent a2 lost and the run failed", err)
	}
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("the run took %v to fail", d)
	}
	select {
	case err := <-a2.served:
		if err == nil {
			t.Error("the cut agent ended without saying why")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the cut agent did not stop within 5 s")
	}
	if n := a2.running.Load(); n != 0 {
		t.Errorf("the cut agent has %d operations running", n)
	}
	// The other agent was stopped: it sent its partial result and idles.
	deadline := time.Now().Add(5 * time.Second)
	for a1.running.Load() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := a1.running.Load(); n != 0 {
		t.Errorf("the other agent still runs %d operations", n)
	}
}

// TestSilentCoordinatorStopsTheAgent: a coordinator that stops speaking
// (no ping) without closing the channel is taken for gone.
func TestSilentCoordinatorStopsTheAgent(t *testing.T) {
	p := startInProcess(t, "a", "v1", time.Millisecond, 500*time.Millisecond)
	go func() { _, _ = io.Copy(io.Discard, p.transport.R) }()
	ch := newChannel(strings.NewReader(""), p.toAgent)
	if err := ch.write(Message{Type: TypeHello, Hello: &Hello{Version: "v1", Protocol: Protocol}}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.served:
		if err == nil || !strings.Contains(err.Error(), "no word from the coordinator") {
			t.Errorf("agent ended with %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the agent did not notice its silent coordinator")
	}
}

func TestShares(t *testing.T) {
	sh, err := Shares(load.Config{Users: 7, Rate: 1000, Arrival: load.Fixed, MaxInFlight: 101, Seed: 1}, 3)
	if err != nil {
		t.Fatal(err)
	}
	users, rate := 0, 0.0
	for i, s := range sh {
		users += s.Users
		rate += s.Rate
		if s.MaxInFlight != 34 {
			t.Errorf("agent %d: in-flight bound %d, want 34", i, s.MaxInFlight)
		}
		if want := time.Duration(i) * time.Millisecond; s.ArrivalOffset != want {
			t.Errorf("agent %d: arrival offset %v, want %v", i, s.ArrivalOffset, want)
		}
	}
	if users != 7 || rate != 1000 || sh[0].Users != 3 || sh[0].Seed == sh[1].Seed {
		t.Errorf("shares %+v", sh)
	}
	if _, err := Shares(load.Config{Users: 2}, 3); err == nil || !strings.Contains(err.Error(), "at least one user") {
		t.Errorf("2 users over 3 agents: %v", err)
	}
}

// TestAgentsDialInByIndex: a cluster's agents dial the coordinator; it
// takes those with the run's token, in the order of their indexes.
func TestAgentsDialInByIndex(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	for _, d := range []struct {
		index int
		token string
	}{{1, "secret"}, {0, "wrong"}, {0, "secret"}} {
		wg.Go(func() {
			_ = Dial(ctx, addr, ServeOptions{Version: "v1", Index: d.index, Token: d.token})
		})
		time.Sleep(50 * time.Millisecond)
	}
	agents, err := Accept(ctx, addr, 2, HandshakeOptions{Version: "v1", Token: "secret"})
	if err != nil {
		t.Fatal(err)
	}
	defer CloseAll(context.Background(), agents)
	if len(agents) != 2 || agents[0].Hello.Index != 0 || agents[1].Hello.Index != 1 || agents[0].Hello.Address != "127.0.0.1" {
		t.Fatalf("agents %+v", agents)
	}
}
