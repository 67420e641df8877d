package tenants

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/mariadb"
	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/workload"
)

// tenantName is the j-th database (1-based) of the workload's database db.
func tenantName(db string, j int) string { return fmt.Sprintf("%s_t%04d", db, j) }

// share is how many of total databases instance i of n holds: an even
// split, the first instances one more when it does not divide.
func share(total, n, i int) int {
	s := total / n
	if i < total%n {
		s++
	}
	return s
}

// Prepare makes every instance of the set hold exactly its share of the
// databases, each with the ledger's tables, data and functions. On a
// PostgreSQL server dbrig started, the first database is built once as a
// template and the others are copied from it (CREATE DATABASE ... TEMPLATE,
// several at once); elsewhere (MariaDB, a target) each database is built in
// its own session, several at once. Databases that already hold the same
// ledger are kept, so a sweep of the database count adds or drops only the
// difference.
func (w *tenants) Prepare(ctx context.Context, env *workload.Env) error {
	members, err := w.members(env)
	if err != nil {
		return err
	}
	sig := signature(w.size, w.functions)
	var total int64
	for i := range members {
		total += int64(share(w.databases, len(members), i))
	}
	// Databases are made by several sessions at once; the progress
	// callback hears from one at a time.
	var mu sync.Mutex
	var done int64
	progress := func() {
		mu.Lock()
		defer mu.Unlock()
		done++
		if env.Progress != nil {
			env.Progress(done, total)
		}
	}
	// The instances are prepared at once, each with its own sessions:
	// each has its own checkpointer and files, and making databases waits
	// mostly on their fsyncs.
	start := time.Now()
	builders := make([]builder, len(members))
	for i, name := range members {
		inst := env.Instance(name)
		if inst == nil {
			return fmt.Errorf("no running instance %q", name)
		}
		switch inst.Engine() {
		case postgres.Name:
			builders[i] = &pgBuilder{inst: inst, db: env.Database, sig: sig, w: w}
		case mariadb.Name:
			builders[i] = &mariaBuilder{inst: inst, db: env.Database, sig: sig, w: w}
		default:
			return fmt.Errorf("instance %q runs %s: the tenants workload speaks PostgreSQL's and MariaDB's dialects only", name, inst.Engine())
		}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for i, name := range members {
		wg.Go(func() {
			began := time.Now()
			want := share(w.databases, len(members), i)
			made, kept, dropped, err := prepareInstance(ctx, builders[i], env.Database, want, w.parallel, progress)
			if err != nil {
				cancel(fmt.Errorf("instance %q: %w", name, err))
				return
			}
			env.Log.Info("tenant databases ready", "instance", name, "databases", want, "created", made, "kept", kept, "dropped", dropped,
				"seconds", time.Since(began).Seconds())
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil {
		return err
	}
	if total > 0 {
		env.Log.Info("prepared", "databases", total, "instances", len(members), "seconds", time.Since(start).Seconds())
	}
	return nil
}

// builder makes the tenant databases of one instance in its engine's way.
type builder interface {
	// existing lists the tenant databases there and whether each holds the
	// ledger of this signature.
	existing(ctx context.Context) (map[string]bool, error)
	// base makes whatever the copies need (a template) before create runs.
	base(ctx context.Context) error
	create(ctx context.Context, name string) error
	drop(ctx context.Context, name string) error
}

func prepareInstance(ctx context.Context, b builder, db string, want, parallel int, progress func()) (made, kept, dropped int, err error) {
	have, err := b.existing(ctx)
	if err != nil {
		return 0, 0, 0, err
	}
	var missing []string
	for j := 1; j <= want; j++ {
		name := tenantName(db, j)
		if have[name] {
			kept++
			progress()
		} else {
			missing = append(missing, name)
		}
		delete(have, name)
	}
	// What is left is beyond this point's count (or stale): a point with
	// 50 databases has 50, not 50 in use and more idle.
	for name := range have {
		if err := b.drop(ctx, name); err != nil {
			return 0, kept, dropped, err
		}
		dropped++
	}
	if len(missing) == 0 {
		return 0, kept, dropped, nil
	}
	if err := b.base(ctx); err != nil {
		return 0, kept, dropped, err
	}
	err = parallelDo(ctx, missing, parallel, func(ctx context.Context, name string) error {
		if err := b.create(ctx, name); err != nil {
			return fmt.Errorf("create database %s: %w", name, err)
		}
		progress()
		return nil
	})
	return len(missing), kept, dropped, err
}

// parallelDo runs do on every name, at most n at a time; the first error
// stops the rest.
func parallelDo(ctx context.Context, names []string, n int, do func(context.Context, string) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	work := make(chan string)
	var wg sync.WaitGroup
	for range max(1, n) {
		wg.Go(func() {
			for name := range work {
				if err := do(ctx, name); err != nil {
					cancel(err)
				}
			}
		})
	}
	for _, name := range names {
		select {
		case work <- name:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(work)
	wg.Wait()
	return context.Cause(ctx)
}

// pgBuilder makes PostgreSQL tenants: on a server dbrig started, copies of
// a template database; on a target, each database built in place.
type pgBuilder struct {
	inst engine.Instance
	db   string
	sig  string
	w    *tenants
}

func (b *pgBuilder) connect(ctx context.Context, db string) (*pgx.Conn, error) {
	login, ok := b.inst.UnixLogin(db)
	if !ok {
		login = b.inst.Login(db)
	}
	cfg, err := postgres.ConnInfoOf(login).ConnConfig()
	if err != nil {
		return nil, err
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", login, err)
	}
	return conn, nil
}

// admin is the database dbrig's own sessions use: on a server dbrig
// started, "postgres" (the workload's database may not exist yet); on a
// target, the database dbrig made there.
func (b *pgBuilder) admin() string {
	if b.inst.Owned() {
		return "postgres"
	}
	return b.db
}

func (b *pgBuilder) existing(ctx context.Context) (map[string]bool, error) {
	conn, err := b.connect(ctx, b.admin())
	if err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows, err := conn.Query(ctx, `SELECT datname FROM pg_database WHERE datname LIKE $1 ESCAPE '!'`, strings.ReplaceAll(b.db, "_", "!_")+"!_t%")
	if err != nil {
		return nil, err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	if b.templated() {
		// A copy carries the template's signature as its comment: one
		// query tells what every database holds.
		rows, err := conn.Query(ctx, `SELECT datname, coalesce(shobj_description(oid, 'pg_database'), '') FROM pg_database WHERE datname = ANY($1)`, names)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var n, comment string
			if err := rows.Scan(&n, &comment); err != nil {
				rows.Close()
				return nil, err
			}
			out[n] = comment == b.sig
		}
		rows.Close()
		return out, rows.Err()
	}
	for _, n := range names {
		out[n] = b.holds(ctx, n)
	}
	return out, nil
}

// holds reports whether a database holds the ledger of this signature.
func (b *pgBuilder) holds(ctx context.Context, db string) bool {
	conn, err := b.connect(ctx, db)
	if err != nil {
		return false
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var sig string
	err = conn.QueryRow(ctx, "SELECT signature FROM "+metaTable).Scan(&sig)
	return err == nil && sig == b.sig
}

// templated reports whether the databases are copies of a template: only
// on a server dbrig owns, where it may hold a database nobody connects to
// while it is copied.
func (b *pgBuilder) templated() bool { return b.inst.Owned() }

func (b *pgBuilder) base(ctx context.Context) error {
	if !b.templated() || b.holds(ctx, b.db) {
		return nil
	}
	// The workload's own database is the template: made empty, filled once.
	if err := b.inst.CreateDatabase(ctx, b.db); err != nil {
		return err
	}
	return b.fill(ctx, b.db)
}

// fill makes the ledger in database db, vacuumed and analyzed, so every
// copy starts with its statistics and visibility map.
func (b *pgBuilder) fill(ctx context.Context, db string) error {
	conn, err := b.connect(ctx, db)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	stmts := postgresTables(b.w.size)
	stmts = append(stmts, functions(b.w.functions, postgresFunction)...)
	stmts = append(stmts, "INSERT INTO "+metaTable+" VALUES ("+quotePG(b.sig)+")", "VACUUM (FREEZE, ANALYZE)")
	for _, s := range stmts {
		if _, err := conn.Exec(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", firstLine(s), err)
		}
	}
	return nil
}

func (b *pgBuilder) create(ctx context.Context, name string) error {
	if !b.templated() {
		if err := b.inst.CreateDatabase(ctx, name); err != nil {
			return err
		}
		return b.fill(ctx, name)
	}
	// FILE_COPY copies the template's files (PostgreSQL 15's default,
	// WAL_LOG, writes every block into the WAL: slower for many small
	// databases); before 15 file copy is the only way.
	strategy := ""
	if major(b.inst.Version()) >= 15 {
		strategy = " STRATEGY = FILE_COPY"
	}
	id := pgx.Identifier{name}.Sanitize()
	return b.inst.Exec(ctx, "postgres",
		"DROP DATABASE IF EXISTS "+id+" WITH (FORCE)",
		"CREATE DATABASE "+id+" TEMPLATE "+pgx.Identifier{b.db}.Sanitize()+strategy,
		"COMMENT ON DATABASE "+id+" IS "+quotePG(b.sig))
}

func (b *pgBuilder) drop(ctx context.Context, name string) error {
	if !b.templated() {
		return b.inst.DropDatabase(ctx, name)
	}
	return b.inst.Exec(ctx, "postgres", "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
}

// mariaBuilder makes MariaDB tenants, each built in its own session (a
// MariaDB database is a directory: there is no template to copy).
type mariaBuilder struct {
	inst engine.Instance
	db   string
	sig  string
	w    *tenants
}

func (b *mariaBuilder) open(ctx context.Context, db string) (*sql.DB, error) {
	login, ok := b.inst.UnixLogin(db)
	if !ok {
		login = b.inst.Login(db)
	}
	conn, err := mariadb.Open(ctx, login)
	if err != nil {
		return nil, err
	}
	conn.SetMaxOpenConns(1)
	return conn, nil
}

// admin is the database dbrig's own sessions use: none on a server dbrig
// started (the workload's database may not exist yet); on a target, the
// database dbrig made there.
func (b *mariaBuilder) admin() string {
	if b.inst.Owned() {
		return ""
	}
	return b.db
}

func (b *mariaBuilder) existing(ctx context.Context) (map[string]bool, error) {
	conn, err := b.open(ctx, b.admin())
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	rows, err := conn.QueryContext(ctx, `SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE ?`, strings.ReplaceAll(b.db, "_", `\_`)+`\_t%`)
	if err != nil {
		return nil, err
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return nil, err
		}
		names = append(names, n)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, n := range names {
		var sig string
		err := conn.QueryRowContext(ctx, "SELECT signature FROM `"+n+"`."+metaTable).Scan(&sig)
		out[n] = err == nil && sig == b.sig
	}
	return out, nil
}

func (b *mariaBuilder) base(context.Context) error { return nil }

func (b *mariaBuilder) create(ctx context.Context, name string) error {
	if err := b.inst.CreateDatabase(ctx, name); err != nil {
		return err
	}
	conn, err := b.open(ctx, name)
	if err != nil {
		return err
	}
	defer conn.Close()
	stmts := mariadbTables(b.w.size)
	stmts = append(stmts, functions(b.w.functions, mariadbProcedure)...)
	stmts = append(stmts, "ANALYZE TABLE accounts, journal, invoices", "INSERT INTO "+metaTable+" VALUES ('"+b.sig+"')")
	for _, s := range stmts {
		if _, err := conn.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("%s: %w", firstLine(s), err)
		}
	}
	return nil
}

func (b *mariaBuilder) drop(ctx context.Context, name string) error {
	if !b.inst.Owned() {
		return b.inst.DropDatabase(ctx, name)
	}
	conn, err := b.open(ctx, b.admin())
	if err != nil {
		return err
	}
	defer conn.Close()
	_, err = conn.ExecContext(ctx, "DROP DATABASE IF EXISTS `"+strings.ReplaceAll(name, "`", "``")+"`")
	return err
}

func quotePG(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// major reads a server version's major number ("15.18" is 15).
func major(version string) int {
	n, _ := strconv.Atoi(strings.SplitN(version, ".", 2)[0])
	return n
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " ..."
	}
	if len(s) > 100 {
		s = s[:97] + "..."
	}
	return s
}
