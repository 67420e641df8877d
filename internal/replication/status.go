package replication

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Status is where a replication stands.
type Status struct {
	Publication string `json:"publication"`
	// Slot is the publisher's replication slot.
	Slot SlotStatus `json:"slot"`
	// LogReader is the log reader: where it runs and what it has stored.
	LogReader LogReaderState `json:"log_reader"`
	// Agent is the distribution agent: where it runs, or why it stopped.
	Agent AgentState `json:"agent"`
	// Subscription is what the subscriber has applied.
	Subscription SubscriptionState `json:"subscription"`
	// Stored counts the commands (inserts, updates, deletes, truncates) the
	// log reader has stored since setup; Pending those not yet applied,
	// PendingTransactions the source transactions among them and
	// PendingBytes their size as pgoutput messages.
	Stored              int64 `json:"stored"`
	Pending             int64 `json:"pending"`
	PendingTransactions int64 `json:"pending_transactions"`
	PendingBytes        int64 `json:"pending_bytes"`
	// DistributionBytes is the size of the publication's command stream in
	// the distribution database.
	DistributionBytes int64 `json:"distribution_bytes"`
	// Lag is how long ago the oldest pending transaction committed on the
	// publisher (0 when nothing is pending).
	Lag        time.Duration `json:"lag_ns"`
	LagSeconds float64       `json:"lag_seconds"`
}

// SlotStatus is the publisher's replication slot.
type SlotStatus struct {
	Exists       bool `json:"exists"`
	Active       bool `json:"active"`
	ConfirmedLSN LSN  `json:"confirmed_lsn"`
	CurrentLSN   LSN  `json:"current_lsn"`
	RestartLSN   LSN  `json:"restart_lsn"`
	// LagBytes is the WAL written since the position the log reader
	// confirmed; WALRetainedBytes the WAL the slot keeps the server from
	// removing (from its restart position), which grows while the log
	// reader does not run.
	LagBytes         int64 `json:"lag_bytes"`
	WALRetainedBytes int64 `json:"wal_retained_bytes"`
}

// Role is where one role of a replication runs, or ran, as it recorded
// itself in the distribution database.
type Role struct {
	// Running is true while the role holds its lock: it runs now.
	Running bool `json:"running"`
	// State is what the role last recorded: "running", "stopped", or ""
	// when it never started; "starting" while it holds its lock but has
	// not yet recorded where it runs (the lock and the record are taken on
	// two connections at once). A role that is not Running but whose State
	// is "running" stopped without saying why (killed, or it lost its
	// connection for good).
	State     string    `json:"state"`
	Host      string    `json:"host,omitempty"`
	PID       int       `json:"pid,omitempty"`
	Since     time.Time `json:"since,omitzero"`
	StoppedAt time.Time `json:"stopped_at,omitzero"`
	// Error is why it stopped, when it stopped on an error.
	Error string `json:"error,omitempty"`
}

// LogReaderState is the log reader's record in the distribution database.
type LogReaderState struct {
	Role
	LastCmdID     int64     `json:"last_cmd_id"`
	LastCommitLSN LSN       `json:"last_commit_lsn"`
	Transactions  int64     `json:"transactions"`
	Commands      int64     `json:"commands"`
	Bytes         int64     `json:"bytes"`
	StoredBytes   int64     `json:"stored_bytes"`
	UpdatedAt     time.Time `json:"updated_at,omitzero"`
}

// AgentState is the distribution agent's record in the distribution
// database.
type AgentState struct {
	Role
	// Mode is where the agent runs: push or pull (the one last started).
	Mode string `json:"mode,omitempty"`
	// ReportedCmdID is the position it last reported to the distribution
	// database: the last the subscriber had flushed then (cleanup deletes
	// up to it). It lags the subscriber's own record by up to a few WAL
	// writer rounds when the subscriber commits asynchronously.
	ReportedCmdID int64 `json:"reported_cmd_id"`
}

// SubscriptionState is the subscription's record on the subscriber.
type SubscriptionState struct {
	// Mode is the mode the subscription was set up with.
	Mode           string    `json:"mode"`
	LastCmdID      int64     `json:"last_cmd_id"`
	LastLSN        LSN       `json:"last_lsn"`
	LastCommitTime time.Time `json:"last_commit_time,omitzero"`
	AppliedAt      time.Time `json:"applied_at,omitzero"`
	Transactions   int64     `json:"transactions"`
}

// holdsLock is the query that tells whether the advisory lock of a role
// (lockKey) is held in the current database: the role runs.
const holdsLock = `SELECT EXISTS (SELECT 1 FROM pg_locks l, (SELECT hashtext($1)::bigint AS k) h
	WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
	  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
	  AND l.classid::bigint = ((h.k >> 32) & 4294967295) AND l.objid::bigint = (h.k & 4294967295))`

// GetStatus reads the state of a replication from all three databases.
func GetStatus(ctx context.Context, cfg Config) (Status, error) {
	cfg = cfg.withDefaults()
	st := Status{Publication: cfg.Publication}
	pub, dist, _, err := openReplication(ctx, cfg, "dbrig status")
	if err != nil {
		return st, err
	}
	defer pub.Close(context.WithoutCancel(ctx))
	defer dist.Close(context.WithoutCancel(ctx))
	if st.Slot, err = readSlot(ctx, pub, cfg); err != nil {
		return st, err
	}
	if st.LogReader, err = readLogReaderState(ctx, dist, cfg); err != nil {
		return st, err
	}
	st.Stored = st.LogReader.Commands
	if st.LogReader.Role, err = roleRunning(ctx, dist, "log reader", cfg.Publication, st.LogReader.Role); err != nil {
		return st, &ServerError{Err: fmt.Errorf("distribution database: %w", err)}
	}
	if st.Agent, err = readAgentState(ctx, dist, cfg); err != nil {
		return st, err
	}

	sub, err := pgxConnect(ctx, cfg.Subscriber, "dbrig status")
	if err != nil {
		return st, &ServerError{Err: fmt.Errorf("subscriber: %w", err)}
	}
	defer sub.Close(context.WithoutCancel(ctx))
	if st.Subscription, err = readSubscription(ctx, sub, cfg); err != nil {
		return st, err
	}
	if st.Agent.Role, err = roleRunning(ctx, sub, "agent", cfg.Publication, st.Agent.Role); err != nil {
		return st, &ServerError{Err: fmt.Errorf("subscriber: %w", err)}
	}
	if st.Agent.Running && st.Agent.State == roleStarting {
		st.Agent.Mode = "" // the mode recorded is the last run's
	}

	if err := pendingCommands(ctx, dist, cfg.Publication, st.Subscription.LastCmdID, &st); err != nil {
		return st, &ServerError{Err: fmt.Errorf("distribution database: count pending commands: %w", err)}
	}
	st.LagSeconds = st.Lag.Seconds()
	return st, nil
}

// readSlot reads the publisher's replication slot.
func readSlot(ctx context.Context, pub *pgx.Conn, cfg Config) (SlotStatus, error) {
	var slot SlotStatus
	var confirmed, current, restart *string
	err := pub.QueryRow(ctx, `SELECT active, confirmed_flush_lsn::text, pg_current_wal_lsn()::text, restart_lsn::text,
			coalesce(pg_current_wal_lsn() - confirmed_flush_lsn, 0)::bigint, coalesce(pg_current_wal_lsn() - restart_lsn, 0)::bigint
		FROM pg_replication_slots WHERE slot_name = $1`, cfg.Publication).
		Scan(&slot.Active, &confirmed, &current, &restart, &slot.LagBytes, &slot.WALRetainedBytes)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return slot, &ServerError{Err: fmt.Errorf("publisher %s has no replication slot %q, which replication %q needs: it was dropped outside dbrig (tear the replication down and set it up again)",
			cfg.Publisher, cfg.Publication, cfg.Publication)}
	case err != nil:
		return slot, &ServerError{Err: fmt.Errorf("publisher: read slot %q: %w", cfg.Publication, err)}
	}
	slot.Exists = true
	for _, p := range []struct {
		s   *string
		dst *LSN
	}{{confirmed, &slot.ConfirmedLSN}, {current, &slot.CurrentLSN}, {restart, &slot.RestartLSN}} {
		if p.s != nil {
			*p.dst, _ = ParseLSN(*p.s)
		}
	}
	return slot, nil
}

// readLogReaderState reads the log reader's record in the distribution
// database.
func readLogReaderState(ctx context.Context, dist *pgx.Conn, cfg Config) (LogReaderState, error) {
	var lr LogReaderState
	var lastCommit string
	var updated, started, stopped *time.Time
	var host, state, lrErr *string
	var pid *int
	err := dist.QueryRow(ctx, `SELECT last_cmd_id, last_commit_lsn::text, xacts, commands, bytes, stored_bytes, updated_at,
			host, pid, started_at, state, error, stopped_at
		FROM `+Schema+`.log_reader WHERE publication = $1`, cfg.Publication).
		Scan(&lr.LastCmdID, &lastCommit, &lr.Transactions, &lr.Commands, &lr.Bytes, &lr.StoredBytes, &updated,
			&host, &pid, &started, &state, &lrErr, &stopped)
	if err != nil {
		return lr, &ServerError{Err: fmt.Errorf("distribution database %s: read the log reader's state: %w", cfg.Distribution(), err)}
	}
	lr.LastCommitLSN, _ = ParseLSN(lastCommit)
	lr.UpdatedAt = deref(updated)
	lr.Role = role(host, pid, started, state, lrErr, stopped)
	return lr, nil
}

// readAgentState reads the agent's record in the distribution database.
func readAgentState(ctx context.Context, dist *pgx.Conn, cfg Config) (AgentState, error) {
	var ag AgentState
	var started, stopped *time.Time
	var host, state, agErr, mode *string
	var pid *int
	err := dist.QueryRow(ctx, `SELECT applied_cmd_id, agent_host, agent_pid, agent_started_at, agent_state, agent_error, agent_stopped_at, agent_mode
		FROM `+Schema+`.subscriptions WHERE name = $1`, cfg.Publication).
		Scan(&ag.ReportedCmdID, &host, &pid, &started, &state, &agErr, &stopped, &mode)
	if err != nil {
		return ag, &ServerError{Err: fmt.Errorf("distribution database %s: read the agent's state: %w", cfg.Distribution(), err)}
	}
	ag.Role = role(host, pid, started, state, agErr, stopped)
	ag.Mode = deref(mode)
	return ag, nil
}

// readSubscription reads the subscription's record on the subscriber.
func readSubscription(ctx context.Context, sub *pgx.Conn, cfg Config) (SubscriptionState, error) {
	var s SubscriptionState
	var lastLSN string
	var commitTime, appliedAt *time.Time
	err := sub.QueryRow(ctx, "SELECT mode, last_cmd_id, last_lsn::text, last_commit_time, applied_at, xacts FROM "+Schema+".subscription WHERE name = $1",
		cfg.Publication).Scan(&s.Mode, &s.LastCmdID, &lastLSN, &commitTime, &appliedAt, &s.Transactions)
	if err != nil {
		return s, &ServerError{Err: fmt.Errorf("subscriber %s: read subscription %q: %w", cfg.Subscriber, cfg.Publication, err)}
	}
	s.LastLSN, _ = ParseLSN(lastLSN)
	s.LastCommitTime = deref(commitTime)
	s.AppliedAt = deref(appliedAt)
	return s, nil
}

// roleStarting is the state of a role that holds its lock but has not yet
// recorded where it runs.
const roleStarting = "starting"

// roleRunning reads, on the connection to the database where the role
// takes its lock, whether it runs: the role as recorded, Running, or
// starting when it runs without a record yet.
func roleRunning(ctx context.Context, c *pgx.Conn, roleName, publication string, recorded Role) (Role, error) {
	if err := c.QueryRow(ctx, holdsLock, lockKey(roleName, publication)).Scan(&recorded.Running); err != nil {
		return recorded, err
	}
	if recorded.Running && recorded.State != "running" {
		return Role{Running: true, State: roleStarting}, nil
	}
	return recorded, nil
}

// pendingCommands counts the commands after applied: whole chunks from
// their counts, and the chunk the position falls inside by decoding it.
// The lag is the age of the first pending Commit.
func pendingCommands(ctx context.Context, dist *pgx.Conn, publication string, applied int64, st *Status) error {
	err := dist.QueryRow(ctx, `SELECT coalesce(sum(changes), 0), coalesce(sum(xacts), 0), coalesce(sum(raw_bytes), 0),
			pg_total_relation_size('`+commandsTable(publication)+`')
		FROM `+commandsTable(publication)+` WHERE first_cmd > $1`, applied).
		Scan(&st.Pending, &st.PendingTransactions, &st.PendingBytes, &st.DistributionBytes)
	if err != nil {
		return err
	}
	rows, err := dist.Query(ctx, "SELECT first_cmd, data FROM "+commandsTable(publication)+
		" WHERE last_cmd > $1 ORDER BY first_cmd LIMIT 2", applied)
	if err != nil {
		return err
	}
	defer rows.Close()
	cdc := getCodec()
	defer putCodec(cdc)
	var firstCommit time.Time
	for rows.Next() {
		var first int64
		var data []byte
		if err := rows.Scan(&first, &data); err != nil {
			return err
		}
		raw, err := cdc.decode(data)
		if err != nil {
			return err
		}
		straddles := first <= applied
		err = eachMessage(raw, first, func(cmd int64, msg []byte) error {
			if cmd <= applied {
				return nil
			}
			switch msg[0] {
			case kindInsert, kindUpdate, kindDelete, kindTruncate:
				if straddles {
					st.Pending++
					st.PendingBytes += int64(len(msg))
				}
			case kindCommit:
				if straddles {
					st.PendingTransactions++
				}
				if firstCommit.IsZero() {
					if c, err := parseCommit(msg); err == nil {
						firstCommit = c.CommitTime.UTC()
					}
				}
			default:
				if straddles {
					st.PendingBytes += int64(len(msg))
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		if !firstCommit.IsZero() && !straddles {
			break
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if !firstCommit.IsZero() {
		st.Lag = max(time.Since(firstCommit), 0)
	}
	return nil
}

func role(host *string, pid *int, started *time.Time, state, err *string, stopped *time.Time) Role {
	r := Role{Host: deref(host), Since: deref(started), State: deref(state), Error: deref(err), StoppedAt: deref(stopped)}
	if pid != nil {
		r.PID = *pid
	}
	return r
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
