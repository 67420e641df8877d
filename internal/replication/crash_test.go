package replication

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine/postgres"
)

// lateWALWriter widens the window a crash loses: with synchronous_commit
// off a commit returns before its WAL is written, and the WAL writer
// writes it only every wal_writer_delay (or once wal_writer_flush_after
// has gathered), so an immediate shutdown loses the last seconds of
// acknowledged commits. A server may run so (a replica often does);
// replication must lose nothing by it.
var lateWALWriter = map[string]string{"synchronous_commit": "off", "wal_writer_delay": "2s", "wal_writer_flush_after": "1GB"}

// crashes is how many times the crash tests stop a server mid-stream.
const crashes = 5

// Cleanup and the agent's reports run far more often in the crash tests
// than their defaults (10 s, 1 s), so that a position reported before it
// is durable is deleted before the next crash finds it out: a commit on
// the late WAL writer stays undurable for up to its 2 s delay, which a
// cleanup every 100 ms meets twenty times over. Each cleanup is a new
// session (a server process and a SCRAM exchange, pbkdf2 under the race
// detector): every 20 ms was some 1,200 sessions in a test of 24 s, and
// 15 % of the test binary's CPU, for no crash the 100 ms cleanup would
// not also meet.
const (
	eagerCleanup = 100 * time.Millisecond
	eagerReport  = 10 * time.Millisecond
)

// TestSubscriberCrashLosesNoCommand crashes a subscriber that commits
// asynchronously, over and over, while rows stream. What the distribution
// database holds as applied (what its cleanup deletes up to) must never be
// ahead of what the subscriber recovers; afterwards every change is
// applied exactly once, and the agent confirms the end once it is durable.
func TestSubscriberCrashLosesNoCommand(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts AgentOptions
	}{
		{"stop-and-wait", AgentOptions{Pipeline: 1, BufferSize: 8 << 10, CommitBatchSize: 10}},
		{"pipelined", AgentOptions{Pipeline: 4, BufferSize: 8 << 10, CommitBatchSize: 10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, cfg := faultPairOn(t, shared, own(lateWALWriter))
			r := startAgentsEvery(t, cfg, Targets{Distribution: cfg.Distribution(), Subscriber: cfg.Subscriber}, tc.opts, eagerCleanup, eagerReport)
			ctx := testCtx(t, 4*time.Minute)
			stream := startStream(ctx, p.cfg.Publisher, 19, "")
			rs := newRestarter(t, p.sub)
			rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))
			var recovered int64
			for i := 1; i <= crashes; i++ {
				// Each crash meets the agent applying the stream.
				if err := pollUntil(ctx, 50*time.Millisecond, func() (bool, error) { return subscriberCmd(t, cfg) > recovered, r.err() }); err != nil {
					t.Fatalf("before crash %d: %v", i, err)
				}
				time.Sleep(time.Duration(200+rnd.IntN(600)) * time.Millisecond)
				rs.crash(t)
				time.Sleep(200 * time.Millisecond) // the agent finds it gone
				reported := reportedCmd(t, cfg)
				rs.start(t)
				recovered = subscriberCmd(t, cfg)
				t.Logf("crash %d: reported applied %d, the subscriber recovered %d", i, reported, recovered)
				if reported > recovered {
					t.Errorf("crash %d: the distribution database held command %d as applied, the subscriber recovered only up to %d: cleanup may delete commands %d-%d it has not kept",
						i, reported, recovered, recovered+1, reported)
				}
			}
			stream.stop(t)
			waitCaughtUp(t, cfg, r, 2*time.Minute)
			waitConfirmed(t, cfg, time.Minute)
			if err := r.stop(); err != nil {
				t.Fatal(err)
			}
			if st := r.agent.Stats(); st.Restarts == 0 {
				t.Error("the agent never noticed the crashes")
			}
			verifyExactlyOnce(t, cfg)
		})
	}
}

// TestPublisherCrashLosesNoTransaction crashes the publisher's server,
// which holds the distribution database, over and over while both roles
// run: in the middle of a stream, and just after the subscriber has
// applied a burst (the distribution database's last commit is then the
// newest WAL the server holds, and it writes it only with the WAL
// writer's next round). Every transaction the publisher kept reaches the
// subscriber exactly once.
func TestPublisherCrashLosesNoTransaction(t *testing.T) {
	t.Parallel()
	// Two tables: a log reader restarted describes both anew, so commands
	// stored again after a crash take other ids than those an agent applied.
	p := newPair(t, own(lateWALWriter), shared)
	const u = "CREATE TABLE u (id bigint PRIMARY KEY, v int NOT NULL, pad text)"
	execPub(t, p, opsDDL, u)
	execSub(t, p, opsDDL, u)
	cfg := p.cfg
	cfg.Tables = []TableName{{"public", "t"}, {"public", "u"}}
	if _, err := Setup(testCtx(t, time.Minute), cfg, SetupOptions{}); err != nil {
		t.Fatal(err)
	}
	r := startAgentsEvery(t, cfg, Targets{Distribution: cfg.Distribution(), Subscriber: cfg.Subscriber},
		AgentOptions{BufferSize: 8 << 10, CommitBatchSize: 10}, eagerCleanup, eagerReport)
	ctx := testCtx(t, 4*time.Minute)
	rs := newRestarter(t, p.pub)
	rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 4))
	for i := 1; i <= crashes; i++ {
		s := startStream(ctx, p.cfg.Publisher, uint64(23+i), "u")
		time.Sleep(time.Duration(300+rnd.IntN(500)) * time.Millisecond)
		if i%2 == 1 {
			rs.restart(t)
			s.stop(t)
		} else {
			s.stop(t)
			waitCaughtUp(t, cfg, r, 2*time.Minute)
			before := storedCmd(t, cfg)
			rs.restart(t)
			if after := storedCmd(t, cfg); after < before {
				t.Errorf("crash %d: the distribution database held commands up to %d, after recovery up to %d: commands %d-%d an agent may have applied are gone",
					i, before, after, after+1, before)
			}
		}
		if err := r.err(); err != nil {
			t.Fatalf("agents failed after crash %d: %v", i, err)
		}
	}
	waitCaughtUp(t, cfg, r, 2*time.Minute)
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	if st := r.lr.Stats(); st.Restarts == 0 {
		t.Error("the log reader never noticed the crashes")
	}
	verifyExactlyOnce(t, cfg)
	cfg.Tables = []TableName{{"public", "u"}}
	mustVerify(t, cfg)
}

// stream is a workload running until stopped, across crashes of the
// publisher.
type stream struct {
	cancel context.CancelFunc
	done   chan error
}

// startStream writes workload's transactions into t until stopped. After a
// lost connection it reconnects and goes on after the highest row the
// publisher kept (a transaction whose commit a crash lost is not there).
func startStream(ctx context.Context, ci postgres.ConnInfo, seed uint64, alsoInto string) *stream {
	ctx, cancel := context.WithCancel(ctx)
	s := &stream{cancel: cancel, done: make(chan error, 1)}
	rnd := rand.New(rand.NewPCG(seed, 1))
	go func() { s.done <- writeAcrossCrashes(ctx, ci, rnd, alsoInto) }() // waited for by stop
	return s
}

// A stream's transactions hold 1 to streamMaxXact rows, streamPause
// apart. What the crash tests check is where the positions stand when a
// server crashes (applied, reported, durable), which the late WAL writer
// leaves undurable for 2 s whatever the rate: with a transaction every
// 20 ms or more, up to 40 come in the 200 to 800 ms before a crash, and
// every crash still meets the agent applying (the test waits for that).
// Up to 50 rows every 10 ms carried about four times the rows a second and
// twice the transactions through both servers and both roles, for the same
// crashes.
const (
	streamMaxXact = 25
	streamPause   = 20 * time.Millisecond
)

func writeAcrossCrashes(ctx context.Context, ci postgres.ConnInfo, rnd *rand.Rand, alsoInto string) error {
	for {
		c, err := pgxConnect(ctx, ci, "dbrig test workload")
		if err == nil {
			var next int
			if err = c.QueryRow(ctx, "SELECT coalesce(max(id), 0) + 1 FROM t").Scan(&next); err == nil {
				err = writeRows(ctx, c, rnd, next, 1<<40, streamMaxXact, streamPause, alsoInto)
			}
			c.Close(context.WithoutCancel(ctx))
		}
		if ctx.Err() != nil {
			return nil
		}
		if !retryable(err) {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stop ends the stream and fails the test if it failed.
func (s *stream) stop(t *testing.T) {
	t.Helper()
	s.cancel()
	if err := <-s.done; err != nil && !errors.Is(err, context.Canceled) {
		t.Fatal(err)
	}
}

// reportedCmd is the position the distribution database holds as applied:
// what its cleanup deletes up to.
func reportedCmd(t *testing.T, cfg Config) int64 {
	t.Helper()
	cfg = cfg.withDefaults()
	ctx := testCtx(t, time.Minute)
	c, err := pgxConnect(ctx, cfg.Distribution(), "dbrig test")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var n int64
	if err := c.QueryRow(ctx, "SELECT applied_cmd_id FROM "+Schema+".subscriptions WHERE name = $1", cfg.Publication).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// subscriberCmd is the subscriber's own record of its position.
func subscriberCmd(t *testing.T, cfg Config) int64 {
	t.Helper()
	cfg = cfg.withDefaults()
	ctx := testCtx(t, time.Minute)
	c, err := pgxConnect(ctx, cfg.Subscriber, "dbrig test")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var n int64
	if err := c.QueryRow(ctx, "SELECT last_cmd_id FROM "+Schema+".subscription WHERE name = $1", cfg.Publication).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// waitConfirmed waits until the distribution database holds the
// subscriber's position as applied: the agent confirms the last commits
// once the subscriber has flushed them, also when nothing more arrives.
func waitConfirmed(t *testing.T, cfg Config, d time.Duration) {
	t.Helper()
	ctx := testCtx(t, d)
	want := subscriberCmd(t, cfg)
	// Each ask is a new session; the agent reports once a second unless
	// told otherwise: asking every 20 ms started fifty sessions a report.
	err := pollUntil(ctx, 100*time.Millisecond, func() (bool, error) { return reportedCmd(t, cfg) >= want, nil })
	if err != nil {
		t.Fatalf("the agent never confirmed command %d (it stands at %d): %v", want, reportedCmd(t, cfg), err)
	}
}

// storedCmd is the last command the log reader stored.
func storedCmd(t *testing.T, cfg Config) int64 {
	t.Helper()
	cfg = cfg.withDefaults()
	ctx := testCtx(t, time.Minute)
	c, err := pgxConnect(ctx, cfg.Distribution(), "dbrig test")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var n int64
	if err := c.QueryRow(ctx, "SELECT last_cmd_id FROM "+Schema+".log_reader WHERE publication = $1", cfg.Publication).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestSetupSurvivesACrash: both ends crash just after setup, with
// synchronous_commit off and a WAL writer that writes only every 2 s. The
// replication is all there after recovery: its catalog in the distribution
// database, its subscription on the subscriber. Both ends are databases of
// one server, whose crash is both's, at the cost of one server's start.
func TestSetupSurvivesACrash(t *testing.T) {
	t.Parallel()
	p, cfg := faultPairOn(t, own(lateWALWriter), onPublisher)
	rs := newRestarter(t, p.pub)
	rs.crash(t)
	rs.start(t)
	if _, err := GetStatus(testCtx(t, time.Minute), cfg); err != nil {
		t.Fatalf("after a crash of both servers just after setup: %v", err)
	}
}
