package georep

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/replication"
)

// Payload is the shape of the rows a scenario replicates: the seed's 1 KB
// character rows and its varbinary(max) rows of ~1.1 KB and ~15.5 KB.
type Payload int

const (
	// PayloadChar1K: id bigint, payload char(1000).
	PayloadChar1K Payload = iota
	// PayloadBytes1K: id bigint, payload bytea of 1,120 bytes (the seed's
	// 100,000 varbinary(max) rows of 112 MB).
	PayloadBytes1K
	// PayloadBytes15K: id bigint, payload bytea of 15,504 bytes (the seed's
	// 1,000,000 rows of 15.5 GB), stored uncompressed out of line.
	PayloadBytes15K
	// PayloadHex1K: id bigint, payload char(1000) of md5 digests in hex,
	// a different one every 32 characters: rows that zstd compresses about
	// 2:1 (hex carries 4 bits a character), where the other payloads'
	// repeated digest compresses tens of times and would flatter whatever
	// compresses what crosses a link.
	PayloadHex1K
)

func (p Payload) String() string {
	switch p {
	case PayloadBytes1K:
		return "bytea-1.1k"
	case PayloadBytes15K:
		return "bytea-15.5k"
	case PayloadHex1K:
		return "hex-1k"
	}
	return "char-1k"
}

// ParsePayload reads "char-1k", "bytea-1.1k" or "bytea-15.5k".
func ParsePayload(s string) (Payload, error) {
	for _, p := range []Payload{PayloadChar1K, PayloadBytes1K, PayloadBytes15K} {
		if strings.EqualFold(strings.TrimSpace(s), p.String()) {
			return p, nil
		}
	}
	return 0, fmt.Errorf("payload %q: want char-1k, bytea-1.1k or bytea-15.5k", s)
}

// RowBytes is the payload's size per row in the table (its text form on
// the wire is the same for char, twice as large for bytea, which travels
// as hex).
func (p Payload) RowBytes() int {
	switch p {
	case PayloadBytes1K:
		return 1120
	case PayloadBytes15K:
		return 15504
	}
	return 1000
}

// sqlType is the payload column's type.
func (p Payload) sqlType() string {
	if p == PayloadChar1K || p == PayloadHex1K {
		return "char(1000)"
	}
	return "bytea"
}

// DDL creates the payload's table.
func (p Payload) DDL(t replication.TableName) []string {
	stmts := []string{
		"DROP TABLE IF EXISTS " + t.Quoted(),
		"CREATE TABLE " + t.Quoted() + " (id bigint PRIMARY KEY, payload " + p.sqlType() + " NOT NULL)",
	}
	if p == PayloadBytes15K {
		stmts = append(stmts, "ALTER TABLE "+t.Quoted()+" ALTER COLUMN payload SET STORAGE EXTERNAL")
	}
	return stmts
}

// expr is the SQL expression of row g's payload.
func (p Payload) expr() string {
	switch p {
	case PayloadBytes1K:
		return "decode(repeat(md5(g::text), 70), 'hex')"
	case PayloadBytes15K:
		return "decode(repeat(md5(g::text), 969), 'hex')"
	case PayloadHex1K:
		return "left((SELECT string_agg(md5(g::text || '.' || i::text), '' ORDER BY i) FROM generate_series(1, 32) i), 1000)"
	}
	return "rpad(g::text || ':', 1000, md5(g::text))"
}

// InsertResult times an insert run.
type InsertResult struct {
	Rows int64 `json:"rows"`
	// Start is when the first transaction began, FirstCommit when it had
	// committed, End when the last one had.
	Start       time.Time `json:"start"`
	FirstCommit time.Time `json:"first_commit"`
	End         time.Time `json:"end"`
	// LastLSN is the publisher's WAL insert position after the last commit.
	LastLSN replication.LSN `json:"last_lsn"`
}

// InsertRows inserts rows first .. first+n-1 of the payload into table on
// the publisher, perXact rows per transaction (default 1,000), generated on
// the server.
func InsertRows(ctx context.Context, publisher postgres.ConnInfo, t replication.TableName, p Payload, first int64, n, perXact int) (InsertResult, error) {
	if perXact <= 0 {
		perXact = 1000
	}
	res := InsertResult{Rows: int64(n)}
	c, err := pgxConnect(ctx, publisher, "dbrig insert")
	if err != nil {
		return res, err
	}
	defer c.Close(context.WithoutCancel(ctx))
	sql := "INSERT INTO " + t.Quoted() + " (id, payload) SELECT g, " + p.expr() + " FROM generate_series($1::bigint, $2::bigint) g"
	res.Start = time.Now()
	for done := 0; done < n; {
		k := min(perXact, n-done)
		from := first + int64(done)
		if _, err := c.Exec(ctx, sql, from, from+int64(k)-1); err != nil {
			return res, fmt.Errorf("insert rows %d to %d into %s: %w", from, from+int64(k)-1, t, err)
		}
		if done == 0 {
			res.FirstCommit = time.Now()
		}
		done += k
	}
	res.End = time.Now()
	if res.LastLSN, err = currentLSN(ctx, c); err != nil {
		return res, err
	}
	return res, nil
}

// ScenarioConfig is one measurement of the replication system: replicate
// Rows rows of Payload from the publisher to the subscriber and time it.
type ScenarioConfig struct {
	// replication.Config holds the rig's own logins (setup, inserts, waiting, verify):
	// Publisher is the published database from the publisher's site,
	// Subscriber the subscriber's database. Tables are set by the scenario.
	replication.Config
	// Agent are the distribution agent's connections as its site sees them
	// (see replication.Mode.AgentTargets): the one that crosses the WAN goes through the
	// link. Zero values mean replication.Config.Distribution() and replication.Config.Subscriber.
	Agent   replication.Targets
	Mode    replication.Mode
	Options replication.AgentOptions
	// Table is the replicated table (default public.dbrig_rows); it is
	// dropped and created on both sides.
	Table   replication.TableName
	Payload Payload
	// Rows are inserted after setup, RowsPerTransaction per transaction
	// (default 1,000).
	Rows               int
	RowsPerTransaction int
	// Preload stores every row's commands in the distribution database
	// while the agent, connected, waits; Elapsed then times the agent alone
	// draining the backlog.
	Preload bool
	// InitialRows exist before setup and reach the subscriber by Init,
	// through replication.Setup.InitPublisher and InitSubscriber.
	InitialRows int
	Setup       replication.SetupOptions
	// PollInterval is how often the rig checks whether the subscriber has
	// caught up (default 2 ms).
	PollInterval time.Duration
	// KeepSetup leaves the replication set up (default: torn down).
	KeepSetup bool
	// SkipVerify skips the final comparison of both sides.
	SkipVerify bool
}

// ScenarioResult is what a scenario measured.
type ScenarioResult struct {
	Rows  int64 `json:"rows"`
	Bytes int64 `json:"bytes"` // payload bytes: rows x Payload.RowBytes
	// Elapsed runs from the first insert's commit (with Preload: from the
	// moment the connected agent may start reading) until the subscriber
	// had applied the last row.
	Elapsed    time.Duration              `json:"elapsed_ns"`
	Insert     InsertResult               `json:"insert"`
	RowsPerSec float64                    `json:"rows_per_sec"`
	MBPerSec   float64                    `json:"mb_per_sec"` // 10^6 payload bytes per second
	Setup      replication.SetupResult    `json:"setup"`
	Agent      replication.AgentStats     `json:"agent"`
	LogReader  replication.LogReaderStats `json:"log_reader"`
	Verify     *replication.VerifyResult  `json:"verify,omitempty"`
}

func (r *ScenarioResult) rates() {
	if s := r.Elapsed.Seconds(); s > 0 {
		r.RowsPerSec = float64(r.Rows) / s
		r.MBPerSec = float64(r.Bytes) / 1e6 / s
	}
}

// PrepareTable drops and creates the payload's table on the publisher, and
// on the subscriber unless the initialization creates it.
func PrepareTable(ctx context.Context, publisher, subscriber postgres.ConnInfo, t replication.TableName, p Payload, onSubscriber bool) error {
	for i, ci := range []postgres.ConnInfo{publisher, subscriber} {
		c, err := pgxConnect(ctx, ci, "dbrig prepare")
		if err != nil {
			return err
		}
		stmts := p.DDL(t)
		if i == 1 && !onSubscriber {
			stmts = stmts[:1]
		}
		err = execAll(ctx, c, append([]string{"CREATE SCHEMA IF NOT EXISTS " + quoteIdent(t.Schema)}, stmts...))
		c.Close(context.WithoutCancel(ctx))
		if err != nil {
			return fmt.Errorf("prepare %s on %s: %w", t, ci, err)
		}
	}
	return nil
}

// RunScenario prepares the table, sets the replication up, runs the log
// reader and the distribution agent under a replication.Supervisor (as
// dbrig replicate run does), inserts the rows, waits until the subscriber
// has them all, verifies both sides and tears the replication down.
func RunScenario(ctx context.Context, sc ScenarioConfig) (res ScenarioResult, err error) {
	sc.applyDefaults()
	cfg := sc.Config
	res.Rows = int64(sc.Rows)
	res.Bytes = int64(sc.Rows) * int64(sc.Payload.RowBytes())

	if res.Setup, err = setUpScenario(ctx, &sc); err != nil {
		return res, err
	}
	if !sc.KeepSetup {
		defer func() {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
			defer cancel()
			if _, terr := replication.Teardown(cctx, cfg, replication.TeardownOptions{Force: true}); terr != nil && err == nil {
				err = fmt.Errorf("tear down: %w", terr)
			}
		}()
	}

	run, err := superviseScenario(ctx, sc)
	if err != nil {
		return res, err
	}
	sup := run.sup
	defer func() {
		if serr := sup.Stop(); serr != nil && !errors.Is(serr, context.Canceled) && err == nil {
			err = serr
		}
		p := sup.Progress()
		if p.Agent != nil {
			res.Agent = *p.Agent
		}
		if p.LogReader != nil {
			res.LogReader = *p.LogReader
		}
	}()

	first := int64(sc.InitialRows) + 1
	t0, err := run.insert(ctx, sc, first, &res)
	if err != nil {
		return res, err
	}
	if sc.Rows > 0 {
		if err := run.waitSubscriber(ctx, sc, first+int64(sc.Rows)-1); err != nil {
			return res, err
		}
	}
	res.Elapsed = time.Since(t0)
	if sc.Rows == 0 {
		res.Elapsed = 0
	}
	res.rates()
	if !sc.SkipVerify {
		return res, verifyScenario(ctx, cfg, &res)
	}
	return res, nil
}

func (sc *ScenarioConfig) applyDefaults() {
	if sc.Publication == "" {
		sc.Publication = replication.DefaultPublication
	}
	if sc.DistributionDB == "" {
		sc.DistributionDB = replication.DefaultDistributionDB
	}
	if sc.Table.Name == "" {
		sc.Table = replication.TableName{Schema: "public", Name: "dbrig_rows"}
	}
	if sc.PollInterval <= 0 {
		sc.PollInterval = 2 * time.Millisecond
	}
	sc.Tables = []replication.TableName{sc.Table}
}

// setUpScenario makes the table and its initial rows, then the
// replication that carries them.
func setUpScenario(ctx context.Context, sc *ScenarioConfig) (replication.SetupResult, error) {
	cfg := sc.Config
	if err := prepareRows(ctx, cfg.Publisher, cfg.Subscriber, sc.Table, sc.Payload, sc.Setup.Init == replication.InitNone, sc.InitialRows); err != nil {
		return replication.SetupResult{}, err
	}
	sc.Setup.Mode = sc.Mode
	return replication.Setup(ctx, cfg, sc.Setup)
}

// scenarioRun is a scenario's supervised replication and the signals
// between its agent and the rig.
type scenarioRun struct {
	sup         *replication.Supervisor
	ready, gate chan struct{}
}

// superviseScenario starts the log reader and the agent. With Preload the
// agent connects while the log reader stores the rows, then waits at the
// gate: Elapsed times the drain alone. Without Preload the agent is
// connected and idle before the first insert, as in a running
// replication: Elapsed then leaves out its connection set-up (several
// round trips across the WAN).
func superviseScenario(ctx context.Context, sc ScenarioConfig) (*scenarioRun, error) {
	run := &scenarioRun{ready: make(chan struct{}), gate: make(chan struct{})}
	var once sync.Once
	rc := replication.RunConfig{Config: sc.Config, LogReader: true, Agent: true, Targets: sc.Agent, Mode: sc.Mode, Options: sc.Options,
		AgentReady: func() { once.Do(func() { close(run.ready) }) }}
	if sc.Preload {
		rc.AgentGate = run.gate
	}
	var err error
	if run.sup, err = replication.Supervise(ctx, rc); err != nil {
		return nil, err
	}
	return run, nil
}

func (run *scenarioRun) agentReady(ctx context.Context) error {
	select {
	case <-run.ready:
		return nil
	case <-run.sup.Done():
		return fmt.Errorf("the replication stopped: %w", run.sup.Err())
	case <-ctx.Done():
		return ctx.Err()
	}
}

// insert inserts the scenario's rows from key first, before opening the
// agent's gate (Preload) or once the agent is connected, and returns when
// the timed drain began.
func (run *scenarioRun) insert(ctx context.Context, sc ScenarioConfig, first int64, res *ScenarioResult) (t0 time.Time, err error) {
	publisher := sc.Config.Publisher
	if sc.Preload {
		if res.Insert, err = InsertRows(ctx, publisher, sc.Table, sc.Payload, first, sc.Rows, sc.RowsPerTransaction); err != nil {
			return t0, err
		}
		if err := run.sup.WaitStored(ctx, res.Insert.LastLSN, sc.PollInterval); err != nil {
			return t0, fmt.Errorf("wait for the log reader to store %d rows: %w", sc.Rows, err)
		}
		if err := run.agentReady(ctx); err != nil {
			return t0, err
		}
		t0 = time.Now()
		close(run.gate)
		return t0, nil
	}
	if err := run.agentReady(ctx); err != nil {
		return t0, err
	}
	if res.Insert, err = InsertRows(ctx, publisher, sc.Table, sc.Payload, first, sc.Rows, sc.RowsPerTransaction); err != nil {
		return t0, err
	}
	return res.Insert.FirstCommit, nil
}

// waitSubscriber returns when the row with key last is visible on the
// subscriber, as for the native baseline: rows arrive in commit order, so
// every earlier one is there too (the verification checks it). Waiting
// instead for the slot to confirm the publisher's position after the last
// insert also waits for the walsender's next keepalive, which came 0 to
// 300 ms later at random and made pull over 77 ms look slower than over
// 150.
func (run *scenarioRun) waitSubscriber(ctx context.Context, sc ScenarioConfig, last int64) error {
	sub, err := pgxConnect(ctx, sc.Config.Subscriber, "dbrig watch")
	if err != nil {
		return err
	}
	defer sub.Close(context.WithoutCancel(ctx))
	err = pollUntil(ctx, sc.PollInterval, func() (bool, error) {
		select {
		case <-run.sup.Done():
			return false, fmt.Errorf("the replication stopped: %w", run.sup.Err())
		default:
		}
		if p := run.sup.Progress(); p.AgentStopped != "" {
			return false, fmt.Errorf("distribution agent: %s", p.AgentStopped)
		}
		return rowPresent(ctx, sub, sc.Table, last)
	})
	if err != nil {
		return fmt.Errorf("wait for the subscriber to catch up: %w", err)
	}
	return nil
}

// verifyScenario compares both sides once the subscriber caught up.
func verifyScenario(ctx context.Context, cfg replication.Config, res *ScenarioResult) error {
	v, err := replication.Verify(ctx, cfg, replication.VerifyOptions{})
	if err != nil {
		return err
	}
	res.Verify = &v
	if !v.Equal {
		return fmt.Errorf("verify: the subscriber differs from the publisher: %+v", v.Tables)
	}
	return nil
}

// rowPresent reports whether the table holds the row with key id.
func rowPresent(ctx context.Context, c *pgx.Conn, t replication.TableName, id int64) (bool, error) {
	var ok bool
	err := c.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM "+t.Quoted()+" WHERE id = $1)", id).Scan(&ok)
	return ok, err
}
