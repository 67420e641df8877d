package replication

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
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
	// The sessions setup needs after its checks are opened while it
	// checks: across a WAN each handshake is several round trips.
	tag := slotSessionTag()
	later := openLater(ctx, cfg, opts, tag)
	defer later.release()
	p, err := preflight(ctx, cfg, opts, tag)
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

	// 1. The publication, the distribution database, the subscriber's
	// bookkeeping and the slot.
	st, err := p.begin(ctx, opts, later)
	defer st.distConn.release()
	if st.rc != nil {
		defer st.rc.Close(context.WithoutCancel(ctx))
	}
	if err != nil {
		return res, err
	}
	rc, slot, reads, distConn := st.rc, st.slot, st.reads, st.distConn
	cfg.Logger.Info("replication slot created", "slot", cfg.Publication, "consistent_point", slot.ConsistentPoint)
	res.ConsistentPoint = slot.ConsistentPoint

	// 2. Initialization, and the subscription's starting point: command 0
	// at the consistent point. For a snapshot both commit together.
	rec := subscriptionRecord{cfg, opts, slot.ConsistentPoint}
	made.subscriberTables = p.missingOnSubscriber()
	switch opts.Init {
	case InitSnapshot:
		err = initSnapshot(ctx, p, opts, later.streams, slot.Snapshot, reads, rec, &res)
	case InitBackup:
		err = initBackup(ctx, p, opts, slot.Snapshot, reads, rec.write, &res)
	default:
		err = pgx.BeginFunc(ctx, p.subConn, func(tx pgx.Tx) error { return rec.write(ctx, tx) })
	}
	made.subscription = true
	if err != nil {
		return res, err
	}
	rc.Close(ctx) // releases the exported snapshot

	// 3. This publication's tables in the distribution database and the
	// catalog: the publication, its tables and both roles' records, in
	// one transaction.
	return res, p.finishDistribution(ctx, distConn, opts, slot.ConsistentPoint, made)
}

// started is what setup has made on the publisher's server before the
// initialization: the slot, on its replication connection (open while the
// slot's snapshot is in use), the DDL read of the tables the
// initialization creates, and the distribution database's session being
// opened.
type started struct {
	rc       *pgconn.PgConn
	slot     slotInfo
	reads    []*ddlReads
	distConn *pending[*pgx.Conn]
}

// begin creates the publication and the distribution database in one
// round trip to the publisher, the subscriber's bookkeeping meanwhile, and
// the slot as soon as the publication is made; then marks the database
// and reads the tables' DDL while the slot is made. The slot exports its
// consistent point as a snapshot when the subscriber is initialized from
// it. What it returns is the caller's to close, also with an error.
func (p *plan) begin(ctx context.Context, opts SetupOptions, later laterSessions) (st started, _ error) {
	made := p.made
	subDone := make(chan error, 1)
	go func() { subDone <- execAll(ctx, p.subConn, subscriberDDL) }() // received below
	type slotMade struct {
		rc   *pgconn.PgConn
		slot slotInfo
		err  error
	}
	published, slotDone := make(chan bool, 1), make(chan slotMade, 1)
	go func() { // received below
		if !<-published {
			slotDone <- slotMade{}
			return
		}
		rc, slot, err := takeSlot(ctx, p.cfg, later.slot, opts, made)
		slotDone <- slotMade{rc, slot, err}
	}()
	err := p.createOnPublisher(ctx, made, func(ok bool) { published <- ok })
	subErr := <-subDone
	made.subscriberSchema = !p.subSchemaExists && mayHaveRun(subErr)
	if subErr != nil {
		err = errors.Join(err, fmt.Errorf("subscriber %s: %w", p.cfg.Subscriber, subErr))
	}
	if err == nil {
		// The distribution database's mark and the DDL of the tables the
		// initialization creates on the subscriber in one round trip,
		// while the slot is made; the distribution database's session
		// opens in the background (its tables are made with the catalog's
		// records at the end).
		st.distConn = p.openDistribution(ctx)
		st.reads, err = p.markAndReadDDL(ctx, made, opts.Init)
	}
	sm := <-slotDone
	st.rc, st.slot = sm.rc, sm.slot
	return st, errors.Join(err, sm.err)
}

// slotSessionTag is the application name of a setup's replication
// connection: opened while preflight counts the publisher's WAL senders,
// it is told from the others by a name of its own.
func slotSessionTag() string {
	return fmt.Sprintf("dbrig setup %08x", rand.Uint32())
}

// laterSessions are the sessions setup opens while it checks (see
// pending): the slot's replication connection and a snapshot's streams
// (nil otherwise).
type laterSessions struct {
	slot    *pending[*pgconn.PgConn]
	streams *pending[snapshotSessions]
}

// openLater starts opening laterSessions; the replication connection is
// named tag.
func openLater(ctx context.Context, cfg Config, opts SetupOptions, tag string) laterSessions {
	var l laterSessions
	l.slot = openInBackground(func() (*pgconn.PgConn, error) {
		c, err := connectReplication(ctx, cfg.Publisher, tag)
		if err != nil {
			return nil, &ServerError{Err: err}
		}
		return c, nil
	}, func(c *pgconn.PgConn) { c.Close(context.WithoutCancel(ctx)) })
	if opts.Init == InitSnapshot {
		l.streams = openInBackground(func() (snapshotSessions, error) {
			return connectSnapshotSessions(ctx, orConn(opts.InitPublisher, cfg.Publisher), opts.streams())
		}, func(s snapshotSessions) { s.close(ctx) })
	}
	return l
}

// release waits for every session's opening and closes those not taken.
func (l laterSessions) release() {
	l.streams.release()
	l.slot.release()
}

// takeSlot takes the replication connection and creates the slot on it.
// rc is the connection, to be closed by the caller, whenever it was taken.
func takeSlot(ctx context.Context, cfg Config, slotConn *pending[*pgconn.PgConn], opts SetupOptions, made *created) (rc *pgconn.PgConn, slot slotInfo, err error) {
	if rc, err = slotConn.take(); err != nil {
		return nil, slot, err
	}
	made.pubPIDs = append(made.pubPIDs, rc.PID())
	slot, err = createSlot(ctx, rc, cfg.Publication, opts.Init != InitNone)
	made.slot = mayHaveRun(err)
	return rc, slot, err
}

// createOnPublisher creates, in one round trip, the publication and the
// distribution database when the publisher's server has none of dbrig's:
// each statement its own implicit transaction in one pipeline (CREATE
// DATABASE must be one of its own), so that a statement the server
// refuses leaves the other's result as it is. published is told once
// whether the publication was made, as soon as its answer is in, while
// the server makes the database: the slot's decoding needs the
// publication, not the database, and the slot's snapshot waits for the
// database's transaction anyway (it waits for every transaction running
// when it starts), so the slot is made meanwhile.
func (p *plan) createOnPublisher(ctx context.Context, made *created, published func(ok bool)) error {
	cfg := p.cfg
	names := make([]string, len(p.tables))
	for i, t := range p.tables {
		names[i] = t.Name.Quoted()
	}
	type statement struct {
		sql  string
		made *bool
		what string
	}
	stmts := []statement{{"CREATE PUBLICATION " + quoteIdent(cfg.Publication) + " FOR TABLE " + strings.Join(names, ", ") +
		" WITH (publish = 'insert, update, delete, truncate')", &made.publication,
		fmt.Sprintf("create publication %q on %s", cfg.Publication, cfg.Publisher)}}
	if !p.distExists {
		stmts = append(stmts, statement{"CREATE DATABASE " + quoteIdent(cfg.DistributionDB) + " ENCODING 'UTF8' TEMPLATE template0", &made.database,
			fmt.Sprintf("create the distribution database %q on %s", cfg.DistributionDB, cfg.Publisher)})
	}
	pl := p.pub.PgConn().StartPipeline(ctx)
	for _, st := range stmts {
		pl.SendQueryParams(st.sql, nil, nil, nil, nil)
		pl.SendPipelineSync()
	}
	errs := make([]error, len(stmts))
	// broken is the connection's failure: every statement not yet read
	// may have run.
	broken := pl.Flush()
	if broken != nil {
		published(false)
	}
	for i := range stmts {
		if broken != nil {
			errs[i] = broken
			continue
		}
		errs[i] = pipelineResult(pl)
		if i == 0 {
			published(errs[0] == nil)
		}
		if errs[i] != nil && mayHaveRun(errs[i]) {
			broken = errs[i]
		}
	}
	closeErr := pl.Close()
	var failed []error
	for i, st := range stmts {
		if errs[i] == nil && closeErr != nil {
			errs[i] = closeErr
		}
		*st.made = mayHaveRun(errs[i])
		if errs[i] != nil {
			failed = append(failed, fmt.Errorf("%s: %w", st.what, errs[i]))
		}
	}
	return errors.Join(failed...)
}

// pipelineResult reads one statement's result and the Sync after it: the
// statement's error, or the connection's.
func pipelineResult(pl *pgconn.Pipeline) error {
	var first error
	keep := func(err error) {
		if first == nil {
			first = err
		}
	}
	for {
		res, err := pl.GetResults()
		switch r := res.(type) {
		case *pgconn.ResultReader:
			if _, err := r.Close(); err != nil {
				keep(err)
			}
			continue
		case *pgconn.PipelineSync:
			return first
		}
		if err == nil {
			keep(errors.New("pipeline: no Sync where one was due"))
			return first
		}
		keep(err)
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) {
			return first // the connection failed
		}
	}
}

// markAndReadDDL marks a distribution database setup made as dbrig's (a
// comment, which teardown and later setups look for: only once CREATE
// DATABASE has succeeded, so that a database someone else made meanwhile
// is never marked) and reads the DDL of the tables the initialization
// creates on the subscriber (all of them for a snapshot, and for a backup
// those missing where others exist: it then restores the data alone), in
// one round trip.
func (p *plan) markAndReadDDL(ctx context.Context, made *created, init InitMethod) ([]*ddlReads, error) {
	cfg := p.cfg
	b := &pgx.Batch{}
	if made.database {
		b.Queue("COMMENT ON DATABASE " + quoteIdent(cfg.DistributionDB) + " IS " + quoteLiteral(distributionMarker))
	}
	var reads []*ddlReads
	if init == InitSnapshot || init == InitBackup && p.restoresDataOnly() {
		for _, t := range p.tables {
			if _, ok := p.sub[t.Name]; !ok {
				reads = append(reads, queueDDLReads(b, t))
			}
		}
	}
	if b.Len() == 0 {
		return nil, nil
	}
	if err := p.pub.SendBatch(ctx, b).Close(); err != nil {
		if made.database {
			return nil, fmt.Errorf("mark the distribution database %q as dbrig's (and read the DDL of the tables the subscriber lacks): %w", cfg.DistributionDB, err)
		}
		return nil, fmt.Errorf("publisher %s: read the DDL of the tables the subscriber lacks: %w", cfg.Publisher, err)
	}
	return reads, nil
}

// openDistribution opens a session on the distribution database in the
// background, or hands over preflight's where it existed.
func (p *plan) openDistribution(ctx context.Context) *pending[*pgx.Conn] {
	closeConn := func(c *pgx.Conn) { c.Close(context.WithoutCancel(ctx)) }
	if p.distExists {
		dist := p.dist
		p.dist = nil
		return opened(dist, closeConn)
	}
	return openInBackground(func() (*pgx.Conn, error) {
		c, err := setupConnect(ctx, p.cfg.Distribution())
		if err != nil {
			return nil, fmt.Errorf("distribution database: %w", err)
		}
		return c, nil
	}, closeConn)
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

// restoresDataOnly tells whether a backup restores the data alone, some
// tables existing on the subscriber already: setup then creates the
// missing ones from their DDL, as a snapshot does.
func (p *plan) restoresDataOnly() bool { return len(p.sub) > 0 }

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
