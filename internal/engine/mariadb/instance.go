package mariadb

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/dbrig/dbrig/internal/engine"
)

// SuperUser is the login dbrig creates on every instance it starts, at
// 127.0.0.1 and localhost (the socket), with a random password.
const SuperUser = "dbrig"

// StartTimeout bounds mariadb-install-db plus the server's start.
const StartTimeout = 2 * time.Minute

// maxSocketPath is the longest unix socket path Linux takes (sun_path).
const maxSocketPath = 107

// Instance is one MariaDB server dbrig started, in a directory of its own:
//
//	<base>/dbrig-mariadb-<name>-*/   mode 0700, the server account's
//	    data/         the data directory (unless data_dir puts it elsewhere)
//	    sock/         0700, holds mysqld.sock (in a directory apart when
//	                  this path is too long for a unix socket's)
//	    tmp/          the server's temporary files (unless tmpdir is set)
//	    server.log    the server's error log
//	    mariadbd.pid  the server's pid file
//	    owner         pid of the dbrig that owns the instance (RemoveStale)
//	    external      directories made outside it (data_dir, wal_dir)
type Instance struct {
	server
	engine  *Engine
	bin     Binaries
	dir     string
	dataDir string
	walDir  string // "" = the redo log lives in the data directory
	// serverDirs are the directories given to the server's account once
	// its data directory is written.
	serverDirs []string
	extDirs    []string
	socket     string
	sockApart  string // the socket's directory when dir's path is too long for it, else ""; removed at Stop
	tmpDir     string
	logPath    string
	pidPath    string
	port       int
	extraPort  int // the administrative port: see MonitorLogin
	password   string
	keep       bool
	user       engine.ServerUser
	cpus       []int
	cgroup     *engine.Cgroup
	disks      *engine.Disks // the emulated disks under the data and redo log, or nil
	log        *slog.Logger
	initArgs   map[string]string // settings fixed when the data directory was made
	stopOnce   sync.Once
	stopErr    error
	exitOnce   sync.Once
	exited     chan struct{} // closed when the server exits for good
	mu         sync.Mutex    // serialises Reconfigure and Stop
	settings   map[string]string
	fixture    map[string]string // engine.StartOptions.Fixture, before the study's settings
	stopped    bool
	procMu     sync.Mutex
	cmd        *exec.Cmd
	procDone   chan struct{} // closed when the current process exits
	procErr    error
	expecting  bool // the current process's exit is dbrig's doing
}

// StartInstance creates and starts an instance: the settings are checked
// first (CheckSettings); mariadb-install-db makes a data directory of its
// own with --no-defaults; mariadbd runs as the unprivileged server account
// when dbrig runs as root, listens on 127.0.0.1 at a free port and on a
// socket in a 0700 directory, and has exactly these logins: dbrig@127.0.0.1
// and dbrig@localhost with a random 24-byte password (never printed,
// logged or written to disk: the data directory is made with its hash),
// and the locked mariadb.sys; no root, no anonymous login. It returns once dbrig's login works. On error
// nothing is left running or on disk (unless opts.Keep), and the error ends
// with the server log's last lines.
func (e *Engine) StartInstance(ctx context.Context, cfg engine.InstanceConfig, opts engine.StartOptions) (inst *Instance, err error) {
	name := cfg.Name
	if name == "" {
		name = Name
	}
	if cfg.Target != "" {
		return nil, wrapStart(name, fmt.Errorf("instance is the target %q: dbrig starts nothing for it", cfg.Target))
	}
	ctx, cancel := context.WithTimeout(ctx, StartTimeout)
	defer cancel()
	pre, err := e.prepareStart(ctx, name, cfg, opts)
	if err != nil {
		return nil, wrapStart(name, err)
	}
	disks, cfg, err := engine.MakeDisks(ctx, cfg, opts.BaseDir, pre.user)
	if err != nil {
		return nil, wrapStart(name, err)
	}
	defer func() {
		if err != nil {
			_ = disks.Close(context.WithoutCancel(ctx))
		}
	}()
	base, err := pre.instanceBase(opts.BaseDir, cfg)
	if err != nil {
		return nil, wrapStart(name, err)
	}
	dir, err := os.MkdirTemp(base, "dbrig-mariadb-"+safeName(name)+"-")
	if err != nil {
		return nil, wrapStart(name, fmt.Errorf("create the instance directory: %w", err))
	}
	i := pre.newInstance(e, dir, opts.Keep, disks)
	// From here Stop removes what was made: the directories, the cgroup
	// and the server.
	defer func() {
		if err != nil {
			err = wrapStart(name, err)
			if stopErr := i.Stop(context.WithoutCancel(ctx)); stopErr != nil {
				err = errors.Join(err, stopErr)
			}
			if i.keep {
				err = fmt.Errorf("%w\n(the instance directory %s is kept)", err, i.dir)
			}
		}
	}()
	if err := i.makeDirs(cfg); err != nil {
		return nil, err
	}
	if l := engine.InstanceLimits(cfg, disks); l.Any() {
		cg, err := engine.NewCgroup(filepath.Base(dir), l)
		if err != nil {
			return nil, fmt.Errorf("memory, CPU and disk caps: %w", err)
		}
		i.cgroup = cg
	}
	if err := i.installDB(ctx); err != nil {
		return nil, err
	}
	if err := i.launchOnFreePorts(ctx); err != nil {
		return nil, err
	}
	pre.log.Info("mariadb started", "version", pre.bin.Version, "port", i.port, "dir", dir)
	return i, nil
}

// startPrep is what an instance's start checks and finds before it makes
// anything.
type startPrep struct {
	name     string
	log      *slog.Logger
	settings map[string]string
	fixture  map[string]string
	cpus     []int
	bin      Binaries
	user     engine.ServerUser
}

// prepareStart checks the instance's settings, fixture, CPUs and memory
// cap, and finds the server's binaries and the user it runs as.
func (e *Engine) prepareStart(ctx context.Context, name string, cfg engine.InstanceConfig, opts engine.StartOptions) (startPrep, error) {
	pre := startPrep{name: name, log: logger(opts.Log).With("instance", name)}
	if errs := e.CheckSettings(ctx, cfg.Settings); len(errs) > 0 {
		return pre, errors.Join(errs...)
	}
	pre.settings, _ = normalizeSettings(cfg.Settings)
	var err error
	if pre.fixture, err = checkFixture(opts.Fixture); err != nil {
		return pre, err
	}
	if cfg.CPUs != "" {
		if pre.cpus, err = engine.CheckCPUs(cfg.CPUs); err != nil {
			return pre, err
		}
	}
	if cfg.Memory < 0 {
		return pre, fmt.Errorf("memory cap %d: want a positive number of bytes, or 0 for none", cfg.Memory)
	}
	if pre.bin, err = e.FindBinaries(ctx); err != nil {
		return pre, err
	}
	pre.user, err = engine.FindServerUser()
	return pre, err
}

// instanceBase is the directory the instance's own goes in, once the
// server's user is known to reach it and the data and WAL directories, and
// a killed dbrig's instances there are removed.
func (pre startPrep) instanceBase(base string, cfg engine.InstanceConfig) (string, error) {
	if base == "" {
		base = os.TempDir()
	}
	for _, d := range []string{base, cfg.DataDir, cfg.WALDir} {
		if d == "" {
			continue
		}
		if err := pre.user.CheckReachable(d); err != nil {
			return "", err
		}
	}
	for _, d := range RemoveStale(base) {
		pre.log.Info("removed the directory of a mariadb instance whose dbrig was killed", "dir", d)
	}
	return base, nil
}

func (pre startPrep) newInstance(e *Engine, dir string, keep bool, disks *engine.Disks) *Instance {
	return &Instance{
		server:   server{name: pre.name},
		engine:   e,
		bin:      pre.bin,
		dir:      dir,
		dataDir:  filepath.Join(dir, "data"),
		socket:   filepath.Join(dir, "sock", "mysqld.sock"),
		tmpDir:   filepath.Join(dir, "tmp"),
		logPath:  filepath.Join(dir, "server.log"),
		pidPath:  filepath.Join(dir, "mariadbd.pid"),
		keep:     keep,
		user:     pre.user,
		cpus:     pre.cpus,
		log:      pre.log,
		settings: pre.settings,
		fixture:  pre.fixture,
		exited:   make(chan struct{}),
		disks:    disks,
	}
}

// launchOnFreePorts starts the server on ports found free, again when one
// was taken before the server bound it.
func (i *Instance) launchOnFreePorts(ctx context.Context) error {
	for attempt := 0; ; attempt++ {
		var err error
		if i.port, err = engine.FreePort(); err != nil {
			return err
		}
		if i.extraPort, err = engine.FreePort(); err != nil {
			return err
		}
		i.admin = i.Login("")
		err = i.launch(ctx)
		if err == nil || attempt >= 3 || !errors.Is(err, errAddressInUse) {
			return err
		}
	}
}

func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, s)
}

// makeDirs makes the instance's directories, closed to others, and records the owner and the directories outside.
func (i *Instance) makeDirs(cfg engine.InstanceConfig) error {
	if err := os.Chmod(i.dir, 0o700); err != nil {
		return err
	}
	if err := engine.WriteOwner(i.dir); err != nil {
		return err
	}
	sockDir, err := i.makeSocketDir()
	if err != nil {
		return err
	}
	if err := os.Mkdir(i.tmpDir, 0o700); err != nil {
		return fmt.Errorf("create the temporary directory: %w", err)
	}
	made := []string{i.dir, sockDir, i.tmpDir}
	// Directories outside the instance directory are named so that no
	// RemoveStale glob (dbrig-mariadb-*) takes them for an instance.
	outside := func(parent, kind string) (string, error) {
		d, err := os.MkdirTemp(parent, "dbrig-"+kind+"-mariadb-"+safeName(i.name)+"-")
		if err != nil {
			return "", fmt.Errorf("create the %s directory under %s: %w", kind, parent, err)
		}
		i.extDirs = append(i.extDirs, d)
		made = append(made, d)
		if err := os.WriteFile(filepath.Join(i.dir, "external"), []byte(strings.Join(i.extDirs, "\n")+"\n"), 0o600); err != nil {
			return "", err
		}
		return d, os.Chmod(d, 0o700)
	}
	if cfg.DataDir != "" {
		d, err := outside(cfg.DataDir, "data")
		if err != nil {
			return err
		}
		i.dataDir = d
	}
	if cfg.WALDir != "" {
		d, err := outside(cfg.WALDir, "wal")
		if err != nil {
			return err
		}
		i.walDir = d
	}
	// They are the server account's only once the template's copy is
	// whole (copyTemplate).
	i.serverDirs = made
	return nil
}

// sockApartLen is the longest path of a socket in a directory apart
// made under a parent (the parent's length added).
const sockApartLen = len("/dbrig-mariadb-sock-0123456789/mysqld.sock")

// makeSocketDir makes the socket's directory, mode 0700: in the instance
// directory, or, when the socket's path there would be too long for the
// kernel (an instance on an emulated disk lies under its loop device's
// mount, under TMPDIR), a directory of its own in the system's temporary
// directory (else /tmp) with the owner record RemoveStale reads.
func (i *Instance) makeSocketDir() (string, error) {
	dir := filepath.Dir(i.socket)
	if len(i.socket) <= maxSocketPath {
		if err := os.Mkdir(dir, 0o700); err != nil {
			return "", fmt.Errorf("create the socket directory: %w", err)
		}
		return dir, nil
	}
	parent := os.TempDir()
	if len(parent)+sockApartLen > maxSocketPath {
		parent = "/tmp"
	}
	dir, err := os.MkdirTemp(parent, "dbrig-mariadb-sock-")
	if err != nil {
		return "", fmt.Errorf("create the socket directory: %w", err)
	}
	i.socket, i.sockApart = filepath.Join(dir, "mysqld.sock"), dir
	if err := engine.WriteOwner(dir); err != nil {
		return "", fmt.Errorf("record the socket directory's owner: %w", err)
	}
	return dir, nil
}

// installDB makes the data directory: a copy of this process's template
// (made by mariadb-install-db on first use), with dbrig's login made from
// the password's hash only.
func (i *Instance) installDB(ctx context.Context) error {
	var err error
	if i.password, err = engine.NewPassword(); err != nil {
		return err
	}
	i.initArgs = map[string]string{}
	for _, k := range initSettings {
		if v, ok := i.settings[k]; ok {
			if !plainWordRE.MatchString(v) {
				return fmt.Errorf("setting %s = %q: mariadb-install-db passes its options on to mariadbd unquoted, so a value there must be one plain word (letters, digits, . _ : + -)", k, v)
			}
			i.initArgs[k] = v
		}
	}
	t, err := templateFor(ctx, i.bin, i.user, i.initArgs, filepath.Dir(i.dir))
	if err != nil {
		return err
	}
	return i.copyTemplate(ctx, t)
}

// plainWordRE is a value mariadb-install-db's shell passes on as one
// argument: the script expands its collected options unquoted, so a space
// would start an option of the study's own and * a file name.
var plainWordRE = regexp.MustCompile(`^[A-Za-z0-9_.:+-]*$`)

// installDBProblems picks the errors out of mariadb-install-db's output,
// which ends with a page of general advice.
func installDBProblems(out string) string {
	var picked []string
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "ERROR") || strings.Contains(line, "[Warning]") || strings.Contains(line, "failed") {
			picked = append(picked, line)
		}
	}
	if len(picked) == 0 {
		return lastLines(out, 10)
	}
	return lastLines(strings.Join(picked, "\n"), 10)
}

// nativePasswordHash is mysql_native_password's stored form of a
// password: "*" and the upper-case hex of SHA1(SHA1(password)).
func nativePasswordHash(pw string) string {
	first := sha1.Sum([]byte(pw))
	second := sha1.Sum(first[:])
	return "*" + strings.ToUpper(hex.EncodeToString(second[:]))
}

// defaultSettings are dbrig's defaults, which a study's settings override:
// Debian's packaged configuration sets utf8mb4, which --no-defaults drops
// (the compiled-in default is latin1). The temporary directory defaults to
// one of the instance's own (servers side by side in one /tmp collide on
// temporary table names: seen in mariadb-install-db's bootstrap).
var defaultSettings = map[string]string{
	"character_set_server": "utf8mb4",
	"collation_server":     "utf8mb4_general_ci",
}

// serverArgs is mariadbd's command line: dbrig's defaults, the study's
// settings, and last (the last occurrence wins) what dbrig owns.
func (i *Instance) serverArgs() []string {
	args := []string{"--no-defaults"}
	if i.bin.BaseDir != "" {
		args = append(args, "--basedir="+i.bin.BaseDir)
	}
	defaults := maps.Clone(defaultSettings)
	defaults["tmpdir"] = i.tmpDir
	if _, ok := i.settings["character_set_server"]; ok {
		delete(defaults, "collation_server") // the character set's own default collation
	}
	for k := range i.settings {
		delete(defaults, k)
	}
	args = append(args, settingArgs(defaults)...)
	args = append(args, settingArgs(i.fixture)...)
	args = append(args, settingArgs(i.settings)...)
	args = append(args,
		"--datadir="+i.dataDir,
		"--bind-address=127.0.0.1",
		"--port="+strconv.Itoa(i.port),
		// A second port with connections of its own, beside
		// max_connections, for dbrig's monitoring (MonitorLogin).
		"--extra-port="+strconv.Itoa(i.extraPort),
		"--extra-max-connections="+strconv.Itoa(extraMaxConnections),
		"--socket="+i.socket,
		"--skip-name-resolve",
		"--log-error="+i.logPath,
		"--pid-file="+i.pidPath,
	)
	if i.walDir != "" {
		args = append(args, "--innodb-log-group-home-dir="+i.walDir)
	}
	return args
}

var errAddressInUse = errors.New("the port was taken")

// launch starts mariadbd and waits until dbrig's login works.
func (i *Instance) launch(ctx context.Context) error {
	logf, err := engine.OpenServerLog(i.logPath, i.user)
	if err != nil {
		return err
	}
	defer logf.Close()
	cmd := exec.Command(i.bin.Server, i.serverArgs()...)
	cmd.Dir = i.dir
	// What mariadbd says before it opens its log (rlimit warnings) goes to
	// the same file.
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: i.user.Credential()}
	logStart, _ := logf.Seek(0, 2)
	i.procMu.Lock()
	i.expecting = true // until it is ready, an exit is a failed start
	i.procMu.Unlock()
	if err := engine.StartWith(cmd, engine.ProcessOptions{CPUs: i.cpus, Cgroup: i.cgroup}); err != nil {
		return fmt.Errorf("start %s: %w", i.bin.Server, err)
	}
	done := make(chan struct{})
	i.procMu.Lock()
	i.cmd, i.procDone, i.procErr = cmd, done, nil
	i.procMu.Unlock()
	go func() { // owned by the instance; ends when this mariadbd exits
		err := cmd.Wait()
		i.procMu.Lock()
		i.procErr = err
		expected := i.expecting
		i.procMu.Unlock()
		close(done)
		if !expected {
			i.log.Warn("mariadbd exited", "err", err, "log", i.logPath)
			i.markExited()
		}
	}()
	if err := i.waitReady(ctx, done, logStart); err != nil {
		return err
	}
	i.procMu.Lock()
	i.expecting = false
	i.procMu.Unlock()
	select {
	case <-done: // exited between the check and now
		i.markExited()
		return fmt.Errorf("mariadbd exited right after it started; its log ends:\n%s", i.logTail())
	default:
	}
	return nil
}

func (i *Instance) waitReady(ctx context.Context, done <-chan struct{}, logStart int64) error {
	cfg, err := Config(i.Login(""))
	if err != nil {
		return err
	}
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return err
	}
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		select {
		case <-done:
			i.procMu.Lock()
			exitErr := i.procErr
			i.procMu.Unlock()
			if i.logSince(logStart, "Address already in use") {
				return fmt.Errorf("%w: port %d: %s", errAddressInUse, i.port, i.logTail())
			}
			return fmt.Errorf("mariadbd exited during start-up (%v); its log ends:\n%s", exitErr, i.logTail())
		case <-ctx.Done():
			i.kill()
			if errors.Is(ctx.Err(), context.Canceled) {
				return fmt.Errorf("mariadbd start-up stopped: %w", context.Cause(ctx))
			}
			return fmt.Errorf("mariadbd did not accept dbrig's login in %v (last: %v); its log ends:\n%s", StartTimeout, last, i.logTail())
		case <-tick.C:
		}
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		conn, err := connector.Connect(cctx)
		cancel()
		if err == nil {
			return conn.Close()
		}
		last = err
	}
}

// logSince reports whether the log, from offset on, contains s.
func (i *Instance) logSince(offset int64, s string) bool {
	b, err := engine.ReadServerFile(i.logPath)
	if err != nil || int64(len(b)) < offset {
		return false
	}
	return strings.Contains(string(b[offset:]), s)
}

func (i *Instance) markExited() { i.exitOnce.Do(func() { close(i.exited) }) }

// kill stops the current process group at once.
func (i *Instance) kill() {
	i.procMu.Lock()
	cmd, done := i.cmd, i.procDone
	i.expecting = true
	i.procMu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
	}
}

// terminate shuts the current server down: SIGTERM (a normal shutdown),
// then SIGKILL of its process group if it has not exited in 30 s.
func (i *Instance) terminate() error {
	i.procMu.Lock()
	cmd, done := i.cmd, i.procDone
	i.expecting = true
	i.procMu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return nil
	}
	pid := cmd.Process.Pid
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal mariadbd (pid %d): %w", pid, err)
	}
	select {
	case <-done:
		return nil
	case <-time.After(30 * time.Second):
	}
	i.log.Warn("mariadbd did not shut down in 30 s: killing it", "pid", pid)
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	select {
	case <-done:
		return nil
	case <-time.After(5 * time.Second):
		return fmt.Errorf("mariadbd (pid %d) did not exit after SIGKILL", pid)
	}
}

// Name is the instance's name.
func (i *Instance) Name() string { return i.name }

// Engine is "mariadb".
func (i *Instance) Engine() string { return Name }

// Version is the server's version, e.g. "10.11.19".
func (i *Instance) Version() string { return i.bin.Version }

// Owned is true: dbrig started this server.
func (i *Instance) Owned() bool { return true }

// Dir is the instance's directory.
func (i *Instance) Dir() string { return i.dir }

// DataDir is the server's data directory.
func (i *Instance) DataDir() string { return i.dataDir }

// WALDir is the redo log's directory ("" = in the data directory).
func (i *Instance) WALDir() string { return i.walDir }

// Port is the TCP port on 127.0.0.1.
func (i *Instance) Port() int { return i.port }

// Socket is the unix socket's path.
func (i *Instance) Socket() string { return i.socket }

// LogPath is the server's error log.
func (i *Instance) LogPath() string { return i.logPath }

// Cgroup is the cgroup capping the server's memory and CPU time (nil without a cap).
func (i *Instance) Cgroup() *engine.Cgroup { return i.cgroup }

// PID is mariadbd's process id (0 before it started).
func (i *Instance) PID() int {
	i.procMu.Lock()
	defer i.procMu.Unlock()
	if i.cmd == nil || i.cmd.Process == nil {
		return 0
	}
	return i.cmd.Process.Pid
}

// Exited is closed when the server exits other than by Reconfigure's
// restart: a crash, or Stop.
func (i *Instance) Exited() <-chan struct{} { return i.exited }

// Login is dbrig's login over 127.0.0.1 to database db.
func (i *Instance) Login(db string) engine.Conn {
	return engine.NewConn(Name, "127.0.0.1", i.port, SuperUser, db, i.password)
}

// extraMaxConnections are the connections the extra port takes beside
// max_connections: the monitoring connection and one to replace it.
const extraMaxConnections = 2

// MonitorLogin is dbrig's login to database db through the server's extra
// port (extra_port, on 127.0.0.1), whose extra_max_connections slots are
// counted apart from max_connections: a workload that takes every
// connection slot does not lock dbrig's monitoring out.
func (i *Instance) MonitorLogin(db string) (engine.Conn, bool) {
	return engine.NewConn(Name, "127.0.0.1", i.extraPort, SuperUser, db, i.password), i.extraPort != 0
}

// UnixLogin is dbrig's login through the private socket.
func (i *Instance) UnixLogin(db string) (engine.Conn, bool) {
	c := i.Login(db)
	c.Host = i.socket
	return c, true
}

// Settings are the study's settings the server runs with now.
func (i *Instance) Settings() map[string]string {
	i.mu.Lock()
	defer i.mu.Unlock()
	return maps.Clone(i.settings)
}

// Reconfigure makes the server run with exactly these settings. Changed
// and added settings that are dynamic system variables
// (information_schema.SYSTEM_VARIABLES.READ_ONLY = 'NO', with a global
// scope) are set with SET GLOBAL, which new sessions see; any other change
// restarts the server in place on the same data directory, port and socket.
// A removed setting restarts too: SET GLOBAL x = DEFAULT would give the
// compiled-in default, which for autosized variables (table_open_cache) is
// not what a fresh start gives. Settings fixed when the data directory was
// made (innodb_page_size, lower_case_table_names ...) cannot change here:
// that needs a new instance.
func (i *Instance) Reconfigure(ctx context.Context, settings map[string]string) (restarted bool, err error) {
	i.mu.Lock()
	defer i.mu.Unlock()
	wrap := func(err error) error { return fmt.Errorf("reconfigure mariadb instance %q: %w", i.name, err) }
	if i.stopped {
		return false, wrap(errors.New("it was stopped"))
	}
	select {
	case <-i.exited:
		return false, wrap(fmt.Errorf("the server has exited; its log ends:\n%s", i.logTail()))
	default:
	}
	if errs := i.engine.CheckSettings(ctx, settings); len(errs) > 0 {
		return false, wrap(errors.Join(errs...))
	}
	want, _ := normalizeSettings(settings)
	if maps.Equal(want, i.settings) {
		return false, nil
	}
	for _, k := range fixedAtInit {
		if want[k] != i.initArgs[k] {
			return false, wrap(fmt.Errorf("setting %s is fixed when the data directory is made (it is %q, the point wants %q): it needs a new instance",
				k, i.initArgs[k], want[k]))
		}
	}
	var changed []string
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if v, ok := i.settings[k]; !ok || v != want[k] {
			changed = append(changed, k)
		}
	}
	restart := false
	for k := range i.settings {
		if _, ok := want[k]; !ok {
			restart = true // removed
		}
	}
	var sets []string
	if !restart {
		types, err := i.dynamicVariables(ctx, changed)
		if err != nil {
			return false, wrap(err)
		}
		for _, k := range changed {
			typ, dynamic := types[k]
			lit, ok := setLiteral(typ, want[k])
			if !dynamic || !ok {
				restart = true
				break
			}
			sets = append(sets, "SET GLOBAL "+k+" = "+lit)
		}
	}
	if !restart {
		if err := i.Exec(ctx, "", sets...); err != nil {
			return false, wrap(err)
		}
		i.settings = want
		i.log.Info("mariadb reconfigured without a restart", "changed", changed)
		return false, nil
	}
	if err := i.restart(ctx, want); err != nil {
		return true, wrap(err)
	}
	i.log.Info("mariadb restarted in place with new settings", "changed", changed)
	return true, nil
}

// Restart stops the server and starts it again on the same data directory
// with the same settings: its buffer pool starts empty unless the settings
// load a dump of it at start-up (innodb_buffer_pool_load_at_startup).
func (i *Instance) Restart(ctx context.Context) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.stopped {
		return fmt.Errorf("restart mariadb instance %q: it was stopped", i.name)
	}
	if err := i.restart(ctx, i.settings); err != nil {
		return fmt.Errorf("restart mariadb instance %q: %w", i.name, err)
	}
	i.log.Info("mariadb restarted in place")
	return nil
}

// dynamicVariables returns the type of each named variable the server can
// change with SET GLOBAL.
func (i *Instance) dynamicVariables(ctx context.Context, names []string) (map[string]string, error) {
	pool, conn, err := i.connect(ctx, "")
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	defer conn.Close()
	types := map[string]string{}
	rows, err := conn.QueryContext(ctx, "SELECT LOWER(VARIABLE_NAME), VARIABLE_TYPE FROM information_schema.SYSTEM_VARIABLES "+
		"WHERE READ_ONLY = 'NO' AND VARIABLE_SCOPE IN ('GLOBAL', 'SESSION')")
	if err != nil {
		return nil, fmt.Errorf("read which variables are dynamic: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			return nil, err
		}
		if slices.Contains(names, name) {
			types[name] = typ
		}
	}
	return types, rows.Err()
}

// setLiteral writes a value for SET GLOBAL in the form the variable's type
// takes; ok is false when SET cannot take it (a restart can).
func setLiteral(typ, v string) (string, bool) {
	switch {
	case strings.Contains(typ, "INT"):
		if n, ok := expandSize(v); ok {
			return strconv.FormatUint(n, 10), true
		}
		if _, err := strconv.ParseInt(v, 10, 64); err == nil {
			return v, true
		}
		if _, err := strconv.ParseUint(v, 10, 64); err == nil {
			return v, true
		}
		return "", false
	case typ == "DOUBLE":
		if _, err := strconv.ParseFloat(v, 64); err == nil {
			return v, true
		}
		return "", false
	case typ == "BOOLEAN":
		switch strings.ToLower(v) {
		case "", "1", "on", "true", "yes", "enable":
			return "ON", true
		case "0", "off", "false", "no", "disable":
			return "OFF", true
		}
		return "", false
	case numberRE.MatchString(v) && (typ == "ENUM" || typ == "SET" || typ == "FLAGSET"):
		return v, true // an enumeration's value by its number
	default:
		return quote(v), true
	}
}

// restart stops the server and starts it again on the same data directory
// with new settings.
func (i *Instance) restart(ctx context.Context, settings map[string]string) error {
	ctx, cancel := context.WithTimeout(ctx, StartTimeout)
	defer cancel()
	if err := i.terminate(); err != nil {
		i.markExited()
		return err
	}
	i.settings = settings
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		if err = i.launch(ctx); !errors.Is(err, errAddressInUse) {
			break
		}
		time.Sleep(200 * time.Millisecond) // the port is ours: wait for it
	}
	if err != nil {
		i.markExited()
		return fmt.Errorf("restart in place: %w", err)
	}
	return nil
}

// Stop shuts the server down (SIGTERM, then SIGKILL of its process group
// after 30 s), removes its cgroup and its directories unless Keep
// was set. It is safe to call more than once and from several goroutines.
func (i *Instance) Stop(ctx context.Context) error {
	i.stopOnce.Do(func() { i.stopErr = i.stop() })
	return i.stopErr
}

func (i *Instance) stop() error {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.stopped = true
	var errs []error
	if err := i.terminate(); err != nil {
		errs = append(errs, err)
	}
	i.markExited()
	if i.cgroup != nil {
		if err := i.cgroup.Remove(); err != nil {
			errs = append(errs, err)
		}
	}
	if i.keep {
		_ = os.WriteFile(filepath.Join(i.dir, "keep"), []byte("kept by dbrig --keep\n"), 0o644)
		i.log.Info("mariadb stopped; directories kept", "dir", i.dir, "external", i.extDirs, "disk_images", i.disks.Keep())
	} else {
		for _, d := range append(slices.Clone(i.extDirs), i.dir) {
			if err := os.RemoveAll(d); err != nil {
				errs = append(errs, fmt.Errorf("remove %s: %w", d, err))
			}
		}
	}
	if i.sockApart != "" { // a stopped server's socket is of no use, kept or not
		if err := os.RemoveAll(i.sockApart); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", i.sockApart, err))
		}
	}
	// An emulated disk's loop device goes with its server, kept or not
	// (one outliving dbrig would hold its backing file); kept, its image
	// stays, the data on it.
	if err := i.disks.Close(context.Background()); err != nil {
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("stop mariadb instance %q: %w", i.name, err)
	}
	return nil
}

// logTail returns the end of the server log, for error messages.
func (i *Instance) logTail() string {
	b, err := engine.ReadServerFile(i.logPath)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	return lastLines(string(b), 12)
}
