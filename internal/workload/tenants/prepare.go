package tenants

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
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
		sq, err := sqlOf(inst.Engine())
		if err != nil {
			return fmt.Errorf("instance %q: %w", name, err)
		}
		builders[i] = sq.builder(buildBase{engines: env.Engines, inst: inst, db: env.Database, sig: sig, w: w})
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

// buildBase is what a builder of either engine holds.
type buildBase struct {
	engines *engine.Registry
	inst    engine.Instance
	db      string
	sig     string
	w       *tenants
}

// open opens a session on database db of the instance, over its unix
// socket where it has one.
func (b *buildBase) open(ctx context.Context, db string) (engine.Session, error) {
	login, ok := b.inst.UnixLogin(db)
	if !ok {
		login = b.inst.Login(db)
	}
	return b.engines.OpenSession(ctx, login, engine.SessionOptions{})
}

// run opens a session on database db, runs f on it and closes it.
func (b *buildBase) run(ctx context.Context, db string, f func(s engine.Session) error) error {
	s, err := b.open(ctx, db)
	if err != nil {
		return err
	}
	defer s.Close(context.WithoutCancel(ctx))
	return f(s)
}

// pgBuilder makes PostgreSQL tenants: on a server dbrig started, copies of
// a template database; on a target, each database built in place.
type pgBuilder struct{ buildBase }

// admin is the database dbrig's own sessions use: on a server dbrig
// started, "postgres" (the workload's database may not exist yet); on a
// target, the database dbrig made there.
func (b *pgBuilder) admin() string {
	if b.inst.Owned() {
		return "postgres"
	}
	return b.db
}

// existing lists the tenant databases with, on a server dbrig started,
// each one's comment: a copy carries the template's signature there, so
// one query tells what every database holds.
func (b *pgBuilder) existing(ctx context.Context) (map[string]bool, error) {
	var args engine.Args
	args.Text(strings.ReplaceAll(b.db, "_", "!_") + "!_t%")
	comments := map[string]string{}
	err := b.run(ctx, b.admin(), func(s engine.Session) error {
		return engine.Each(ctx, s, `SELECT datname, coalesce(shobj_description(oid, 'pg_database'), '') FROM pg_database WHERE datname LIKE $1 ESCAPE '!'`, &args,
			func(row [][]byte) error { comments[string(row[0])] = string(row[1]); return nil })
	})
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for n, comment := range comments {
		if b.templated() {
			out[n] = comment == b.sig
		} else {
			out[n] = b.holds(ctx, n)
		}
	}
	return out, nil
}

// holds reports whether a database holds the ledger of this signature.
func (b *pgBuilder) holds(ctx context.Context, db string) bool {
	var sig string
	err := b.run(ctx, db, func(s engine.Session) (err error) {
		sig, err = engine.Value(ctx, s, "SELECT signature FROM "+metaTable)
		return err
	})
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
	stmts := postgresTables(b.w.size)
	stmts = append(stmts, functions(b.w.functions, postgresFunction)...)
	stmts = append(stmts, "INSERT INTO "+metaTable+" VALUES ("+quotePG(b.sig)+")", "VACUUM (FREEZE, ANALYZE)")
	return b.run(ctx, db, func(s engine.Session) error { return s.Exec(ctx, stmts...) })
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
	id := quoteIdentPG(name)
	return b.inst.Exec(ctx, "postgres",
		"DROP DATABASE IF EXISTS "+id+" WITH (FORCE)",
		"CREATE DATABASE "+id+" TEMPLATE "+quoteIdentPG(b.db)+strategy,
		"COMMENT ON DATABASE "+id+" IS "+quotePG(b.sig))
}

func (b *pgBuilder) drop(ctx context.Context, name string) error {
	if !b.templated() {
		return b.inst.DropDatabase(ctx, name)
	}
	return b.inst.Exec(ctx, "postgres", "DROP DATABASE IF EXISTS "+quoteIdentPG(name)+" WITH (FORCE)")
}

// mariaBuilder makes MariaDB tenants, each built in its own session (a
// MariaDB database is a directory: there is no template to copy).
type mariaBuilder struct{ buildBase }

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
	var args engine.Args
	args.Text(strings.ReplaceAll(b.db, "_", `\_`) + `\_t%`)
	out := map[string]bool{}
	err := b.run(ctx, b.admin(), func(s engine.Session) error {
		var names []string
		err := engine.Each(ctx, s, `SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE ?`, &args,
			func(row [][]byte) error { names = append(names, string(row[0])); return nil })
		if err != nil {
			return err
		}
		for _, n := range names {
			sig, err := engine.Value(ctx, s, "SELECT signature FROM `"+n+"`."+metaTable)
			out[n] = err == nil && sig == b.sig
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (b *mariaBuilder) base(context.Context) error { return nil }

func (b *mariaBuilder) create(ctx context.Context, name string) error {
	if err := b.inst.CreateDatabase(ctx, name); err != nil {
		return err
	}
	stmts := mariadbTables(b.w.size)
	stmts = append(stmts, functions(b.w.functions, mariadbProcedure)...)
	stmts = append(stmts, "ANALYZE TABLE accounts, journal, invoices", "INSERT INTO "+metaTable+" VALUES ('"+b.sig+"')")
	return b.run(ctx, name, func(s engine.Session) error { return s.Exec(ctx, stmts...) })
}

func (b *mariaBuilder) drop(ctx context.Context, name string) error {
	if !b.inst.Owned() {
		return b.inst.DropDatabase(ctx, name)
	}
	return b.run(ctx, b.admin(), func(s engine.Session) error {
		return s.Exec(ctx, "DROP DATABASE IF EXISTS `"+strings.ReplaceAll(name, "`", "``")+"`")
	})
}

func quotePG(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// quoteIdentPG quotes a PostgreSQL identifier.
func quoteIdentPG(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

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
