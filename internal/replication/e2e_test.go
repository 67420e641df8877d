package replication

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/link"
	"github.com/dbrig/dbrig/internal/units"
)

// typesDDL covers every supported type, NULLs, Unicode and a composite
// text key.
const typesDDL = `
CREATE TABLE types (
	id bigint PRIMARY KEY,
	i2 smallint, i4 integer, n numeric(20,5), nn numeric,
	t text, vc varchar(50), c char(10), b bytea, bo boolean,
	ts timestamp, tstz timestamptz, u uuid, j json, jb jsonb,
	d date, f4 real, f8 double precision);
CREATE TABLE kv (k text, n int, v text, big bytea, PRIMARY KEY (k, n));
ALTER TABLE kv ALTER COLUMN big SET STORAGE EXTERNAL;`

var typesRows = []string{
	`INSERT INTO types VALUES (1, 1, 2, 3.14159, 1e-20, 'plain', 'varchar', 'char', '\x00ff10', true,
		'2024-02-29 23:59:59.123456', '2024-02-29 23:59:59.5+05:30', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
		'{"a": [1, 2, {"b": null}]}', '{"z": 1, "a": "é"}', '2000-01-01', 1.5, 3.141592653589793)`,
	`INSERT INTO types (id) VALUES (2)`, // all NULL
	`INSERT INTO types VALUES (3, -32768, -2147483648, -99999999999999.99999, 123456789012345678901234567890.123,
		E'quote '' backslash \\ newline \n tab \t', 'Ünïcødé ✓ 日本語 🚀', 'ça', '\x', false,
		'infinity', '-infinity', '00000000-0000-0000-0000-000000000000', '"str"', '[]', '1999-12-31', 'NaN', '-Infinity')`,
	`INSERT INTO types VALUES (4, 32767, 2147483647, 0, 'NaN', '', '', '', decode(repeat('ab', 5000), 'hex'), null,
		'1970-01-01 00:00:00', '1970-01-01 00:00:00+00', null, 'null', 'null', null, '-0', 1e308)`,
	`INSERT INTO kv VALUES ('ключ', 1, 'значение', null), ('键', 2, '值', decode(repeat('00ff', 10000), 'hex')),
		('O''Brien', 3, 'x', '\x01'), ('tab	key', 4, '', null)`,
}

func TestEndToEndDirect(t *testing.T) {
	t.Parallel()
	for _, binary := range []bool{false, true} {
		t.Run(fmt.Sprintf("binary=%t", binary), func(t *testing.T) {
			t.Parallel()
			p := startPair(t)
			testEndToEnd(t, p, Push, "", AgentOptions{BufferSize: 4096, CommitBatchSize: 3}, binary)
		})
	}
}

// testEndToEnd replicates every supported type, updates, deletes and
// transactions larger than a buffer and than the commit batch, and checks
// the subscriber after each step.
func testEndToEnd(t *testing.T, p *pair, mode Mode, via string, opts AgentOptions, binary bool) {
	ctx := testCtx(t, 5*time.Minute)
	execPub(t, p, typesDDL)
	execSub(t, p, typesDDL)
	// Rows that exist before setup arrive by the initialization (none here:
	// the tables exist on both sides and are empty).
	cfg := p.cfg
	cfg.Tables = []TableName{{"public", "types"}, {"public", "kv"}}
	if _, err := Setup(ctx, cfg, SetupOptions{Init: InitNone, Mode: mode, Binary: binary}); err != nil {
		t.Fatalf("setup: %v", err)
	}
	targets, err := mode.AgentTargets(cfg.Distribution(), cfg.Subscriber, via)
	if err != nil {
		t.Fatal(err)
	}
	// The log reader's own cleanup is off: the cleanup below is to find
	// the applied commands there for it alone to delete (see there).
	r := startAgentsEvery(t, cfg, targets, opts, noCleanup, 0)

	execPub(t, p, typesRows...)
	waitCaughtUp(t, cfg, r, time.Minute)
	mustVerify(t, cfg)

	// Updates (of the key too), deletes, a transaction mixing tables.
	execPub(t, p,
		`UPDATE types SET t = 'changed ''again''', jb = '{"new": true}', n = n * 2 WHERE id = 1`,
		`UPDATE types SET id = 100 WHERE id = 2`,
		`UPDATE kv SET v = 'only v' WHERE k = '键'`, // big is unchanged TOAST: not sent
		`DELETE FROM types WHERE id = 3`,
		`BEGIN; INSERT INTO types (id, t) VALUES (5, 'in a transaction'); UPDATE kv SET n = 20 WHERE k = '键'; DELETE FROM kv WHERE k = 'O''Brien'; COMMIT`,
	)
	waitCaughtUp(t, cfg, r, time.Minute)
	mustVerify(t, cfg)

	// One transaction larger than a buffer and the commit batch, then many
	// small ones. 401 rows of 640 bytes fill the largest buffer (8 KiB) 30
	// times over and the commit batch (3 to 100) four times: the 2,001 before
	// proved nothing more, at five times the CPU in each of the six runs of
	// this scenario.
	execPub(t, p, `INSERT INTO types (id, t, b) SELECT g, repeat(md5(g::text), 20), decode(md5(g::text), 'hex') FROM generate_series(1000, 1400) g`)
	var many []string
	for i := 0; i < 50; i++ {
		many = append(many, fmt.Sprintf("INSERT INTO kv VALUES ('k%d', %d, repeat('v', %d), null)", i, i, i*100))
	}
	execPub(t, p, many...)
	execPub(t, p, `UPDATE types SET t = upper(t) WHERE id BETWEEN 1000 AND 1100`, `DELETE FROM types WHERE id > 1380`)
	waitCaughtUp(t, cfg, r, 2*time.Minute)
	mustVerify(t, cfg)

	// Clean up what the agent reported applied; replication goes on. Once
	// the agent has confirmed all the subscriber holds, one cleanup deletes
	// every command so far. (With the log reader's own cleanup on, a run
	// slow enough for its 10 s tick to come between the agent's report and
	// this call lost commands to it, and a poll until this call had deleted
	// them all waited out the rest of the test's 5-minute context.)
	waitConfirmed(t, cfg, time.Minute)
	cleaned, err := CleanupDistribution(ctx, cfg.Distribution(), cfg.Publication)
	if err != nil {
		t.Fatalf("cleanup: %v", err)
	}
	if cleaned <= 400 {
		t.Errorf("cleanup deleted %d commands, want the more than 400 applied", cleaned)
	}

	// Truncate.
	execPub(t, p, `TRUNCATE kv`)
	waitCaughtUp(t, cfg, r, time.Minute)
	mustVerify(t, cfg)

	if err := r.stop(); err != nil {
		t.Fatal(err)
	}
	st := r.agent.Stats()
	t.Logf("agent: %+v", st)
	t.Logf("log reader: %+v", r.lr.Stats())
	// Never split a source transaction: the big insert was one subscriber
	// transaction of its own, so commits <= transactions.
	if st.Commits > st.Transactions || st.Commands == 0 {
		t.Errorf("commits %d, transactions %d, commands %d", st.Commits, st.Transactions, st.Commands)
	}
	status, err := GetStatus(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if status.Pending != 0 {
		t.Errorf("status: %d commands pending", status.Pending)
	}
	if !strings.Contains(fmt.Sprint(status.Subscription.LastLSN), "/") {
		t.Errorf("status: last LSN %v", status.Subscription.LastLSN)
	}
	if _, err := Teardown(ctx, cfg, TeardownOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestEndToEndThroughLink(t *testing.T) {
	t.Parallel()
	cfg := link.Config{RTT: 20 * time.Millisecond, Rate: 100 * units.Mbit, Window: link.AutotunedWindow}
	for _, tc := range []struct {
		name string
		mode Mode
		opts AgentOptions
	}{
		{"push", Push, AgentOptions{Pipeline: 1}},
		{"push-pipelined", Push, AgentOptions{Pipeline: PipelineAuto, CommitBatchSize: 7}},
		{"pull", Pull, AgentOptions{BufferSize: 8192, Pipeline: 1}},
		{"pull-read-streams", Pull, AgentOptions{BufferSize: 8192, ReadStreams: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := startPair(t)
			up := tc.mode.Crossing(p.cfg.Distribution(), p.cfg.Subscriber).Addr()
			proxy := startLink(t, up, cfg)
			testEndToEnd(t, p, tc.mode, proxy.Addr(), tc.opts, tc.mode == Pull)
			st := proxy.Stats()
			if st.Forward.Bytes == 0 || st.Reverse.Bytes == 0 {
				t.Errorf("nothing crossed the link: %+v", st)
			}
		})
	}
}

// startLink puts an emulated link in front of upstream.
func startLink(t testing.TB, upstream string, cfg link.Config) *link.Proxy {
	t.Helper()
	p, err := link.Listen(context.Background(), "127.0.0.1:0", upstream, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// publisherVia starts a link of cfg in front of the pair's publisher and
// returns the publisher's login through it, and the link.
func publisherVia(t testing.TB, p *pair, cfg link.Config) (postgres.ConnInfo, *link.Proxy) {
	t.Helper()
	proxy := startLink(t, p.cfg.Publisher.Addr(), cfg)
	via, err := p.cfg.Publisher.Via(proxy.Addr())
	if err != nil {
		t.Fatal(err)
	}
	return via, proxy
}
