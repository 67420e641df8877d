package postgres

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dbrig/dbrig/internal/engine"
)

// SuperUser is the database superuser every instance is created with.
const SuperUser = "dbrig"

// Options describe one instance to start: the engine-neutral configuration
// (name, settings, CPUs, memory, data and WAL placement), how the run
// starts instances, and PostgreSQL's binaries.
type Options struct {
	engine.InstanceConfig
	engine.StartOptions
	// Binaries to run; zero means FindBinaries(ctx, "").
	Binaries Binaries
	// StartTimeout bounds initdb plus start (default 60 s).
	StartTimeout time.Duration
}

// Instance is one running PostgreSQL server in a directory of its own.
type Instance struct {
	name      string
	bin       Binaries
	dir       string
	dataDir   string
	walDir    string // the WAL's own directory when placed apart, else ""
	socketDir string
	// socketApart says the socket directory is not in dir (whose path was
	// too long for a socket's) and goes on its own at Stop.
	socketApart bool
	logPath     string
	port        int
	password    string
	keep        bool
	user        engine.ServerUser
	log         *slog.Logger
	settings    map[string]string
	fixture     map[string]string // engine.StartOptions.Fixture: written before the study's settings
	proc        engine.ProcessOptions
	disks       *engine.Disks // the emulated disks under the data and WAL, or nil

	mu       sync.Mutex // guards cmd, exited, exitErr across restarts
	cmd      *exec.Cmd
	exited   chan struct{} // closed when the postmaster has exited
	exitErr  error
	stopOnce sync.Once
	stopErr  error
}

var (
	_ engine.Instance  = (*Instance)(nil)
	_ engine.Restarter = (*Instance)(nil)
)

// Start creates and starts an instance: a copy of initdb's data directory
// in a fresh temporary directory, a free loopback port, a private unix
// socket directory (mode 0700), scram-sha-256 logins with a random
// password. It returns once the server accepts connections. On error
// nothing is left running.
func Start(ctx context.Context, opts Options) (inst *Instance, err error) {
	opts = opts.withDefaults()
	ctx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	wrap := func(err error) error { return fmt.Errorf("start postgres instance %q: %w", opts.Name, err) }

	pre, err := prepareStart(ctx, opts)
	if err != nil {
		return nil, wrap(err)
	}
	disks, cfg, err := engine.MakeDisks(ctx, opts.InstanceConfig, opts.BaseDir, pre.user)
	if err != nil {
		return nil, wrap(err)
	}
	defer func() {
		if err != nil {
			_ = disks.Close(context.WithoutCancel(ctx))
		}
	}()
	opts.InstanceConfig = cfg
	dir, err := makeInstanceDir(opts, pre.user)
	if err != nil {
		return nil, wrap(err)
	}
	i := newInstance(opts, pre, dir, disks)
	// From here Stop removes what was made: the directory, the socket's and
	// WAL's directories, the cgroup and the server.
	defer func() {
		if err != nil {
			_ = i.Stop(context.WithoutCancel(ctx))
			err = wrap(err)
		}
	}()
	if err := i.placeSocketDir(); err != nil {
		return nil, err
	}
	if err := i.makeWALDir(opts.WALDir); err != nil {
		return nil, err
	}
	if err := i.applyLimits(opts.InstanceConfig, pre.proc); err != nil {
		return nil, err
	}
	if err := i.makeDataDir(ctx); err != nil {
		return nil, err
	}
	if err := i.startOnFreePort(ctx); err != nil {
		return nil, err
	}
	i.log.Info("postgres started", "version", pre.bin.Version, "port", i.port, "dir", dir)
	return i, nil
}

func (opts Options) withDefaults() Options {
	if opts.Name == "" {
		opts.Name = "pg"
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 60 * time.Second
	}
	return opts
}

// startPrereqs is what Start finds before it makes anything: the server's
// CPUs, its binaries and the user it runs as.
type startPrereqs struct {
	proc engine.ProcessOptions
	bin  Binaries
	user engine.ServerUser
}

// prepareStart checks the options and finds the binaries and the server's
// user, so that a bad option refuses before anything is made.
func prepareStart(ctx context.Context, opts Options) (startPrereqs, error) {
	var pre startPrereqs
	if err := checkStudySettings(opts.Settings); err != nil {
		return pre, err
	}
	if err := checkFixture(opts.Fixture); err != nil {
		return pre, err
	}
	var err error
	if opts.CPUs != "" {
		if pre.proc.CPUs, err = engine.CheckCPUs(opts.CPUs); err != nil {
			return pre, fmt.Errorf("cpus: %w", err)
		}
	}
	pre.bin = opts.Binaries
	if pre.bin.Dir == "" {
		if pre.bin, err = FindBinaries(ctx, ""); err != nil {
			return pre, err
		}
	}
	if pre.user, err = engine.FindServerUser(); err != nil {
		return pre, err
	}
	return pre, nil
}

// makeInstanceDir makes the instance's directory under the data directory,
// the base directory or the system's temporary one, after removing what
// killed runs left in it and beside the WAL.
func makeInstanceDir(opts Options, user engine.ServerUser) (string, error) {
	base := opts.BaseDir
	if opts.DataDir != "" {
		base = opts.DataDir
	}
	if base == "" {
		base = os.TempDir()
	}
	for _, d := range []string{base, opts.WALDir} {
		if d == "" {
			continue
		}
		if err := user.CheckReachable(d); err != nil {
			return "", err
		}
		for _, gone := range RemoveStale(d) {
			opts.Log.Info("removed the directory of an instance whose dbrig was killed", "dir", gone)
		}
	}
	dir, err := os.MkdirTemp(base, "dbrig-pg-"+safeName(opts.Name)+"-")
	if err != nil {
		return "", fmt.Errorf("create the instance directory: %w", err)
	}
	// Recorded first, so a later run's RemoveStale knows the directory's
	// dbrig from the start, whenever that dbrig is killed.
	if err := engine.WriteOwner(dir); err != nil {
		_ = os.RemoveAll(dir)
		return "", fmt.Errorf("record the instance directory's owner: %w", err)
	}
	return dir, nil
}

func newInstance(opts Options, pre startPrereqs, dir string, disks *engine.Disks) *Instance {
	return &Instance{
		name: opts.Name, bin: pre.bin, dir: dir, keep: opts.Keep, user: pre.user,
		dataDir:   filepath.Join(dir, "data"),
		socketDir: filepath.Join(dir, "sock"),
		logPath:   filepath.Join(dir, "server.log"),
		log:       opts.Log.With("instance", opts.Name),
		exited:    make(chan struct{}),
		settings:  maps.Clone(opts.Settings),
		fixture:   maps.Clone(opts.Fixture),
		disks:     disks,
	}
}

// makeWALDir makes the WAL's own directory under parent, if one is asked.
func (i *Instance) makeWALDir(parent string) error {
	if parent == "" {
		return nil
	}
	wal, err := os.MkdirTemp(parent, "dbrig-pg-wal-"+safeName(i.name)+"-")
	if err != nil {
		return fmt.Errorf("create the WAL directory: %w", err)
	}
	// Recorded before anything else can fail, so that Stop removes it.
	i.walDir = wal
	// The owner file lets RemoveStale tell a killed run's WAL from a
	// live one.
	// It is the server account's only once the template's copy is whole
	// (copyTemplate).
	return os.WriteFile(filepath.Join(wal, "owner"), []byte(i.dir+"\n"), 0o644)
}

// applyLimits puts the server's processes in a cgroup of their own when the
// instance has memory, CPU or disk caps.
func (i *Instance) applyLimits(cfg engine.InstanceConfig, proc engine.ProcessOptions) error {
	if l := engine.InstanceLimits(cfg, i.disks); l.Any() {
		cg, err := engine.NewCgroup(filepath.Base(i.dir), l)
		if err != nil {
			return fmt.Errorf("memory, CPU and disk caps: %w", err)
		}
		proc.Cgroup = cg
	}
	i.proc = proc
	return nil
}

// startOnFreePort starts the server on a free port. A port found free may
// be taken before the server binds it: retry.
func (i *Instance) startOnFreePort(ctx context.Context) error {
	for attempt := 0; ; attempt++ {
		port, err := engine.FreePort()
		if err != nil {
			return err
		}
		i.port = port
		if err := i.writeConf(i.settings); err != nil {
			return err
		}
		err = i.start(ctx)
		if err == nil {
			return nil
		}
		if attempt < 3 && strings.Contains(i.logTail(), "could not bind") {
			continue
		}
		return err
	}
}

// maxSocketPath is the longest path of a unix socket (sun_path less its
// terminating NUL), and socketName the longest name PostgreSQL gives one.
const (
	maxSocketPath = 107
	socketName    = "/.s.PGSQL.65535"
)

// placeSocketDir moves the socket directory out of the instance directory
// when the socket's path there would be too long for the kernel (an
// instance on an emulated disk lies under its loop device's mount, under
// TMPDIR): into a directory of its own in the system's temporary
// directory (else /tmp), mode 0700, with the owner record RemoveStale
// reads.
func (i *Instance) placeSocketDir() error {
	if len(i.socketDir)+len(socketName) <= maxSocketPath {
		return nil
	}
	parent := os.TempDir()
	if len(parent)+len("/dbrig-pg-sock-0123456789")+len(socketName) > maxSocketPath {
		parent = "/tmp"
	}
	dir, err := os.MkdirTemp(parent, "dbrig-pg-sock-")
	if err != nil {
		return fmt.Errorf("create the socket directory: %w", err)
	}
	i.socketDir, i.socketApart = dir, true
	if err := engine.WriteOwner(dir); err != nil {
		return fmt.Errorf("record the socket directory's owner: %w", err)
	}
	return nil
}

func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, s)
}

// makeDataDir makes the instance's private directories and its data
// directory, a copy of this process's template (made by initdb on first
// use), with the instance's own random password.
func (i *Instance) makeDataDir(ctx context.Context) error {
	var err error
	if i.password, err = engine.NewPassword(); err != nil {
		return err
	}
	if err := os.Chmod(i.dir, 0o700); err != nil {
		return err
	}
	if !i.socketApart {
		if err := os.Mkdir(i.socketDir, 0o700); err != nil {
			return fmt.Errorf("create the socket directory: %w", err)
		}
	}
	t, err := templateFor(ctx, i.bin, i.user, filepath.Dir(i.dir))
	if err != nil {
		return err
	}
	return i.copyTemplate(ctx, t)
}

// initdbArgs are initdb's arguments but the data directory: a template's
// key holds them.
var initdbArgs = []string{"--username", SuperUser, "--auth", "trust", "--encoding", "UTF8", "--locale", "C", "--no-sync"}

// runInitdb makes the template's data directory in workDir, the server
// account's. Its superuser has no password and its pg_hba.conf trusts
// every local login: every copy gets dbrig's pg_hba.conf and its own
// password before its server starts (copyTemplate), and the template,
// kept on disk across processes, holds no password nor any verifier of
// one.
func runInitdb(ctx context.Context, bin Binaries, user engine.ServerUser, workDir, dataDir string) error {
	args := append([]string{"--pgdata", dataDir}, initdbArgs...)
	// initdb runs postgres in bootstrap mode as its child.
	out, err := engine.RunAs(ctx, user, workDir, "", bin.Path("initdb"), args...)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("initdb stopped: %w", context.Cause(ctx))
		}
		return fmt.Errorf("initdb in %s: %w: %s", dataDir, err, lastLines(out, 5))
	}
	return nil
}

// writeConf writes dbrig.conf: dbrig's own settings, the fixture's, then
// the study's.
// Start and Reconfigure have refused every name a study may not set and
// every value with a control character; quoteConf keeps any other value
// one value.
func (i *Instance) writeConf(user map[string]string) error {
	var b bytes.Buffer
	b.WriteString("\n# dbrig\n")
	fmt.Fprintf(&b, "listen_addresses = '127.0.0.1'\nport = %d\nunix_socket_directories = %s\nunix_socket_permissions = 0700\n", i.port, quoteConf(i.socketDir))
	b.WriteString("password_encryption = 'scram-sha-256'\n")
	for _, k := range slices.Sorted(maps.Keys(i.fixture)) {
		fmt.Fprintf(&b, "%s = %s\n", k, quoteConf(i.fixture[k]))
	}
	for _, k := range slices.Sorted(maps.Keys(user)) {
		if err := engine.CheckSettingValue(Name, k, user[k]); err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s = %s\n", k, quoteConf(user[k]))
	}
	// dbrig's block lives in its own file (postgresql.conf includes it
	// from the copy on) so a retry rewrites it whole.
	return engine.WriteServerFile(i.dataDir, "dbrig.conf", b.Bytes(), i.user)
}

// quoteConf quotes a value for PostgreSQL's configuration file, whose
// reader takes a backslash inside quotes as an escape. Doubling quotes
// alone wrote x\'# as x, a backslash, two quotes and #, in quotes: the
// reader took the backslash and the first quote as an escaped quote and
// the second as the end, so # commented out the rest of the line. A
// backslash is doubled too, so the server reads back exactly v. A newline
// cannot be quoted at all (the reader ends a string at one), which is why
// writeConf refuses it.
func quoteConf(v string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, "'", "''").Replace(v) + "'"
}

func (i *Instance) start(ctx context.Context) error {
	// The log is appended to: a restart in place keeps what came before.
	logf, err := engine.OpenServerLog(i.logPath, i.user)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(i.bin.Path("postgres"), "-D", i.dataDir)
	cmd.Dir = i.dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if i.user.Switch {
		// A server that connects to another with TLS (a subscription,
		// postgres_fdw) looks for libpq's default files under HOME: root's
		// would be refused to the server's account, which fails the login.
		cmd.Env = append(cmd.Env, "HOME="+i.dir)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: i.user.Credential()}
	if err := engine.StartWith(cmd, i.proc); err != nil {
		return fmt.Errorf("start %s: %w", i.bin.Path("postgres"), err)
	}
	exited := make(chan struct{})
	i.mu.Lock()
	i.cmd, i.exited, i.exitErr = cmd, exited, nil
	i.mu.Unlock()
	go func() { // owned by the instance; ends when the postmaster exits
		err := cmd.Wait()
		i.mu.Lock()
		i.exitErr = err
		i.mu.Unlock()
		close(exited)
	}()
	if err := i.waitReady(ctx, exited); err != nil {
		return err
	}
	if err := recordDSM(i.dir, cmd.Process.Pid, i.user); err != nil {
		i.log.Warn("postgres: its dynamic shared memory segment not found; a kill would leave it in "+shmDir, "err", err)
	}
	return nil
}

func (i *Instance) waitReady(ctx context.Context, exited <-chan struct{}) error {
	cfg, err := i.Conn("postgres").ConnConfig()
	if err != nil {
		return err
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		select {
		case <-exited:
			i.mu.Lock()
			exitErr := i.exitErr
			i.mu.Unlock()
			return fmt.Errorf("postgres exited during start-up (%v); its log %s ends:\n%s", exitErr, i.logPath, i.logTail())
		case <-ctx.Done():
			return fmt.Errorf("postgres did not accept connections in time (last: %v); its log ends:\n%s", last, i.logTail())
		case <-tick.C:
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		conn, err := pgx.ConnectConfig(cctx, cfg)
		cancel()
		if err == nil {
			return conn.Close(ctx)
		}
		last = err
	}
}

// Name is the instance's name.
func (i *Instance) Name() string { return i.name }

// Engine is "postgres".
func (i *Instance) Engine() string { return Name }

// Owned is true: dbrig started this server.
func (i *Instance) Owned() bool { return true }

// Dir is the instance's directory (data, socket, log).
func (i *Instance) Dir() string { return i.dir }

// DataDir is the cluster's data directory.
func (i *Instance) DataDir() string { return i.dataDir }

// WALDir is the directory holding the write-ahead log when it was placed
// apart from the data ("" when it lives in the data directory).
func (i *Instance) WALDir() string { return i.walDir }

// LogPath is the server's log file.
func (i *Instance) LogPath() string { return i.logPath }

// Port is the TCP port on 127.0.0.1.
func (i *Instance) Port() int { return i.port }

// Binaries are the programs the instance runs.
func (i *Instance) Binaries() Binaries { return i.bin }

// Version is the server's version, e.g. "15.18".
func (i *Instance) Version() string { return i.bin.Version }

// PID is the postmaster's process id.
func (i *Instance) PID() int {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.cmd == nil || i.cmd.Process == nil {
		return 0
	}
	return i.cmd.Process.Pid
}

// Cgroup is the cgroup capping the server's memory and CPU time, or nil.
func (i *Instance) Cgroup() *engine.Cgroup { return i.proc.Cgroup }

// Conn is the superuser's login over loopback TCP to database db.
func (i *Instance) Conn(db string) ConnInfo {
	return ConnInfoOf(engine.NewConn(Name, "127.0.0.1", i.port, SuperUser, db, i.password))
}

// UnixConn is the superuser's login through the private unix socket.
func (i *Instance) UnixConn(db string) ConnInfo {
	c := i.Conn(db)
	c.Host = i.socketDir
	return c
}

// Login is Conn as the engine-neutral login.
func (i *Instance) Login(db string) engine.Conn { return i.Conn(db).Conn }

// UnixLogin is UnixConn as the engine-neutral login.
func (i *Instance) UnixLogin(db string) (engine.Conn, bool) { return i.UnixConn(db).Conn, true }

// MonitorLogin is the login of dbrig's monitoring connection: the
// superuser's, through the unix socket. PostgreSQL keeps
// superuser_reserved_connections (3 unless a study changes it) of its
// max_connections for superusers, so a workload that connects as another
// role and takes every other slot does not lock monitoring out.
func (i *Instance) MonitorLogin(db string) (engine.Conn, bool) { return i.UnixLogin(db) }

// Connect opens a pgx connection to database db over loopback TCP.
func (i *Instance) Connect(ctx context.Context, db string) (*pgx.Conn, error) {
	cfg, err := i.Conn(db).ConnConfig()
	if err != nil {
		return nil, err
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to instance %q: %w", i.name, err)
	}
	return conn, nil
}

// Exec runs SQL statements on database db in one connection.
func (i *Instance) Exec(ctx context.Context, db string, sql ...string) error {
	return execOn(ctx, i.name, i.Conn(db), sql...)
}

func execOn(ctx context.Context, name string, ci ConnInfo, sql ...string) error {
	cfg, err := ci.ConnConfig()
	if err != nil {
		return err
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("connect to instance %q: %w", name, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	for _, s := range sql {
		if _, err := conn.Exec(ctx, s); err != nil {
			return fmt.Errorf("instance %q: %s: %w", name, firstLine(s), err)
		}
	}
	return nil
}

// CreateDatabase makes an empty database owned by the superuser, replacing
// one of that name (dbrig made every database of its own instances).
func (i *Instance) CreateDatabase(ctx context.Context, name string) error {
	return i.Exec(ctx, "postgres",
		"DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)",
		"CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
}

// DropDatabase removes a database (no error when it does not exist).
func (i *Instance) DropDatabase(ctx context.Context, name string) error {
	return i.Exec(ctx, "postgres", "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)")
}

// Setting reads a setting's current value as SHOW prints it ("128MB").
func (i *Instance) Setting(ctx context.Context, name string) (string, error) {
	return settingOn(ctx, i.name, i.Conn("postgres"), name)
}

func settingOn(ctx context.Context, inst string, ci ConnInfo, name string) (string, error) {
	cfg, err := ci.ConnConfig()
	if err != nil {
		return "", err
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return "", fmt.Errorf("connect to instance %q: %w", inst, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	var v string
	if err := conn.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&v); err != nil {
		return "", fmt.Errorf("instance %q: read setting %s: %w", inst, name, err)
	}
	return v, nil
}

// NonDefaultSettings are the server's settings that differ from
// PostgreSQL's defaults.
func (i *Instance) NonDefaultSettings(ctx context.Context) (map[string]string, error) {
	return nonDefaultSettings(ctx, i.name, i.Conn("postgres"))
}

// Settings are the settings dbrig applied on top of its own.
func (i *Instance) Settings() map[string]string { return maps.Clone(i.settings) }

// Reconfigure makes the server run with exactly these settings: dbrig.conf
// is rewritten whole, so a setting no longer given returns to its default.
// When every changed setting can change at run time the configuration is
// reloaded; when one needs a restart (context "postmaster") the server is
// restarted in place, on the same data directory.
func (i *Instance) Reconfigure(ctx context.Context, settings map[string]string) (restarted bool, err error) {
	wrap := func(err error) error { return fmt.Errorf("reconfigure postgres instance %q: %w", i.name, err) }
	if err := checkStudySettings(settings); err != nil {
		return false, wrap(err)
	}
	var changed []string
	for k, v := range settings {
		if old, ok := i.settings[k]; !ok || old != v {
			changed = append(changed, strings.ToLower(k))
		}
	}
	for k := range i.settings {
		if _, ok := settings[k]; !ok {
			changed = append(changed, strings.ToLower(k))
		}
	}
	if len(changed) == 0 {
		return false, nil
	}
	conn, err := i.Connect(ctx, "postgres")
	if err != nil {
		return false, wrap(err)
	}
	var needRestart bool
	err = conn.QueryRow(ctx, "SELECT coalesce(bool_or(context = 'postmaster'), false) FROM pg_settings WHERE name = ANY($1)", changed).Scan(&needRestart)
	conn.Close(context.WithoutCancel(ctx))
	if err != nil {
		return false, wrap(err)
	}
	if err := i.writeConf(settings); err != nil {
		return false, wrap(err)
	}
	i.settings = maps.Clone(settings)
	if !needRestart {
		if err := i.Exec(ctx, "postgres", "SELECT pg_reload_conf()"); err != nil {
			return false, wrap(err)
		}
		i.log.Info("postgres reloaded", "changed", changed)
		return false, nil
	}
	if err := i.shutdown(ctx); err != nil {
		return true, wrap(err)
	}
	if err := i.start(ctx); err != nil {
		return true, wrap(fmt.Errorf("restart in place: %w", err))
	}
	i.log.Info("postgres restarted in place", "changed", changed)
	return true, nil
}

// Restart stops the server (fast shutdown) and starts it again on the same
// data directory with the same settings: its shared buffers start empty.
func (i *Instance) Restart(ctx context.Context) error {
	if err := i.shutdown(ctx); err != nil {
		return fmt.Errorf("restart postgres instance %q: %w", i.name, err)
	}
	if err := i.start(ctx); err != nil {
		return fmt.Errorf("restart postgres instance %q: %w", i.name, err)
	}
	i.log.Info("postgres restarted in place")
	return nil
}

// Exited is closed when the server process has exited for any reason.
func (i *Instance) Exited() <-chan struct{} {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.exited
}

// Stop shuts the server down (fast shutdown; immediate after 10 s; SIGKILL
// after 5 s more) and removes the instance's directory unless Keep was set.
// It is safe to call more than once and from several goroutines.
func (i *Instance) Stop(ctx context.Context) error {
	i.stopOnce.Do(func() { i.stopErr = i.stop(ctx) })
	return i.stopErr
}

// shutdown stops the postmaster and its backends and waits for them.
func (i *Instance) shutdown(context.Context) error {
	i.mu.Lock()
	cmd, exited := i.cmd, i.exited
	i.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return nil
	}
	steps := []struct {
		sig  syscall.Signal
		wait time.Duration
	}{
		{syscall.SIGINT, 10 * time.Second}, // fast shutdown: roll back, disconnect, checkpoint
		{syscall.SIGQUIT, 5 * time.Second}, // immediate shutdown
		{syscall.SIGKILL, 5 * time.Second},
	}
	var errs []error
	for _, s := range steps {
		pid := cmd.Process.Pid
		if s.sig == syscall.SIGKILL {
			pid = -pid // the whole process group: backends too
		}
		if err := syscall.Kill(pid, s.sig); err != nil && !errors.Is(err, syscall.ESRCH) {
			errs = append(errs, fmt.Errorf("signal %v: %w", s.sig, err))
		}
		select {
		case <-exited:
			return errors.Join(errs...)
		case <-time.After(s.wait):
		}
		i.log.Warn("postgres did not stop in time", "signal", s.sig)
	}
	return errors.Join(append(errs, fmt.Errorf("postgres (pid %d) did not exit after SIGKILL", cmd.Process.Pid))...)
}

func (i *Instance) stop(ctx context.Context) error {
	var errs []error
	if err := i.shutdown(ctx); err != nil {
		errs = append(errs, err)
	} else if err := removeDSM(i.dir, i.user.UID); err != nil {
		// Only a server killed leaves its segments; the record says
		// which are its own.
		i.log.Warn("postgres stopped; its dynamic shared memory stays", "err", err)
	}
	if cg := i.proc.Cgroup; cg != nil {
		if err := cg.Remove(); err != nil {
			errs = append(errs, err)
		}
	}
	if i.keep {
		_ = os.WriteFile(filepath.Join(i.dir, "keep"), []byte("kept by dbrig --keep\n"), 0o644)
		i.log.Info("postgres stopped; directory kept", "dir", i.dir, "disk_images", i.disks.Keep())
	} else {
		for _, d := range []string{i.dir, i.walDir} {
			if d == "" {
				continue
			}
			if err := os.RemoveAll(d); err != nil {
				errs = append(errs, fmt.Errorf("remove %s: %w", d, err))
			}
		}
	}
	if i.socketApart {
		if err := os.RemoveAll(i.socketDir); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", i.socketDir, err))
		}
	}
	// An emulated disk's loop device goes with its server, kept or not
	// (one outliving dbrig would hold its backing file); kept, its image
	// stays, the data on it.
	if err := i.disks.Close(ctx); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("stop postgres instance %q: %w", i.name, err)
	}
	return nil
}

// logTail returns the end of the server log, for error messages.
func (i *Instance) logTail() string {
	b, err := engine.ReadServerFile(i.logPath)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	return lastLines(string(b), 10)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
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
