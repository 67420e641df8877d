package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/link"
)

// syncBuffer is a bytes.Buffer that a running command and the test may
// use at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// background is a dbrig command running while the test goes on.
type background struct {
	cancel   context.CancelFunc
	done     chan int
	out, err *syncBuffer
}

// replStart runs dbrig in a goroutine; stop cancels it (as Ctrl-C does)
// and returns its exit code.
func replStart(t *testing.T, env map[string]string, args ...string) *background {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	b := &background{cancel: cancel, done: make(chan int, 1), out: &syncBuffer{}, err: &syncBuffer{}}
	go func() {
		b.done <- run(ctx, args, &app{stdout: b.out, stderr: b.err, getenv: func(k string) string { return env[k] }, version: "test"})
	}()
	t.Cleanup(func() { b.stop() })
	return b
}

func (b *background) stop() int {
	b.cancel()
	select {
	case code := <-b.done:
		b.done <- code
		return code
	case <-time.After(time.Minute):
		return -1
	}
}

// statusJSON is what the tests read of `replicate status --json`.
type statusJSON struct {
	Slot struct {
		Active           bool   `json:"active"`
		ConfirmedLSN     string `json:"confirmed_lsn"`
		WALRetainedBytes *int64 `json:"wal_retained_bytes"`
	} `json:"slot"`
	LogReader struct {
		Running  bool   `json:"running"`
		State    string `json:"state"`
		Commands int64  `json:"commands"`
		Host     string `json:"host"`
		Since    string `json:"since"`
	} `json:"log_reader"`
	Agent struct {
		Running bool   `json:"running"`
		Mode    string `json:"mode"`
		Host    string `json:"host"`
		Since   string `json:"since"`
		State   string `json:"state"`
		Error   string `json:"error"`
	} `json:"agent"`
	Stored  int64 `json:"stored"`
	Pending int64 `json:"pending"`
}

func replStatus(t *testing.T, env map[string]string, args ...string) (statusJSON, string) {
	t.Helper()
	code, out, errs := replRun(t, env, append([]string{"replicate", "status", "--json"}, args...)...)
	var st statusJSON
	if code != 0 {
		t.Fatalf("status: exit %d: %s", code, errs)
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	return st, out
}

// waitStatus polls status until cond holds.
func waitStatus(t *testing.T, env map[string]string, what string, cond func(statusJSON) bool, args ...string) statusJSON {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		st, out := replStatus(t, env, args...)
		if cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("status never showed %s:\n%s", what, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func exists(t *testing.T, i *postgres.Instance, sql string) bool {
	t.Helper()
	return queryInt(t, i, "shop", sql) > 0
}

func TestReplicateTeardownRemovesOnlyItsOwn(t *testing.T) {
	t.Parallel()
	pub, sub, subDB := replServers(t, "logical")
	mustExec(t, pub, "shop",
		"CREATE TABLE a (id int PRIMARY KEY, v text)",
		"CREATE TABLE b (id int PRIMARY KEY, v text)",
		"CREATE PUBLICATION reporting_pub FOR TABLE b")
	env := map[string]string{"DBRIG_PUBLISHER": pub.Conn("shop").URI(), "DBRIG_SUBSCRIBER": sub.Conn(subDB).URI()}
	ok := func(args ...string) string {
		t.Helper()
		code, out, errs := replRun(t, env, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errs)
		}
		return out
	}
	refused := func(want string, args ...string) {
		t.Helper()
		code, out, errs := replRun(t, env, args...)
		t.Logf("%v: exit %d: %s", args, code, strings.TrimSpace(errs))
		if code != 1 || !strings.Contains(errs, want) || strings.Contains(out, "removed") {
			t.Errorf("%v: exit %d, want 1 with %q\nstdout: %s\nstderr: %s", args, code, want, out, errs)
		}
	}
	ours := func(what string, want bool) {
		t.Helper()
		checks := map[string]string{
			"distribution database": "SELECT count(*) FROM pg_database WHERE datname = 'dbrig_distribution'",
			"slot dbrig":            "SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'dbrig'",
			"publication dbrig":     "SELECT count(*) FROM pg_publication WHERE pubname = 'dbrig'",
			"slot second":           "SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'second'",
			"publication second":    "SELECT count(*) FROM pg_publication WHERE pubname = 'second'",
			"reporting_pub":         "SELECT count(*) FROM pg_publication WHERE pubname = 'reporting_pub'",
		}
		if got := exists(t, pub, checks[what]); got != want {
			t.Errorf("%s exists: %v, want %v", what, got, want)
		}
	}

	ok("replicate", "setup", "--tables", "a", "--init", "snapshot")
	refused(`no replication "nosuch"`, "replicate", "teardown", "--publication", "nosuch")
	ours("distribution database", true)
	ours("slot dbrig", true)
	ours("publication dbrig", true)
	refused(`no_such_db`, "replicate", "teardown", "--publication", "reporting_pub", "--distribution-db", "no_such_db")
	refused(`not dbrig's`, "replicate", "teardown", "--publication", "reporting_pub")
	ours("reporting_pub", true)

	// A second replication shares the publisher and the distribution database.
	ok("replicate", "setup", "--publication", "second", "--tables", "b", "--init", "snapshot")
	mustExec(t, pub, "shop", "INSERT INTO a SELECT g, 'a' || g FROM generate_series(1, 100) g",
		"INSERT INTO b SELECT g, 'b' || g FROM generate_series(1, 50) g")
	ok("replicate", "run", "--publication", "second", "--until-caught-up", "--progress", "0")
	if n := queryInt(t, sub, subDB, "SELECT count(*) FROM b"); n != 50 {
		t.Errorf("subscriber b: %d rows, want 50", n)
	}
	ok("replicate", "teardown", "--publication", "second")
	ours("slot second", false)
	ours("publication second", false)
	ours("distribution database", true)
	ours("slot dbrig", true)
	ours("reporting_pub", true)
	ok("replicate", "run", "--until-caught-up", "--progress", "0")
	if n := queryInt(t, sub, subDB, "SELECT count(*) FROM a"); n != 100 {
		t.Errorf("subscriber a: %d rows, want 100", n)
	}
	ok("replicate", "teardown")
	ours("distribution database", false)
	ours("slot dbrig", false)
	ours("reporting_pub", true)
	refused(`no replication "dbrig"`, "replicate", "teardown")
}

func TestReplicateNeverPrintsAPassword(t *testing.T) {
	t.Parallel()
	const marker = "Zq7pMarker"
	malformed := []string{
		"postgres//repl:" + marker + "@host/db",
		"postgres:/repl:" + marker + "@host/db",
		"repl:" + marker + "@host/db",
		"postgres://repl:" + marker + "@host:99999/db",
		"postgres://repl:" + marker + "@[::1/db",
		"postgresql://repl:" + marker + "@host/db?sslmode=bogus",
		"postgres://repl:" + marker + "@host/",
		"postgres://repl:p@" + marker + "@host/db",
		"mysql://repl:" + marker + "@host/db",
		"host=x password=" + marker + " port=abc",
		"host=x password='" + marker,
		"user=repl password=" + marker + " dbname",
		"password = '" + marker + "' host=x port=",
		"postgres://repl:" + marker + "@127.0.0.1:1/db",
	}
	for _, uri := range malformed {
		for _, action := range []string{"setup", "run", "status", "verify", "teardown"} {
			for _, via := range []string{"flag", "env"} {
				env := map[string]string{"DBRIG_SUBSCRIBER": "postgres://u@127.0.0.1:1/sub"}
				args := []string{"replicate", action, "--verbose"}
				if via == "flag" {
					args = append(args, "--publisher", uri)
				} else {
					env["DBRIG_PUBLISHER"] = uri
				}
				code, out, errs := replRun(t, env, args...)
				if strings.Contains(out+errs, marker) {
					t.Errorf("%s %s (%s): the password was printed:\n%s%s", action, uri, via, out, errs)
				}
				if code != 1 && code != 2 {
					t.Errorf("%s %s: exit %d, want 1 or 2", action, uri, code)
				}
			}
		}
	}
}

func TestReplicateStatusShowsWhereEachRoleRuns(t *testing.T) {
	t.Parallel()
	pub, sub, subDB := replServers(t, "logical")
	mustExec(t, pub, "shop", "CREATE TABLE a (id int PRIMARY KEY, v text)")
	env := map[string]string{"DBRIG_PUBLISHER": pub.Conn("shop").URI(), "DBRIG_SUBSCRIBER": sub.Conn(subDB).URI()}
	if code, out, errs := replRun(t, env, "replicate", "setup", "--tables", "a", "--init", "snapshot", "--mode", "push"); code != 0 {
		t.Fatalf("setup: %d\n%s%s", code, out, errs)
	}
	lr := replStart(t, env, "replicate", "run", "--role", "log-reader", "--progress", "0")
	agent := replStart(t, env, "replicate", "run", "--role", "agent", "--mode", "pull", "--progress", "0")
	host, _ := os.Hostname()
	// A role holds its lock a moment before it records where it runs;
	// status says "starting" meanwhile.
	st := waitStatus(t, env, "both roles running", func(s statusJSON) bool {
		if s.Agent.Running && s.Agent.State == "starting" && (s.Agent.Mode != "" || s.Agent.Host != "") {
			t.Errorf("a starting agent shows a place: %+v", s.Agent)
		}
		return s.Agent.Running && s.Agent.State == "running" && s.LogReader.Running && s.LogReader.State == "running"
	})
	if st.Agent.Mode != "pull" || st.Agent.Host != host || st.Agent.Since == "" || st.LogReader.Host != host || st.LogReader.Since == "" {
		t.Errorf("status: %+v", st)
	}
	if !regexp.MustCompile(`^[0-9A-F]+/[0-9A-F]+$`).MatchString(st.Slot.ConfirmedLSN) {
		t.Errorf("confirmed_lsn %q is not in PostgreSQL's X/Y form", st.Slot.ConfirmedLSN)
	}
	_, out, _ := replRun(t, env, "replicate", "status")
	t.Logf("status:\n%s", out)
	if !regexp.MustCompile(`agent\s+running, pull mode, on ` + regexp.QuoteMeta(host)).MatchString(out) {
		t.Errorf("status text does not say the agent runs in pull mode on %s:\n%s", host, out)
	}
	if code := agent.stop(); code != 130 {
		t.Errorf("agent run: exit %d after Ctrl-C, want 130; stderr: %s", code, agent.err.String())
	}
	st = waitStatus(t, env, "the agent stopped", func(s statusJSON) bool { return !s.Agent.Running })
	if !st.LogReader.Running || st.Agent.Mode != "pull" {
		t.Errorf("after the agent stopped: %+v", st)
	}
	lr.stop()
	if strings.Contains(lr.err.String()+agent.err.String(), "log reader: log reader:") {
		t.Errorf("doubled prefix:\n%s", lr.err.String())
	}
}

func TestReplicateApplyErrorStopsOnlyTheAgent(t *testing.T) {
	t.Parallel()
	pub, sub, subDB := replServers(t, "logical")
	mustExec(t, pub, "shop", "CREATE TABLE t (id int PRIMARY KEY, v int NOT NULL)")
	env := map[string]string{"DBRIG_PUBLISHER": pub.Conn("shop").URI(), "DBRIG_SUBSCRIBER": sub.Conn(subDB).URI()}
	if code, out, errs := replRun(t, env, "replicate", "setup", "--tables", "t", "--init", "snapshot"); code != 0 {
		t.Fatalf("setup: %d\n%s%s", code, out, errs)
	}
	mustExec(t, sub, subDB, "ALTER TABLE t ADD CONSTRAINT small_v CHECK (v < 100)")
	r := replStart(t, env, "replicate", "run", "--progress", "200ms", "--metrics-addr", "127.0.0.1:0")
	mustExec(t, pub, "shop", "INSERT INTO t VALUES (1, 1)", "INSERT INTO t VALUES (2, 500)")
	st := waitStatus(t, env, "the agent stopped on the constraint", func(s statusJSON) bool { return s.Agent.State == "stopped" })
	if !strings.Contains(st.Agent.Error, "small_v") {
		t.Errorf("agent error %q does not name the constraint", st.Agent.Error)
	}
	// The log reader keeps capturing while the agent is stopped.
	before := st.LogReader.Commands
	mustExec(t, pub, "shop", "INSERT INTO t SELECT g, 1 FROM generate_series(3, 52) g")
	st = waitStatus(t, env, "the log reader storing new commands", func(s statusJSON) bool { return s.LogReader.Commands >= before+50 })
	if !st.LogReader.Running || st.Pending < 51 || st.Slot.WALRetainedBytes == nil {
		t.Errorf("with the agent stopped: %+v", st)
	}
	// The metrics an operator alerts on say the same.
	metrics := scrape(t, r)
	for _, w := range []string{
		`dbrig_replication_role_up{publication="dbrig",role="agent"} 0`,
		`dbrig_replication_role_up{publication="dbrig",role="log_reader"} 1`,
		`dbrig_replication_errors_total{kind="permanent",publication="dbrig"} 1`,
		`dbrig_replication_agent_running{publication="dbrig"} 0`,
		`dbrig_replication_lag_seconds{publication="dbrig"}`,
		`dbrig_replication_lag_bytes{publication="dbrig"}`,
		`dbrig_replication_slot_wal_retained_bytes{publication="dbrig"}`,
		`dbrig_replication_commands_per_second{publication="dbrig"}`,
	} {
		if !strings.Contains(metrics, w) {
			t.Errorf("metrics lack %s", w)
		}
	}
	// The first row may or may not have been applied with its own commit
	// before the refused one: 51 or 52 commands pending.
	if m := regexp.MustCompile(`dbrig_replication_pending_commands\{publication="dbrig"\} (\d+)`).FindStringSubmatch(metrics); m == nil || (m[1] != "51" && m[1] != "52") {
		t.Errorf("pending commands %v, want 51 or 52", m)
	}
	if t.Failed() {
		t.Logf("metrics:\n%s", metrics)
	}
	_, out, _ := replRun(t, env, "replicate", "status")
	t.Logf("status:\n%s", out)
	for _, w := range []string{"stopped", "small_v", "WAL retained", "pending"} {
		if !strings.Contains(out, w) {
			t.Errorf("status lacks %q:\n%s", w, out)
		}
	}
	code := r.stop()
	errs := r.err.String()
	if code != 1 || strings.Count(errs, `violates check constraint "small_v"`) != 1 {
		t.Errorf("run: exit %d, want 1 with the error once:\n%s", code, errs)
	}
	mustExec(t, sub, subDB, "ALTER TABLE t DROP CONSTRAINT small_v")
	if code, out, errs := replRun(t, env, "replicate", "run", "--until-caught-up", "--progress", "0"); code != 0 {
		t.Fatalf("run after the fix: %d\n%s%s", code, out, errs)
	}
	if code, out, errs := replRun(t, env, "replicate", "verify"); code != 0 {
		t.Errorf("verify: %d\n%s%s", code, out, errs)
	}
}

// TestReplicateSnapshotCopiesTheSchema: a table created on the subscriber
// by --init snapshot has what pg_dump --schema-only of it has (defaults,
// sequences and their positions, identity, NOT NULL, CHECK, UNIQUE,
// secondary indexes), so the subscriber can take over.
func TestReplicateSnapshotCopiesTheSchema(t *testing.T) {
	t.Parallel()
	pub, sub, subDB := replServers(t, "logical")
	mustExec(t, pub, "shop",
		"CREATE SCHEMA sales",
		"CREATE SEQUENCE sales.order_no START 1000 INCREMENT 5",
		`CREATE TABLE sales.orders (
			id bigserial PRIMARY KEY,
			no int NOT NULL DEFAULT nextval('sales.order_no'),
			code text NOT NULL UNIQUE,
			qty int NOT NULL DEFAULT 1 CHECK (qty > 0),
			price numeric(10,2) CHECK (price >= 0),
			placed timestamptz NOT NULL DEFAULT now(),
			ext int GENERATED BY DEFAULT AS IDENTITY (START 7),
			CONSTRAINT qty_price CHECK (qty < 1000 OR price < 10))`,
		"CREATE INDEX orders_placed ON sales.orders (placed DESC)",
		"CREATE UNIQUE INDEX orders_lower_code ON sales.orders (lower(code))",
		"INSERT INTO sales.orders (code, qty, price) SELECT 'c' || g, g % 10 + 1, g FROM generate_series(1, 100) g")
	env := map[string]string{"DBRIG_PUBLISHER": pub.Conn("shop").URI(), "DBRIG_SUBSCRIBER": sub.Conn(subDB).URI()}
	if code, out, errs := replRun(t, env, "replicate", "setup", "--tables", "sales.orders", "--init", "snapshot"); code != 0 {
		t.Fatalf("setup: %d\n%s%s", code, out, errs)
	}
	dump := func(i *postgres.Instance, db string) string {
		t.Helper()
		out, err := pgDump(i, db, "--schema-only", "--no-owner", "--no-privileges", "--table=sales.orders", "--table=sales.order_no")
		if err != nil {
			t.Fatalf("pg_dump: %v", err)
		}
		return out
	}
	if p, s := dump(pub, "shop"), dump(sub, subDB); p != s {
		t.Errorf("the subscriber's schema differs from the publisher's:\n--- publisher\n%s\n--- subscriber\n%s", p, s)
	}
	for _, seq := range []string{"sales.order_no", "sales.orders_id_seq", "sales.orders_ext_seq"} {
		q := "SELECT last_value * 2 + is_called::int FROM " + seq
		if p, s := queryInt(t, pub, "shop", q), queryInt(t, sub, subDB, q); p != s {
			t.Errorf("sequence %s stands at %d on the subscriber, %d on the publisher", seq, s, p)
		}
	}
	// The subscriber can take over: its sequences go on from the publisher's.
	mustExec(t, sub, subDB, "INSERT INTO sales.orders (code) VALUES ('taken over')")
	if n := queryInt(t, sub, subDB, "SELECT count(*) FROM sales.orders"); n != 101 {
		t.Errorf("subscriber holds %d rows, want 101", n)
	}
}

// pgDump runs the instance's pg_dump on database db with args.
func pgDump(i *postgres.Instance, db string, args ...string) (string, error) {
	cmd := exec.Command(i.Binaries().Path("pg_dump"), append(args, "--dbname="+db)...)
	cmd.Env = append(os.Environ(), i.Conn(db).Env()...)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%w: %s", err, errb.String())
	}
	// \restrict and \unrestrict carry a key new with every dump.
	var keep []string
	for _, l := range strings.Split(string(out), "\n") {
		if !strings.HasPrefix(l, `\restrict`) && !strings.HasPrefix(l, `\unrestrict`) {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n"), nil
}

// scrape reads the Prometheus text a running dbrig serves at the address
// it printed.
func scrape(t *testing.T, b *background) string {
	t.Helper()
	re := regexp.MustCompile(`metrics at (http://\S+/metrics)`)
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m := re.FindStringSubmatch(b.err.String()); m != nil {
			resp, err := http.Get(m[1])
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("GET %s: %d %v", m[1], resp.StatusCode, err)
			}
			return string(body)
		}
		if time.Now().After(deadline) {
			t.Fatalf("no metrics address printed:\n%s", b.err.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestReplicateLogReaderFailureIsSaidOnce: a log reader that fails for good
// (its slot dropped behind its back) ends the run with exit 1 and says so
// once, prefixed once.
func TestReplicateLogReaderFailureIsSaidOnce(t *testing.T) {
	t.Parallel()
	pub, sub, subDB := replServers(t, "logical")
	mustExec(t, pub, "shop", "CREATE TABLE a (id int PRIMARY KEY, v text)")
	env := map[string]string{"DBRIG_PUBLISHER": pub.Conn("shop").URI(), "DBRIG_SUBSCRIBER": sub.Conn(subDB).URI()}
	if code, out, errs := replRun(t, env, "replicate", "setup", "--tables", "a", "--init", "snapshot"); code != 0 {
		t.Fatalf("setup: %d\n%s%s", code, out, errs)
	}
	r := replStart(t, env, "replicate", "run", "--role", "log-reader", "--progress", "0")
	waitStatus(t, env, "the log reader running", func(s statusJSON) bool { return s.LogReader.Running })
	deadline := time.Now().Add(30 * time.Second)
	for queryInt(t, pub, "shop", "SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'dbrig'") > 0 {
		// Between the walsender's exit and the log reader's reconnect the
		// slot is free to drop.
		mustExec(t, pub, "shop", "SELECT pg_terminate_backend(active_pid) FROM pg_replication_slots WHERE slot_name = 'dbrig' AND active_pid IS NOT NULL")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		pub.Exec(ctx, "shop", "SELECT pg_drop_replication_slot('dbrig')")
		cancel()
		if time.Now().After(deadline) {
			t.Fatal("could not drop the slot")
		}
	}
	select {
	case code := <-r.done:
		r.done <- code
		errs := r.err.String()
		t.Logf("run ended: exit %d\n%s", code, errs)
		if code != 1 || strings.Count(errs, "log reader:") != 1 || strings.Contains(errs, "log reader: log reader:") {
			t.Errorf("run: exit %d, want 1 with one \"log reader:\" error:\n%s", code, errs)
		}
	case <-time.After(time.Minute):
		t.Fatalf("the run went on without its slot:\n%s", r.err.String())
	}
}

// TestReplicateSetupPrintsItsCopy runs setup --init snapshot across a slow
// link with --progress: stderr says which table is being copied and how
// much has crossed, and no password.
func TestReplicateSetupPrintsItsCopy(t *testing.T) {
	t.Parallel()
	pub, sub, subDB := replServers(t, "logical")
	mustExec(t, pub, "shop", "CREATE TABLE big (id bigint PRIMARY KEY, v text)",
		"INSERT INTO big SELECT g, repeat(md5(g::text), 16) FROM generate_series(1, 4000) g")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// 64 KiB per 40 ms round trip and stream: about a second for 2 MB.
	proxy, err := link.Listen(ctx, "127.0.0.1:0", pub.Conn("shop").Addr(), link.Config{RTT: 40 * time.Millisecond, Window: link.LegacyWindow})
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	far, err := pub.Conn("shop").Via(proxy.Addr())
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"DBRIG_PUBLISHER": far.URI(), "DBRIG_SUBSCRIBER": sub.Conn(subDB).URI()}
	code, out, errs := replRun(t, env, "replicate", "setup", "--tables", "big", "--init", "snapshot", "--streams", "2", "--progress", "20ms")
	if code != 0 {
		t.Fatalf("setup: %d\n%s%s", code, out, errs)
	}
	t.Logf("stderr:\n%s", errs)
	if !regexp.MustCompile(`snapshot: big \(table 1 of 1\): [0-9.]+ MB copied \([0-9.]+ MB on the publisher's disk\); [0-9.]+ MB in all, [0-9.]+ MB/s`).MatchString(errs) {
		t.Errorf("no progress of the copy on stderr:\n%s", errs)
	}
	if pw := far.Password(); pw == "" || strings.Contains(out+errs, pw) {
		t.Errorf("the password is empty or printed")
	}
	if !strings.Contains(out, "initialized by snapshot: 1 tables, 4000 rows") {
		t.Errorf("setup's summary:\n%s", out)
	}
}
