package mariadb

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"sync"

	"github.com/dbrig/dbrig/internal/engine"
)

// Name is the engine's name in study files and results.
const Name = "mariadb"

var (
	_ engine.Engine    = (*Engine)(nil)
	_ engine.InitFixer = (*Engine)(nil)
	_ engine.Instance  = (*Instance)(nil)
	_ engine.Restarter = (*Instance)(nil)
	_ engine.Instance  = (*Target)(nil)
)

// Engine is MariaDB as dbrig runs it: instances of its own started from
// mariadbd, and servers the user already runs, reached with
// mysql:// or mariadb:// URIs.
type Engine struct {
	binDir string

	binMu sync.Mutex
	bin   *Binaries

	mu     sync.Mutex
	cat    *catalogue          // the options mariadbd knows, once read
	parsed map[string][]string // option parser's refusals, by arguments
	// sessionVars are the variables a session may set, as the targets
	// attached so far report them (SplitSettings).
	sessionVars map[string]bool
}

// New makes the engine. binDir is the --mariadb-bin directory holding
// mariadbd ("" = look on PATH, in /usr/sbin and /usr/bin).
func New(binDir string) *Engine {
	return &Engine{binDir: binDir, parsed: map[string][]string{}}
}

// Name is "mariadb".
func (e *Engine) Name() string { return Name }

// Title is "MariaDB".
func (e *Engine) Title() string { return "MariaDB" }

// Schemes are the URI schemes of MariaDB (and MySQL) servers.
func (e *Engine) Schemes() []string { return []string{"mariadb", "mysql"} }

// SocketExample is a login through a socket file, for messages.
func (e *Engine) SocketExample() string {
	return "mariadb://USER@/DB?socket=/run/mysqld/mysqld.sock"
}

// FindBinaries finds mariadbd and mariadb-install-db once; later calls
// return the same installation.
func (e *Engine) FindBinaries(ctx context.Context) (Binaries, error) {
	e.binMu.Lock()
	defer e.binMu.Unlock()
	if e.bin != nil {
		return *e.bin, nil
	}
	b, err := FindBinaries(ctx, e.binDir)
	if err != nil {
		return Binaries{}, err
	}
	e.bin = &b
	return b, nil
}

// Binaries is FindBinaries in the engine-neutral form.
func (e *Engine) Binaries(ctx context.Context) (engine.Binaries, error) {
	b, err := e.FindBinaries(ctx)
	if err != nil {
		return engine.Binaries{}, err
	}
	return engine.Binaries{Dir: b.Dir(), Version: b.Version}, nil
}

// Start starts an instance dbrig owns; see [StartInstance].
func (e *Engine) Start(ctx context.Context, cfg engine.InstanceConfig, opts engine.StartOptions) (engine.Instance, error) {
	i, err := e.StartInstance(ctx, cfg, opts)
	if err != nil {
		return nil, err
	}
	return i, nil
}

// Attach connects to a server the user runs; see [AttachTarget]. It also
// learns from the server which variables a session may set, for
// SplitSettings.
func (e *Engine) Attach(ctx context.Context, name string, target engine.Conn, opts engine.AttachOptions) (engine.Instance, error) {
	t, err := AttachTarget(ctx, name, target, opts)
	if err != nil {
		return nil, err
	}
	vars, err := t.sessionVariables(ctx)
	if err != nil {
		t.log.Warn("cannot read which variables a session may set: the study's settings must all hold on the server already", "err", err)
	}
	e.mu.Lock()
	if e.sessionVars == nil {
		e.sessionVars = map[string]bool{}
	}
	maps.Copy(e.sessionVars, vars)
	e.mu.Unlock()
	return t, nil
}

// SplitSettings parts settings into those a session may set for itself
// (a variable with a session scope that is not read-only) and the rest.
// mariadbd tells a variable's scope only once it runs, so the split is the
// one the targets attached so far report (Attach reads it from
// information_schema.SYSTEM_VARIABLES); before any, every setting counts as
// the server's, which dbrig then requires to hold already rather than set.
func (e *Engine) SplitSettings(ctx context.Context, settings map[string]string) (session, server map[string]string) {
	session, server = map[string]string{}, map[string]string{}
	e.mu.Lock()
	defer e.mu.Unlock()
	for k, v := range settings {
		if e.sessionVars[normalize(k)] {
			session[k] = v
		} else {
			server[k] = v
		}
	}
	return session, server
}

// FixedAtInitChanged reports whether a setting fixed when the data
// directory is made (innodb_page_size ...) differs between two sets of
// settings, in any spelling of its name.
func (e *Engine) FixedAtInitChanged(old, new map[string]string) (string, bool) {
	o, _ := normalizeSettings(old)
	n, _ := normalizeSettings(new)
	for _, k := range fixedAtInit {
		if o[k] != n[k] {
			return k, true
		}
	}
	return "", false
}

// ParseURI reads a mysql:// or mariadb:// URI; see [ParseURI].
func (e *Engine) ParseURI(uri string) (engine.Conn, error) { return ParseURI(uri) }

func logger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}

func wrapStart(name string, err error) error {
	return fmt.Errorf("start mariadb instance %q: %w", name, err)
}
