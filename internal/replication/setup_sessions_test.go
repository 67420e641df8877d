package replication

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/link"
)

// turnCounter relays TCP connections to a server and counts each one's
// turns: the writes of the client that follow an answer (or open the
// conversation), each a round trip that a WAN would add its delay to,
// whatever the driver's calls were. It names each connection after its
// startup message (database, application_name, replication).
type turnCounter struct {
	ln       net.Listener
	upstream string
	mu       sync.Mutex
	conns    []*countedConn
	wg       sync.WaitGroup
}

type countedConn struct {
	mu       sync.Mutex
	name     string
	turns    int
	answered bool
	started  bool
}

func startTurnCounter(t *testing.T, upstream string) *turnCounter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	tc := &turnCounter{ln: ln, upstream: upstream}
	tc.wg.Add(1)
	go tc.accept() // ends when the listener closes, below
	t.Cleanup(func() {
		ln.Close()
		tc.wg.Wait()
	})
	return tc
}

func (tc *turnCounter) addr() string { return tc.ln.Addr().String() }

func (tc *turnCounter) accept() {
	defer tc.wg.Done()
	for {
		c, err := tc.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", tc.upstream)
		if err != nil {
			c.Close()
			continue
		}
		cc := &countedConn{}
		tc.mu.Lock()
		tc.conns = append(tc.conns, cc)
		tc.mu.Unlock()
		tc.wg.Add(2)
		go func() { // ends when either side closes
			defer tc.wg.Done()
			cc.relay(up, c, true)
			up.Close()
		}()
		go func() { // ends when either side closes
			defer tc.wg.Done()
			cc.relay(c, up, false)
			c.Close()
		}()
	}
}

// relay copies src to dst; fromClient marks the client's direction, whose
// writes after an answer are turns.
func (cc *countedConn) relay(dst io.Writer, src io.Reader, fromClient bool) {
	buf := make([]byte, 64<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			cc.mu.Lock()
			if fromClient {
				if !cc.started {
					cc.started, cc.name = true, startupName(buf[:n])
				}
				if cc.answered || cc.turns == 0 {
					cc.turns++
				}
				cc.answered = false
			} else {
				cc.answered = true
			}
			cc.mu.Unlock()
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// startupName names a connection by its startup message's parameters.
func startupName(b []byte) string {
	if len(b) < 8 {
		return "(short startup)"
	}
	if binary.BigEndian.Uint32(b[4:8]) != 196608 {
		return "(not a protocol 3.0 startup: TLS?)"
	}
	params := map[string]string{}
	kv := bytes.Split(b[8:], []byte{0})
	for i := 0; i+1 < len(kv); i += 2 {
		params[string(kv[i])] = string(kv[i+1])
	}
	app := params["application_name"]
	if params["replication"] != "" && strings.HasPrefix(app, "dbrig setup ") {
		app = "dbrig setup" // and the tag that tells it from other setups'
	}
	name := app + " on " + params["database"]
	if params["replication"] != "" {
		name += " (replication)"
	}
	return name
}

// turns is each connection's name and turns, sorted by name, and the
// total.
func (tc *turnCounter) turns() (map[string][]int, int) {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	out := map[string][]int{}
	total := 0
	for _, c := range tc.conns {
		c.mu.Lock()
		out[c.name] = append(out[c.name], c.turns)
		total += c.turns
		c.mu.Unlock()
	}
	for _, v := range out {
		sort.Ints(v)
	}
	return out, total
}

// TestSetupRoundTripsToThePublisher counts the round trips each of
// setup's sessions on the publisher's server takes, as seen from the
// subscriber's site: each crosses the WAN there (77 ms in the seed), so
// setup reads its checks and each table's DDL in one batch, opens the
// sessions it needs later while it works, and writes the distribution
// database in one transaction. Before, on these two tables, the setup
// session took 29 turns, the distribution database's 8 and a snapshot
// session 9 (now 8, 5 and 6; 10 before CREATE DATABASE and CREATE
// PUBLICATION shared a round trip, and the database's mark the DDL's; a
// snapshot session 7 before its import went with its first COPY).
func TestSetupRoundTripsToThePublisher(t *testing.T) {
	t.Parallel()
	p, got := setupCountingTurns(t, "publisher")
	// The handshake takes 3 to 5 turns (TLS or not, SCRAM or not); then
	// the setup session: its checks and the tables (1), CREATE DATABASE
	// and CREATE PUBLICATION in one pipeline (1), the database's mark with
	// the DDL of the tables the subscriber lacks (1), their sequences'
	// positions (1).
	wantAtMost := map[string]int{
		"dbrig setup on " + p.cfg.Publisher.Database:                    5 + 4,
		"dbrig setup on " + p.cfg.DistributionDB:                        5 + 1,
		"dbrig setup on " + p.cfg.Publisher.Database + " (replication)": 5 + 1,
		"dbrig snapshot on " + p.cfg.Publisher.Database:                 5 + 2, // one COPY a table, the first with the snapshot's import
	}
	for name, turns := range got {
		most, ok := wantAtMost[name]
		if !ok {
			t.Errorf("a session %q (%d turns) that setup should not open", name, turns)
			continue
		}
		for _, n := range turns {
			if n > most {
				t.Errorf("session %q took %d turns, want at most %d", name, n, most)
			}
		}
	}
	if n := len(got["dbrig snapshot on "+p.cfg.Publisher.Database]); n != 2 {
		t.Errorf("%d snapshot sessions, want 2", n)
	}
	if n := len(got["dbrig setup on "+p.cfg.Publisher.Database]); n != 1 {
		t.Errorf("%d setup sessions on the published database, want 1: %v", n, got)
	}
}

// TestSetupCancelledAnywhereLeavesNothing cancels setups across a link at
// moments spread over their whole course, before and after the sessions
// setup opens in the background are ready, and checks each time that the
// setup either finished or left nothing on either server: no table,
// bookkeeping, slot, publication or distribution database, and none of its
// sessions still connected to the publisher's server.
func TestSetupCancelledAnywhereLeavesNothing(t *testing.T) {
	t.Parallel()
	p := startPair(t)
	ctx := testCtx(t, 3*time.Minute)
	execPub(t, p, "CREATE TABLE items (id bigint PRIMARY KEY, v text)",
		"INSERT INTO items SELECT g, md5(g::text) FROM generate_series(1, 2000) g")
	far := p.cfg
	far.Publisher, _ = publisherVia(t, p, link.Config{RTT: 20 * time.Millisecond})
	far.Tables = []TableName{{"public", "items"}}
	cancelled := 0
	for _, after := range []time.Duration{0, 30, 90, 130, 170, 210, 250, 300, 350, 400, 450, 500, 600, 800} {
		sctx, cancel := context.WithTimeout(ctx, after*time.Millisecond)
		_, err := Setup(sctx, far, SetupOptions{Init: InitSnapshot, Streams: 2})
		cancel()
		if err == nil {
			t.Logf("cancelled after %d ms: setup had finished", after)
			if _, err := Teardown(ctx, p.cfg, TeardownOptions{}); err != nil {
				t.Fatal(err)
			}
			execSub(t, p, "DROP TABLE items") // the copy's, which teardown leaves
			continue
		}
		cancelled++
		t.Logf("cancelled after %d ms: %v", after, err)
		mustBeClean(t, ctx, p, p.cfg, "public.items")
		noSessionsLeft(t, ctx, p)
	}
	if cancelled < 3 {
		t.Errorf("only %d setups were caught before they finished", cancelled)
	}
}

// noSessionsLeft waits (a closed session's backend exits on its own time)
// until none of setup's sessions is connected to the pair's publisher or
// distribution database.
func noSessionsLeft(t *testing.T, ctx context.Context, p *pair) {
	t.Helper()
	c, err := pgxConnect(ctx, p.cfg.Publisher, "check")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.WithoutCancel(ctx))
	cfg := p.cfg.withDefaults()
	var n int
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err = pollUntil(wctx, 50*time.Millisecond, func() (bool, error) {
		err := c.QueryRow(wctx, `SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'dbrig %' AND datname IN ($1, $2)`,
			cfg.Publisher.Database, cfg.DistributionDB).Scan(&n)
		return n == 0, err
	})
	if err != nil {
		t.Errorf("%d of setup's sessions still connected: %v", n, err)
	}
}

// TestSnapshotProgress copies a table through a slow link with progress
// asked for: the reports name the table, grow, and stay within what the
// copy carried in the end.
func TestSnapshotProgress(t *testing.T) {
	t.Parallel()
	p := startPair(t)
	ctx := testCtx(t, 2*time.Minute)
	execPub(t, p, "CREATE TABLE big (id bigint PRIMARY KEY, v text)",
		"INSERT INTO big SELECT g, repeat(md5(g::text), 16) FROM generate_series(1, 4000) g")
	// 64 KiB per 40 ms round trip and stream: about a second for 2 MB in
	// two streams, many reports at 20 ms.
	viaLink, _ := publisherVia(t, p, link.Config{RTT: 40 * time.Millisecond, Window: link.LegacyWindow})
	cfg := p.cfg
	cfg.Tables = []TableName{{"public", "big"}}
	var mu sync.Mutex
	var reports []CopyProgress
	opts := SetupOptions{Init: InitSnapshot, InitPublisher: viaLink, Streams: 2, ProgressEvery: 20 * time.Millisecond,
		Progress: func(c CopyProgress) { mu.Lock(); reports = append(reports, c); mu.Unlock() }}
	res, err := Setup(ctx, cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	mustVerify(t, cfg)
	mu.Lock()
	defer mu.Unlock()
	if len(reports) < 2 {
		t.Fatalf("%d progress reports during a copy of %s: %+v", len(reports), res.InitDuration, reports)
	}
	t.Logf("%d reports, the first %+v, the last %+v; copied %d bytes in %s", len(reports), reports[0], reports[len(reports)-1], res.InitBytes, res.InitDuration)
	var last int64
	for _, r := range reports {
		if r.Table != cfg.Tables[0].String() || r.Index != 1 || r.Tables != 1 || r.OnDisk <= 0 {
			t.Errorf("report %+v: want %s, table 1 of 1, its size on disk", r, cfg.Tables[0])
		}
		if r.Bytes <= last || r.Bytes > res.InitBytes || r.TableBytes != r.Bytes {
			t.Errorf("report %+v after %d bytes: want more, at most the %d copied in all", r, last, res.InitBytes)
		}
		last = r.Bytes
	}
}

// TestSnapshotRoundTripsToTheSubscriber counts, as
// TestSetupRoundTripsToThePublisher does on the other side, the turns of
// setup's sessions on the subscriber when setup runs at the publisher's
// site (the copy's transaction crossing the WAN): the copy's session
// sends each COPY in one query after BEGIN and a table's DDL, or after the
// rest of the table before it and its own DDL, and the last table's rest
// with the subscription's record and COMMIT. Before, each statement was a
// round trip of its own: 26 turns for the copy's session on these two
// tables (11 or 12 with the DDL in batches of its own, now 9).
func TestSnapshotRoundTripsToTheSubscriber(t *testing.T) {
	t.Parallel()
	p, got := setupCountingTurns(t, "subscriber")
	// After the handshake (3 to 5 turns): the sequences the subscriber has
	// (1), BEGIN and orders' DDL with its COPY (2: the query, then the
	// rows the relay sees after the server's first answers), its keys,
	// index and sequence with lines' DDL and COPY (2), lines' key, the
	// record and COMMIT (1).
	copies := got["dbrig snapshot on "+p.cfg.Subscriber.Database]
	if len(copies) != 1 || copies[0] > 5+6 {
		t.Errorf("the copy's sessions took %v turns, want one session of at most 11", copies)
	}
}

// setupCountingTurns sets up the replication of two tables (one with a
// sequence, secondary index and CHECK, one empty) with --init snapshot in
// two streams, counting the turns of every session setup opens on the
// server of side ("publisher" or "subscriber"), as from across a WAN.
func setupCountingTurns(t *testing.T, side string) (*pair, map[string][]int) {
	t.Helper()
	p := startPair(t)
	ctx := testCtx(t, 2*time.Minute)
	execPub(t, p, "CREATE TABLE orders (id bigserial PRIMARY KEY, note text NOT NULL DEFAULT '', CHECK (id > 0))",
		"CREATE INDEX orders_note ON orders (note)", "INSERT INTO orders (note) SELECT 'n' || g FROM generate_series(1, 1000) g",
		"CREATE TABLE lines (order_id bigint, n int, qty int, PRIMARY KEY (order_id, n))")
	far := p.cfg
	counted := &far.Publisher
	if side == "subscriber" {
		counted = &far.Subscriber
	}
	tc := startTurnCounter(t, counted.Addr())
	var err error
	if *counted, err = counted.Via(tc.addr()); err != nil {
		t.Fatal(err)
	}
	far.Tables = []TableName{{"public", "orders"}, {"public", "lines"}}
	if _, err := Setup(ctx, far, SetupOptions{Init: InitSnapshot, Streams: 2}); err != nil {
		t.Fatal(err)
	}
	mustVerify(t, p.cfg)
	got, total := tc.turns()
	t.Logf("turns by session on the %s's server: %v, %d in all", side, got, total)
	return p, got
}

// TestSetupTakesTheLastWALSender sets up on a publisher with one WAL
// sender: setup opens its replication connection while preflight counts
// the server's WAL senders, and must not count its own against the one it
// needs. With that one taken by someone else, setup is refused, saying
// why, and leaves nothing.
func TestSetupTakesTheLastWALSender(t *testing.T) {
	t.Parallel()
	p := newPair(t, own(map[string]string{"max_wal_senders": "1"}), shared)
	ctx := testCtx(t, 2*time.Minute)
	execPub(t, p, "CREATE TABLE items (id bigint PRIMARY KEY, v text)", "INSERT INTO items SELECT g, md5(g::text) FROM generate_series(1, 100) g")
	p.cfg.Tables = []TableName{{"public", "items"}}

	other, err := connectReplication(ctx, p.cfg.Publisher, "someone else")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Setup(ctx, p.cfg, SetupOptions{Init: InitSnapshot, Streams: 2})
	if err == nil || !strings.Contains(err.Error(), "no free WAL sender") {
		t.Errorf("setup with the only WAL sender taken: %v, want no free WAL sender", err)
	}
	mustBeClean(t, ctx, p, p.cfg, "public.items")
	other.Close(ctx)

	// The sender is free once the other's backend has exited.
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var checked error
	if err := pollUntil(wctx, 50*time.Millisecond, func() (bool, error) {
		checked = Check(wctx, p.cfg, SetupOptions{Init: InitSnapshot})
		return checked == nil, nil
	}); err != nil {
		t.Fatalf("the other's WAL sender not free after 30 s: %v", checked)
	}
	if _, err := Setup(ctx, p.cfg, SetupOptions{Init: InitSnapshot, Streams: 2}); err != nil {
		t.Fatalf("setup with one WAL sender free: %v", err)
	}
	if _, err := Teardown(ctx, p.cfg, TeardownOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestCreateOnPublisherRefusedInPart has the server refuse CREATE
// DATABASE in setup's pipeline (a database of that name made by someone
// else after the checks) while CREATE PUBLICATION goes through: the
// publication is setup's to remove, the database is not (nor to mark),
// and setup's undo leaves that database as it is.
func TestCreateOnPublisherRefusedInPart(t *testing.T) {
	t.Parallel()
	p := startPair(t)
	ctx := testCtx(t, time.Minute)
	execPub(t, p, "CREATE TABLE items (id bigint PRIMARY KEY, v text)")
	cfg := p.cfg
	cfg.Tables = []TableName{{"public", "items"}}
	pl, err := preflight(ctx, cfg.withDefaults(), SetupOptions{Init: InitSnapshot}, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.pub.CreateDatabase(ctx, cfg.DistributionDB); err != nil { // someone else's, made after the checks
		t.Fatal(err)
	}
	made := pl.made
	var told []bool
	err = pl.createOnPublisher(ctx, made, func(ok bool) { told = append(told, ok) })
	if len(told) != 1 || !told[0] {
		t.Errorf("createOnPublisher told %v of the publication, want [true]", told)
	}
	if err == nil || !strings.Contains(err.Error(), "create the distribution database") || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("createOnPublisher: %v, want the database refused", err)
	}
	if err != nil && strings.Contains(err.Error(), "publication") {
		t.Errorf("createOnPublisher: %v, want the publication made", err)
	}
	if made.database || !made.publication {
		t.Errorf("made database %v, publication %v: want the publication alone", made.database, made.publication)
	}
	if _, err := pl.markAndReadDDL(ctx, made, InitSnapshot); err != nil {
		t.Fatal(err)
	}
	pl.close(ctx) // as Setup closes its sessions before it undoes
	made.undoAfterFailure(ctx, pl.cfg)
	c, err := pgxConnect(ctx, p.cfg.Publisher, "check")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.WithoutCancel(ctx))
	var pubs, dists int
	var comment *string
	if err := c.QueryRow(ctx, `SELECT (SELECT count(*) FROM pg_publication WHERE pubname = $1)::int, (SELECT count(*) FROM pg_database WHERE datname = $2)::int,
			(SELECT shobj_description(oid, 'pg_database') FROM pg_database WHERE datname = $2)`,
		pl.cfg.Publication, pl.cfg.DistributionDB).Scan(&pubs, &dists, &comment); err != nil {
		t.Fatal(err)
	}
	if pubs != 0 || dists != 1 || comment != nil {
		t.Errorf("after the undo: %d publications (want 0), %d databases of that name (want the other's, 1), its comment %v (want none)", pubs, dists, comment)
	}
}
