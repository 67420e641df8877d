package georep

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/replication"
)

// DrainConfig is one measurement of the distribution agent as an operator
// meets it: a backlog of Rows rows already stored in the distribution
// database, an agent started cold (its connections, its pipeline probe),
// timed until the last row is visible on the subscriber.
type DrainConfig struct {
	replication.Config
	// Agent are the agent's targets (one may cross a link; zero: direct).
	Agent   replication.Targets
	Mode    replication.Mode
	Options replication.AgentOptions
	// Compression of the stored commands (default zstd, dbrig's default).
	Compression        replication.Compression
	Table              replication.TableName // default public.dbrig_drain_rows
	Payload            Payload
	Rows               int
	RowsPerTransaction int
}

// DrainResult is what a drain measured.
type DrainResult struct {
	Rows int64 `json:"rows"`
	// Elapsed runs from the agent's start to the last row; Connect is the
	// part before the agent had its connections and could read (across a
	// WAN: the handshakes and authentication exchanges, a few round trips
	// whatever the agent), Drain the rest.
	Elapsed time.Duration `json:"elapsed_ns"`
	Connect time.Duration `json:"connect_ns"`
	Drain   time.Duration `json:"drain_ns"`
	// Stored is the backlog's size in the distribution database.
	Stored int64                  `json:"stored_bytes"`
	Agent  replication.AgentStats `json:"agent"`
}

// Drain sets a replication up, lets the log reader store the backlog,
// stops it, starts the agent alone and times it until the subscriber holds
// the last row; then it tears the replication down.
func Drain(ctx context.Context, dc DrainConfig) (res DrainResult, err error) {
	if dc.Table.Name == "" {
		dc.Table = replication.TableName{Schema: "public", Name: "dbrig_drain_rows"}
	}
	cfg := dc.Config
	cfg.Tables = []replication.TableName{dc.Table}
	res.Rows = int64(dc.Rows)
	if err := PrepareTable(ctx, cfg.Publisher, cfg.Subscriber, dc.Table, dc.Payload, true); err != nil {
		return res, err
	}
	if _, err := replication.Setup(ctx, cfg, replication.SetupOptions{Mode: dc.Mode, Compression: dc.Compression}); err != nil {
		return res, err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if _, terr := replication.Teardown(cctx, cfg, replication.TeardownOptions{Force: true}); terr != nil && err == nil {
			err = fmt.Errorf("tear down: %w", terr)
		}
	}()
	if res.Stored, err = storeBacklog(ctx, dc, cfg); err != nil {
		return res, err
	}
	return res, drainCold(ctx, dc, cfg, &res)
}

// storeBacklog inserts the rows with the log reader alone running, so that
// they wait in the distribution database, and returns the bytes stored
// there (0 when the status cannot be read).
func storeBacklog(ctx context.Context, dc DrainConfig, cfg replication.Config) (int64, error) {
	lr, err := replication.Supervise(ctx, replication.RunConfig{Config: cfg, LogReader: true})
	if err != nil {
		return 0, err
	}
	ins, err := InsertRows(ctx, cfg.Publisher, dc.Table, dc.Payload, 1, dc.Rows, dc.RowsPerTransaction)
	if err == nil {
		err = lr.WaitStored(ctx, ins.LastLSN, 5*time.Millisecond)
	}
	if serr := lr.Stop(); err == nil && serr != nil && ctx.Err() == nil {
		err = serr
	}
	if err != nil {
		return 0, fmt.Errorf("store the backlog: %w", err)
	}
	if st, err := replication.GetStatus(ctx, cfg); err == nil {
		return st.DistributionBytes, nil
	}
	return 0, nil
}

// drainCold starts the agent, cold, and times it until the subscriber
// holds the backlog's last row.
func drainCold(ctx context.Context, dc DrainConfig, cfg replication.Config, res *DrainResult) error {
	sub, err := pgxConnect(ctx, cfg.Subscriber, "dbrig drain watch")
	if err != nil {
		return err
	}
	defer sub.Close(context.WithoutCancel(ctx))
	start := time.Now()
	var ready time.Time
	var once sync.Once
	agent, err := replication.Supervise(ctx, replication.RunConfig{Config: cfg, Agent: true, Targets: dc.Agent, Mode: dc.Mode, Options: dc.Options,
		AgentReady: func() { once.Do(func() { ready = time.Now() }) }})
	if err != nil {
		return err
	}
	err = pollUntil(ctx, 2*time.Millisecond, func() (bool, error) {
		select {
		case <-agent.Done():
			return false, fmt.Errorf("the agent stopped: %w", agent.Err())
		default:
		}
		return rowPresent(ctx, sub, dc.Table, int64(dc.Rows))
	})
	end := time.Now()
	res.Elapsed = end.Sub(start)
	if p := agent.Progress(); p.Agent != nil {
		res.Agent = *p.Agent
	}
	if serr := agent.Stop(); err == nil && serr != nil && ctx.Err() == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("drain: %w", err)
	}
	once.Do(func() {}) // the agent has stopped: ready is settled
	res.Connect, res.Drain = ready.Sub(start), end.Sub(ready)
	var n int64
	if err := sub.QueryRow(ctx, "SELECT count(*) FROM "+dc.Table.Quoted()).Scan(&n); err != nil || n != int64(dc.Rows) {
		return fmt.Errorf("drain: the subscriber holds %d rows, want %d (%v)", n, dc.Rows, err)
	}
	return nil
}

// FloorResult is how fast the subscriber itself inserts a backlog's rows.
type FloorResult struct {
	Copy, Insert time.Duration
}

// Best is the faster of the two.
func (f FloorResult) Best() time.Duration { return min(f.Copy, f.Insert) }

// InsertFloor measures the floor under any replication's apply on this
// subscriber: the same rows, their text already in the client's memory,
// inserted in one transaction by the fastest paths a client has (one
// binary COPY of every row; prepared multi-row INSERTs of 256 rows
// pipelined), each into a fresh table. A replication that applies these
// rows does this work plus its own.
func InsertFloor(ctx context.Context, sub postgres.ConnInfo, p Payload, rows int) (res FloorResult, err error) {
	c, err := pgxConnect(ctx, sub, "dbrig floor")
	if err != nil {
		return res, err
	}
	defer c.Close(context.WithoutCancel(ctx))
	t := replication.TableName{Schema: "public", Name: "dbrig_floor_rows"}
	defer c.Exec(context.WithoutCancel(ctx), "DROP TABLE IF EXISTS "+t.Quoted())
	vals := make([][]any, rows)
	for i := range vals {
		var v any = payloadText(p, int64(i+1))
		if p.sqlType() == "bytea" {
			v = []byte(payloadText(p, int64(i+1)))
		}
		vals[i] = []any{int64(i + 1), v}
	}
	fresh := func() error {
		if err := execAll(ctx, c, p.DDL(t)); err != nil {
			return err
		}
		_, err := c.Exec(ctx, "CHECKPOINT")
		return err
	}
	if err := fresh(); err != nil {
		return res, err
	}
	start := time.Now()
	if _, err := c.CopyFrom(ctx, pgx.Identifier{t.Schema, t.Name}, []string{"id", "payload"}, pgx.CopyFromRows(vals)); err != nil {
		return res, fmt.Errorf("floor: copy: %w", err)
	}
	res.Copy = time.Since(start)
	if err := fresh(); err != nil {
		return res, err
	}
	const per = 256
	var sql strings.Builder
	sql.WriteString("INSERT INTO " + t.Quoted() + " (id, payload) VALUES ")
	for r := 0; r < per; r++ {
		if r > 0 {
			sql.WriteByte(',')
		}
		fmt.Fprintf(&sql, "($%d,$%d)", 2*r+1, 2*r+2)
	}
	start = time.Now()
	err = pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		for i := 0; i+per <= rows; i += per {
			args := make([]any, 0, 2*per)
			for _, v := range vals[i : i+per] {
				args = append(args, v...)
			}
			b.Queue(sql.String(), args...)
		}
		if rest := rows % per; rest > 0 {
			for _, v := range vals[rows-rest:] {
				b.Queue("INSERT INTO "+t.Quoted()+" (id, payload) VALUES ($1, $2)", v...)
			}
		}
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return res, fmt.Errorf("floor: insert: %w", err)
	}
	res.Insert = time.Since(start)
	return res, nil
}

// payloadText is row g's payload as the SQL of Payload.expr makes it: the
// text of a char-1k row, the bytes of a bytea one.
func payloadText(p Payload, g int64) string {
	sum := md5.Sum([]byte(strconv.FormatInt(g, 10)))
	hexSum := hex.EncodeToString(sum[:])
	switch p {
	case PayloadBytes1K:
		return strings.Repeat(string(sum[:]), 70)
	case PayloadBytes15K:
		return strings.Repeat(string(sum[:]), 969)
	case PayloadHex1K:
		var s strings.Builder
		for i := 1; i <= 32; i++ {
			d := md5.Sum([]byte(strconv.FormatInt(g, 10) + "." + strconv.Itoa(i)))
			s.WriteString(hex.EncodeToString(d[:]))
		}
		return s.String()[:1000]
	}
	s := strconv.FormatInt(g, 10) + ":"
	for len(s) < 1000 {
		s += hexSum
	}
	return s[:1000]
}
