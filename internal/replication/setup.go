package replication

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
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
	// Carrier moves the backup archive of InitBackup from the publisher's
	// site to the subscriber's (nil: a pipe in this process).
	Carrier Carrier
	// Shipper, when set, runs InitBackup's pg_dump at the publisher's site
	// instead of here, its archive crossing compressed (Carrier unused).
	Shipper *Shipper
	// Streams is how many publisher sessions of the snapshot InitSnapshot
	// copies a table with, each a block range (0: DefaultInitStreams; at
	// most MaxInitStreams). A small table takes fewer.
	Streams int
	// Mode is recorded with the subscription (push or pull).
	Mode Mode
	// Compression is how the distribution database stores the commands
	// (default CompressZstd).
	Compression Compression
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
	InitBytes int64 `json:"init_bytes"`
	// ShippedBytes is what crossed for the archive, compressed, when a
	// Shipper carried it.
	ShippedBytes int64       `json:"shipped_bytes,omitempty"`
	Tables       []TableCopy `json:"tables,omitempty"`
}

// TableCopy is one table's initialization.
type TableCopy struct {
	Table string `json:"table"`
	Rows  int64  `json:"rows"`
	Bytes int64  `json:"bytes"`
	// Streams is how many publisher sessions copied it (InitSnapshot).
	Streams int `json:"streams,omitempty"`
}

func (o SetupOptions) streams() int {
	if o.Streams <= 0 {
		return DefaultInitStreams
	}
	return min(o.Streams, MaxInitStreams)
}

// plan is what preflight found: every table's shape on both sides.
type plan struct {
	cfg     Config
	tables  []*tableInfo             // publisher
	sub     map[TableName]*tableInfo // subscriber tables that exist
	subRows map[TableName]bool       // subscriber tables that hold rows
	// distExists: the distribution database is dbrig's and serves other
	// publications; subSchemaExists: the subscriber's bookkeeping exists.
	distExists, subSchemaExists bool
	// pub is preflight's publisher session, which setup goes on using: run
	// from the subscriber's site, each new session costs its handshake's
	// round trips across the WAN.
	pub *pgx.Conn
}

func (p *plan) close(ctx context.Context) { p.pub.Close(context.WithoutCancel(ctx)) }

// Check verifies, without changing anything, that the replication can be
// set up: the logins work, the publisher has wal_level = logical and room
// for a slot, every table exists with a primary key and supported types,
// and the subscriber can receive them with init. It returns a *UsageError
// or a *ServerError.
func Check(ctx context.Context, cfg Config, opts SetupOptions) error {
	p, err := preflight(ctx, cfg.withDefaults(), opts)
	if err == nil {
		p.close(ctx)
	}
	return err
}

// preflight checks everything setup needs; the plan it returns holds an
// open publisher session (plan.close).
func preflight(ctx context.Context, cfg Config, opts SetupOptions) (_ *plan, err error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if opts.Streams < 0 || opts.Streams > MaxInitStreams {
		return nil, &UsageError{Err: fmt.Errorf("streams %d: want 1 to %d publisher sessions (0: %d)", opts.Streams, MaxInitStreams, DefaultInitStreams)}
	}
	pub, err := setupConnect(ctx, cfg.Publisher)
	if err != nil {
		return nil, &ServerError{Err: fmt.Errorf("publisher: %w", err)}
	}
	defer func() {
		if err != nil {
			pub.Close(context.WithoutCancel(ctx))
		}
	}()
	p := &plan{cfg: cfg, sub: map[TableName]*tableInfo{}, subRows: map[TableName]bool{}, pub: pub}
	serr, err := checkPublisher(ctx, pub, cfg, opts)
	if err != nil {
		return nil, err
	}
	nerr, err := checkNames(ctx, pub, cfg, p)
	if err != nil {
		return nil, err
	}
	if err := errors.Join(append(serr, nerr...)...); err != nil {
		return nil, &ServerError{Err: err}
	}
	if err := p.readTables(ctx, pub); err != nil {
		return nil, err
	}
	return p, p.checkSubscriber(ctx, opts.Init)
}

// checkPublisher reads what the publisher's server must have: its version,
// wal_level, encoding, the login's rights, a free slot and WAL sender.
// What it lacks is in the errors; err is a failure to read it.
func checkPublisher(ctx context.Context, pub *pgx.Conn, cfg Config, opts SetupOptions) (serr []error, err error) {
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
	return serr, nil
}

// checkNames checks the replication's names: a slot and a publication of
// this name must not exist yet, and a distribution database of this name
// must be dbrig's and not serve this publication already.
func checkNames(ctx context.Context, pub *pgx.Conn, cfg Config, p *plan) (serr []error, err error) {
	var exists []string
	var n int
	if err := pub.QueryRow(ctx, "SELECT count(*) FROM pg_replication_slots WHERE slot_name = $1", cfg.Publication).Scan(&n); err == nil && n > 0 {
		exists = append(exists, fmt.Sprintf("a replication slot %q", cfg.Publication))
	}
	if err := pub.QueryRow(ctx, "SELECT count(*) FROM pg_publication WHERE pubname = $1", cfg.Publication).Scan(&n); err == nil && n > 0 {
		exists = append(exists, fmt.Sprintf("a publication %q", cfg.Publication))
	}
	state, comment, err := lookupDistribution(ctx, pub, cfg.DistributionDB)
	switch {
	case err != nil:
		return nil, &ServerError{Err: fmt.Errorf("publisher %s: %w", cfg.Publisher, err)}
	case state == distForeign && comment != "":
		serr = append(serr, fmt.Errorf("database %q on the publisher's server is a distribution database of another dbrig version (%q): choose another --distribution-db",
			cfg.DistributionDB, comment))
	case state == distForeign:
		serr = append(serr, fmt.Errorf("database %q on the publisher's server is not dbrig's distribution database: choose another --distribution-db", cfg.DistributionDB))
	case state == distOurs:
		p.distExists = true
		dist, err := setupConnect(ctx, cfg.Distribution())
		if err != nil {
			return nil, &ServerError{Err: fmt.Errorf("distribution database: %w", err)}
		}
		_, ok, err := lookupPublication(ctx, dist, cfg.Publication)
		dist.Close(context.WithoutCancel(ctx))
		if err != nil {
			return nil, &ServerError{Err: fmt.Errorf("distribution database %s: %w", cfg.Distribution(), err)}
		}
		if ok {
			serr = append(serr, fmt.Errorf("replication %q is set up already in the distribution database %q (run teardown first)", cfg.Publication, cfg.DistributionDB))
			exists = nil
		}
	}
	if len(exists) > 0 {
		serr = append(serr, fmt.Errorf("publisher %s already has %s that dbrig's catalog does not record: choose another --publication",
			cfg.Publisher, strings.Join(exists, " and ")))
	}
	return serr, nil
}

// readTables reads the tables to publish (every user table when the
// configuration names none) and checks each can be published.
func (p *plan) readTables(ctx context.Context, pub *pgx.Conn) error {
	cfg := p.cfg
	if len(cfg.Tables) == 0 {
		rows, err := pub.Query(ctx, `SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema', $1)
			AND n.nspname NOT LIKE 'pg\_%' ORDER BY 1, 2`, Schema)
		if err != nil {
			return &ServerError{Err: fmt.Errorf("publisher %s: list tables: %w", cfg.Publisher, err)}
		}
		for rows.Next() {
			var t TableName
			if err := rows.Scan(&t.Schema, &t.Name); err != nil {
				rows.Close()
				return &ServerError{Err: err}
			}
			cfg.Tables = append(cfg.Tables, t)
		}
		if err := rows.Err(); err != nil {
			return &ServerError{Err: err}
		}
		if len(cfg.Tables) == 0 {
			return usageErr("publisher database %s has no tables to publish", cfg.Publisher)
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
			return &ServerError{Err: fmt.Errorf("publisher: %w", err)}
		}
		if !ok {
			uerr = append(uerr, fmt.Errorf("table %s does not exist in the publisher database %s", t, cfg.Publisher))
			continue
		}
		uerr = append(uerr, checkPublishable(ti)...)
		p.tables = append(p.tables, ti)
	}
	if err := errors.Join(uerr...); err != nil {
		return &UsageError{Err: err}
	}
	return nil
}

// checkSubscriber checks the subscriber: dbrig's schema there is dbrig's,
// no subscription of this name exists, and each table is there (unless
// initialization makes it) and empty when initialization fills it.
func (p *plan) checkSubscriber(ctx context.Context, init InitMethod) error {
	cfg := p.cfg
	sub, err := pgxConnect(ctx, cfg.Subscriber, "dbrig setup")
	if err != nil {
		return &ServerError{Err: fmt.Errorf("subscriber: %w", err)}
	}
	defer sub.Close(context.WithoutCancel(ctx))
	if err := p.checkSubscriberSchema(ctx, sub); err != nil {
		return err
	}
	var uerr []error
	for _, pt := range p.tables {
		st, ok, err := describeTable(ctx, sub, pt.Name)
		if err != nil {
			return &ServerError{Err: fmt.Errorf("subscriber: %w", err)}
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
				return &ServerError{Err: fmt.Errorf("subscriber: read %s: %w", pt.Name, err)}
			}
			if any {
				uerr = append(uerr, fmt.Errorf("subscriber table %s is not empty: initialization (%s) copies every row; empty it or use --init none", pt.Name, init))
			}
		}
	}
	if err := errors.Join(uerr...); err != nil {
		return &UsageError{Err: err}
	}
	return nil
}

// checkSubscriberSchema checks that dbrig's schema on the subscriber, if
// any, is dbrig's, and holds no subscription of this name.
func (p *plan) checkSubscriberSchema(ctx context.Context, sub *pgx.Conn) error {
	cfg := p.cfg
	var has bool
	var schemaComment *string
	err := sub.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL, (SELECT obj_description(oid, 'pg_namespace') FROM pg_namespace WHERE nspname = $2)`,
		Schema+".subscription", Schema).Scan(&has, &schemaComment)
	if err != nil {
		return &ServerError{Err: fmt.Errorf("subscriber %s: %w", cfg.Subscriber, err)}
	}
	var schemaExists bool
	if err := sub.QueryRow(ctx, "SELECT count(*) > 0 FROM pg_namespace WHERE nspname = $1", Schema).Scan(&schemaExists); err != nil {
		return &ServerError{Err: fmt.Errorf("subscriber %s: %w", cfg.Subscriber, err)}
	}
	if schemaExists && (schemaComment == nil || *schemaComment != subscriberMarker) {
		return &ServerError{Err: fmt.Errorf("subscriber %s has a schema %s that dbrig did not create: dbrig keeps its bookkeeping there and does not touch a schema of someone else's",
			cfg.Subscriber, Schema)}
	}
	p.subSchemaExists = schemaExists
	if !has {
		return nil
	}
	var n int
	if err := sub.QueryRow(ctx, "SELECT count(*) FROM "+Schema+".subscription WHERE name = $1", cfg.Publication).Scan(&n); err != nil {
		return &ServerError{Err: fmt.Errorf("subscriber %s: %w", cfg.Subscriber, err)}
	}
	if n > 0 {
		return &ServerError{Err: fmt.Errorf("subscriber %s already has subscription %q (run teardown first)", cfg.Subscriber, cfg.Publication)}
	}
	return nil
}

// Setup creates the replication: the distribution database (or this
// publication's part of one dbrig made before), the publication, the
// subscriber's bookkeeping, the logical replication slot, and initializes
// the subscriber as opts.Init says. It checks everything first (see Check)
// and changes nothing when a check fails; when a later step fails it
// removes what it created, and only that.
func Setup(ctx context.Context, cfg Config, opts SetupOptions) (res SetupResult, err error) {
	cfg = cfg.withDefaults()
	p, err := preflight(ctx, cfg, opts)
	if err != nil {
		return res, err
	}
	cfg = p.cfg
	var made created
	defer func() {
		if err != nil {
			made.undoAfterFailure(ctx, cfg)
		}
	}()
	res.Init = opts.Init.String()
	defer p.close(ctx)
	pub := p.pub

	// 1. The distribution database, and this publication's tables in it.
	dist, err := p.makeDistribution(ctx, pub, &made)
	if err != nil {
		return res, err
	}
	defer dist.Close(context.WithoutCancel(ctx))
	// 2. The publication.
	if err := p.createPublication(ctx, pub, &made); err != nil {
		return res, err
	}

	// 3. The subscriber's bookkeeping.
	sub, err := prepareSubscriber(ctx, cfg)
	if err != nil {
		return res, err
	}
	defer sub.Close(context.WithoutCancel(ctx))
	made.subscriberSchema = !p.subSchemaExists

	// 4. The slot, exporting its consistent point as a snapshot when the
	// subscriber is initialized from it. The replication connection must
	// stay open and idle while the snapshot is in use.
	rc, slot, err := openSlot(ctx, cfg, opts.Init != InitNone)
	if err != nil {
		return res, err
	}
	defer rc.Close(context.WithoutCancel(ctx))
	made.slot = true
	res.ConsistentPoint = slot.ConsistentPoint

	// 5. Initialization, and the subscription's starting point: command 0
	// at the consistent point. For a snapshot both commit together.
	subRow := subscriptionRow(cfg, opts, slot.ConsistentPoint)
	made.subscriberTables = p.missingOnSubscriber()
	switch opts.Init {
	case InitSnapshot:
		err = initSnapshot(ctx, p, opts, slot.Snapshot, subRow, &res)
	case InitBackup:
		err = initBackup(ctx, p, opts, slot.Snapshot, subRow, &res)
	default:
		err = pgx.BeginFunc(ctx, sub, func(tx pgx.Tx) error { return subRow(ctx, tx) })
	}
	made.subscription = true
	if err != nil {
		return res, err
	}
	rc.Close(ctx) // releases the exported snapshot

	// 6. The catalog: the publication, its tables and both roles' records,
	// in one transaction of the distribution database.
	if err := p.recordCatalog(ctx, dist, opts, slot.ConsistentPoint); err != nil {
		return res, fmt.Errorf("distribution database: record publication %q: %w", cfg.Publication, err)
	}
	return res, nil
}

// prepareSubscriber connects to the subscriber and creates dbrig's
// bookkeeping there (if missing).
func prepareSubscriber(ctx context.Context, cfg Config) (*pgx.Conn, error) {
	sub, err := pgxConnect(ctx, cfg.Subscriber, "dbrig setup")
	if err != nil {
		return nil, err
	}
	if err := execAll(ctx, sub, subscriberDDL); err != nil {
		sub.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("subscriber %s: %w", cfg.Subscriber, err)
	}
	return sub, nil
}

// openSlot opens a replication connection to the publisher and creates the
// slot on it, exporting its snapshot when export is set; the snapshot
// lives as long as the connection stays open and idle.
func openSlot(ctx context.Context, cfg Config, export bool) (*pgconn.PgConn, slotInfo, error) {
	rc, err := connectReplication(ctx, cfg.Publisher, "dbrig setup")
	if err != nil {
		return nil, slotInfo{}, &ServerError{Err: err}
	}
	slot, err := createSlot(ctx, rc, cfg.Publication, export)
	if err != nil {
		rc.Close(context.WithoutCancel(ctx))
		return nil, slot, err
	}
	cfg.Logger.Info("replication slot created", "slot", cfg.Publication, "consistent_point", slot.ConsistentPoint)
	return rc, slot, nil
}

// missingOnSubscriber lists the published tables the subscriber lacks:
// the initialization creates them.
func (p *plan) missingOnSubscriber() []TableName {
	var missing []TableName
	for _, t := range p.tables {
		if _, ok := p.sub[t.Name]; !ok {
			missing = append(missing, t.Name)
		}
	}
	return missing
}

// makeDistribution creates the distribution database when the
// publisher's server has none of dbrig's, and this publication's tables in
// it, and returns a connection to it.
func (p *plan) makeDistribution(ctx context.Context, pub *pgx.Conn, made *created) (*pgx.Conn, error) {
	cfg := p.cfg
	if !p.distExists {
		if _, err := pub.Exec(ctx, "CREATE DATABASE "+quoteIdent(cfg.DistributionDB)+" ENCODING 'UTF8' TEMPLATE template0"); err != nil {
			return nil, fmt.Errorf("create the distribution database %q on %s: %w", cfg.DistributionDB, cfg.Publisher, err)
		}
		made.database = true
		if _, err := pub.Exec(ctx, "COMMENT ON DATABASE "+quoteIdent(cfg.DistributionDB)+" IS "+quoteLiteral(distributionMarker)); err != nil {
			return nil, fmt.Errorf("mark the distribution database %q as dbrig's: %w", cfg.DistributionDB, err)
		}
	}
	dist, err := setupConnect(ctx, cfg.Distribution())
	if err != nil {
		return nil, err
	}
	ddl := publicationDDL(cfg.Publication)
	if !p.distExists {
		ddl = append(slices.Clone(distributionDDL), ddl...)
	}
	if err := execAll(ctx, dist, ddl); err != nil {
		dist.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("distribution database %s: %w", cfg.Distribution(), err)
	}
	made.streamTables = true
	return dist, nil
}

// createPublication publishes the plan's tables on the publisher.
func (p *plan) createPublication(ctx context.Context, pub *pgx.Conn, made *created) error {
	names := make([]string, len(p.tables))
	for i, t := range p.tables {
		names[i] = t.Name.Quoted()
	}
	if _, err := pub.Exec(ctx, "CREATE PUBLICATION "+quoteIdent(p.cfg.Publication)+" FOR TABLE "+strings.Join(names, ", ")+
		" WITH (publish = 'insert, update, delete, truncate')"); err != nil {
		return fmt.Errorf("create publication %q on %s: %w", p.cfg.Publication, p.cfg.Publisher, err)
	}
	made.publication = true
	return nil
}

// durableCommit makes the transaction's commit wait for its WAL to be
// flushed, whatever the server's synchronous_commit says: setup's last
// commit on each server then makes all setup wrote there durable (the WAL
// is flushed in order). With synchronous_commit off, a crash within the
// WAL writer's delay after setup lost its records: the log reader then
// found the publication not set up (TestSetupSurvivesACrash).
const durableCommit = "SET LOCAL synchronous_commit = local"

// subscriptionRow records the subscription on the subscriber: command 0
// at the slot's consistent point.
func subscriptionRow(cfg Config, opts SetupOptions, at LSN) func(context.Context, pgx.Tx) error {
	return func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, durableCommit); err != nil {
			return fmt.Errorf("subscriber: %w", err)
		}
		_, err := tx.Exec(ctx, "INSERT INTO "+Schema+".subscription (name, publication, publisher, mode, last_cmd_id, last_lsn) VALUES ($1, $1, $2, $3, 0, $4)",
			cfg.Publication, engine.RedactURI(cfg.Publisher.String()), opts.Mode.String(), at.String())
		if err != nil {
			return fmt.Errorf("subscriber: record subscription %q: %w", cfg.Publication, err)
		}
		return nil
	}
}

// recordCatalog records the publication, its tables and both roles'
// starting points in the distribution database, in one transaction.
func (p *plan) recordCatalog(ctx context.Context, dist *pgx.Conn, opts SetupOptions, at LSN) error {
	cfg := p.cfg
	// One batch: a setup run from the subscriber's site pays the round
	// trips to the distribution database across the WAN.
	b := &pgx.Batch{}
	b.Queue(durableCommit)
	b.Queue("INSERT INTO "+Schema+".publication (name, slot, publisher_database, publisher, init, binary_values, compression, consistent_lsn) VALUES ($1, $1, $2, $3, $4, $5, $6, $7)",
		cfg.Publication, cfg.Publisher.Database, engine.RedactURI(cfg.Publisher.String()), opts.Init.String(), opts.Binary, opts.Compression.String(), at.String())
	for _, t := range p.tables {
		b.Queue("INSERT INTO "+Schema+".tables (publication, schema_name, table_name, key_columns) VALUES ($1, $2, $3, $4)",
			cfg.Publication, t.Name.Schema, t.Name.Name, t.Key)
	}
	// Nothing stored yet: the server decides which transactions the
	// snapshot holds (it streams those committed from the consistent
	// point on); the log reader skips only what it stored itself.
	b.Queue("INSERT INTO "+Schema+".log_reader (publication, last_cmd_id, last_commit_lsn, confirmed_lsn) VALUES ($1, 0, '0/0', $2)",
		cfg.Publication, at.String())
	b.Queue("INSERT INTO "+Schema+".subscriptions (name, subscriber, mode) VALUES ($1, $2, $3)",
		cfg.Publication, engine.RedactURI(cfg.Subscriber.String()), opts.Mode.String())
	return pgx.BeginFunc(ctx, dist, func(tx pgx.Tx) error { return tx.SendBatch(ctx, b).Close() })
}

// created is what a setup has made so far, so that a failed setup removes
// exactly that.
type created struct {
	database, streamTables, publication, slot bool
	subscriberSchema, subscription            bool
	subscriberTables                          []TableName
}

// undoAfterFailure removes what the failed setup made, logging what it
// could not remove: the setup's error is what the caller is told.
func (m *created) undoAfterFailure(ctx context.Context, cfg Config) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	if uerr := m.undo(cctx, cfg); uerr != nil {
		cfg.Logger.Warn("clean up after the failed setup", "err", uerr)
	}
}

func (m *created) undo(ctx context.Context, cfg Config) error {
	var errs []error
	pub, err := pgxConnect(ctx, cfg.Publisher, "dbrig setup")
	if err != nil {
		return err
	}
	defer pub.Close(context.WithoutCancel(ctx))
	if m.slot {
		if err := dropSlot(ctx, pub, cfg.Publication, true); err != nil {
			errs = append(errs, err)
		}
	}
	if m.publication {
		if _, err := pub.Exec(ctx, "DROP PUBLICATION IF EXISTS "+quoteIdent(cfg.Publication)); err != nil {
			errs = append(errs, err)
		}
	}
	switch {
	case m.database:
		if _, err := pub.Exec(ctx, "DROP DATABASE IF EXISTS "+quoteIdent(cfg.DistributionDB)+" WITH (FORCE)"); err != nil {
			errs = append(errs, err)
		}
	case m.streamTables:
		if err := removeFromDistribution(ctx, cfg); err != nil {
			errs = append(errs, err)
		}
	}
	if m.subscription || m.subscriberSchema || len(m.subscriberTables) > 0 {
		sub, err := pgxConnect(ctx, cfg.Subscriber, "dbrig setup")
		if err != nil {
			return errors.Join(append(errs, err)...)
		}
		defer sub.Close(context.WithoutCancel(ctx))
		for _, t := range m.subscriberTables {
			if _, err := sub.Exec(ctx, "DROP TABLE IF EXISTS "+t.Quoted()); err != nil {
				errs = append(errs, err)
			}
		}
		if err := removeSubscription(ctx, sub, cfg.Publication, m.subscriberSchema); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// execAll runs the statements as one simple query: one round trip, which
// a setup run from the subscriber's site pays across the WAN for each
// statement otherwise, and one implicit transaction, so a failed
// statement leaves none of the others behind.
func execAll(ctx context.Context, c *pgx.Conn, stmts []string) error {
	if len(stmts) == 0 {
		return nil
	}
	if _, err := c.Exec(ctx, strings.Join(stmts, ";\n")); err != nil {
		return fmt.Errorf("run %d statements (%s ...): %w", len(stmts), firstLine(stmts[0]), err)
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
