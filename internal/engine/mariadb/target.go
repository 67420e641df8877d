package mariadb

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"

	"github.com/dbrig/dbrig/internal/engine"
)

// Target is a MariaDB (or MySQL) server the user runs, attached with
// --target NAME=URI. dbrig never stops, restarts or reconfigures it, and
// creates, replaces and drops only databases it made there.
type Target struct {
	server
	version string
	full    string
	log     *slog.Logger
	exited  chan struct{}
}

var leadingVersionRE = regexp.MustCompile(`^(\d+)\.(\d+)(?:\.(\d+))?`)

// AttachTarget logs in to the user's server and reads its version. The
// login's Session settings apply to every session dbrig opens there.
func AttachTarget(ctx context.Context, name string, login engine.Conn, opts engine.AttachOptions) (*Target, error) {
	login.Engine = EngineName
	t := &Target{server: server{name: name, admin: login.WithDatabase("")}, log: logger(opts.Log).With("target", name),
		exited: make(chan struct{})}
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
func (t *Target) Engine() string { return EngineName }

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

// Stop closes what dbrig opened (each call opens and closes its own
// session, so nothing is left); it stops nothing and drops nothing.
func (t *Target) Stop(ctx context.Context) error { return nil }

// Exited is never closed: dbrig does not watch the user's server process.
func (t *Target) Exited() <-chan struct{} { return t.exited }

// PID is 0: the process is not dbrig's.
func (t *Target) PID() int { return 0 }

// LogPath is "": the server's log is not dbrig's.
func (t *Target) LogPath() string { return "" }
