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
	// Carrier moves the backup archive of InitBackup from the publisher's
	// site to the subscriber's (nil: a pipe in this process).
	Carrier Carrier
	// Shipper, when set, runs InitBackup's pg_dump at the publisher's site
	// instead of here, its archive crossing compressed (Carrier unused).
	Shipper *Shipper
	// Progress, when set, is told how far InitSnapshot's copy has come
	// every ProgressEvery while its bytes move (a shipped backup's is the
	// Shipper's).
	Progress      func(CopyProgress)
	ProgressEvery time.Duration
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
	made := p.made
	defer func() {
		if err != nil {
			made.undoAfterFailure(ctx, cfg)
		}
	}()
	res.Init = opts.Init.String()
	defer p.close(ctx)

	slotConn, streams := openLater(ctx, cfg, opts)
	defer func() { streams.release(); slotConn.release() }()

	// 1. The distribution database, its session opened in the background;
	// its tables are made with the catalog's records at the end.
	distConn, err := p.startDistribution(ctx, p.pub, made)
	if err != nil {
		return res, err
	}
	defer distConn.release()
	// 2. The publication.
	if err := p.createPublication(ctx, p.pub, made); err != nil {
		return res, err
	}

	// 3. The subscriber's bookkeeping.
	err = execAll(ctx, p.subConn, subscriberDDL)
	made.subscriberSchema = !p.subSchemaExists && mayHaveRun(err)
	if err != nil {
		return res, fmt.Errorf("subscriber %s: %w", cfg.Subscriber, err)
	}

	// 4. The slot, exporting its consistent point as a snapshot when the
	// subscriber is initialized from it. The replication connection must
	// stay open and idle while the snapshot is in use.
	rc, err := slotConn.take()
	if err != nil {
		return res, err
	}
	defer rc.Close(context.WithoutCancel(ctx))
	made.pubPIDs = append(made.pubPIDs, rc.PID())
	slot, err := createSlot(ctx, rc, cfg.Publication, opts.Init != InitNone)
	made.slot = mayHaveRun(err)
	if err != nil {
		return res, err
	}
	cfg.Logger.Info("replication slot created", "slot", cfg.Publication, "consistent_point", slot.ConsistentPoint)
	res.ConsistentPoint = slot.ConsistentPoint

	// 5. Initialization, and the subscription's starting point: command 0
	// at the consistent point. For a snapshot both commit together.
	rec := subscriptionRecord{cfg, opts, slot.ConsistentPoint}
	made.subscriberTables = p.missingOnSubscriber()
	switch opts.Init {
	case InitSnapshot:
		err = initSnapshot(ctx, p, opts, streams, slot.Snapshot, rec, &res)
	case InitBackup:
		err = initBackup(ctx, p, opts, slot.Snapshot, rec.write, &res)
	default:
		err = pgx.BeginFunc(ctx, p.subConn, func(tx pgx.Tx) error { return rec.write(ctx, tx) })
	}
	made.subscription = true
	if err != nil {
		return res, err
	}
	rc.Close(ctx) // releases the exported snapshot

	// 6. This publication's tables in the distribution database and the
	// catalog: the publication, its tables and both roles' records, in
	// one transaction.
	return res, p.finishDistribution(ctx, distConn, opts, slot.ConsistentPoint, made)
}

// openLater starts opening the sessions setup needs later, while it works
// (see pending): the slot's replication connection and, for a snapshot,
// its streams (nil otherwise).
func openLater(ctx context.Context, cfg Config, opts SetupOptions) (slotConn *pending[*pgconn.PgConn], streams *pending[snapshotSessions]) {
	slotConn = openInBackground(func() (*pgconn.PgConn, error) {
		c, err := connectReplication(ctx, cfg.Publisher, "dbrig setup")
		if err != nil {
			return nil, &ServerError{Err: err}
		}
		return c, nil
	}, func(c *pgconn.PgConn) { c.Close(context.WithoutCancel(ctx)) })
	if opts.Init == InitSnapshot {
		streams = openInBackground(func() (snapshotSessions, error) {
			return connectSnapshotSessions(ctx, orConn(opts.InitPublisher, cfg.Publisher), opts.streams())
		}, func(s snapshotSessions) { s.close(ctx) })
	}
	return slotConn, streams
}

// finishDistribution takes the distribution database's session, makes
// this publication's tables there and records the catalog.
func (p *plan) finishDistribution(ctx context.Context, distConn *pending[*pgx.Conn], opts SetupOptions, at LSN, made *created) error {
	dist, err := distConn.take()
	if err != nil {
		return err
	}
	defer dist.Close(context.WithoutCancel(ctx))
	made.streamTables = true
	made.pubPIDs = append(made.pubPIDs, dist.PgConn().PID())
	if err := p.recordCatalog(ctx, dist, opts, at); err != nil {
		return fmt.Errorf("distribution database %s: record publication %q: %w", p.cfg.Distribution(), p.cfg.Publication, err)
	}
	return nil
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

// startDistribution creates the distribution database when the
// publisher's server has none of dbrig's and opens a session on it in the
// background (or hands over preflight's, when it exists).
func (p *plan) startDistribution(ctx context.Context, pub *pgx.Conn, made *created) (*pending[*pgx.Conn], error) {
	cfg := p.cfg
	closeConn := func(c *pgx.Conn) { c.Close(context.WithoutCancel(ctx)) }
	if p.distExists {
		dist := p.dist
		p.dist = nil
		return opened(dist, closeConn), nil
	}
	_, err := pub.Exec(ctx, "CREATE DATABASE "+quoteIdent(cfg.DistributionDB)+" ENCODING 'UTF8' TEMPLATE template0")
	made.database = mayHaveRun(err)
	if err != nil {
		return nil, fmt.Errorf("create the distribution database %q on %s: %w", cfg.DistributionDB, cfg.Publisher, err)
	}
	conn := openInBackground(func() (*pgx.Conn, error) {
		c, err := setupConnect(ctx, cfg.Distribution())
		if err != nil {
			return nil, fmt.Errorf("distribution database: %w", err)
		}
		return c, nil
	}, closeConn)
	if _, err := pub.Exec(ctx, "COMMENT ON DATABASE "+quoteIdent(cfg.DistributionDB)+" IS "+quoteLiteral(distributionMarker)); err != nil {
		conn.release()
		return nil, fmt.Errorf("mark the distribution database %q as dbrig's: %w", cfg.DistributionDB, err)
	}
	return conn, nil
}

// createPublication publishes the plan's tables on the publisher.
func (p *plan) createPublication(ctx context.Context, pub *pgx.Conn, made *created) error {
	names := make([]string, len(p.tables))
	for i, t := range p.tables {
		names[i] = t.Name.Quoted()
	}
	_, err := pub.Exec(ctx, "CREATE PUBLICATION "+quoteIdent(p.cfg.Publication)+" FOR TABLE "+strings.Join(names, ", ")+
		" WITH (publish = 'insert, update, delete, truncate')")
	made.publication = mayHaveRun(err)
	if err != nil {
		return fmt.Errorf("create publication %q on %s: %w", p.cfg.Publication, p.cfg.Publisher, err)
	}
	return nil
}

// durableCommit makes the transaction's commit wait for its WAL to be
// flushed, whatever the server's synchronous_commit says: setup's last
// commit on each server then makes all setup wrote there durable (the WAL
// is flushed in order). With synchronous_commit off, a crash within the
// WAL writer's delay after setup lost its records: the log reader then
// found the publication not set up (TestSetupSurvivesACrash).
const durableCommit = "SET LOCAL synchronous_commit = local"

// subscriptionRecord records the subscription on the subscriber: command
// 0 at the slot's consistent point.
type subscriptionRecord struct {
	cfg  Config
	opts SetupOptions
	at   LSN
}

// queue queues the record's statements on b, a batch of the subscriber's
// transaction.
func (r subscriptionRecord) queue(b *pgx.Batch) {
	b.Queue(durableCommit)
	b.Queue("INSERT INTO "+Schema+".subscription (name, publication, publisher, mode, last_cmd_id, last_lsn) VALUES ($1, $1, $2, $3, 0, $4)",
		r.cfg.Publication, engine.RedactURI(r.cfg.Publisher.String()), r.opts.Mode.String(), r.at.String())
}

// write records the subscription in tx.
func (r subscriptionRecord) write(ctx context.Context, tx pgx.Tx) error {
	b := &pgx.Batch{}
	r.queue(b)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("subscriber: record subscription %q: %w", r.cfg.Publication, err)
	}
	return nil
}

// recordCatalog makes this publication's tables in the distribution
// database (and dbrig's schema there, in a database setup created) and
// records the publication, its tables and both roles' starting points, in
// one transaction.
func (p *plan) recordCatalog(ctx context.Context, dist *pgx.Conn, opts SetupOptions, at LSN) error {
	cfg := p.cfg
	// One batch, its own transaction: a setup run from the subscriber's
	// site pays each round trip to the distribution database across the
	// WAN.
	b := &pgx.Batch{}
	b.Queue("BEGIN")
	if !p.distExists {
		for _, s := range distributionDDL {
			b.Queue(s)
		}
	}
	for _, s := range publicationDDL(cfg.Publication) {
		b.Queue(s)
	}
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
	b.Queue("COMMIT")
	return dist.SendBatch(ctx, b).Close()
}

// mayHaveRun tells whether a statement that returned err may have made
// what it creates: it did when it succeeded, and may have when it was cut
// short on the client's side (cancelled, its connection lost), since the
// server may have run it to its commit all the same; a server's error
// means it made nothing. A setup that fails removes what may have been
// made, each removal checking what exists (preflight found none of it).
func mayHaveRun(err error) bool {
	var pgErr *pgconn.PgError
	return err == nil || !errors.As(err, &pgErr)
}

// created is what a setup has made so far, so that a failed setup removes
// exactly that.
type created struct {
	database, streamTables, publication, slot bool
	subscriberSchema, subscription            bool
	subscriberTables                          []TableName
	// pubPIDs and subPIDs are the server processes of the sessions setup
	// made things with, on the publisher's server and the subscriber's: a
	// statement cut short on the client's side runs on in its process
	// until it ends (CREATE DATABASE to its commit), so the undo waits for
	// them to exit before it looks for what they made.
	pubPIDs, subPIDs []uint32
}

// undoWait bounds the undo's wait for setup's own server processes.
const undoWait = 30 * time.Second

// waitExited waits until none of pids runs on c's server any more, or
// undoWait has passed.
func waitExited(ctx context.Context, c *pgx.Conn, pids []uint32) error {
	if len(pids) == 0 {
		return nil
	}
	deadline := time.Now().Add(undoWait)
	for {
		var n int
		if err := c.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE pid = ANY($1)", pids).Scan(&n); err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of setup's server processes still running after %s", n, undoWait)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// undoAfterFailure removes what the failed setup made, logging what it
// could not remove: the setup's error is what the caller is told.
func (m *created) undoAfterFailure(ctx context.Context, cfg Config) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), undoWait+30*time.Second)
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
	if err := waitExited(ctx, pub, m.pubPIDs); err != nil {
		errs = append(errs, fmt.Errorf("publisher: %w", err))
	}
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
		if err := waitExited(ctx, sub, m.subPIDs); err != nil {
			errs = append(errs, fmt.Errorf("subscriber: %w", err))
		}
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
