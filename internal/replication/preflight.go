package replication

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
)

// plan is what preflight found: every table's shape on both sides, and the
// sessions setup goes on using.
type plan struct {
	cfg    Config
	tables []*tableInfo             // publisher
	sub    map[TableName]*tableInfo // subscriber tables that exist
	// distExists: the distribution database is dbrig's and serves other
	// publications; subSchemaExists: the subscriber's bookkeeping exists.
	distExists, subSchemaExists bool
	// pub and subConn are preflight's sessions on the publisher and the
	// subscriber, and dist its session on a distribution database that
	// exists already (nil otherwise): setup goes on using them, since run
	// from the other site each new session costs its handshake's round
	// trips across the WAN.
	pub, subConn, dist *pgx.Conn
	// made is what Setup has made so far, starting with the server
	// processes of the sessions above.
	made *created
}

func (p *plan) close(ctx context.Context) {
	for _, c := range []*pgx.Conn{p.pub, p.subConn, p.dist} {
		if c != nil {
			c.Close(context.WithoutCancel(ctx))
		}
	}
}

// Check verifies, without changing anything, that the replication can be
// set up: the logins work, the publisher has wal_level = logical and room
// for a slot, every table exists with a primary key and supported types,
// and the subscriber can receive them with init. It returns a *UsageError
// or a *ServerError.
func Check(ctx context.Context, cfg Config, opts SetupOptions) error {
	p, err := preflight(ctx, cfg.withDefaults(), opts, "")
	if err == nil {
		p.close(ctx)
	}
	return err
}

// preflight checks everything setup needs; the plan it returns holds open
// sessions (plan.close). It connects to both servers at once and reads all
// it needs from the publisher in one batch (two when it must list the
// tables first): run from the subscriber's site, each round trip to the
// publisher crosses the WAN. slotTag names setup's own replication
// connection, which is not counted against the WAL senders it needs ("":
// none).
func preflight(ctx context.Context, cfg Config, opts SetupOptions, slotTag string) (_ *plan, err error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if opts.Streams < 0 || opts.Streams > MaxInitStreams {
		return nil, &UsageError{Err: fmt.Errorf("streams %d: want 1 to %d publisher sessions (0: %d)", opts.Streams, MaxInitStreams, DefaultInitStreams)}
	}
	p := &plan{cfg: cfg, sub: map[TableName]*tableInfo{}}
	defer func() {
		if err != nil {
			p.close(ctx)
		}
	}()
	if p.pub, p.subConn, err = connectBoth(ctx, cfg); err != nil {
		return nil, err
	}
	p.made = &created{pubPIDs: []uint32{p.pub.PgConn().PID()}, subPIDs: []uint32{p.subConn.PgConn().PID()}}
	if len(p.cfg.Tables) == 0 {
		if p.cfg.Tables, err = listTables(ctx, p.pub, cfg); err != nil {
			return nil, err
		}
	}
	b := &pgx.Batch{}
	facts := queuePublisherFacts(b, cfg, slotTag)
	names, uerr := uniqueTables(p.cfg.Tables)
	described := make([]*describedTable, len(names))
	for i, t := range names {
		described[i] = queueDescribe(b, t)
	}
	if err := p.pub.SendBatch(ctx, b).Close(); err != nil {
		return nil, &ServerError{Err: fmt.Errorf("publisher %s: read its settings and tables: %w", cfg.Publisher, err)}
	}
	serr := facts.problems(cfg, opts)
	nerr, err := p.checkNames(ctx, facts)
	if err != nil {
		return nil, err
	}
	if err := errors.Join(append(serr, nerr...)...); err != nil {
		return nil, &ServerError{Err: err}
	}
	for i, d := range described {
		if d.info == nil {
			uerr = append(uerr, fmt.Errorf("table %s does not exist in the publisher database %s", names[i], cfg.Publisher))
			continue
		}
		uerr = append(uerr, checkPublishable(d.info)...)
		p.tables = append(p.tables, d.info)
	}
	if err := errors.Join(uerr...); err != nil {
		return nil, &UsageError{Err: err}
	}
	return p, p.checkSubscriber(ctx, opts.Init)
}

// connectBoth opens setup's sessions on the publisher and the subscriber
// at once.
func connectBoth(ctx context.Context, cfg Config) (pub, sub *pgx.Conn, err error) {
	subDone := make(chan error, 1)
	go func() { // received below
		var err error
		sub, err = pgxConnect(ctx, cfg.Subscriber, "dbrig setup")
		subDone <- err
	}()
	pub, perr := setupConnect(ctx, cfg.Publisher)
	serr := <-subDone
	switch {
	case perr != nil:
		err = fmt.Errorf("publisher: %w", perr)
	case serr != nil:
		err = fmt.Errorf("subscriber: %w", serr)
	default:
		return pub, sub, nil
	}
	for _, c := range []*pgx.Conn{pub, sub} {
		if c != nil {
			c.Close(context.WithoutCancel(ctx))
		}
	}
	return nil, nil, &ServerError{Err: err}
}

// listTables lists every user table of the publisher's database, for a
// configuration that names none.
func listTables(ctx context.Context, pub *pgx.Conn, cfg Config) ([]TableName, error) {
	rows, err := pub.Query(ctx, `SELECT n.nspname, c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.relkind IN ('r', 'p') AND n.nspname NOT IN ('pg_catalog', 'information_schema', $1)
		AND n.nspname NOT LIKE 'pg\_%' ORDER BY 1, 2`, Schema)
	if err != nil {
		return nil, &ServerError{Err: fmt.Errorf("publisher %s: list tables: %w", cfg.Publisher, err)}
	}
	tables, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (TableName, error) {
		var t TableName
		err := row.Scan(&t.Schema, &t.Name)
		return t, err
	})
	if err != nil {
		return nil, &ServerError{Err: fmt.Errorf("publisher %s: list tables: %w", cfg.Publisher, err)}
	}
	if len(tables) == 0 {
		return nil, usageErr("publisher database %s has no tables to publish", cfg.Publisher)
	}
	return tables, nil
}

// uniqueTables is tables without repeats, and an error for each repeat.
func uniqueTables(tables []TableName) ([]TableName, []error) {
	var out []TableName
	var errs []error
	seen := map[TableName]bool{}
	for _, t := range tables {
		if seen[t] {
			errs = append(errs, fmt.Errorf("table %s is listed twice", t))
			continue
		}
		seen[t] = true
		out = append(out, t)
	}
	return out, errs
}

// publisherFacts is what the publisher's server must have (its version,
// wal_level, encoding, the login's rights, a free slot and WAL sender) and
// what of the replication's names exists there already.
type publisherFacts struct {
	walLevel, encoding            string
	version                       int
	super, repl, createdb         bool
	slotsFree, sendersFree        int
	slotExists, publicationExists bool
	dist                          distributionState
	distComment                   string
}

// queuePublisherFacts queues on b the reads of the publisher's facts; the
// WAL senders named slotTag are setup's own.
func queuePublisherFacts(b *pgx.Batch, cfg Config, slotTag string) *publisherFacts {
	f := &publisherFacts{}
	var tag any
	if slotTag != "" {
		tag = slotTag
	}
	b.Queue(`SELECT current_setting('wal_level'), pg_encoding_to_char(d.encoding), current_setting('server_version_num')::int,
			r.rolsuper, r.rolreplication, r.rolcreatedb,
			current_setting('max_replication_slots')::int - (SELECT count(*) FROM pg_replication_slots),
			current_setting('max_wal_senders')::int - (SELECT count(*) FROM pg_stat_replication WHERE $2::text IS NULL OR application_name IS DISTINCT FROM $2),
			EXISTS (SELECT 1 FROM pg_replication_slots WHERE slot_name = $1),
			EXISTS (SELECT 1 FROM pg_publication WHERE pubname = $1)
		FROM pg_database d, pg_roles r WHERE d.datname = current_database() AND r.rolname = current_user`, cfg.Publication, tag).
		QueryRow(func(row pgx.Row) error {
			return row.Scan(&f.walLevel, &f.encoding, &f.version, &f.super, &f.repl, &f.createdb, &f.slotsFree, &f.sendersFree,
				&f.slotExists, &f.publicationExists)
		})
	queueLookupDistribution(b, cfg.DistributionDB, &f.dist, &f.distComment)
	return f
}

// problems are what the publisher's server lacks.
func (f *publisherFacts) problems(cfg Config, opts SetupOptions) (serr []error) {
	if v := f.version; v < 130000 {
		serr = append(serr, fmt.Errorf("publisher %s runs PostgreSQL %d.%d: dbrig needs 13 or later", cfg.Publisher, v/10000, v%10000/100))
	}
	if opts.Binary && f.version < 140000 {
		serr = append(serr, fmt.Errorf("publisher %s runs PostgreSQL %d: binary values need 14 or later", cfg.Publisher, f.version/10000))
	}
	if f.walLevel != "logical" {
		serr = append(serr, fmt.Errorf("publisher %s has wal_level = %s: logical decoding needs wal_level = logical (set it in postgresql.conf and restart the server)",
			cfg.Publisher, f.walLevel))
	}
	if f.encoding != "UTF8" {
		serr = append(serr, fmt.Errorf("publisher database %s has encoding %s: dbrig replicates UTF8 databases", cfg.Publisher, f.encoding))
	}
	if !f.super && !(f.repl && f.createdb) {
		serr = append(serr, fmt.Errorf("publisher login %q needs SUPERUSER, or REPLICATION and CREATEDB (to read the log and create the distribution database)", cfg.Publisher.User))
	}
	if f.slotsFree < 1 {
		serr = append(serr, fmt.Errorf("publisher %s has no free replication slot: raise max_replication_slots", cfg.Publisher))
	}
	if f.sendersFree < 1 {
		serr = append(serr, fmt.Errorf("publisher %s has no free WAL sender: raise max_wal_senders", cfg.Publisher))
	}
	return serr
}

// checkNames checks the replication's names: a slot and a publication of
// this name must not exist yet, and a distribution database of this name
// must be dbrig's and not serve this publication already. A distribution
// database of dbrig's keeps the session it was read with (plan.dist).
func (p *plan) checkNames(ctx context.Context, f *publisherFacts) (serr []error, err error) {
	cfg := p.cfg
	var exists []string
	if f.slotExists {
		exists = append(exists, fmt.Sprintf("a replication slot %q", cfg.Publication))
	}
	if f.publicationExists {
		exists = append(exists, fmt.Sprintf("a publication %q", cfg.Publication))
	}
	switch {
	case f.dist == distForeign && f.distComment != "":
		serr = append(serr, fmt.Errorf("database %q on the publisher's server is a distribution database of another dbrig version (%q): choose another --distribution-db",
			cfg.DistributionDB, f.distComment))
	case f.dist == distForeign:
		serr = append(serr, fmt.Errorf("database %q on the publisher's server is not dbrig's distribution database: choose another --distribution-db", cfg.DistributionDB))
	case f.dist == distOurs:
		p.distExists = true
		if p.dist, err = setupConnect(ctx, cfg.Distribution()); err != nil {
			return nil, &ServerError{Err: fmt.Errorf("distribution database: %w", err)}
		}
		_, ok, err := lookupPublication(ctx, p.dist, cfg.Publication)
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

// checkSubscriber checks the subscriber: dbrig's schema there is dbrig's,
// no subscription of this name exists, and each table is there (unless
// initialization makes it) and empty when initialization fills it.
func (p *plan) checkSubscriber(ctx context.Context, init InitMethod) error {
	cfg, sub := p.cfg, p.subConn
	if err := p.checkSubscriberSchema(ctx, sub); err != nil {
		return err
	}
	b := &pgx.Batch{}
	described := make([]*describedTable, len(p.tables))
	for i, pt := range p.tables {
		described[i] = queueDescribe(b, pt.Name)
	}
	if err := sub.SendBatch(ctx, b).Close(); err != nil {
		return &ServerError{Err: fmt.Errorf("subscriber: %w", err)}
	}
	var uerr []error
	b = &pgx.Batch{}
	for i, pt := range p.tables {
		st := described[i].info
		if st == nil {
			if init == InitNone {
				uerr = append(uerr, fmt.Errorf("table %s does not exist on the subscriber %s: create it, or set up with --init snapshot or backup", pt.Name, cfg.Subscriber))
			}
			continue
		}
		p.sub[pt.Name] = st
		uerr = append(uerr, checkSubscriberTable(pt, st)...)
		if init == InitNone {
			continue
		}
		b.Queue("SELECT EXISTS (SELECT 1 FROM " + pt.Name.Quoted() + ")").QueryRow(func(row pgx.Row) error {
			var hasRows bool
			if err := row.Scan(&hasRows); err != nil {
				return fmt.Errorf("read %s: %w", pt.Name, err)
			}
			if hasRows {
				uerr = append(uerr, fmt.Errorf("subscriber table %s is not empty: initialization (%s) copies every row; empty it or use --init none", pt.Name, init))
			}
			return nil
		})
	}
	if b.Len() > 0 {
		if err := sub.SendBatch(ctx, b).Close(); err != nil {
			return &ServerError{Err: fmt.Errorf("subscriber: %w", err)}
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
	var has, schemaExists bool
	var schemaComment *string
	err := sub.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL, (SELECT obj_description(oid, 'pg_namespace') FROM pg_namespace WHERE nspname = $2),
			EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $2)`,
		Schema+".subscription", Schema).Scan(&has, &schemaComment, &schemaExists)
	if err != nil {
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
