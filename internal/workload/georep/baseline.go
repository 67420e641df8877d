package georep

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/replication"
)

// NativeConfig is one measurement of PostgreSQL's own logical replication
// (CREATE PUBLICATION / CREATE SUBSCRIPTION: pull by design, with its
// initial COPY), the baseline the seed's system is set against.
type NativeConfig struct {
	// Publisher and Subscriber are the rig's own logins.
	Publisher, Subscriber postgres.ConnInfo
	// PublisherFromSubscriber is how the subscriber's server reaches the
	// publisher: through the link (a proxy address), for the subscription's
	// connection string. Zero means Publisher.
	PublisherFromSubscriber postgres.ConnInfo
	// Name names the publication, the subscription and its slot (default
	// "dbrig_native").
	Name               string
	Table              replication.TableName // default public.dbrig_native_rows
	Payload            Payload
	Rows               int
	RowsPerTransaction int
	// InitialRows exist before the subscription and travel by its initial
	// COPY (InitialSync times it).
	InitialRows int
	// Preload inserts the rows while the subscription is disabled and
	// times from the apply worker's start after ENABLE, so Elapsed covers
	// decoding and applying a backlog.
	Preload      bool
	PollInterval time.Duration // default 2 ms
	SkipVerify   bool
}

// NativeResult is what a native-replication measurement found.
type NativeResult struct {
	Rows       int64         `json:"rows"`
	Bytes      int64         `json:"bytes"`
	Elapsed    time.Duration `json:"elapsed_ns"`
	RowsPerSec float64       `json:"rows_per_sec"`
	MBPerSec   float64       `json:"mb_per_sec"`
	Insert     InsertResult  `json:"insert"`
	// InitialSync is the time from CREATE SUBSCRIPTION until every table
	// was synchronized (the initial COPY of InitialRows).
	InitialSync time.Duration             `json:"initial_sync_ns"`
	Verify      *replication.VerifyResult `json:"verify,omitempty"`
}

// RunNative measures PostgreSQL's native logical replication of the same
// rows the replication system carries: it creates the table on both sides,
// the publication and the subscription (connecting through
// PublisherFromSubscriber), waits for the initial sync, inserts the rows and
// times until the subscriber holds the last one; then it drops the
// subscription and the publication.
func RunNative(ctx context.Context, nc NativeConfig) (res NativeResult, err error) {
	if err := nc.applyDefaults(); err != nil {
		return res, err
	}
	res.Rows = int64(nc.Rows)
	res.Bytes = int64(nc.Rows) * int64(nc.Payload.RowBytes())
	if err := prepareRows(ctx, nc.Publisher, nc.Subscriber, nc.Table, nc.Payload, true, nc.InitialRows); err != nil {
		return res, err
	}
	pub, err := pgxConnect(ctx, nc.Publisher, "dbrig native baseline")
	if err != nil {
		return res, err
	}
	defer pub.Close(context.WithoutCancel(ctx))
	sub, err := pgxConnect(ctx, nc.Subscriber, "dbrig native baseline")
	if err != nil {
		return res, err
	}
	defer sub.Close(context.WithoutCancel(ctx))

	name := quoteIdent(nc.Name)
	pub.Exec(ctx, "DROP PUBLICATION IF EXISTS "+name)
	if _, err := pub.Exec(ctx, "CREATE PUBLICATION "+name+" FOR TABLE "+nc.Table.Quoted()); err != nil {
		return res, fmt.Errorf("native: create publication: %w", err)
	}
	defer func() {
		if derr := dropNative(ctx, pub, sub, name); derr != nil && err == nil {
			err = derr
		}
	}()
	if err := subscribeNative(ctx, nc, sub, name, &res); err != nil {
		return res, err
	}
	t0, err := insertNative(ctx, nc, sub, name, &res)
	if err != nil {
		return res, err
	}
	if err := waitNative(ctx, nc, sub, t0, &res); err != nil {
		return res, err
	}
	if !nc.SkipVerify {
		return res, verifyNative(ctx, nc, &res)
	}
	return res, nil
}

func (nc *NativeConfig) applyDefaults() error {
	if nc.Name == "" {
		nc.Name = "dbrig_native"
	}
	if err := validateName("subscription", nc.Name); err != nil {
		return &replication.UsageError{Err: err}
	}
	if nc.Table.Name == "" {
		nc.Table = replication.TableName{Schema: "public", Name: "dbrig_native_rows"}
	}
	if nc.PublisherFromSubscriber.Host == "" {
		nc.PublisherFromSubscriber = nc.Publisher
	}
	if nc.PollInterval <= 0 {
		nc.PollInterval = 2 * time.Millisecond
	}
	return nil
}

// prepareRows makes the table on both sides (on the subscriber when
// onSubscriber) and the initial rows on the publisher.
func prepareRows(ctx context.Context, publisher, subscriber postgres.ConnInfo, t replication.TableName, p Payload, onSubscriber bool, initialRows int) error {
	if err := PrepareTable(ctx, publisher, subscriber, t, p, onSubscriber); err != nil {
		return err
	}
	if initialRows > 0 {
		if _, err := InsertRows(ctx, publisher, t, p, 1, initialRows, 10000); err != nil {
			return err
		}
	}
	return nil
}

// dropNative removes the subscription and the publication, even when the
// run's context has ended.
func dropNative(ctx context.Context, pub, sub *pgx.Conn, name string) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer cancel()
	var errs []error
	if _, derr := sub.Exec(cctx, "DROP SUBSCRIPTION IF EXISTS "+name); derr != nil {
		errs = append(errs, fmt.Errorf("native: drop subscription: %w", derr))
	}
	if _, derr := pub.Exec(cctx, "DROP PUBLICATION IF EXISTS "+name); derr != nil {
		errs = append(errs, fmt.Errorf("native: drop publication: %w", derr))
	}
	return errors.Join(errs...)
}

// subscribeNative creates the subscription; without Preload it waits
// until the initial sync is done and the apply worker runs.
func subscribeNative(ctx context.Context, nc NativeConfig, sub *pgx.Conn, name string, res *NativeResult) error {
	start := time.Now()
	// The connection string carries the password to the subscriber's
	// server; it is never printed (errors quote the server's message only).
	_, err := sub.Exec(ctx, fmt.Sprintf("CREATE SUBSCRIPTION %s CONNECTION %s PUBLICATION %s WITH (copy_data = %t, enabled = %t)",
		name, quoteLiteral(nc.PublisherFromSubscriber.Keywords()), name, nc.InitialRows > 0, !nc.Preload))
	if err != nil {
		return fmt.Errorf("native: create subscription on %s: %v", nc.Subscriber, redactErr(err))
	}
	if nc.Preload {
		return nil
	}
	if err := pollUntil(ctx, nc.PollInterval, func() (bool, error) { return nativeSynced(ctx, sub, nc.Name) }); err != nil {
		return fmt.Errorf("native: wait for the initial sync: %w", err)
	}
	res.InitialSync = time.Since(start)
	// The launcher starts at most one apply worker per
	// wal_retrieve_retry_interval (5 s): time the replication, not it.
	if err := pollUntil(ctx, nc.PollInterval, func() (bool, error) { return nativeWorker(ctx, sub, nc.Name) }); err != nil {
		return fmt.Errorf("native: wait for the apply worker: %w", err)
	}
	return nil
}

// insertNative inserts the rows and returns when the timed replication
// began: the first insert's commit, or with Preload the apply worker's
// start once the subscription is enabled.
func insertNative(ctx context.Context, nc NativeConfig, sub *pgx.Conn, name string, res *NativeResult) (t0 time.Time, err error) {
	if res.Insert, err = InsertRows(ctx, nc.Publisher, nc.Table, nc.Payload, int64(nc.InitialRows)+1, nc.Rows, nc.RowsPerTransaction); err != nil {
		return t0, err
	}
	t0 = res.Insert.FirstCommit
	if nc.Preload {
		if _, err := sub.Exec(ctx, "ALTER SUBSCRIPTION "+name+" ENABLE"); err != nil {
			return t0, fmt.Errorf("native: enable the subscription: %w", err)
		}
		// From the apply worker's start: it then connects, and the
		// walsender decodes and sends the backlog while it applies.
		if err := pollUntil(ctx, time.Millisecond, func() (bool, error) { return nativeWorker(ctx, sub, nc.Name) }); err != nil {
			return t0, fmt.Errorf("native: wait for the apply worker: %w", err)
		}
		t0 = time.Now()
	}
	return t0, nil
}

// waitNative waits for the last row on the subscriber and times it from
// t0, then (with Preload) for the initial sync to end.
func waitNative(ctx context.Context, nc NativeConfig, sub *pgx.Conn, t0 time.Time, res *NativeResult) error {
	last := int64(nc.InitialRows + nc.Rows)
	if nc.Rows > 0 {
		if err := pollUntil(ctx, nc.PollInterval, func() (bool, error) { return rowPresent(ctx, sub, nc.Table, last) }); err != nil {
			return fmt.Errorf("native: wait for row %d on the subscriber: %w", last, err)
		}
		res.Elapsed = time.Since(t0)
		if s := res.Elapsed.Seconds(); s > 0 {
			res.RowsPerSec = float64(res.Rows) / s
			res.MBPerSec = float64(res.Bytes) / 1e6 / s
		}
	}
	if nc.Preload {
		if err := pollUntil(ctx, nc.PollInterval, func() (bool, error) { return nativeSynced(ctx, sub, nc.Name) }); err != nil {
			return fmt.Errorf("native: wait for the initial sync: %w", err)
		}
	}
	return nil
}

func verifyNative(ctx context.Context, nc NativeConfig, res *NativeResult) error {
	v, err := replication.Verify(ctx, replication.Config{Publisher: nc.Publisher, Subscriber: nc.Subscriber, Tables: []replication.TableName{nc.Table}}, replication.VerifyOptions{})
	if err != nil {
		return err
	}
	res.Verify = &v
	if !v.Equal {
		return fmt.Errorf("native: verify: the subscriber differs: %+v", v.Tables)
	}
	return nil
}

// nativeSynced reports whether every table of the subscription is synchronized.
func nativeSynced(ctx context.Context, sub *pgx.Conn, name string) (bool, error) {
	var pending int
	err := sub.QueryRow(ctx, `SELECT count(*) FROM pg_subscription_rel r JOIN pg_subscription s ON s.oid = r.srsubid
		WHERE s.subname = $1 AND r.srsubstate NOT IN ('r', 's')`, name).Scan(&pending)
	return pending == 0, err
}

// nativeWorker reports whether the subscription's apply worker runs.
func nativeWorker(ctx context.Context, sub *pgx.Conn, name string) (bool, error) {
	var n int
	err := sub.QueryRow(ctx, "SELECT count(*) FROM pg_stat_subscription WHERE subname = $1 AND relid IS NULL AND pid IS NOT NULL", name).Scan(&n)
	return n > 0, err
}

// redactErr keeps a server's error, dropping anything that could quote a
// connection string.
func redactErr(err error) error {
	var pgErr interface{ SQLState() string }
	if errors.As(err, &pgErr) {
		return err // PgError.Error() is the server's message, without the statement
	}
	return errors.New("the statement failed (details withheld: they could contain a password)")
}

// FDWConfig is one measurement of row-by-row remote inserts: the rows are
// generated on the local server (the publisher's site) and inserted into a
// postgres_fdw foreign table on the remote server (the subscriber) across
// the link, BatchSize rows per remote INSERT (1 = one round trip per row:
// the seed's linked server).
type FDWConfig struct {
	// Local is the server the rows start on (where postgres_fdw runs).
	Local postgres.ConnInfo
	// Remote is the remote database as the local server reaches it
	// (through the link); RemoteDirect the rig's own login to it.
	Remote, RemoteDirect postgres.ConnInfo
	Table                replication.TableName // on the remote side (default public.dbrig_fdw_rows)
	Payload              Payload
	Rows                 int
	BatchSize            int // postgres_fdw batch_size (default 1)
}

// FDWResult is what a remote-insert measurement found.
type FDWResult struct {
	Rows       int64         `json:"rows"`
	Bytes      int64         `json:"bytes"`
	BatchSize  int           `json:"batch_size"`
	Elapsed    time.Duration `json:"elapsed_ns"`
	RowsPerSec float64       `json:"rows_per_sec"`
	MBPerSec   float64       `json:"mb_per_sec"`
}

// RunFDW inserts the rows through postgres_fdw and times the INSERT.
func RunFDW(ctx context.Context, fc FDWConfig) (res FDWResult, err error) {
	if fc.Table.Name == "" {
		fc.Table = replication.TableName{Schema: "public", Name: "dbrig_fdw_rows"}
	}
	if fc.BatchSize <= 0 {
		fc.BatchSize = 1
	}
	if fc.RemoteDirect.Host == "" {
		fc.RemoteDirect = fc.Remote
	}
	res = FDWResult{Rows: int64(fc.Rows), Bytes: int64(fc.Rows) * int64(fc.Payload.RowBytes()), BatchSize: fc.BatchSize}
	remote, err := pgxConnect(ctx, fc.RemoteDirect, "dbrig fdw baseline")
	if err != nil {
		return res, err
	}
	defer remote.Close(context.WithoutCancel(ctx))
	if err := execAll(ctx, remote, append([]string{"CREATE SCHEMA IF NOT EXISTS " + quoteIdent(fc.Table.Schema)}, fc.Payload.DDL(fc.Table)...)); err != nil {
		return res, fmt.Errorf("fdw: prepare %s on the remote: %w", fc.Table, err)
	}
	local, err := pgxConnect(ctx, fc.Local, "dbrig fdw baseline")
	if err != nil {
		return res, err
	}
	defer local.Close(context.WithoutCancel(ctx))
	const server = "dbrig_fdw_remote"
	const foreign = replication.Schema + "_fdw.rows"
	local.Exec(ctx, "DROP SERVER IF EXISTS "+server+" CASCADE")
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if _, derr := local.Exec(cctx, "DROP SERVER IF EXISTS "+server+" CASCADE"); derr != nil && err == nil {
			err = fmt.Errorf("fdw: drop the foreign server: %w", derr)
		}
	}()
	typ := fc.Payload.sqlType()
	stmts := []string{
		"CREATE EXTENSION IF NOT EXISTS postgres_fdw",
		fmt.Sprintf("CREATE SERVER %s FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host %s, port '%d', dbname %s, batch_size '%d')",
			server, quoteLiteral(fc.Remote.Host), fc.Remote.Port, quoteLiteral(fc.Remote.Database), fc.BatchSize),
		fmt.Sprintf("CREATE USER MAPPING FOR CURRENT_USER SERVER %s OPTIONS (user %s, password %s)",
			server, quoteLiteral(fc.Remote.User), quoteLiteral(fc.Remote.Password())),
		"CREATE SCHEMA IF NOT EXISTS " + replication.Schema + "_fdw",
		fmt.Sprintf("CREATE FOREIGN TABLE %s (id bigint, payload %s) SERVER %s OPTIONS (schema_name %s, table_name %s)",
			foreign, typ, server, quoteLiteral(fc.Table.Schema), quoteLiteral(fc.Table.Name)),
	}
	for _, s := range stmts {
		if _, err := local.Exec(ctx, s); err != nil {
			return res, fmt.Errorf("fdw: set up the foreign table on %s: %v", fc.Local, redactErr(err))
		}
	}
	// Open the foreign server's connection first: a linked server is
	// connected before the rows flow, and its set-up (several round trips
	// across the WAN) is not the per-row cost being measured.
	if _, err := local.Exec(ctx, "SELECT 1 FROM "+foreign+" LIMIT 1"); err != nil {
		return res, fmt.Errorf("fdw: connect the foreign server: %v", redactErr(err))
	}
	start := time.Now()
	_, err = local.Exec(ctx, "INSERT INTO "+foreign+" (id, payload) SELECT g, "+fc.Payload.expr()+" FROM generate_series(1, $1::bigint) g", fc.Rows)
	if err != nil {
		return res, fmt.Errorf("fdw: insert %d rows through the foreign table: %v", fc.Rows, redactErr(err))
	}
	res.Elapsed = time.Since(start)
	if s := res.Elapsed.Seconds(); s > 0 {
		res.RowsPerSec = float64(res.Rows) / s
		res.MBPerSec = float64(res.Bytes) / 1e6 / s
	}
	var n int64
	if err := remote.QueryRow(ctx, "SELECT count(*) FROM "+fc.Table.Quoted()).Scan(&n); err != nil {
		return res, fmt.Errorf("fdw: count the remote rows: %w", err)
	}
	if n != int64(fc.Rows) {
		return res, fmt.Errorf("fdw: the remote table holds %d rows, want %d", n, fc.Rows)
	}
	return res, nil
}
