package replication

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// TeardownOptions tune Teardown.
type TeardownOptions struct {
	// Force terminates a log reader still streaming from the slot and an
	// agent still connected to the distribution database.
	Force bool
}

// TeardownResult says what Teardown removed.
type TeardownResult struct {
	Removed []string `json:"removed"`
	// Kept names what stays because another replication uses it.
	Kept []string `json:"kept,omitempty"`
}

// Teardown removes one replication: the objects dbrig's catalog records as
// belonging to it, and nothing else. The slot and the publication of that
// name, its command stream in the distribution database (the whole
// database when no other replication uses it) and its subscription on the
// subscriber (with dbrig's bookkeeping schema there when no other
// subscription is left). Replicated tables stay. It refuses, removing
// nothing, when the distribution database is missing or not dbrig's, or
// when its catalog does not record the replication for this publisher
// database: a *ServerError (exit 1).
func Teardown(ctx context.Context, cfg Config, opts TeardownOptions) (res TeardownResult, err error) {
	cfg = cfg.withDefaults()
	if err := validateName("publication", cfg.Publication); err != nil {
		return res, &UsageError{Err: err}
	}
	pub, dist, _, err := openReplication(ctx, cfg, "dbrig teardown")
	if err != nil {
		return res, err
	}
	defer pub.Close(context.WithoutCancel(ctx))
	others, err := publicationNames(ctx, dist)
	dist.Close(context.WithoutCancel(ctx))
	if err != nil {
		return res, &ServerError{Err: fmt.Errorf("distribution database: %w", err)}
	}
	others = slicesDelete(others, cfg.Publication)
	if !opts.Force {
		if err := refuseRunningRoles(ctx, pub, cfg); err != nil {
			return res, err
		}
	}
	t := &teardown{cfg: cfg, opts: opts}
	t.removeFromPublisher(ctx, pub, others)
	t.removeFromSubscriber(ctx)
	if err := errors.Join(t.errs...); err != nil {
		return t.res, &ServerError{Err: err}
	}
	return t.res, nil
}

// refuseRunningRoles refuses to tear down a replication whose roles still
// run: the log reader holds the slot, the agent sessions in the
// distribution database.
func refuseRunningRoles(ctx context.Context, pub *pgx.Conn, cfg Config) error {
	var lrPID *int32
	err := pub.QueryRow(ctx, "SELECT active_pid FROM pg_replication_slots WHERE slot_name = $1", cfg.Publication).Scan(&lrPID)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return &ServerError{Err: fmt.Errorf("publisher: read slot %q: %w", cfg.Publication, err)}
	}
	if lrPID != nil {
		return &ServerError{Err: fmt.Errorf("replication %q: its slot is in use by process %d (a running log reader): stop it first, or use --force", cfg.Publication, *lrPID)}
	}
	var agents int
	if err := pub.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE datname = $1 AND application_name = $2",
		cfg.DistributionDB, agentAppName(cfg.Publication)).Scan(&agents); err != nil {
		return &ServerError{Err: fmt.Errorf("publisher: %w", err)}
	}
	if agents > 0 {
		return &ServerError{Err: fmt.Errorf("replication %q: a distribution agent is connected to the distribution database: stop it first, or use --force", cfg.Publication)}
	}
	return nil
}

// teardown is what a Teardown has removed, kept, and failed to remove: it
// goes on after a failure, so that one run removes all it can.
type teardown struct {
	cfg  Config
	opts TeardownOptions
	res  TeardownResult
	errs []error
}

// done books one removal: what was removed, or why not.
func (t *teardown) done(err error, removed string) {
	if err != nil {
		t.errs = append(t.errs, err)
		return
	}
	t.res.Removed = append(t.res.Removed, removed)
}

// removeFromPublisher drops the slot, the publication, and the
// distribution database or, when other replications use it, this one's
// part of it.
func (t *teardown) removeFromPublisher(ctx context.Context, pub *pgx.Conn, others []string) {
	cfg, force := t.cfg, t.opts.Force
	t.done(dropSlot(ctx, pub, cfg.Publication, force), fmt.Sprintf("replication slot %q", cfg.Publication))
	_, err := pub.Exec(ctx, "DROP PUBLICATION IF EXISTS "+quoteIdent(cfg.Publication))
	if err != nil {
		err = fmt.Errorf("publisher: drop publication %q: %w", cfg.Publication, err)
	}
	t.done(err, fmt.Sprintf("publication %q", cfg.Publication))
	if len(others) == 0 {
		drop := "DROP DATABASE " + quoteIdent(cfg.DistributionDB)
		if force {
			drop += " WITH (FORCE)"
		}
		if _, err = pub.Exec(ctx, drop); err != nil {
			err = fmt.Errorf("publisher: drop the distribution database %q: %w", cfg.DistributionDB, err)
		}
		t.done(err, fmt.Sprintf("distribution database %q", cfg.DistributionDB))
		return
	}
	if force {
		pub.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND application_name = $2",
			cfg.DistributionDB, agentAppName(cfg.Publication))
	}
	err = removeFromDistribution(ctx, cfg)
	t.done(err, fmt.Sprintf("its command stream in the distribution database %q", cfg.DistributionDB))
	if err == nil {
		t.res.Kept = append(t.res.Kept, fmt.Sprintf("distribution database %q (it serves %s)", cfg.DistributionDB, strings.Join(others, ", ")))
	}
}

// removeFromSubscriber removes the subscription, and dbrig's bookkeeping
// schema with the last one.
func (t *teardown) removeFromSubscriber(ctx context.Context) {
	cfg := t.cfg
	sub, err := pgxConnect(ctx, cfg.Subscriber, "dbrig teardown")
	if err != nil {
		t.errs = append(t.errs, fmt.Errorf("subscriber: %w; its subscription %q stays there: run teardown again once it is reachable", err, cfg.Publication))
		return
	}
	defer sub.Close(context.WithoutCancel(ctx))
	t.done(removeSubscription(ctx, sub, cfg.Publication, true), fmt.Sprintf("subscription %q on the subscriber", cfg.Publication))
}

// dropSlot drops the replication slot of that name if it exists,
// terminating its walsender first when force is set (a terminated
// walsender releases the slot as it exits).
func dropSlot(ctx context.Context, pub *pgx.Conn, slot string, force bool) error {
	var activePID *int32
	err := pub.QueryRow(ctx, "SELECT active_pid FROM pg_replication_slots WHERE slot_name = $1", slot).Scan(&activePID)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil
	case err != nil:
		return fmt.Errorf("publisher: read slot %q: %w", slot, err)
	}
	if activePID != nil {
		if !force {
			return fmt.Errorf("replication slot %q is in use by process %d (a running log reader): stop it first, or use --force", slot, *activePID)
		}
		pub.Exec(ctx, "SELECT pg_terminate_backend($1)", *activePID)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err = pub.Exec(ctx, "SELECT pg_drop_replication_slot($1)", slot)
		var pgErr *pgconn.PgError
		if err == nil || !errors.As(err, &pgErr) || pgErr.Code != "55006" || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("publisher: drop slot %q: %w", slot, err)
	}
	return nil
}

// removeFromDistribution removes one publication's part of a distribution
// database that serves others too: its catalog rows and its stream.
func removeFromDistribution(ctx context.Context, cfg Config) error {
	dist, err := pgxConnect(ctx, cfg.Distribution(), "dbrig teardown")
	if err != nil {
		return fmt.Errorf("distribution database: %w", err)
	}
	defer dist.Close(context.WithoutCancel(ctx))
	err = pgx.BeginFunc(ctx, dist, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "DELETE FROM "+Schema+".publication WHERE name = $1", cfg.Publication); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "DROP TABLE IF EXISTS "+commandsTable(cfg.Publication)+", "+relationsTable(cfg.Publication))
		return err
	})
	if err != nil {
		return fmt.Errorf("distribution database %s: remove publication %q: %w", cfg.Distribution(), cfg.Publication, err)
	}
	return nil
}

// removeSubscription deletes the subscription's row on the subscriber and,
// when dropSchema is set and no other subscription is left, dbrig's
// bookkeeping schema (only when it carries dbrig's mark).
func removeSubscription(ctx context.Context, sub *pgx.Conn, name string, dropSchema bool) error {
	var has bool
	var comment *string
	if err := sub.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL, (SELECT obj_description(oid, 'pg_namespace') FROM pg_namespace WHERE nspname = $2)`,
		Schema+".subscription", Schema).Scan(&has, &comment); err != nil {
		return fmt.Errorf("subscriber: %w", err)
	}
	if !has || comment == nil || *comment != subscriberMarker {
		return nil
	}
	var left int
	err := sub.QueryRow(ctx, "WITH d AS (DELETE FROM "+Schema+".subscription WHERE name = $1) SELECT count(*) FROM "+Schema+".subscription WHERE name <> $1",
		name).Scan(&left)
	if err == nil && left == 0 && dropSchema {
		_, err = sub.Exec(ctx, "DROP SCHEMA "+Schema+" CASCADE")
	}
	if err != nil {
		return fmt.Errorf("subscriber: remove subscription %q: %w", name, err)
	}
	return nil
}

func slicesDelete(s []string, v string) []string {
	out := s[:0]
	for _, x := range s {
		if x != v {
			out = append(out, x)
		}
	}
	return out
}
