package replication

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dbrig/dbrig/internal/engine/postgres"
)

// CurrentLSN is the publisher's current WAL insert position: every
// transaction committed before the call lies before it, also with
// synchronous_commit off (the write position may lag behind).
func CurrentLSN(ctx context.Context, publisher postgres.ConnInfo) (LSN, error) {
	c, err := pgxConnect(ctx, publisher, "dbrig")
	if err != nil {
		return 0, err
	}
	defer c.Close(context.WithoutCancel(ctx))
	return currentLSN(ctx, c)
}

func currentLSN(ctx context.Context, c *pgx.Conn) (LSN, error) {
	var s string
	if err := c.QueryRow(ctx, "SELECT pg_current_wal_insert_lsn()::text").Scan(&s); err != nil {
		return 0, fmt.Errorf("read the publisher's WAL position: %w", err)
	}
	return ParseLSN(s)
}

// Waiter watches a replication from outside (the rig's own direct
// connections) and tells when the subscriber has caught up with a publisher
// position.
type Waiter struct {
	cfg           Config
	pub, dist, sb *pgx.Conn
}

// NewWaiter opens the three watching connections.
func NewWaiter(ctx context.Context, cfg Config) (*Waiter, error) {
	cfg = cfg.withDefaults()
	w := &Waiter{cfg: cfg}
	var err error
	if w.pub, err = pgxConnect(ctx, cfg.Publisher, "dbrig watch"); err != nil {
		return nil, err
	}
	if w.dist, err = pgxConnect(ctx, cfg.Distribution(), "dbrig watch"); err != nil {
		w.Close()
		return nil, err
	}
	if w.sb, err = pgxConnect(ctx, cfg.Subscriber, "dbrig watch"); err != nil {
		w.Close()
		return nil, err
	}
	return w, nil
}

// Close closes the watching connections.
func (w *Waiter) Close() {
	for _, c := range []*pgx.Conn{w.pub, w.dist, w.sb} {
		if c != nil {
			c.Close(context.Background())
		}
	}
}

// CurrentLSN is the publisher's current WAL position.
func (w *Waiter) CurrentLSN(ctx context.Context) (LSN, error) { return currentLSN(ctx, w.pub) }

// CaughtUp reports whether every transaction committed on the publisher
// before target is applied on the subscriber: the slot is confirmed past
// target (so the log reader has stored them all) and the subscription
// stands at the log reader's last command.
func (w *Waiter) CaughtUp(ctx context.Context, target LSN) (bool, error) {
	var confirmed *string
	err := w.pub.QueryRow(ctx, "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = $1", w.cfg.Publication).Scan(&confirmed)
	if err != nil {
		return false, fmt.Errorf("publisher: read slot %q: %w", w.cfg.Publication, err)
	}
	if confirmed == nil {
		return false, nil
	}
	c, err := ParseLSN(*confirmed)
	if err != nil || c < target {
		return false, err
	}
	var stored, applied int64
	if err := w.dist.QueryRow(ctx, "SELECT last_cmd_id FROM "+Schema+".log_reader WHERE publication = $1", w.cfg.Publication).Scan(&stored); err != nil {
		return false, fmt.Errorf("distribution database: %w", err)
	}
	if err := w.sb.QueryRow(ctx, "SELECT last_cmd_id FROM "+Schema+".subscription WHERE name = $1", w.cfg.Publication).Scan(&applied); err != nil {
		return false, fmt.Errorf("subscriber: %w", err)
	}
	return applied >= stored, nil
}

// Stored reports whether the log reader has stored every transaction
// committed before target.
func (w *Waiter) Stored(ctx context.Context, target LSN) (bool, error) {
	var confirmed *string
	err := w.pub.QueryRow(ctx, "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = $1", w.cfg.Publication).Scan(&confirmed)
	if err != nil || confirmed == nil {
		return false, err
	}
	c, err := ParseLSN(*confirmed)
	return err == nil && c >= target, err
}

// Wait polls CaughtUp every poll (default 5 ms) until it holds.
func (w *Waiter) Wait(ctx context.Context, target LSN, poll time.Duration) error {
	if poll <= 0 {
		poll = 5 * time.Millisecond
	}
	for {
		ok, err := w.CaughtUp(ctx, target)
		if err != nil || ok {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("wait for the subscriber to reach %s: %w", target, ctx.Err())
		case <-time.After(poll):
		}
	}
}
