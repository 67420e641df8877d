package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dbrig/dbrig/internal/engine"
)

// ownerMark is the comment dbrig puts on every database or schema it
// creates on a target, and the only thing it will drop there.
const ownerMark = "made by dbrig for the workload of a study; dbrig removes it when the run ends (unless --keep)"

// Target is a PostgreSQL server the user already runs, standing in for one
// of a study's instances. dbrig never starts, stops, restarts or
// reconfigures it; it creates the workload's database (or, when the login
// may not create databases, a schema in the login's database), marks it as
// its own, and removes it at the end unless kept.
type Target struct {
	name    string
	login   ConnInfo
	version string
	keep    bool
	log     *slog.Logger

	mu   sync.Mutex
	made map[string]string // name -> "database" or "schema"
}

var _ engine.Instance = (*Target)(nil)

// Attach connects to a target and reads its version. It fails with what is
// missing when the server is unreachable or refuses the login.
func (e *Engine) Attach(ctx context.Context, name string, c engine.Conn, opts engine.AttachOptions) (engine.Instance, error) {
	ci := ConnInfoOf(c)
	if ci.Database == "" {
		ci.Database = "postgres"
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	t := &Target{name: name, login: ci, keep: opts.Keep, log: opts.Log.With("target", name), made: map[string]string{}}
	v, err := settingOn(ctx, name, ci, "server_version")
	if err != nil {
		return nil, fmt.Errorf("target %q (%s): %w", name, ci, err)
	}
	num, err := settingOn(ctx, name, ci, "server_version_num")
	if err != nil {
		return nil, fmt.Errorf("target %q (%s): %w", name, ci, err)
	}
	if err := checkTargetVersion(v, num); err != nil {
		return nil, fmt.Errorf("target %q (%s): %w", name, ci, err)
	}
	t.version = v
	return t, nil
}

// minTargetVersion is the oldest PostgreSQL dbrig works with as a target:
// it removes the database it made with DROP DATABASE ... WITH (FORCE),
// which came with PostgreSQL 13.
const minTargetVersion = 130000

// checkTargetVersion refuses a server older than minTargetVersion, saying
// what it lacks; num is server_version_num ("150018").
func checkTargetVersion(version, num string) error {
	n, err := strconv.Atoi(strings.TrimSpace(num))
	if err != nil {
		return fmt.Errorf("cannot read its version number %q", num)
	}
	if n < minTargetVersion {
		return fmt.Errorf("it runs PostgreSQL %s, and dbrig needs 13 or later on a target (it removes the database it makes with DROP DATABASE ... WITH (FORCE), which came with 13)", version)
	}
	return nil
}

// Name is the instance's name in the study.
func (t *Target) Name() string { return t.name }

// Engine is "postgres".
func (t *Target) Engine() string { return Name }

// Version is the server's version as it reports it.
func (t *Target) Version() string { return t.version }

// Owned is false: dbrig did not start this server.
func (t *Target) Owned() bool { return false }

// Login is the user's login, to database db; for a workload database that
// dbrig had to make as a schema, the login's own database with that schema.
func (t *Target) Login(db string) engine.Conn {
	t.mu.Lock()
	kind := t.made[db]
	t.mu.Unlock()
	c := t.login.Conn
	if kind == "schema" {
		c.Schema = db
		return c
	}
	return c.WithDatabase(db)
}

// UnixLogin is the login through a socket, when the user's URI named one.
func (t *Target) UnixLogin(db string) (engine.Conn, bool) {
	if !t.login.IsUnix() {
		return engine.Conn{}, false
	}
	return t.Login(db), true
}

// CreateDatabase makes an empty database of dbrig's own, replacing one
// dbrig made before and refusing one it did not make. When the login may
// not create databases it makes a schema of that name instead.
func (t *Target) CreateDatabase(ctx context.Context, name string) error {
	conn, err := t.connect(ctx, t.login)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	id := pgx.Identifier{name}.Sanitize()
	if err := t.refuseForeign(ctx, conn, "database", name); err != nil {
		return err
	}
	_, err = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+id+" WITH (FORCE)")
	if err == nil {
		_, err = conn.Exec(ctx, "CREATE DATABASE "+id)
	}
	if err == nil {
		if _, err = conn.Exec(ctx, "COMMENT ON DATABASE "+id+" IS "+quoteLiteral(ownerMark)); err != nil {
			return fmt.Errorf("target %q: mark database %s as dbrig's: %w", t.name, name, err)
		}
		t.remember(name, "database")
		return nil
	}
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "42501" {
		return fmt.Errorf("target %q: create database %s: %w", t.name, name, err)
	}
	// No CREATEDB: a schema of dbrig's own in the login's database.
	if err := t.refuseForeign(ctx, conn, "schema", name); err != nil {
		return err
	}
	for _, s := range []string{"DROP SCHEMA IF EXISTS " + id + " CASCADE", "CREATE SCHEMA " + id, "COMMENT ON SCHEMA " + id + " IS " + quoteLiteral(ownerMark)} {
		if _, err := conn.Exec(ctx, s); err != nil {
			return fmt.Errorf("target %q: the login may not create databases, and creating schema %s in database %s failed too: %w", t.name, name, t.login.Database, err)
		}
	}
	t.log.Info("the login may not create databases: using a schema", "schema", name, "database", t.login.Database)
	t.remember(name, "schema")
	return nil
}

func (t *Target) remember(name, kind string) {
	t.mu.Lock()
	t.made[name] = kind
	t.mu.Unlock()
}

// refuseForeign fails when a database or schema of that name exists and
// does not carry dbrig's mark.
func (t *Target) refuseForeign(ctx context.Context, conn *pgx.Conn, kind, name string) error {
	q := "SELECT coalesce(shobj_description(oid, 'pg_database'), '') FROM pg_database WHERE datname = $1"
	if kind == "schema" {
		q = "SELECT coalesce(obj_description(oid, 'pg_namespace'), '') FROM pg_namespace WHERE nspname = $1"
	}
	var mark string
	err := conn.QueryRow(ctx, q, name).Scan(&mark)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return nil
	case err != nil:
		return fmt.Errorf("target %q: look for %s %s: %w", t.name, kind, name, err)
	case mark != ownerMark:
		return fmt.Errorf("target %q already has a %s named %s that dbrig did not make: dbrig touches nothing it did not create (rename or drop it yourself, or choose another study name)", t.name, kind, name)
	}
	return nil
}

// DropDatabase removes a database or schema dbrig made on the target.
func (t *Target) DropDatabase(ctx context.Context, name string) error {
	t.mu.Lock()
	kind, ok := t.made[name]
	t.mu.Unlock()
	if !ok {
		return nil
	}
	conn, err := t.connect(ctx, t.login)
	if err != nil {
		return err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if err := t.refuseForeign(ctx, conn, kind, name); err != nil {
		return err
	}
	stmt := "DROP DATABASE IF EXISTS " + pgx.Identifier{name}.Sanitize() + " WITH (FORCE)"
	if kind == "schema" {
		stmt = "DROP SCHEMA IF EXISTS " + pgx.Identifier{name}.Sanitize() + " CASCADE"
	}
	if _, err := conn.Exec(ctx, stmt); err != nil {
		return fmt.Errorf("target %q: remove %s %s: %w", t.name, kind, name, err)
	}
	t.mu.Lock()
	delete(t.made, name)
	t.mu.Unlock()
	return nil
}

// Exec runs statements in one session on database db.
func (t *Target) Exec(ctx context.Context, db string, sql ...string) error {
	return execOn(ctx, t.name, ConnInfoOf(t.Login(db)), sql...)
}

// Setting reads a setting's current value.
func (t *Target) Setting(ctx context.Context, name string) (string, error) {
	return settingOn(ctx, t.name, t.login, name)
}

// Reconfigure refuses: dbrig never reconfigures a server it did not start.
func (t *Target) Reconfigure(context.Context, map[string]string) (bool, error) {
	return false, fmt.Errorf("target %q is the user's server: dbrig never changes its settings", t.name)
}

// Stop removes the databases dbrig made there, unless kept.
func (t *Target) Stop(ctx context.Context) error {
	t.mu.Lock()
	var names []string
	for n := range t.made {
		names = append(names, n)
	}
	t.mu.Unlock()
	if t.keep {
		if len(names) > 0 {
			t.log.Info("kept what dbrig made on the target", "names", names)
		}
		return nil
	}
	var errs []error
	for _, n := range names {
		errs = append(errs, t.DropDatabase(ctx, n))
	}
	return errors.Join(errs...)
}

// Exited never closes: dbrig does not watch a target's process.
func (t *Target) Exited() <-chan struct{} { return nil }

// PID is 0: the process is not dbrig's.
func (t *Target) PID() int { return 0 }

// LogPath is "": the server's log is not dbrig's.
func (t *Target) LogPath() string { return "" }

func (t *Target) connect(ctx context.Context, ci ConnInfo) (*pgx.Conn, error) {
	cfg, err := ci.ConnConfig()
	if err != nil {
		return nil, err
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to target %q (%s): %w", t.name, ci, err)
	}
	return conn, nil
}

func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// NonDefaultSettings are the target's settings that differ from
// PostgreSQL's defaults, without any that may hold a secret.
func (t *Target) NonDefaultSettings(ctx context.Context) (map[string]string, error) {
	return nonDefaultSettings(ctx, t.name, t.login)
}

// nonDefaultSettings reads pg_settings' values set by a configuration
// file, the command line or the environment; names that may hold a secret
// (passwords, keys, connection strings) are left out.
func nonDefaultSettings(ctx context.Context, name string, ci ConnInfo) (map[string]string, error) {
	cfg, err := ci.ConnConfig()
	if err != nil {
		return nil, err
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to %q: %w", name, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	rows, err := conn.Query(ctx, `SELECT name, current_setting(name) FROM pg_settings
		WHERE source NOT IN ('default', 'override', 'client', 'session')
		  AND name !~ '(password|passphrase|conninfo|_key|secret|ssl_|krb)'`)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		out[k] = v
	}
	return out, rows.Err()
}
