package postgres

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"

	"github.com/dbrig/dbrig/internal/engine"
)

// Name is the engine's name in study files, results and URIs.
const Name = "postgres"

// Engine is PostgreSQL as an [engine.Engine]: made once in main with the
// binaries directory the user chose ("" = the newest installed).
type Engine struct {
	dir string

	once sync.Once
	bin  Binaries
	err  error

	catOnce sync.Once
	cat     map[string]catalogEntry
	catErr  error
}

var _ engine.Engine = (*Engine)(nil)

// New makes the engine; binDir is --pg-bin ("" = search).
func New(binDir string) *Engine { return &Engine{dir: binDir} }

// Name is "postgres".
func (e *Engine) Name() string { return Name }

// Title is "PostgreSQL".
func (e *Engine) Title() string { return "PostgreSQL" }

// Schemes are the URI schemes of PostgreSQL's connection strings.
func (e *Engine) Schemes() []string { return []string{"postgres", "postgresql"} }

// keywordRE matches the start of libpq's keyword/value form: a keyword,
// optional spaces and "=".
var keywordRE = regexp.MustCompile(`^\s*[A-Za-z_]+\s*=`)

// ReadsKeywords reports whether s is a libpq keyword/value string
// ("host=/var/run/postgresql dbname=app"), which ParseURI reads.
func (e *Engine) ReadsKeywords(s string) bool { return keywordRE.MatchString(s) }

// SocketExample is a login through a socket directory, for messages.
func (e *Engine) SocketExample() string {
	return "host=/var/run/postgresql (or postgres://USER@/DB?host=/var/run/postgresql)"
}

// PGBinaries finds the server programs once.
func (e *Engine) PGBinaries(ctx context.Context) (Binaries, error) {
	e.once.Do(func() { e.bin, e.err = FindBinaries(ctx, e.dir) })
	return e.bin, e.err
}

// Binaries finds the server programs once.
func (e *Engine) Binaries(ctx context.Context) (engine.Binaries, error) {
	b, err := e.PGBinaries(ctx)
	return engine.Binaries{Dir: b.Dir, Version: b.Version}, err
}

// Start creates and starts an instance.
func (e *Engine) Start(ctx context.Context, cfg engine.InstanceConfig, opts engine.StartOptions) (engine.Instance, error) {
	bin, err := e.PGBinaries(ctx)
	if err != nil {
		return nil, err
	}
	inst, err := Start(ctx, Options{InstanceConfig: cfg, StartOptions: opts, Binaries: bin})
	if err != nil {
		return nil, err
	}
	return inst, nil
}

// ParseURI reads a user's postgres:// URI or keyword/value string.
func (e *Engine) ParseURI(uri string) (engine.Conn, error) {
	ci, err := ParseConnInfo(uri)
	return ci.Conn, err
}

type catalogEntry struct {
	name, context, typ string
}

// catalog reads the names, contexts and types of every setting from
// `postgres --describe-config`.
func (e *Engine) catalog(ctx context.Context) (map[string]catalogEntry, error) {
	e.catOnce.Do(func() {
		bin, err := e.PGBinaries(ctx)
		if err != nil {
			e.catErr = err
			return
		}
		cmd := exec.CommandContext(ctx, bin.Path("postgres"), "--describe-config")
		if err := asServerUser(cmd); err != nil {
			e.catErr = err
			return
		}
		out, err := cmd.Output()
		if err != nil {
			e.catErr = fmt.Errorf("%s --describe-config: %w", bin.Path("postgres"), err)
			return
		}
		e.cat = map[string]catalogEntry{}
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			f := strings.Split(sc.Text(), "\t")
			if len(f) >= 4 {
				e.cat[f[0]] = catalogEntry{name: f[0], context: f[1], typ: f[3]}
			}
		}
	})
	return e.cat, e.catErr
}

// Context returns a setting's context as PostgreSQL names it ("user",
// "sighup", "postmaster", "internal" ...), or "" when it is unknown.
func (e *Engine) Context(ctx context.Context, name string) string {
	cat, err := e.catalog(ctx)
	if err != nil {
		return ""
	}
	return cat[strings.ToLower(name)].context
}

var fatalRE = regexp.MustCompile(`(?m)(?:FATAL|ERROR):\s+(.*)$`)
var hintRE = regexp.MustCompile(`(?m)HINT:\s+(.*)$`)

// CheckSettings validates settings before anything starts: names against
// the list of what a study may vary (StudySetting) and the server's own
// catalogue (the list names settings of several versions), values free of
// control characters and through the server's own parser (`postgres -C`
// over an empty configuration, which reads and checks -c switches without
// a cluster).
func (e *Engine) CheckSettings(ctx context.Context, settings map[string]string) []error {
	cat, err := e.catalog(ctx)
	if err != nil {
		return []error{err}
	}
	bin, err := e.PGBinaries(ctx)
	if err != nil {
		return []error{err}
	}
	dir, err := os.MkdirTemp("", "dbrig-pgcheck-")
	if err != nil {
		return []error{err}
	}
	defer os.RemoveAll(dir)
	if err := prepareCheckDir(dir); err != nil {
		return []error{err}
	}
	// run asks the server's own parser: `postgres -C first -c k=v ...`
	// reads an empty configuration plus the switches, checks each, prints
	// the first one's value and exits.
	run := func(first string, keys []string) (string, bool) {
		args := []string{"-D", dir, "-C", first}
		for _, k := range keys {
			args = append(args, "-c", k+"="+settings[k])
		}
		cmd := exec.CommandContext(ctx, bin.Path("postgres"), args...)
		_ = asServerUser(cmd)
		out, err := cmd.CombinedOutput()
		return string(out), err == nil
	}
	var errs []error
	var valid []string
	for _, k := range slices.Sorted(maps.Keys(settings)) {
		if err := studySetting(k); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := engine.CheckSettingValue(Name, k, settings[k]); err != nil {
			errs = append(errs, err)
			continue
		}
		if _, known := cat[strings.ToLower(k)]; !known {
			errs = append(errs, &engine.SettingError{Engine: Name, Key: k, Value: settings[k], NameRefused: true,
				Msg: fmt.Sprintf("PostgreSQL %s has no setting %q (dbrig's list has it for another version)", bin.Version, k)})
			continue
		}
		valid = append(valid, k)
	}
	if len(valid) == 0 {
		return errs
	}
	if _, ok := run(valid[0], valid); ok {
		return errs
	}
	// Something is wrong: check one at a time to name every bad value.
	for _, k := range valid {
		out, ok := run(k, []string{k})
		if ok {
			continue
		}
		msg := "PostgreSQL refuses it"
		if m := fatalRE.FindStringSubmatch(out); m != nil {
			msg = m[1]
		}
		if h := hintRE.FindStringSubmatch(out); h != nil {
			msg += " (" + strings.TrimSuffix(h[1], ".") + ")"
		}
		errs = append(errs, &engine.SettingError{Engine: Name, Key: k, Value: settings[k], Msg: msg})
	}
	return errs
}

// prepareCheckDir makes an empty configuration the server account can
// read: `postgres -C` needs a data directory's postgresql.conf, nothing
// more.
func prepareCheckDir(dir string) error {
	user, err := engine.FindServerUser()
	if err != nil {
		return err
	}
	// A dbrig killed while it checks leaves the directory: the next
	// RemoveStale knows it by its owner.
	if err := engine.WriteOwner(dir); err != nil {
		return err
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		return err
	}
	conf := filepath.Join(dir, "postgresql.conf")
	if err := os.WriteFile(conf, nil, 0o644); err != nil {
		return err
	}
	return errors.Join(user.Chown(dir), user.Chown(conf))
}

// asServerUser makes cmd run as the server account (PostgreSQL's programs
// refuse root).
func asServerUser(cmd *exec.Cmd) error {
	user, err := engine.FindServerUser()
	if err != nil {
		return err
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: user.Credential()}
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	return nil
}

// SplitSettings parts settings into those of context "user", which any
// session may set for itself, and the rest.
func (e *Engine) SplitSettings(ctx context.Context, settings map[string]string) (session, server map[string]string) {
	session, server = map[string]string{}, map[string]string{}
	for k, v := range settings {
		if e.Context(ctx, k) == "user" {
			session[k] = v
		} else {
			server[k] = v
		}
	}
	return session, server
}
