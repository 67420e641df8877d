package replication

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/postgres"
)

// Config names one replication: a publication of tables in the publisher's
// database, its distribution database on the publisher's server, and one
// subscriber database.
type Config struct {
	// Publisher is the published database, reached from the publisher's
	// site (the log reader and setup use it).
	Publisher postgres.ConnInfo
	// Subscriber is the subscriber's database (setup, verify, status use it;
	// the agent gets its own target, which may cross a link).
	Subscriber postgres.ConnInfo
	// Publication names the PostgreSQL publication, the replication slot and
	// the subscription (default DefaultPublication).
	Publication string
	// DistributionDB is the distribution database's name on the
	// publisher's server (default DefaultDistributionDB). It serves one
	// publication.
	DistributionDB string
	// Tables to publish. Setup needs them; empty means every table of the
	// publisher database outside the system schemas.
	Tables []TableName
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Publication == "" {
		c.Publication = DefaultPublication
	}
	if c.DistributionDB == "" {
		c.DistributionDB = DefaultDistributionDB
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Distribution is the distribution database's login, from the publisher's
// site.
func (c Config) Distribution() postgres.ConnInfo {
	c = c.withDefaults()
	return c.Publisher.WithDatabase(c.DistributionDB)
}

func (c Config) validate() error {
	var errs []error
	if err := validateName("publication", c.Publication); err != nil {
		errs = append(errs, err)
	}
	if c.DistributionDB == c.Publisher.Database {
		errs = append(errs, fmt.Errorf("distribution database %q is the published database: choose another name", c.DistributionDB))
	}
	if c.Publisher.Host == "" || c.Publisher.Database == "" {
		errs = append(errs, errors.New("publisher: a connection with host and database is needed"))
	}
	if c.Subscriber.Host == "" || c.Subscriber.Database == "" {
		errs = append(errs, errors.New("subscriber: a connection with host and database is needed"))
	}
	if c.Publisher.Host == c.Subscriber.Host && c.Publisher.Port == c.Subscriber.Port && c.Publisher.Database == c.Subscriber.Database {
		errs = append(errs, fmt.Errorf("publisher and subscriber are the same database (%s)", c.Publisher))
	}
	if err := errors.Join(errs...); err != nil {
		return &UsageError{Err: err}
	}
	return nil
}

// SetupOptions say how to initialize the subscriber.
type SetupOptions struct {
	Init InitMethod
	// InitPublisher and InitSubscriber are the connections the
	// initialization's bulk copy uses (COPY TO / pg_dump, COPY FROM /
	// pg_restore). Either may go through a link proxy; zero values mean
	// Config.Publisher and Config.Subscriber.
	InitPublisher, InitSubscriber postgres.ConnInfo
	// Binaries are the PostgreSQL programs for InitBackup (pg_dump,
	// pg_restore); zero means postgres.FindBinaries.
	Binaries postgres.Binaries
	// DumpDir holds the backup archive (default os.TempDir()); it is removed
	// after the restore.
	DumpDir string
	// Mode is recorded with the subscription (push or pull).
	Mode Mode
	// Binary makes the log reader ask pgoutput for the binary (send/receive)
	// form of column values instead of their text form: bytea travels raw
	// instead of as hex, at half the size. It needs PostgreSQL 14 or later
	// on the publisher and the same major version on both sides.
	Binary bool
}

// SetupResult says what setup did.
type SetupResult struct {
	// ConsistentPoint is the slot's consistent point: the snapshot copied to
	// the subscriber holds every transaction committed before it, and the
	// log reader delivers every one committed after it.
	ConsistentPoint LSN    `json:"consistent_point"`
	Init            string `json:"init"`
	// InitDuration is the time of the initialization's copy (COPY, or
	// pg_dump plus pg_restore).
	InitDuration time.Duration `json:"init_duration_ns"`
	DumpDuration time.Duration `json:"dump_duration_ns,omitempty"`
	// InitBytes is what the copy moved: COPY bytes, or the archive's size.
	InitBytes int64       `json:"init_bytes"`
	Tables    []TableCopy `json:"tables,omitempty"`
}

// TableCopy is one table's initialization.
type TableCopy struct {
	Table string `json:"table"`
	Rows  int64  `json:"rows"`
	Bytes int64  `json:"bytes"`
}

// plan is what preflight found: every table's shape on both sides.
type plan struct {
	cfg     Config
	tables  []*tableInfo             // publisher
	sub     map[TableName]*tableInfo // subscriber tables that exist
	subRows map[TableName]bool       // subscriber tables that hold rows
}

// Check verifies, without changing anything, that the replication can be
// set up: the logins work, the publisher has wal_level = logical and room
// for a slot, every table exists with a primary key and supported types,
// and the subscriber can receive them with init. It returns a *UsageError
// or a *ServerError.
func Check(ctx context.Context, cfg Config, opts SetupOptions) error {
	_, err := preflight(ctx, cfg.withDefaults(), opts)
	return err
}

func preflight(ctx context.Context, cfg Config, opts SetupOptions) (*plan, error) {
	init := opts.Init
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	pub, err := pgxConnect(ctx, cfg.Publisher, "dbrig setup")
	if err != nil {
		return nil, &ServerError{Err: fmt.Errorf("publisher: %w", err)}
	}
	defer pub.Close(context.WithoutCancel(ctx))
	p := &plan{cfg: cfg, sub: map[TableName]*tableInfo{}, subRows: map[TableName]bool{}}

	// The publisher server.
	var walLevel, encoding string
	var super, repl, createdb bool
	var slotsFree, sendersFree int
	err = pub.QueryRow(ctx, `SELECT current_setting('wal_level'), pg_encoding_to_char(d.encoding),
			r.rolsuper, r.rolreplication, r.rolcreatedb,
			current_setting('max_replication_slots')::int - (SELECT count(*) FROM pg_replication_slots),
			current_setting('max_wal_senders')::int - (SELECT count(*) FROM pg_stat_replication)
		FROM pg_database d, pg_roles r WHERE d.datname = current_database() AND r.rolname = current_user`).
		Scan(&walLevel, &encoding, &super, &repl, &createdb, &slotsFree, &sendersFree)
	if err != nil {
		return nil, &ServerError{Err: fmt.Errorf("publisher %s: read its settings: %w", cfg.Publisher, err)}
	}
	v, err := serverVersion(ctx, pub)
	if err != nil {
		return nil, &ServerError{Err: fmt.Errorf("publisher %s: %w", cfg.Publisher, err)}
	}
	var serr []error
	if v < 130000 {
		serr = append(serr, fmt.Errorf("publisher %s runs PostgreSQL %d.%d: dbrig needs 13 or later", cfg.Publisher, v/10000, v%10000/100))
	}
	if opts.Binary && v < 140000 {
		serr = append(serr, fmt.Errorf("publisher %s runs PostgreSQL %d: binary values need 14 or later", cfg.Publisher, v/10000))
	}
	if walLevel != "logical" {
		serr = append(serr, fmt.Errorf("publisher %s has wal_level = %s: logical decoding needs wal_level = logical (set it in postgresql.conf and restart the server)",
			cfg.Publisher, walLevel))
	}
	if encoding != "UTF8" {
		serr = append(serr, fmt.Errorf("publisher database %s has encoding %s: dbrig replicates UTF8 databases", cfg.Publisher, encoding))
	}
	if !super && !(repl && createdb) {
		serr = append(serr, fmt.Errorf("publisher login %q needs SUPERUSER, or REPLICATION and CREATEDB (to read the log and create the distribution database)", cfg.Publisher.User))
	}
	if slotsFree < 1 {
		serr = append(serr, fmt.Errorf("publisher %s has no free replication slot: raise max_replication_slots", cfg.Publisher))
	}
	if sendersFree < 1 {
		serr = append(serr, fmt.Errorf("publisher %s has no free WAL sender: raise max_wal_senders", cfg.Publisher))
	}
	var exists []string
	var n int
	if err := pub.QueryRow(ctx, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = $1", cfg.Publication).Scan(&n); err == nil && n > 0 {
		exists = append(exists, fmt.Sprintf("replication slot %q", cfg.Publication))
	}
	if err := pub.QueryRow(ctx, "SELECT count(*) FROM pg_publication WHERE pubname = $1", cfg.Publication).Scan(&n); err == nil && n > 0 {
		exists = append(exists, fmt.Sprintf("publication %q", cfg.Publication))
	}
	if err := pub.QueryRow(ctx, "SELECT count(*) FROM pg_database WHERE datname = $1", cfg.DistributionDB).Scan(&n); err == nil && n > 0 {
		exists = append(exists, fmt.Sprintf("distribution database %q", cfg.DistributionDB))
	}
	if len(exists) > 0 {
		serr = append(serr, fmt.Errorf("publisher %s already has %s: replication %q is set up already (run teardown first)",
			cfg.Publisher, strings.Join(exists, ", "), cfg.Publication))
	}
	if err := errors.Join(serr...); err != nil {
		return nil, &ServerError{Err: err}
	}

	// The tables.
	if len(cfg.Tables) == 0 {
		rows, err := pub.Query(ctx, `SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema', $1)
			AND n.nspname NOT LIKE 'pg\_%' ORDER BY 1, 2`, Schema)
		if err != nil {
			return nil, &ServerError{Err: fmt.Errorf("publisher %s: list tables: %w", cfg.Publisher, err)}
		}
		for rows.Next() {
			var t TableName
			if err := rows.Scan(&t.Schema, &t.Name); err != nil {
				rows.Close()
				return nil, &ServerError{Err: err}
			}
			cfg.Tables = append(cfg.Tables, t)
		}
		if err := rows.Err(); err != nil {
			return nil, &ServerError{Err: err}
		}
		if len(cfg.Tables) == 0 {
			return nil, usageErr("publisher database %s has no tables to publish", cfg.Publisher)
		}
		p.cfg.Tables = cfg.Tables
	}
	var uerr []error
	seen := map[TableName]bool{}
	for _, t := range cfg.Tables {
		if seen[t] {
			uerr = append(uerr, fmt.Errorf("table %s is listed twice", t))
			continue
		}
		seen[t] = true
		ti, ok, err := describeTable(ctx, pub, t)
		if err != nil {
			return nil, &ServerError{Err: fmt.Errorf("publisher: %w", err)}
		}
		if !ok {
			uerr = append(uerr, fmt.Errorf("table %s does not exist in the publisher database %s", t, cfg.Publisher))
			continue
		}
		uerr = append(uerr, checkPublishable(ti)...)
		p.tables = append(p.tables, ti)
	}
	if err := errors.Join(uerr...); err != nil {
		return nil, &UsageError{Err: err}
	}

	// The subscriber.
	sub, err := pgxConnect(ctx, cfg.Subscriber, "dbrig setup")
	if err != nil {
		return nil, &ServerError{Err: fmt.Errorf("subscriber: %w", err)}
	}
	defer sub.Close(context.WithoutCancel(ctx))
	var has bool
	err = sub.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, Schema+".subscription").Scan(&has)
	if err != nil {
		return nil, &ServerError{Err: fmt.Errorf("subscriber %s: %w", cfg.Subscriber, err)}
	}
	if has {
		if err := sub.QueryRow(ctx, "SELECT count(*) FROM "+Schema+".subscription WHERE name = $1", cfg.Publication).Scan(&n); err != nil {
			return nil, &ServerError{Err: fmt.Errorf("subscriber %s: %w", cfg.Subscriber, err)}
		}
		if n > 0 {
			return nil, &ServerError{Err: fmt.Errorf("subscriber %s already has subscription %q (run teardown first)", cfg.Subscriber, cfg.Publication)}
		}
	}
	for _, pt := range p.tables {
		st, ok, err := describeTable(ctx, sub, pt.Name)
		if err != nil {
			return nil, &ServerError{Err: fmt.Errorf("subscriber: %w", err)}
		}
		if !ok {
			if init == InitNone {
				uerr = append(uerr, fmt.Errorf("table %s does not exist on the subscriber %s: create it, or set up with --init snapshot or backup", pt.Name, cfg.Subscriber))
			}
			continue
		}
		p.sub[pt.Name] = st
		uerr = append(uerr, checkSubscriberTable(pt, st)...)
		if init != InitNone {
			var any bool
			if err := sub.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM "+pt.Name.Quoted()+")").Scan(&any); err != nil {
				return nil, &ServerError{Err: fmt.Errorf("subscriber: read %s: %w", pt.Name, err)}
			}
			if any {
				uerr = append(uerr, fmt.Errorf("subscriber table %s is not empty: initialization (%s) copies every row; empty it or use --init none", pt.Name, init))
			}
		}
	}
	if err := errors.Join(uerr...); err != nil {
		return nil, &UsageError{Err: err}
	}
	return p, nil
}

// Setup creates the replication: the distribution database and its tables,
// the publication, the subscriber's bookkeeping, the logical replication
// slot, and initializes the subscriber as opts.Init says. It checks
// everything first (see Check) and changes nothing when a check fails; when
// a later step fails it removes what it created.
func Setup(ctx context.Context, cfg Config, opts SetupOptions) (res SetupResult, err error) {
	cfg = cfg.withDefaults()
	p, err := preflight(ctx, cfg, opts)
	if err != nil {
		return res, err
	}
	cfg = p.cfg
	log := cfg.Logger
	defer func() {
		if err != nil {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			if terr := Teardown(cctx, cfg, TeardownOptions{Force: true}); terr != nil {
				log.Warn("clean up after the failed setup", "err", terr)
			}
		}
	}()
	res.Init = opts.Init.String()

	pub, err := pgxConnect(ctx, cfg.Publisher, "dbrig setup")
	if err != nil {
		return res, err
	}
	defer pub.Close(context.WithoutCancel(ctx))

	// 1. The distribution database.
	if _, err := pub.Exec(ctx, "CREATE DATABASE "+quoteIdent(cfg.DistributionDB)+" ENCODING 'UTF8' TEMPLATE template0"); err != nil {
		return res, fmt.Errorf("create the distribution database %q on %s: %w", cfg.DistributionDB, cfg.Publisher, err)
	}
	dist, err := pgxConnect(ctx, cfg.Distribution(), "dbrig setup")
	if err != nil {
		return res, err
	}
	defer dist.Close(context.WithoutCancel(ctx))
	if err := execAll(ctx, dist, distributionDDL); err != nil {
		return res, fmt.Errorf("distribution database %s: %w", cfg.Distribution(), err)
	}
	for _, t := range p.tables {
		if _, err := dist.Exec(ctx, "INSERT INTO "+Schema+".tables (schema_name, table_name, key_columns) VALUES ($1, $2, $3)",
			t.Name.Schema, t.Name.Name, t.Key); err != nil {
			return res, fmt.Errorf("distribution database: record table %s: %w", t.Name, err)
		}
	}

	// 2. The publication.
	names := make([]string, len(p.tables))
	for i, t := range p.tables {
		names[i] = t.Name.Quoted()
	}
	if _, err := pub.Exec(ctx, "CREATE PUBLICATION "+quoteIdent(cfg.Publication)+" FOR TABLE "+strings.Join(names, ", ")+
		" WITH (publish = 'insert, update, delete, truncate')"); err != nil {
		return res, fmt.Errorf("create publication %q on %s: %w", cfg.Publication, cfg.Publisher, err)
	}

	// 3. The subscriber's bookkeeping.
	sub, err := pgxConnect(ctx, cfg.Subscriber, "dbrig setup")
	if err != nil {
		return res, err
	}
	defer sub.Close(context.WithoutCancel(ctx))
	if err := execAll(ctx, sub, subscriberDDL); err != nil {
		return res, fmt.Errorf("subscriber %s: %w", cfg.Subscriber, err)
	}

	// 4. The slot, exporting its consistent point as a snapshot when the
	// subscriber is initialized from it. The replication connection must
	// stay open and idle while the snapshot is in use.
	rc, err := connectReplication(ctx, cfg.Publisher, "dbrig setup")
	if err != nil {
		return res, &ServerError{Err: err}
	}
	defer rc.Close(context.WithoutCancel(ctx))
	slot, err := createSlot(ctx, rc, cfg.Publication, opts.Init != InitNone)
	if err != nil {
		return res, err
	}
	res.ConsistentPoint = slot.ConsistentPoint
	log.Info("replication slot created", "slot", cfg.Publication, "consistent_point", slot.ConsistentPoint)

	// 5. Initialization, and the subscription's starting point: command 0
	// at the consistent point. For a snapshot both commit together.
	subRow := func(ctx context.Context, tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "INSERT INTO "+Schema+".subscription (name, publication, publisher, mode, last_cmd_id, last_lsn) VALUES ($1, $1, $2, $3, 0, $4)",
			cfg.Publication, engine.RedactURI(cfg.Publisher.String()), opts.Mode.String(), slot.ConsistentPoint.String())
		if err != nil {
			return fmt.Errorf("subscriber: record subscription %q: %w", cfg.Publication, err)
		}
		return nil
	}
	switch opts.Init {
	case InitSnapshot:
		err = initSnapshot(ctx, p, opts, slot.Snapshot, subRow, &res)
	case InitBackup:
		err = initBackup(ctx, p, opts, slot.Snapshot, subRow, &res)
	default:
		err = pgx.BeginFunc(ctx, sub, func(tx pgx.Tx) error { return subRow(ctx, tx) })
	}
	if err != nil {
		return res, err
	}
	rc.Close(ctx) // releases the exported snapshot

	// 6. The distribution database's records.
	_, err = dist.Exec(ctx, "INSERT INTO "+Schema+".publication (name, slot, publisher, init, binary_values, consistent_lsn) VALUES ($1, $1, $2, $3, $4, $5)",
		cfg.Publication, engine.RedactURI(cfg.Publisher.String()), opts.Init.String(), opts.Binary, slot.ConsistentPoint.String())
	if err == nil {
		// Nothing stored yet: the server decides which transactions the
		// snapshot holds (it streams those committed from the consistent
		// point on); the log reader skips only what it stored itself.
		_, err = dist.Exec(ctx, "INSERT INTO "+Schema+".log_reader (publication, last_cmd_id, last_commit_lsn, confirmed_lsn) VALUES ($1, 0, '0/0', $2)",
			cfg.Publication, slot.ConsistentPoint.String())
	}
	if err == nil {
		_, err = dist.Exec(ctx, "INSERT INTO "+Schema+".subscriptions (name, subscriber, mode) VALUES ($1, $2, $3)",
			cfg.Publication, engine.RedactURI(cfg.Subscriber.String()), opts.Mode.String())
	}
	if err != nil {
		return res, fmt.Errorf("distribution database: record publication %q: %w", cfg.Publication, err)
	}
	return res, nil
}

func execAll(ctx context.Context, c *pgx.Conn, stmts []string) error {
	for _, s := range stmts {
		if _, err := c.Exec(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", firstLine(s), err)
		}
	}
	return nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " ..."
	}
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}

// distributionDDL creates the distribution database's tables. commands is
// the analogue of SQL Server's msrepl_commands: one row per pgoutput
// message (Relation, Insert, Update, Delete, Truncate, Commit) in commit
// order; every row of a source transaction carries its commit LSN, and the
// Commit row closes it. The log reader writes only whole transactions.
var distributionDDL = []string{
	"CREATE SCHEMA " + Schema,
	`CREATE TABLE ` + Schema + `.publication (
		name text PRIMARY KEY,
		slot text NOT NULL,
		publisher text NOT NULL,
		init text NOT NULL,
		binary_values boolean NOT NULL DEFAULT false,
		consistent_lsn pg_lsn NOT NULL,
		created_at timestamptz NOT NULL DEFAULT now())`,
	`CREATE TABLE ` + Schema + `.tables (
		schema_name text NOT NULL,
		table_name text NOT NULL,
		key_columns text[] NOT NULL,
		PRIMARY KEY (schema_name, table_name))`,
	`CREATE TABLE ` + Schema + `.commands (
		cmd_id bigint PRIMARY KEY,
		kind "char" NOT NULL,
		xact_lsn pg_lsn NOT NULL,
		data bytea NOT NULL)`,
	// Commands are read back once, whole: compressing them costs CPU twice
	// and saves nothing on the wire.
	`ALTER TABLE ` + Schema + `.commands ALTER COLUMN data SET STORAGE EXTERNAL`,
	`CREATE TABLE ` + Schema + `.log_reader (
		publication text PRIMARY KEY,
		last_cmd_id bigint NOT NULL,
		last_commit_lsn pg_lsn NOT NULL,
		confirmed_lsn pg_lsn NOT NULL,
		xacts bigint NOT NULL DEFAULT 0,
		commands bigint NOT NULL DEFAULT 0,
		updated_at timestamptz)`,
	`CREATE TABLE ` + Schema + `.subscriptions (
		name text PRIMARY KEY,
		subscriber text NOT NULL,
		mode text NOT NULL,
		applied_cmd_id bigint NOT NULL DEFAULT 0,
		applied_lsn pg_lsn,
		updated_at timestamptz)`,
}

// subscriberDDL creates the subscriber's bookkeeping: the subscription row
// holds the last command applied, written by advance() in the same
// transaction as the changes it covers (exactly once); guard() makes a
// pipelined message fail unless it runs inside the transaction the agent
// opened for it.
var subscriberDDL = []string{
	"CREATE SCHEMA IF NOT EXISTS " + Schema,
	`CREATE TABLE IF NOT EXISTS ` + Schema + `.subscription (
		name text PRIMARY KEY,
		publication text NOT NULL,
		publisher text NOT NULL,
		mode text NOT NULL,
		last_cmd_id bigint NOT NULL,
		last_lsn pg_lsn NOT NULL,
		last_commit_time timestamptz,
		xacts bigint NOT NULL DEFAULT 0,
		applied_at timestamptz)`,
	`CREATE OR REPLACE FUNCTION ` + Schema + `.advance(p_name text, p_from bigint, p_to bigint, p_lsn pg_lsn, p_time timestamptz, p_xacts bigint)
	RETURNS void LANGUAGE plpgsql AS $$
	BEGIN
		UPDATE ` + Schema + `.subscription
		   SET last_cmd_id = p_to, last_lsn = p_lsn, last_commit_time = p_time, xacts = xacts + p_xacts, applied_at = now()
		 WHERE name = p_name AND last_cmd_id = p_from;
		IF NOT FOUND THEN
			RAISE EXCEPTION 'dbrig: subscription % is no longer at command %: another distribution agent applied commands', p_name, p_from
				USING ERRCODE = 'DR001';
		END IF;
	END $$`,
	`CREATE OR REPLACE FUNCTION ` + Schema + `.guard(p_token text)
	RETURNS void LANGUAGE plpgsql AS $$
	BEGIN
		IF current_setting('dbrig.batch', true) IS DISTINCT FROM p_token THEN
			RAISE EXCEPTION 'dbrig: a pipelined batch arrived outside its transaction (an earlier one failed)'
				USING ERRCODE = 'DR002';
		END IF;
	END $$`,
}

// TeardownOptions tune Teardown.
type TeardownOptions struct {
	// Force terminates a log reader still streaming from the slot and the
	// sessions connected to the distribution database.
	Force bool
}

// Teardown removes what Setup created: the slot, the publication, the
// distribution database and the subscription's row on the subscriber (and
// dbrig's schema there when no other subscription uses it). Replicated
// tables stay. Missing parts are skipped, so it also cleans up a partial
// setup.
func Teardown(ctx context.Context, cfg Config, opts TeardownOptions) error {
	cfg = cfg.withDefaults()
	if err := validateName("publication", cfg.Publication); err != nil {
		return &UsageError{Err: err}
	}
	var errs []error
	pub, err := pgxConnect(ctx, cfg.Publisher, "dbrig teardown")
	if err != nil {
		return &ServerError{Err: fmt.Errorf("publisher: %w", err)}
	}
	defer pub.Close(context.WithoutCancel(ctx))
	var activePID *int32
	err = pub.QueryRow(ctx, "SELECT active_pid FROM pg_replication_slots WHERE slot_name = $1", cfg.Publication).Scan(&activePID)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		errs = append(errs, fmt.Errorf("publisher: read slot %q: %w", cfg.Publication, err))
	default:
		if activePID != nil {
			if !opts.Force {
				return &ServerError{Err: fmt.Errorf("replication slot %q is in use by process %d (a running log reader): stop it first, or use --force", cfg.Publication, *activePID)}
			}
			pub.Exec(ctx, "SELECT pg_terminate_backend($1)", *activePID)
		}
		// A terminated walsender releases the slot as it exits.
		deadline := time.Now().Add(10 * time.Second)
		for {
			_, err = pub.Exec(ctx, "SELECT pg_drop_replication_slot($1)", cfg.Publication)
			var pgErr *pgconn.PgError
			if err == nil || !errors.As(err, &pgErr) || pgErr.Code != "55006" || time.Now().After(deadline) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("publisher: drop slot %q: %w", cfg.Publication, err))
		}
	}
	if _, err := pub.Exec(ctx, "DROP PUBLICATION IF EXISTS "+quoteIdent(cfg.Publication)); err != nil {
		errs = append(errs, fmt.Errorf("publisher: drop publication %q: %w", cfg.Publication, err))
	}
	if cfg.DistributionDB != cfg.Publisher.Database {
		drop := "DROP DATABASE IF EXISTS " + quoteIdent(cfg.DistributionDB)
		if opts.Force {
			drop += " WITH (FORCE)"
		}
		if _, err := pub.Exec(ctx, drop); err != nil {
			errs = append(errs, fmt.Errorf("publisher: drop the distribution database %q: %w", cfg.DistributionDB, err))
		}
	}

	sub, err := pgxConnect(ctx, cfg.Subscriber, "dbrig teardown")
	if err != nil {
		errs = append(errs, &ServerError{Err: fmt.Errorf("subscriber: %w", err)})
		return errors.Join(errs...)
	}
	defer sub.Close(context.WithoutCancel(ctx))
	var has bool
	if err := sub.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, Schema+".subscription").Scan(&has); err != nil {
		errs = append(errs, fmt.Errorf("subscriber: %w", err))
	} else if has {
		var left int
		err := sub.QueryRow(ctx, "WITH d AS (DELETE FROM "+Schema+".subscription WHERE name = $1) SELECT count(*) FROM "+Schema+".subscription WHERE name <> $1",
			cfg.Publication).Scan(&left)
		if err == nil && left == 0 {
			_, err = sub.Exec(ctx, "DROP SCHEMA "+Schema+" CASCADE")
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("subscriber: remove subscription %q: %w", cfg.Publication, err))
		}
	} else {
		sub.Exec(ctx, "DROP SCHEMA IF EXISTS "+Schema+" CASCADE")
	}
	return errors.Join(errs...)
}
