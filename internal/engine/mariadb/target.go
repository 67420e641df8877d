package mariadb

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/dbrig/dbrig/internal/engine"
)

// Target is a MariaDB (or MySQL) server the user runs, attached with
// --target NAME=URI. dbrig never stops, restarts or reconfigures it, and
// creates, replaces and drops only databases it made there.
type Target struct {
	server
	version string
	full    string
	keep    bool
	log     *slog.Logger

	mu   sync.Mutex
	made map[string]bool // databases dbrig made there in this run
}

var leadingVersionRE = regexp.MustCompile(`^(\d+)\.(\d+)(?:\.(\d+))?`)

// AttachTarget logs in to the user's server and reads its version. The
// login's Session settings apply to every session dbrig opens there.
func AttachTarget(ctx context.Context, name string, login engine.Conn, opts engine.AttachOptions) (*Target, error) {
	login.Engine = Name
	t := &Target{server: server{name: name, admin: login.WithDatabase("")}, keep: opts.Keep,
		log: logger(opts.Log).With("target", name), made: map[string]bool{}}
	pool, conn, err := t.connect(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("attach to target %q: %w", name, err)
	}
	defer pool.Close()
	defer conn.Close()
	if err := conn.QueryRowContext(ctx, "SELECT VERSION()").Scan(&t.full); err != nil {
		return nil, fmt.Errorf("attach to target %q (%s): read its version: %w", name, login, err)
	}
	m := leadingVersionRE.FindStringSubmatch(t.full)
	if m == nil {
		return nil, fmt.Errorf("attach to target %q (%s): cannot read the version %q", name, login, t.full)
	}
	t.version = strings.TrimSuffix(m[0], ".")
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	// Database comments, dbrig's mark on the databases it makes, came with
	// MariaDB 10.5; elsewhere a marker table says the same.
	t.markByTable = !strings.Contains(t.full, "MariaDB") || major < 10 || major == 10 && minor < 5
	t.log.Info("attached", "server", login.String(), "version", t.full)
	return t, nil
}

// Name is the instance name the target stands in for.
func (t *Target) Name() string { return t.name }

// Engine is "mariadb".
func (t *Target) Engine() string { return Name }

// Version is the server's version number, e.g. "10.11.19".
func (t *Target) Version() string { return t.version }

// ServerVersion is the version as the server reports it, e.g.
// "10.11.19-MariaDB-0+deb12u1".
func (t *Target) ServerVersion() string { return t.full }

// Owned is false: the user runs this server.
func (t *Target) Owned() bool { return false }

// Login is the user's login to database db, as the URI gave it (TCP or
// the socket).
func (t *Target) Login(db string) engine.Conn { return t.admin.WithDatabase(db) }

// UnixLogin is the login through the server's socket, when the URI named
// one.
func (t *Target) UnixLogin(db string) (engine.Conn, bool) {
	if !t.admin.IsUnix() {
		return engine.Conn{}, false
	}
	return t.admin.WithDatabase(db), true
}

// Reconfigure refuses any change: dbrig never reconfigures a server it
// does not own.
func (t *Target) Reconfigure(ctx context.Context, settings map[string]string) (bool, error) {
	if len(settings) == 0 {
		return false, nil
	}
	return false, fmt.Errorf("target %q is the user's server: dbrig does not change its settings (a study's server settings cannot apply to it)", t.name)
}

// CreateDatabase makes an empty database for the workload, replacing one
// dbrig made before and refusing one it did not make. MariaDB has no
// schemas inside a database: a login that may not create databases gets an
// error that says which privileges it needs.
func (t *Target) CreateDatabase(ctx context.Context, name string) error {
	if err := t.server.CreateDatabase(ctx, name); err != nil {
		return err
	}
	t.mu.Lock()
	t.made[name] = true
	t.mu.Unlock()
	return nil
}

// DropDatabase removes a database dbrig made on the target in this run;
// any other name is left alone.
func (t *Target) DropDatabase(ctx context.Context, name string) error {
	t.mu.Lock()
	made := t.made[name]
	t.mu.Unlock()
	if !made {
		return nil
	}
	if err := t.server.DropDatabase(ctx, name); err != nil {
		return err
	}
	t.mu.Lock()
	delete(t.made, name)
	t.mu.Unlock()
	return nil
}

// Stop removes the databases dbrig made there in this run, unless kept.
// Each call of the other methods opens and closes its own session, so
// there is nothing else to close; the server is not dbrig's to stop.
func (t *Target) Stop(ctx context.Context) error {
	t.mu.Lock()
	names := slices.Sorted(maps.Keys(t.made))
	t.mu.Unlock()
	if t.keep {
		if len(names) > 0 {
			t.log.Info("kept the databases dbrig made on the target", "databases", names)
		}
		return nil
	}
	var errs []error
	for _, n := range names {
		errs = append(errs, t.DropDatabase(ctx, n))
	}
	return errors.Join(errs...)
}

// Exited is never closed (a nil channel): dbrig does not watch the user's
// server process.
func (t *Target) Exited() <-chan struct{} { return nil }

// PID is 0: the process is not dbrig's.
func (t *Target) PID() int { return 0 }

// LogPath is "": the server's log is not dbrig's.
func (t *Target) LogPath() string { return "" }
