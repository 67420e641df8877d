package georep

import (
	"context"
	"fmt"
	"sync"
	"time"

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

	// The backlog.
	lr, err := replication.Supervise(ctx, replication.RunConfig{Config: cfg, LogReader: true})
	if err != nil {
		return res, err
	}
	ins, err := InsertRows(ctx, cfg.Publisher, dc.Table, dc.Payload, 1, dc.Rows, dc.RowsPerTransaction)
	if err == nil {
		err = lr.WaitStored(ctx, ins.LastLSN, 5*time.Millisecond)
	}
	if serr := lr.Stop(); err == nil && serr != nil && ctx.Err() == nil {
		err = serr
	}
	if err != nil {
		return res, fmt.Errorf("store the backlog: %w", err)
	}
	if st, err := replication.GetStatus(ctx, cfg); err == nil {
		res.Stored = st.DistributionBytes
	}

	// The agent, cold.
	sub, err := pgxConnect(ctx, cfg.Subscriber, "dbrig drain watch")
	if err != nil {
		return res, err
	}
	defer sub.Close(context.WithoutCancel(ctx))
	start := time.Now()
	var ready time.Time
	var once sync.Once
	agent, err := replication.Supervise(ctx, replication.RunConfig{Config: cfg, Agent: true, Targets: dc.Agent, Mode: dc.Mode, Options: dc.Options,
		AgentReady: func() { once.Do(func() { ready = time.Now() }) }})
	if err != nil {
		return res, err
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
		return res, fmt.Errorf("drain: %w", err)
	}
	once.Do(func() {}) // the agent has stopped: ready is settled
	res.Connect, res.Drain = ready.Sub(start), end.Sub(ready)
	var n int64
	if err := sub.QueryRow(ctx, "SELECT count(*) FROM "+dc.Table.Quoted()).Scan(&n); err != nil || n != int64(dc.Rows) {
		return res, fmt.Errorf("drain: the subscriber holds %d rows, want %d (%v)", n, dc.Rows, err)
	}
	return res, nil
}
