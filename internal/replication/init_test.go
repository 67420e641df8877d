package replication

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/link"
)

// TestInitialization initializes a subscriber by snapshot (in the default
// streams and in one) and by backup, across a link, while the publisher
// keeps committing, updating the rows being copied: every row committed
// before the slot's consistent point arrives by the copy, every later one
// by the log reader, none twice.
func TestInitialization(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		init    InitMethod
		streams int
	}{
		{"snapshot", InitSnapshot, 0},
		{"snapshot-1-stream", InitSnapshot, 1},
		{"backup", InitBackup, 0},
	} {
		init := tc.init
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := startPair(t)
			ctx := testCtx(t, 3*time.Minute)
			execPub(t, p, typesDDL)
			execPub(t, p, typesRows...)
			execPub(t, p, `INSERT INTO kv SELECT 'bulk' || g, g, repeat('x', g % 300), null FROM generate_series(1, 20000) g`)

			// Writers keep committing while the subscriber is initialized.
			wctx, wstop := context.WithCancel(ctx)
			werr := make(chan error, 1)
			go func() { // waited for below
				c, err := pgxConnect(wctx, p.cfg.Publisher, "writer")
				if err != nil {
					werr <- err
					return
				}
				defer c.Close(context.Background())
				for i := 0; ; i++ {
					// The update reaches its row by the key (by n alone each
					// was a scan of kv's 20,000 rows), and the writer pauses
					// between transactions: commits during the copy are what
					// the test needs, not as many as the CPU allows, each of
					// which the log reader and the agent then carry.
					n := 1 + i%20000
					_, err := c.Exec(wctx, fmt.Sprintf("INSERT INTO types (id, t) VALUES (%d, 'during init'); UPDATE kv SET v = 'touched' WHERE k = 'bulk%d' AND n = %d", 100000+i, n, n))
					if wctx.Err() != nil {
						werr <- nil
						return
					}
					if err != nil {
						werr <- err
						return
					}
					select {
					case <-wctx.Done():
					case <-time.After(2 * time.Millisecond):
					}
				}
			}()

			viaLink, proxy := publisherVia(t, p, link.Config{RTT: 10 * time.Millisecond, Window: link.AutotunedWindow})
			cfg := p.cfg
			cfg.Tables = []TableName{{"public", "types"}, {"public", "kv"}}
			time.Sleep(100 * time.Millisecond)
			res, err := Setup(ctx, cfg, SetupOptions{Init: init, InitPublisher: viaLink, Mode: Pull, Streams: tc.streams})
			if err != nil {
				t.Fatalf("setup: %v", err)
			}
			time.Sleep(100 * time.Millisecond)
			wstop()
			if err := <-werr; err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %+v", init, res)
			if res.InitDuration <= 0 || res.InitBytes <= 0 || len(res.Tables) != 2 {
				t.Errorf("setup result %+v", res)
			}
			if proxy.Stats().Reverse.Bytes < 1<<20 {
				t.Errorf("the copy did not cross the link: %+v", proxy.Stats().Reverse)
			}
			if init == InitSnapshot {
				checkStreams(t, res, tc.streams, proxy.Stats().Connections)
			}
			r := startAgents(t, cfg, Targets{Distribution: cfg.Distribution(), Subscriber: cfg.Subscriber}, AgentOptions{})
			waitCaughtUp(t, cfg, r, time.Minute)
			if err := r.stop(); err != nil {
				t.Fatal(err)
			}
			mustVerify(t, cfg)
			if _, err := Teardown(ctx, cfg, TeardownOptions{}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestScenarioAndBaselines runs the study's building blocks on a small
// scale through a link: the replication system in both modes, native
// logical replication, remote inserts through postgres_fdw with batch
// sizes 1 and 50, and snapshot against backup initialization.

// checkStreams says whether the snapshot copied the large table (kv) in
// the streams asked for, each a session of its own across the link.
func checkStreams(t *testing.T, res SetupResult, asked int, conns int64) {
	t.Helper()
	want := asked
	if want == 0 {
		want = DefaultInitStreams
	}
	for _, tc := range res.Tables {
		if tc.Table != "kv" {
			continue
		}
		if tc.Streams != want {
			t.Errorf("kv was copied by %d streams, want %d", tc.Streams, want)
		}
		if conns < int64(want) {
			t.Errorf("%d connections crossed the link, want at least one per stream (%d)", conns, want)
		}
		return
	}
	t.Errorf("kv is not among the tables copied: %+v", res.Tables)
}

// TestSnapshotInterruptedMidCopy interrupts an --init snapshot while its
// streams are copying, by cancelling setup and by resetting the streams'
// connections across the link, and shows that nothing is left half-applied: the
// subscriber has no table, no rows and no subscription, the publisher no
// slot or publication, and a second setup copies everything once.
func TestSnapshotInterruptedMidCopy(t *testing.T) {
	t.Parallel()
	for _, fault := range []string{"cancel", "link-reset"} {
		t.Run(fault, func(t *testing.T) {
			t.Parallel()
			p := startPair(t)
			ctx := testCtx(t, 3*time.Minute)
			execPub(t, p, `CREATE TABLE big (id bigint PRIMARY KEY, v text)`,
				`INSERT INTO big SELECT g, repeat(md5(g::text), 16) FROM generate_series(1, 16000) g`)
			// 64 KiB per 40 ms round trip and stream: the copy of 9 MB in 4
			// streams lasts seconds, long enough to be caught in the middle.
			viaLink, proxy := publisherVia(t, p, link.Config{RTT: 40 * time.Millisecond, Window: link.LegacyWindow})
			cfg := p.cfg
			cfg.Tables = []TableName{{"public", "big"}}
			opts := SetupOptions{Init: InitSnapshot, InitPublisher: viaLink, Streams: 4}
			sctx, cancel := context.WithCancel(ctx)
			defer cancel()
			done := make(chan error, 1)
			go func() { _, err := Setup(sctx, cfg, opts); done <- err }() // received below
			waitCopying(t, ctx, p, done)
			switch fault {
			case "cancel":
				cancel()
			default:
				proxy.ResetConnections()
			}
			err := <-done
			if err == nil {
				t.Fatal("setup succeeded although interrupted in the middle of the copy")
			}
			t.Logf("interrupted setup: %v", err)
			mustBeClean(t, ctx, p, cfg, "public.big")

			res, err := Setup(ctx, cfg, SetupOptions{Init: InitSnapshot, InitPublisher: viaLink, Streams: 4})
			if err != nil {
				t.Fatalf("setup again: %v", err)
			}
			if len(res.Tables) != 1 || res.Tables[0].Rows != 16000 || res.Tables[0].Streams != 4 {
				t.Errorf("setup again copied %+v, want 16000 rows of big in 4 streams", res.Tables)
			}
			mustVerify(t, cfg)
			if _, err := Teardown(ctx, cfg, TeardownOptions{}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// waitCopying returns once the subscriber's COPY has taken rows in.
func waitCopying(t *testing.T, ctx context.Context, p *pair, done <-chan error) {
	t.Helper()
	c, err := pgxConnect(ctx, p.cfg.Subscriber, "watch")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.WithoutCancel(ctx))
	// The copy lasts over a second (see the link's window): asking every
	// 20 ms catches it as surely as every 5 ms did, at a quarter the queries.
	err = pollUntil(ctx, 20*time.Millisecond, func() (bool, error) {
		select {
		case err := <-done:
			return false, fmt.Errorf("setup ended before the copy could be interrupted: %v", err)
		default:
		}
		var n int64
		err := c.QueryRow(ctx, "SELECT coalesce(max(tuples_processed), 0) FROM pg_stat_progress_copy WHERE command = 'COPY FROM' AND datname = current_database()").Scan(&n)
		return n > 0, err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// mustBeClean fails unless the failed setup left nothing on either side:
// no table (the one named, which initialization makes) or bookkeeping on
// the subscriber, no slot, publication or distribution database on the
// publisher's server.
func mustBeClean(t *testing.T, ctx context.Context, p *pair, cfg Config, table string) {
	t.Helper()
	var tables, schema, slots, pubs, dists int
	sub, err := pgxConnect(ctx, p.cfg.Subscriber, "check")
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close(context.WithoutCancel(ctx))
	if err := sub.QueryRow(ctx, "SELECT (to_regclass($2) IS NOT NULL)::int, (SELECT count(*) FROM pg_namespace WHERE nspname = $1)::int", Schema, table).Scan(&tables, &schema); err != nil {
		t.Fatal(err)
	}
	pub, err := pgxConnect(ctx, p.cfg.Publisher, "check")
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close(context.WithoutCancel(ctx))
	if err := pub.QueryRow(ctx, `SELECT (SELECT count(*) FROM pg_replication_slots WHERE slot_name = $1)::int, (SELECT count(*) FROM pg_publication WHERE pubname = $1)::int,
			(SELECT count(*) FROM pg_database WHERE datname = $2)::int`,
		cfg.withDefaults().Publication, cfg.withDefaults().DistributionDB).Scan(&slots, &pubs, &dists); err != nil {
		t.Fatal(err)
	}
	if tables+schema+slots+pubs+dists != 0 {
		t.Errorf("the interrupted setup left: subscriber table %d, subscriber schema %d, slots %d, publications %d, distribution databases %d",
			tables, schema, slots, pubs, dists)
	}
}

// TestIdentityAlwaysReplicates initializes, by snapshot, a subscriber
// lacking a table whose key is GENERATED ALWAYS AS IDENTITY, then
// replicates inserts into it: the subscriber's identity must take the
// publisher's values, which an ALWAYS identity would refuse.
func TestIdentityAlwaysReplicates(t *testing.T) {
	t.Parallel()
	p := startPair(t)
	ctx := testCtx(t, 3*time.Minute)
	execPub(t, p, `CREATE TABLE ident (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text)`,
		`INSERT INTO ident (v) SELECT 'before ' || g FROM generate_series(1, 100) g`)
	cfg := p.cfg
	cfg.Tables = []TableName{{"public", "ident"}}
	if _, err := Setup(ctx, cfg, SetupOptions{Init: InitSnapshot}); err != nil {
		t.Fatalf("setup: %v", err)
	}
	execPub(t, p, `INSERT INTO ident (v) SELECT 'after ' || g FROM generate_series(1, 50) g`)
	r := startAgents(t, cfg, Targets{Distribution: cfg.Distribution(), Subscriber: cfg.Subscriber}, AgentOptions{})
	waitCaughtUp(t, cfg, r, time.Minute)
	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	mustVerify(t, cfg)
	if _, err := Teardown(ctx, cfg, TeardownOptions{}); err != nil {
		t.Fatal(err)
	}
}
