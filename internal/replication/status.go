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
	// LogReader is what the log reader has stored.
	LogReader LogReaderState `json:"log_reader"`
	// Subscription is what the subscriber has applied.
	Subscription SubscriptionState `json:"subscription"`
	// Pending counts the commands stored and not yet applied;
	// PendingTransactions the source transactions among them.
	Pending             int64 `json:"pending"`
	PendingTransactions int64 `json:"pending_transactions"`
	// DistributionBytes is the size of the commands table.
	DistributionBytes int64 `json:"distribution_bytes"`
	// Lag is how long ago the oldest pending transaction committed on the
	// publisher (0 when nothing is pending).
	Lag time.Duration `json:"lag_ns"`
}

// SlotStatus is the publisher's replication slot.
type SlotStatus struct {
	Exists       bool  `json:"exists"`
	Active       bool  `json:"active"`
	ConfirmedLSN LSN   `json:"confirmed_lsn"`
	CurrentLSN   LSN   `json:"current_lsn"`
	LagBytes     int64 `json:"lag_bytes"` // WAL written since the confirmed position
}

// LogReaderState is the log reader's record in the distribution database.
type LogReaderState struct {
	LastCmdID     int64     `json:"last_cmd_id"`
	LastCommitLSN LSN       `json:"last_commit_lsn"`
	Transactions  int64     `json:"transactions"`
	Commands      int64     `json:"commands"`
	UpdatedAt     time.Time `json:"updated_at"`
}

// SubscriptionState is the subscription's record on the subscriber.
type SubscriptionState struct {
	Mode           string    `json:"mode"`
	LastCmdID      int64     `json:"last_cmd_id"`
	LastLSN        LSN       `json:"last_lsn"`
	LastCommitTime time.Time `json:"last_commit_time"`
	AppliedAt      time.Time `json:"applied_at"`
	Transactions   int64     `json:"transactions"`
}

// GetStatus reads the state of a replication from all three databases.
func GetStatus(ctx context.Context, cfg Config) (Status, error) {
	cfg = cfg.withDefaults()
	st := Status{Publication: cfg.Publication}
	pub, err := pgxConnect(ctx, cfg.Publisher, "dbrig status")
	if err != nil {
		return st, &ServerError{Err: fmt.Errorf("publisher: %w", err)}
	}
	defer pub.Close(context.WithoutCancel(ctx))
	var confirmed, current *string
	err = pub.QueryRow(ctx, `SELECT active, confirmed_flush_lsn::text, pg_current_wal_lsn()::text,
			coalesce(pg_current_wal_lsn() - confirmed_flush_lsn, 0)::bigint
		FROM pg_replication_slots WHERE slot_name = $1`, cfg.Publication).Scan(&st.Slot.Active, &confirmed, &current, &st.Slot.LagBytes)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return st, &ServerError{Err: fmt.Errorf("publisher %s has no replication slot %q: replication %q is not set up", cfg.Publisher, cfg.Publication, cfg.Publication)}
	case err != nil:
		return st, &ServerError{Err: fmt.Errorf("publisher: read slot %q: %w", cfg.Publication, err)}
	}
	st.Slot.Exists = true
	if confirmed != nil {
		st.Slot.ConfirmedLSN, _ = ParseLSN(*confirmed)
	}
	if current != nil {
		st.Slot.CurrentLSN, _ = ParseLSN(*current)
	}

	dist, err := pgxConnect(ctx, cfg.Distribution(), "dbrig status")
	if err != nil {
		return st, &ServerError{Err: fmt.Errorf("distribution database: %w", err)}
	}
	defer dist.Close(context.WithoutCancel(ctx))
	var lastCommit string
	var updated *time.Time
	err = dist.QueryRow(ctx, "SELECT last_cmd_id, last_commit_lsn::text, xacts, commands, updated_at FROM "+Schema+".log_reader WHERE publication = $1",
		cfg.Publication).Scan(&st.LogReader.LastCmdID, &lastCommit, &st.LogReader.Transactions, &st.LogReader.Commands, &updated)
	if err != nil {
		return st, &ServerError{Err: fmt.Errorf("distribution database %s: read the log reader's state: %w", cfg.Distribution(), err)}
	}
	st.LogReader.LastCommitLSN, _ = ParseLSN(lastCommit)
	if updated != nil {
		st.LogReader.UpdatedAt = *updated
	}

	sub, err := pgxConnect(ctx, cfg.Subscriber, "dbrig status")
	if err != nil {
		return st, &ServerError{Err: fmt.Errorf("subscriber: %w", err)}
	}
	defer sub.Close(context.WithoutCancel(ctx))
	var lastLSN string
	var commitTime, appliedAt *time.Time
	err = sub.QueryRow(ctx, "SELECT mode, last_cmd_id, last_lsn::text, last_commit_time, applied_at, xacts FROM "+Schema+".subscription WHERE name = $1",
		cfg.Publication).Scan(&st.Subscription.Mode, &st.Subscription.LastCmdID, &lastLSN, &commitTime, &appliedAt, &st.Subscription.Transactions)
	if err != nil {
		return st, &ServerError{Err: fmt.Errorf("subscriber %s: read subscription %q: %w", cfg.Subscriber, cfg.Publication, err)}
	}
	st.Subscription.LastLSN, _ = ParseLSN(lastLSN)
	if commitTime != nil {
		st.Subscription.LastCommitTime = *commitTime
	}
	if appliedAt != nil {
		st.Subscription.AppliedAt = *appliedAt
	}

	err = dist.QueryRow(ctx, `SELECT count(*) FILTER (WHERE kind IN ('I', 'U', 'D', 'T')), count(*) FILTER (WHERE kind = 'C'),
			pg_total_relation_size('`+Schema+`.commands')
		FROM `+Schema+`.commands WHERE cmd_id > $1`, st.Subscription.LastCmdID).Scan(&st.Pending, &st.PendingTransactions, &st.DistributionBytes)
	if err != nil {
		return st, &ServerError{Err: fmt.Errorf("distribution database: count pending commands: %w", err)}
	}
	if st.PendingTransactions > 0 {
		var data []byte
		err := dist.QueryRow(ctx, "SELECT data FROM "+Schema+".commands WHERE cmd_id > $1 AND kind = 'C' ORDER BY cmd_id LIMIT 1",
			st.Subscription.LastCmdID).Scan(&data)
		if err == nil {
			if c, err := parseCommit(data); err == nil {
				st.Lag = max(time.Since(c.Time), 0)
			}
		}
	}
	return st, nil
}
