package replication

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/link"
)

func TestMain(m *testing.M) {
	if role := os.Getenv(helperEnv); role != "" {
		os.Exit(helperMain(role))
	}
	code := m.Run()
	sharedPub.Stop()
	sharedSub.Stop()
	os.Exit(code)
}

// The fault tests run the log reader and the distribution agent as child
// processes (this test binary, re-executed), so that they can be killed
// with SIGKILL at any moment.
const helperEnv = "DBRIG_REPLICATION_HELPER"

// helperConfig is what a child process reads on stdin (it holds passwords:
// it travels over a pipe, never on a command line).
type helperConfig struct {
	Publisher    postgres.Sealed `json:"publisher"`
	Distribution postgres.Sealed `json:"distribution"`
	Subscriber   postgres.Sealed `json:"subscriber"`
	Publication  string          `json:"publication"`
	Options      AgentOptions    `json:"options"`
}

// helperMain runs a log reader or an agent until SIGTERM; it exits 1 with
// the error on stderr when the role stops on an error it does not survive.
func helperMain(role string) int {
	if role == "ship" {
		return shipHelper()
	}
	var hc helperConfig
	if err := json.NewDecoder(os.Stdin).Decode(&hc); err != nil {
		fmt.Fprintln(os.Stderr, "helper: read the configuration:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	log := testLoggerFor(os.Getenv("DBRIG_TEST_LOG") != "")
	var err error
	switch role {
	case "log-reader":
		var lr *LogReader
		lr, err = NewLogReader(LogReaderConfig{Publisher: hc.Publisher.Open(), Distribution: hc.Distribution.Open(), Publication: hc.Publication, Logger: log})
		if err == nil {
			err = lr.Run(ctx)
		}
	case "agent":
		var ag *DistributionAgent
		ag, err = NewDistributionAgent(AgentConfig{Targets: Targets{Distribution: hc.Distribution.Open(), Subscriber: hc.Subscriber.Open()},
			Publication: hc.Publication, Options: hc.Options, Logger: log, PollInterval: 100 * time.Millisecond})
		if err == nil {
			err = ag.Run(ctx)
		}
	default:
		err = fmt.Errorf("unknown role %q", role)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "helper", role+":", err)
		return 1
	}
	return 0
}

// child is one helper process.
type child struct {
	role   string
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	done   chan error
	killed bool
}

func startChild(t testing.TB, role string, hc helperConfig) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+role)
	in, err := json.Marshal(hc)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin = bytes.NewReader(in)
	c := &child{role: role, cmd: cmd, stderr: &bytes.Buffer{}, done: make(chan error, 1)}
	cmd.Stderr = c.stderr
	if err := engine.Start(cmd); err != nil { // dies with the test binary
		t.Fatal(err)
	}
	go func() { c.done <- cmd.Wait() }() // owned by the child; Wait is always collected
	return c
}

// kill sends SIGKILL and waits for the process.
func (c *child) kill() {
	c.killed = true
	c.cmd.Process.Signal(syscall.SIGKILL)
	<-c.done
}

// exited reports a child that stopped by itself, with its stderr.
func (c *child) exited() error {
	select {
	case err := <-c.done:
		c.done <- err
		return fmt.Errorf("%s exited by itself (%v): %s", c.role, err, c.stderr.String())
	default:
		return nil
	}
}

// stop ends a child gracefully (SIGTERM), or kills it after 10 s.
func (c *child) stop() error {
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-c.done:
		c.done <- err
		if err != nil {
			return fmt.Errorf("%s: %v: %s", c.role, err, c.stderr.String())
		}
		return nil
	case <-time.After(10 * time.Second):
		c.kill()
		return fmt.Errorf("%s did not stop on SIGTERM", c.role)
	}
}

// opsDDL counts, per key and operation, how often a row was inserted,
// updated or deleted, in the same transaction as the change: on the
// publisher the changes made, on the subscriber the changes applied. Equal
// tables prove that every committed change was applied exactly once.
const opsDDL = `
CREATE TABLE ops (id bigint, op text, n int NOT NULL, PRIMARY KEY (id, op));
CREATE FUNCTION count_op() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO public.ops VALUES (CASE WHEN TG_OP = 'DELETE' THEN OLD.id ELSE NEW.id END, TG_OP, 1)
	ON CONFLICT (id, op) DO UPDATE SET n = ops.n + 1;
	RETURN NULL;
END $$;
CREATE TABLE t (id bigint PRIMARY KEY, v int NOT NULL, pad text);
CREATE TRIGGER count_op AFTER INSERT OR UPDATE OR DELETE ON t FOR EACH ROW EXECUTE FUNCTION count_op();`

// faultPair is a pair on the shared servers set up for the fault tests:
// table t replicated, ops counting changes on both sides.
func faultPair(t *testing.T) (*pair, Config) {
	return faultPairOn(t, shared, shared)
}

// faultPairOn is faultPair on the sides asked for.
func faultPairOn(t *testing.T, pubSide, subSide side) (*pair, Config) {
	p := newPair(t, pubSide, subSide)
	execPub(t, p, opsDDL)
	execSub(t, p, opsDDL)
	cfg := p.cfg
	cfg.Tables = []TableName{{"public", "t"}}
	if _, err := Setup(testCtx(t, time.Minute), cfg, SetupOptions{}); err != nil {
		t.Fatal(err)
	}
	return p, cfg
}

// verifyExactlyOnce checks t and the change counts on both sides.
func verifyExactlyOnce(t *testing.T, cfg Config) {
	t.Helper()
	cfg.Tables = []TableName{{"public", "t"}, {"public", "ops"}}
	mustVerify(t, cfg)
}

// workload writes rows 1..rows into t in transactions of 1 to maxXact rows,
// with updates and deletes of earlier rows between them, pausing between
// transactions. It returns when done or when ctx ends.
func workload(ctx context.Context, ci postgres.ConnInfo, rows, maxXact int, pause time.Duration, seed uint64) error {
	c, err := pgxConnect(ctx, ci, "dbrig test workload")
	if err != nil {
		return err
	}
	defer c.Close(context.WithoutCancel(ctx))
	return writeRows(ctx, c, rand.New(rand.NewPCG(seed, 1)), 1, rows, maxXact, pause, "")
}

// writeRows is workload's loop on an open connection, from row next on;
// with alsoInto, each transaction inserts its rows into that table too.
func writeRows(ctx context.Context, c *pgx.Conn, rnd *rand.Rand, next, rows, maxXact int, pause time.Duration, alsoInto string) error {
	xacts := 0
	for next <= rows {
		n := 1 + rnd.IntN(maxXact)
		last := min(next+n-1, rows)
		var sql strings.Builder
		sql.WriteString("BEGIN;")
		fmt.Fprintf(&sql, "INSERT INTO t SELECT g, g %% 1000, repeat(md5(g::text), %d) FROM generate_series(%d, %d) g;", 1+rnd.IntN(3), next, last)
		if alsoInto != "" {
			fmt.Fprintf(&sql, "INSERT INTO %s SELECT g, g %% 1000, 'also' FROM generate_series(%d, %d) g;", alsoInto, next, last)
		}
		if xacts%7 == 3 && next > 100 {
			fmt.Fprintf(&sql, "UPDATE t SET v = v + 1, pad = 'updated' WHERE id IN (%d, %d, %d);", 1+rnd.IntN(next-1), 1+rnd.IntN(next-1), 1+rnd.IntN(next-1))
		}
		if xacts%13 == 5 && next > 100 {
			fmt.Fprintf(&sql, "DELETE FROM t WHERE id IN (%d, %d);", 1+rnd.IntN(next-1), 1+rnd.IntN(next-1))
		}
		sql.WriteString("COMMIT")
		if _, err := c.Exec(ctx, sql.String()); err != nil {
			return fmt.Errorf("workload: %w", err)
		}
		next = last + 1
		xacts++
		if pause > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(pause):
			}
		}
	}
	return nil
}

// faultRows is the size of the kill test's stream.
func faultRows() int {
	if raceEnabled {
		return 20_000
	}
	return 100_000
}

// TestKillAgents kills the log reader and the distribution agent with
// SIGKILL at random moments, over and over, while 100,000 rows stream
// through; after recovery the subscriber must equal the publisher and
// every change must have been applied exactly once.
func TestKillAgents(t *testing.T) {
	t.Parallel()
	p, cfg := faultPair(t)
	hc := helperConfig{
		Publisher:    cfg.Publisher.Seal(),
		Distribution: cfg.Distribution().Seal(),
		Subscriber:   cfg.Subscriber.Seal(),
		Publication:  cfg.Publication,
		Options:      AgentOptions{BufferSize: 16 << 10, CommitBatchSize: 10},
	}
	children := map[string]*child{
		"log-reader": startChild(t, "log-reader", hc),
		"agent":      startChild(t, "agent", hc),
	}
	defer func() {
		for _, c := range children {
			if c.exited() == nil {
				c.kill()
			}
		}
	}()

	ctx := testCtx(t, 5*time.Minute)
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	werr := make(chan error, 1)
	go func() { werr <- workload(wctx, p.cfg.Publisher, faultRows(), 300, 15*time.Millisecond, 7) }() // waited for below

	rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	kills := map[string]int{}
	var workErr error
	for running := true; running; {
		select {
		case workErr = <-werr:
			running = false
		case <-time.After(time.Duration(50+rnd.IntN(350)) * time.Millisecond):
			role := "agent"
			if rnd.IntN(2) == 0 {
				role = "log-reader"
			}
			for _, c := range children {
				if err := c.exited(); err != nil {
					t.Fatal(err)
				}
			}
			children[role].kill()
			kills[role]++
			children[role] = startChild(t, role, hc)
		}
	}
	if workErr != nil {
		t.Fatal(workErr)
	}
	t.Logf("killed the log reader %d times and the agent %d times", kills["log-reader"], kills["agent"])
	if kills["log-reader"] < 2 || kills["agent"] < 2 {
		t.Errorf("too few kills to mean anything: %v", kills)
	}
	// Recovery: both children run on; the subscriber catches up.
	waitCaughtUp(t, cfg, nil, 3*time.Minute)
	for _, c := range children {
		if err := c.stop(); err != nil {
			t.Error(err)
		}
	}
	verifyExactlyOnce(t, cfg)
	st, err := GetStatus(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("status: %+v", st)
}

// TestLinkResetMidBatch resets every connection of the WAN link while the
// agent's buffers are in flight, push (pipelined) and pull.
func TestLinkResetMidBatch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		mode Mode
		opts AgentOptions
	}{
		{"push-pipelined", Push, AgentOptions{Pipeline: 8, BufferSize: 8 << 10, CommitBatchSize: 5}},
		{"pull", Pull, AgentOptions{BufferSize: 8 << 10, CommitBatchSize: 5, Pipeline: 1}},
		{"pull-read-streams", Pull, AgentOptions{BufferSize: 8 << 10, CommitBatchSize: 5, ReadStreams: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, cfg := faultPair(t)
			up := tc.mode.Crossing(cfg.Distribution(), cfg.Subscriber).Addr()
			proxy := startLink(t, up, link.Config{RTT: 5 * time.Millisecond, Rate: 200 * 1e6})
			targets, err := tc.mode.AgentTargets(cfg.Distribution(), cfg.Subscriber, proxy.Addr())
			if err != nil {
				t.Fatal(err)
			}
			r := startAgents(t, cfg, targets, tc.opts)
			ctx := testCtx(t, 3*time.Minute)
			werr := make(chan error, 1)
			// 10,000 rows in some 100 transactions meet a reset every
			// 150 ms for over a second on a quiet machine; what is checked
			// (every change once, the agent reconnecting) needs resets in
			// flight, not 20,000 rows of them.
			go func() { werr <- workload(ctx, p.cfg.Publisher, 10000, 200, 5*time.Millisecond, 11) }() // waited for below
			resets := 0
			for done := false; !done; {
				select {
				case err := <-werr:
					if err != nil {
						t.Fatal(err)
					}
					done = true
				case <-time.After(150 * time.Millisecond):
					proxy.ResetConnections()
					resets++
				}
			}
			// A few more while the agent catches up.
			for i := 0; i < 3; i++ {
				time.Sleep(100 * time.Millisecond)
				proxy.ResetConnections()
				resets++
			}
			waitCaughtUp(t, cfg, r, 2*time.Minute)
			if err := r.stop(); err != nil {
				t.Fatal(err)
			}
			st := r.agent.Stats()
			t.Logf("%d resets; agent restarted %d times; %+v", resets, st.Restarts, st)
			if st.Restarts == 0 {
				t.Error("the agent never had to reconnect: the resets missed it")
			}
			verifyExactlyOnce(t, cfg)
		})
	}
}

// TestSubscriberRestart restarts the subscriber (immediate shutdown: crash
// recovery) twice while rows stream.
func TestSubscriberRestart(t *testing.T) {
	t.Parallel()
	p, cfg := faultPairOn(t, shared, own(nil))
	r := startAgents(t, cfg, Targets{Distribution: cfg.Distribution(), Subscriber: cfg.Subscriber}, AgentOptions{BufferSize: 8 << 10})
	ctx := testCtx(t, 3*time.Minute)
	werr := make(chan error, 1)
	go func() { werr <- workload(ctx, p.cfg.Publisher, 30000, 300, 5*time.Millisecond, 13) }() // waited for below
	restarter := newRestarter(t, p.sub)
	for i := 0; i < 2; i++ {
		time.Sleep(700 * time.Millisecond)
		restarter.restart(t)
	}
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
	waitCaughtUp(t, cfg, r, 2*time.Minute)
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	if st := r.agent.Stats(); st.Restarts == 0 {
		t.Error("the agent never noticed the restarts")
	}
	verifyExactlyOnce(t, cfg)
}

// restarter stops and starts an instance's server on its data directory.
type restarter struct {
	inst    *postgres.Instance
	pgctl   string
	user    engine.ServerUser
	started bool
}

func newRestarter(t *testing.T, inst *postgres.Instance) *restarter {
	u, err := engine.FindServerUser()
	if err != nil {
		t.Fatal(err)
	}
	rs := &restarter{inst: inst, pgctl: inst.Binaries().Path("pg_ctl"), user: u}
	// Runs before the instance's own cleanup (LIFO): stop the server this
	// test started, which the instance does not know.
	t.Cleanup(func() {
		if rs.started {
			rs.ctl("stop", "-m", "immediate")
		}
	})
	return rs
}

func (rs *restarter) ctl(args ...string) ([]byte, error) {
	cmd := exec.Command(rs.pgctl, append([]string{"-D", rs.inst.DataDir(), "-w", "-t", "60"}, args...)...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: rs.user.Credential()}
	return cmd.CombinedOutput()
}

func (rs *restarter) restart(t *testing.T) {
	t.Helper()
	rs.crash(t)
	time.Sleep(200 * time.Millisecond) // the agent finds it gone
	rs.start(t)
}

// crash stops the server the way a crash does: no shutdown checkpoint,
// whatever is not in its WAL files is lost.
func (rs *restarter) crash(t *testing.T) {
	t.Helper()
	if out, err := rs.ctl("stop", "-m", "immediate"); err != nil {
		t.Fatalf("stop %s: %v: %s", rs.inst.Name(), err, out)
	}
}

// start starts the server after crash and waits for its recovery.
func (rs *restarter) start(t *testing.T) {
	t.Helper()
	if out, err := rs.ctl("start", "-l", rs.inst.LogPath()); err != nil {
		t.Fatalf("start %s: %v: %s", rs.inst.Name(), err, out)
	}
	rs.started = true
}

// TestConstraintViolation: a CHECK constraint on the subscriber refuses a
// row. The agent stops with a clear error; the distribution database keeps
// every command; once the constraint is gone a new run catches up.
func TestConstraintViolation(t *testing.T) {
	t.Parallel()
	p, cfg := faultPair(t)
	execSub(t, p, "ALTER TABLE t ADD CONSTRAINT small_v CHECK (v < 500)")
	ctx := testCtx(t, 3*time.Minute)
	lr, err := NewLogReader(LogReaderConfig{Publisher: cfg.Publisher, Distribution: cfg.Distribution(), Publication: cfg.Publication, Logger: cfg.Logger})
	if err != nil {
		t.Fatal(err)
	}
	lctx, lstop := context.WithCancel(ctx)
	defer lstop()
	lerr := make(chan error, 1)
	go func() { lerr <- lr.Run(lctx) }() // waited for below
	defer func() { lstop(); <-lerr }()

	execPub(t, p, "INSERT INTO t SELECT g, g % 400, 'ok' FROM generate_series(1, 2000) g")
	execPub(t, p, "INSERT INTO t SELECT g, g % 1000, 'too big' FROM generate_series(2001, 3000) g")
	execPub(t, p, "INSERT INTO t SELECT g, 1, 'after' FROM generate_series(3001, 3100) g")
	w, err := NewWaiter(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	target, _ := w.CurrentLSN(ctx)
	if err := pollUntil(ctx, 10*time.Millisecond, func() (bool, error) { return w.Stored(ctx, target) }); err != nil {
		t.Fatal(err)
	}
	before, err := GetStatus(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}

	agent := func() (*DistributionAgent, error) {
		a, err := NewDistributionAgent(AgentConfig{Targets: Targets{Distribution: cfg.Distribution(), Subscriber: cfg.Subscriber},
			Publication: cfg.Publication, UntilCaughtUp: true, Options: AgentOptions{CommitBatchSize: 1}, Logger: cfg.Logger})
		if err != nil {
			t.Fatal(err)
		}
		return a, a.Run(ctx)
	}
	_, err = agent()
	var ae *ApplyError
	if !errors.As(err, &ae) {
		t.Fatalf("agent: %v, want an ApplyError", err)
	}
	msg := err.Error()
	for _, want := range []string{"small_v", "INSERT into t", "distribution database keeps every command", "23514"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q: %s", want, msg)
		}
	}
	t.Logf("agent stopped: %v", err)
	after, err := GetStatus(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if after.LogReader.LastCmdID != before.LogReader.LastCmdID || after.Pending != before.Pending-2000 || after.Subscription.Transactions != 1 {
		t.Errorf("after the failure: %d commands pending (before %d), subscription at %d transactions; want the first transaction applied, the rest kept",
			after.Pending, before.Pending, after.Subscription.Transactions)
	}
	// Again: the same error, nothing applied twice.
	if _, err := agent(); !errors.As(err, &ae) {
		t.Fatalf("second run: %v", err)
	}

	execSub(t, p, "ALTER TABLE t DROP CONSTRAINT small_v")
	if _, err := agent(); err != nil {
		t.Fatalf("after removing the constraint: %v", err)
	}
	verifyExactlyOnce(t, cfg)
}

// TestDiskFull puts the subscriber's table in a tablespace on a small
// tmpfs. When it fills up the agent stops with the server's "No space left
// on device"; the distribution database keeps every command; after the file
// system grows, a new run catches up. It needs root (mount); without it the
// test says so and skips.
func TestDiskFull(t *testing.T) {
	t.Parallel()
	dir, err := os.MkdirTemp("", "dbrig-diskfull-")
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", dir).CombinedOutput(); err != nil {
		os.Remove(dir)
		t.Skipf("cannot mount a small tmpfs to fill (%v: %s): the disk-full fault needs root", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		exec.Command("umount", "-l", dir).Run()
		os.Remove(dir)
	})
	u, err := engine.FindServerUser()
	if err != nil {
		t.Fatal(err)
	}
	if err := u.Chown(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	p := startPair(t)
	// A tablespace is the server's: named after the test's database, it
	// is the test's alone on the shared subscriber.
	small := p.cfg.Subscriber.Database + "_small"
	execPub(t, p, opsDDL)
	execSub(t, p, "CREATE TABLESPACE "+small+" LOCATION '"+dir+"'")
	execSub(t, p, strings.ReplaceAll(opsDDL, "pad text);", "pad text) TABLESPACE "+small+";"))
	t.Cleanup(func() {
		p.sub.Exec(context.Background(), p.cfg.Subscriber.Database, "DROP TABLE t", "DROP TABLESPACE "+small)
	})
	cfg := p.cfg
	cfg.Tables = []TableName{{"public", "t"}}
	ctx := testCtx(t, 3*time.Minute)
	if _, err := Setup(ctx, cfg, SetupOptions{}); err != nil {
		t.Fatal(err)
	}
	// About 4.6 MB of rows: more than twice what the file system holds.
	// (With 60,000 rows on 6 MB the log reader stored and the agent applied
	// three times the commands, for the same full disk.)
	execPub(t, p, "INSERT INTO t SELECT g, g % 1000, repeat(md5(g::text), 6) FROM generate_series(1, 20000) g")
	lr, err := NewLogReader(LogReaderConfig{Publisher: cfg.Publisher, Distribution: cfg.Distribution(), Publication: cfg.Publication, Logger: cfg.Logger})
	if err != nil {
		t.Fatal(err)
	}
	lctx, lstop := context.WithCancel(ctx)
	lerr := make(chan error, 1)
	go func() { lerr <- lr.Run(lctx) }() // waited for below
	defer func() { lstop(); <-lerr }()
	w, err := NewWaiter(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	target, _ := w.CurrentLSN(ctx)
	if err := pollUntil(ctx, 10*time.Millisecond, func() (bool, error) { return w.Stored(ctx, target) }); err != nil {
		t.Fatal(err)
	}
	before, err := GetStatus(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	run := func() error {
		a, err := NewDistributionAgent(AgentConfig{Targets: Targets{Distribution: cfg.Distribution(), Subscriber: cfg.Subscriber},
			Publication: cfg.Publication, UntilCaughtUp: true, Logger: cfg.Logger})
		if err != nil {
			t.Fatal(err)
		}
		return a.Run(ctx)
	}
	err = run()
	var ae *ApplyError
	if !errors.As(err, &ae) || !strings.Contains(err.Error(), "No space left on device") || !strings.Contains(err.Error(), "53100") {
		t.Fatalf("agent: %v, want an ApplyError for the full disk", err)
	}
	t.Logf("agent stopped: %v", err)
	after, err := GetStatus(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if after.Pending != before.Pending || after.Subscription.LastCmdID != 0 {
		t.Errorf("after the failure: %d commands pending (before %d), subscription at command %d", after.Pending, before.Pending, after.Subscription.LastCmdID)
	}
	if out, err := exec.Command("mount", "-o", "remount,size=200m", dir).CombinedOutput(); err != nil {
		t.Fatalf("grow the file system: %v: %s", err, out)
	}
	if err := run(); err != nil {
		t.Fatalf("after the file system grew: %v", err)
	}
	verifyExactlyOnce(t, cfg)
}
