// Package mariatest starts real MariaDB instances for tests. Locally a test
// is skipped, with the reason, when no server is installed; in CI (CI=true)
// that is a failure, never a skip.
package mariatest

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/mariadb"
	"github.com/dbrig/dbrig/internal/engine/tlstest"
)

// FastSettings make a test server quicker to write to; a caller's settings
// override them. (The binary log is off unless asked for.)
var FastSettings = map[string]string{
	"innodb_flush_log_at_trx_commit": "2",
	"innodb_doublewrite":             "OFF",
	"sync_frm":                       "OFF",
}

// Engine returns the engine with the installed server, or skips (fails in
// CI). DBRIG_MARIADB_BIN names another installation.
func Engine(tb testing.TB) *mariadb.Engine {
	tb.Helper()
	e := mariadb.New(os.Getenv("DBRIG_MARIADB_BIN"))
	_, err := e.FindBinaries(context.Background())
	if errors.Is(err, mariadb.ErrNoServer) && os.Getenv("CI") == "" {
		tb.Skipf("skipped: %v", err)
	}
	if err != nil {
		tb.Fatalf("find mariadb: %v", err)
	}
	return e
}

// Start starts an instance under a base directory of the test's own that
// is stopped and removed when the test ends.
func Start(tb testing.TB, name string, settings map[string]string) *mariadb.Instance {
	tb.Helper()
	return StartConfig(tb, engine.InstanceConfig{Name: name, Engine: mariadb.Name, Settings: settings}, BaseDir(tb))
}

// StartConfig starts an instance of cfg (FastSettings under cfg.Settings)
// in base.
func StartConfig(tb testing.TB, cfg engine.InstanceConfig, base string) *mariadb.Instance {
	tb.Helper()
	return startWith(tb, cfg, base, nil)
}

// startWith starts an instance with a fixture's settings beside a study's
// (engine.StartOptions.Fixture).
func startWith(tb testing.TB, cfg engine.InstanceConfig, base string, fixture map[string]string) *mariadb.Instance {
	tb.Helper()
	e := Engine(tb)
	merged := maps.Clone(FastSettings)
	maps.Copy(merged, cfg.Settings)
	cfg.Settings = merged
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	inst, err := e.StartInstance(ctx, cfg, engine.StartOptions{BaseDir: base, Fixture: fixture})
	if err != nil {
		tb.Fatalf("start mariadb: %v", err)
	}
	tb.Cleanup(func() {
		if err := inst.Stop(context.Background()); err != nil {
			tb.Errorf("stop mariadb: %v", err)
		}
	})
	return inst
}

// BaseDir returns a fresh directory that the server account can enter
// (t.TempDir is 0700 and root's when tests run as root), removed at the
// end. Its path is short: a unix socket's path has at most 107 bytes.
func BaseDir(tb testing.TB) string {
	tb.Helper()
	dir, err := os.MkdirTemp("", "dbrig-mt-")
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// Servers returns the pids of running mariadbd processes (by the command
// name in /proc/<pid>/stat) whose command line mentions dir, the base
// directory of the instances they serve. A process that is exiting has an
// empty command line already: see WaitExited.
func Servers(dir string) []int {
	var pids []int
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		pid, err := strconv.Atoi(filepath.Base(p))
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(p + "/stat")
		if err != nil {
			continue
		}
		s := string(stat)
		open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || closing < open || closing+2 >= len(s) {
			continue
		}
		if comm, state := s[open+1:closing], s[closing+2]; comm != "mariadbd" || state == 'Z' || state == 'X' {
			continue
		}
		cmdline, err := os.ReadFile(p + "/cmdline")
		if err == nil && strings.Contains(string(cmdline), dir) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// WaitNoServers waits up to timeout for every mariadbd under dir to exit
// and fails the test, naming the survivors, if any remain.
func WaitNoServers(tb testing.TB, dir string, timeout time.Duration) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		pids := Servers(dir)
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%d mariadbd process(es) under %s still run: %v", len(pids), dir, pids)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// WaitExited waits up to timeout for process pid to be gone (or a zombie)
// and fails the test if it is not.
func WaitExited(tb testing.TB, pid int, timeout time.Duration) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return
		}
		s := string(stat)
		if i := strings.LastIndexByte(s, ')'); i > 0 && i+2 < len(s) && (s[i+2] == 'Z' || s[i+2] == 'X') {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("process %d still runs: %s", pid, s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// StartTLS starts an instance with TLS on, its certificate signed by the
// returned files' CA for hosts. Only the test's own logins ask for TLS:
// dbrig's logins to an instance it started stay plain.
func StartTLS(tb testing.TB, name string, settings map[string]string, hosts ...string) (*mariadb.Instance, tlstest.Files) {
	tb.Helper()
	files := tlstest.Make(tb, hosts...)
	fixture := map[string]string{"ssl_cert": files.Cert, "ssl_key": files.Key, "ssl_ca": files.CA}
	cfg := engine.InstanceConfig{Name: name, Engine: mariadb.Name, Settings: settings}
	return startWith(tb, cfg, BaseDir(tb), fixture), files
}

// LogConnections turns the server's general log on, into a file in the
// instance's directory, from now: every login after it is recorded with
// whether it was encrypted (see Connections). Turn it on after any
// statement that holds a password.
func LogConnections(tb testing.TB, inst *mariadb.Instance) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	path := filepath.Join(inst.Dir(), "general.log")
	if err := inst.Exec(ctx, "", "SET GLOBAL general_log_file = '"+path+"'", "SET GLOBAL general_log = ON"); err != nil {
		tb.Fatal(err)
	}
}

// Connection is one login the general log recorded.
type Connection struct {
	User string
	// SSL is what the server said of it: "using SSL/TLS" or not.
	SSL  bool
	Line string
}

var connectRE = regexp.MustCompile(`\sConnect\s+(\S+)@(\S+) (?:as \S+ )?on .*using (.*)$`)

// Connections are the logins of user the general log recorded.
func Connections(tb testing.TB, inst *mariadb.Instance, user string) []Connection {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join(inst.Dir(), "general.log"))
	if err != nil {
		tb.Fatal(err)
	}
	var out []Connection
	for line := range strings.Lines(string(b)) {
		line = strings.TrimRight(line, "\n")
		if m := connectRE.FindStringSubmatch(line); m != nil && m[1] == user {
			out = append(out, Connection{User: user, SSL: m[3] == "SSL/TLS", Line: line})
		}
	}
	return out
}
