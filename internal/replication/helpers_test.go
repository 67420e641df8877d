package replication

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
)

// publisherSettings make an instance a publisher.
var publisherSettings = map[string]string{
	"wal_level":             "logical",
	"max_replication_slots": "10",
	"max_wal_senders":       "10",
}

// sharedPublisherSettings leave room for every test sharing the publisher
// at once, each with a slot and a walsender or two (a log reader, a setup
// creating its slot).
var sharedPublisherSettings = map[string]string{
	"wal_level":             "logical",
	"max_replication_slots": "40",
	"max_wal_senders":       "40",
}

// The package's shared publisher and subscriber: most tests need a database
// of their own on either side, not a server of their own, and an initdb, a
// start and a stop cost seconds of a busy machine's CPU per test where a
// database costs milliseconds. A test that crashes or restarts a server, or
// needs settings of its own on it, starts its own for that side. TestMain
// stops them.
var (
	sharedPub = pgtest.NewShared("pub", sharedPublisherSettings)
	sharedSub = pgtest.NewShared("sub", nil)
)

// side is where one end of a pair runs: on the package's shared server, or
// on a server of the test's own started with settings.
type side struct {
	own      bool
	settings map[string]string
	// onPublisher puts a subscriber's database on the publisher's server
	// (an own one): a test that crashes both ends at once needs one
	// server, not two.
	onPublisher bool
}

// shared is a side on the package's shared server.
var shared = side{}

// own is a side on a server of the test's own.
func own(settings map[string]string) side { return side{own: true, settings: settings} }

// onPublisher is a subscriber side on the pair's own publisher.
var onPublisher = side{onPublisher: true}

// pair is a publisher and a subscriber database, each on an instance; cfg
// reaches them and, on a shared publisher, names a publication (its slot)
// and a distribution database that no other test uses.
type pair struct {
	pub, sub *postgres.Instance
	cfg      Config
}

// startPair is a pair on the shared servers.
func startPair(t testing.TB) *pair {
	t.Helper()
	return newPair(t, shared, shared)
}

// newPair makes a pair on the sides asked for; an own publisher gets
// publisherSettings beside its settings.
func newPair(t testing.TB, pubSide, subSide side) *pair {
	t.Helper()
	var p pair
	var pubDB, subDB string
	if pubSide.own {
		pubSettings := maps.Clone(publisherSettings)
		maps.Copy(pubSettings, pubSide.settings)
		p.pub, pubDB = ownDatabase(t, "pub", pubSettings)
	} else {
		p.pub, pubDB = sharedPub.Database(t)
	}
	switch {
	case subSide.onPublisher:
		if !pubSide.own {
			t.Fatal("a subscriber on the publisher's server needs a publisher of the test's own")
		}
		p.sub, subDB = p.pub, "sub"
		if err := p.sub.CreateDatabase(testCtx(t, time.Minute), subDB); err != nil {
			t.Fatal(err)
		}
	case subSide.own:
		p.sub, subDB = ownDatabase(t, "sub", subSide.settings)
	default:
		p.sub, subDB = sharedSub.Database(t)
	}
	p.cfg = Config{Publisher: p.pub.Conn(pubDB), Subscriber: p.sub.Conn(subDB), Logger: testLogger(t)}
	if !pubSide.own {
		// The slot is the server's, not the database's: named after the
		// test's database it is the test's alone.
		p.cfg.Publication = pubDB
		p.cfg.DistributionDB = pubDB + "_distribution"
		t.Cleanup(func() { dropReplication(t, p.pub, p.cfg) })
	}
	return &p
}

// ownDatabase starts a server of the test's own with a database "app".
func ownDatabase(t testing.TB, name string, settings map[string]string) (*postgres.Instance, string) {
	t.Helper()
	inst := pgtest.Start(t, name, settings)
	if err := inst.CreateDatabase(testCtx(t, time.Minute), "app"); err != nil {
		t.Fatal(err)
	}
	return inst, "app"
}

// dropReplication removes from the shared publisher what a test's
// replication left there, also when the test failed before its teardown:
// the slot (which would hold WAL for good, and keeps its database from
// being dropped) and the distribution database. The test's roles have
// stopped: their cleanups ran before this one.
func dropReplication(t testing.TB, pub *postgres.Instance, cfg Config) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := pgxConnect(ctx, cfg.Publisher, "dbrig test cleanup")
	if err != nil {
		t.Errorf("clean up the shared publisher: %v", err)
		return
	}
	defer c.Close(context.WithoutCancel(ctx))
	if err := dropSlot(ctx, c, cfg.Publication, true); err != nil {
		t.Errorf("clean up the shared publisher: %v", err)
	}
	if err := pub.DropDatabase(ctx, cfg.DistributionDB); err != nil {
		t.Errorf("clean up the shared publisher: drop %s: %v", cfg.DistributionDB, err)
	}
}

func testCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// testLogger logs to stderr when DBRIG_TEST_LOG is set.
func testLogger(t testing.TB) *slog.Logger { return testLoggerFor(os.Getenv("DBRIG_TEST_LOG") != "") }

func testLoggerFor(on bool) *slog.Logger {
	if on {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

func execPub(t testing.TB, p *pair, sql ...string) {
	t.Helper()
	if err := p.pub.Exec(testCtx(t, time.Minute), p.cfg.Publisher.Database, sql...); err != nil {
		t.Fatal(err)
	}
}

func execSub(t testing.TB, p *pair, sql ...string) {
	t.Helper()
	if err := p.sub.Exec(testCtx(t, time.Minute), p.cfg.Subscriber.Database, sql...); err != nil {
		t.Fatal(err)
	}
}

// running is a log reader and an agent running in goroutines.
type running struct {
	lr     *LogReader
	agent  *DistributionAgent
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	errs   []error
}

func (r *running) record(err error) {
	if err != nil && !errors.Is(err, context.Canceled) {
		r.mu.Lock()
		r.errs = append(r.errs, err)
		r.mu.Unlock()
	}
}

// stop stops both and returns their errors.
func (r *running) stop() error {
	r.cancel()
	r.wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	return errors.Join(r.errs...)
}

func (r *running) err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return errors.Join(r.errs...)
}

// startAgents runs the log reader (direct) and the agent with targets.
func startAgents(t testing.TB, cfg Config, targets Targets, opts AgentOptions) *running {
	t.Helper()
	return startAgentsEvery(t, cfg, targets, opts, 0, 0)
}

// noCleanup turns the log reader's own cleanup off (startAgentsEvery).
const noCleanup = -1

// startAgentsEvery is startAgents with the log reader's cleanup and the
// agent's reports at the given intervals (0: the defaults).
func startAgentsEvery(t testing.TB, cfg Config, targets Targets, opts AgentOptions, cleanup, report time.Duration) *running {
	t.Helper()
	lr, err := NewLogReader(LogReaderConfig{Publisher: cfg.Publisher, Distribution: cfg.Distribution(), Publication: cfg.Publication,
		CleanupInterval: cleanup, Logger: cfg.Logger})
	if err != nil {
		t.Fatal(err)
	}
	mode := Push
	if targets.Distribution != cfg.Distribution() {
		mode = Pull // the distribution database is reached through a link
	}
	ag, err := NewDistributionAgent(AgentConfig{Targets: targets, Publication: cfg.Publication, Options: opts, Mode: mode,
		ReportInterval: report, Logger: cfg.Logger})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{lr: lr, agent: ag, cancel: cancel}
	r.wg.Add(2)
	go func() { defer r.wg.Done(); r.record(lr.Run(ctx)) }()
	go func() { defer r.wg.Done(); r.record(ag.Run(ctx)) }()
	t.Cleanup(func() { r.stop() })
	return r
}

// waitCaughtUp waits until the subscriber holds every transaction committed
// on the publisher so far.
func waitCaughtUp(t testing.TB, cfg Config, r *running, d time.Duration) {
	t.Helper()
	ctx := testCtx(t, d)
	w, err := NewWaiter(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	target, err := w.CurrentLSN(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for {
		ok, err := w.CaughtUp(ctx, target)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			return
		}
		if r != nil {
			if err := r.err(); err != nil {
				t.Fatalf("agents failed: %v", err)
			}
		}
		select {
		case <-ctx.Done():
			st, _ := GetStatus(context.Background(), cfg)
			t.Logf("publisher sessions:\n%s", sessions(cfg.Publisher))
			t.Logf("subscriber sessions:\n%s", sessions(cfg.Subscriber))
			if r != nil {
				t.Logf("agent: %+v; log reader: %+v", r.agent.Stats(), r.lr.Stats())
			}
			buf := make([]byte, 1<<20)
			t.Logf("goroutines:\n%s", buf[:runtime.Stack(buf, true)])
			t.Fatalf("not caught up with %s in %v: status %+v", target, d, st)
		case <-time.After(caughtUpPoll):
		}
	}
}

// caughtUpPoll is how often waitCaughtUp asks (three queries, one a side):
// every 10 ms was a hundred rounds of them a second in each test waiting,
// where the agents take tens of milliseconds a commit batch at best.
const caughtUpPoll = 50 * time.Millisecond

func mustVerify(t testing.TB, cfg Config) {
	t.Helper()
	res, err := Verify(testCtx(t, time.Minute), cfg, VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Equal {
		for _, tv := range res.Tables {
			if !tv.Equal {
				t.Errorf("table %s differs: publisher %d rows (%s), subscriber %d rows (%s); first: %v",
					tv.Table, tv.PublisherRows, tv.PublisherChecksum, tv.SubscriberRows, tv.SubscriberChecksum, tv.Differences)
			}
		}
		t.FailNow()
	}
}

// sessions describes a server's sessions, for failures.
func sessions(ci postgres.ConnInfo) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := pgxConnect(ctx, ci, "dbrig test")
	if err != nil {
		return err.Error()
	}
	defer c.Close(ctx)
	rows, err := c.Query(ctx, `SELECT pid, coalesce(application_name, ''), coalesce(state, ''), coalesce(wait_event_type || ':' || wait_event, ''),
		left(coalesce(query, ''), 120) FROM pg_stat_activity WHERE backend_type = 'client backend' OR backend_type = 'walsender'`)
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for rows.Next() {
		var pid int
		var app, state, wait, q string
		rows.Scan(&pid, &app, &state, &wait, &q)
		fmt.Fprintf(&b, "  %d %q %s %s %q\n", pid, app, state, wait, q)
	}
	return b.String()
}

func pollUntil(ctx context.Context, poll time.Duration, cond func() (bool, error)) error {
	for {
		ok, err := cond()
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(poll):
		}
	}
}
