// Package pgtest starts real PostgreSQL instances for tests. Locally a test
// is skipped, with the reason, when no server binaries are installed; in CI
// (CI=true) that is a failure, never a skip.
package pgtest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sys/unix"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/engine/tlstest"
)

// Start starts an instance that is stopped and removed when the test ends.
// Settings speed tests up (no fsync) unless the caller overrides them.
func Start(tb testing.TB, name string, settings map[string]string) *postgres.Instance {
	tb.Helper()
	return startWith(tb, name, settings, nil)
}

// StartOnDisk is Start with the instance's directory on a disk (under
// /var/tmp), for a test whose subject is the disk beneath the data (make
// test puts TMPDIR on a tmpfs); it skips where /var/tmp is no disk.
func StartOnDisk(tb testing.TB, name string, settings map[string]string) *postgres.Instance {
	tb.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs("/var/tmp", &st); err != nil || st.Type == unix.TMPFS_MAGIC {
		tb.Skipf("/var/tmp is not on a disk (%v)", err)
	}
	dir, err := os.MkdirTemp("/var/tmp", "dbrig-test-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	return startIn(tb, name, settings, nil, dir)
}

// startWith starts an instance with a fixture's settings beside a study's
// (engine.StartOptions.Fixture).
func startWith(tb testing.TB, name string, settings, fixture map[string]string) *postgres.Instance {
	tb.Helper()
	return startIn(tb, name, settings, fixture, "")
}

// startIn is startWith in base ("": under TMPDIR).
func startIn(tb testing.TB, name string, settings, fixture map[string]string, base string) *postgres.Instance {
	tb.Helper()
	bin := Binaries(tb)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	inst, err := postgres.Start(ctx, postgres.Options{InstanceConfig: engine.InstanceConfig{Name: name, Settings: fast(settings)},
		StartOptions: engine.StartOptions{Fixture: fixture, BaseDir: base}, Binaries: bin})
	if err != nil {
		tb.Fatalf("start postgres: %v", err)
	}
	tb.Cleanup(func() {
		if err := inst.Stop(context.Background()); err != nil {
			tb.Errorf("stop postgres: %v", err)
		}
	})
	return inst
}

// fast turns off what makes a test server wait for its disk (a test's data
// need not survive a crash) unless settings say otherwise.
func fast(settings map[string]string) map[string]string {
	merged := map[string]string{"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}
	for k, v := range settings {
		merged[k] = v
	}
	return merged
}

// Binaries finds the server binaries or skips (fails in CI).
func Binaries(tb testing.TB) postgres.Binaries {
	tb.Helper()
	bin, err := postgres.FindBinaries(context.Background(), os.Getenv("DBRIG_PG_BIN"))
	if errors.Is(err, postgres.ErrNoServer) && os.Getenv("CI") == "" {
		tb.Skipf("skipped: %v", err)
	}
	if err != nil {
		tb.Fatalf("find postgres: %v", err)
	}
	return bin
}

// BaseDir returns a fresh directory that the server account can enter
// (t.TempDir is 0700 and root's when tests run as root), removed at the end.
func BaseDir(tb testing.TB) string {
	tb.Helper()
	dir, err := os.MkdirTemp("", "dbrig-test-")
	if err != nil {
		tb.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// ServersUnder returns the pids of running processes whose command line
// mentions dir: the servers (and their backends) of instances created in it.
func ServersUnder(dir string) []int {
	var pids []int
	procs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || !strings.Contains(string(b), dir) {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if err == nil && pid != os.Getpid() {
			pids = append(pids, pid)
		}
	}
	return pids
}

// WaitNoServers waits up to timeout for every server under dir to exit and
// fails the test, naming the survivors, if any remain.
func WaitNoServers(tb testing.TB, dir string, timeout time.Duration) {
	tb.Helper()
	deadline := time.Now().Add(timeout)
	for {
		pids := ServersUnder(dir)
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("%d server process(es) under %s still run: %v", len(pids), dir, pids)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// StartTLS starts an instance with TLS on, its certificate signed by the
// returned files' CA for hosts, and every connection logged with whether
// it was encrypted (see Connections). Only the test's own logins ask for
// TLS: dbrig's logins to an instance it started stay plain.
func StartTLS(tb testing.TB, name string, settings map[string]string, hosts ...string) (*postgres.Instance, tlstest.Files) {
	tb.Helper()
	files := tlstest.Make(tb, hosts...)
	fixture := map[string]string{"ssl": "on", "ssl_cert_file": files.Cert, "ssl_key_file": files.Key, "log_connections": "on"}
	study := map[string]string{}
	for k, v := range settings {
		if postgres.New("").StudySetting(k) == nil {
			study[k] = v
		} else {
			fixture[k] = v
		}
	}
	return startWith(tb, name, study, fixture), files
}

// Connection is one login the server logged (log_connections).
type Connection struct {
	User, Database, Application string
	Replication                 bool
	// SSL is what the server said of it: encrypted or plain.
	SSL bool
	// Line is the log line, for a failure's message.
	Line string
}

var authorizedRE = regexp.MustCompile(`(replication )?connection authorized: user=(\S+)(?: database=(\S+))?(?: application_name=(.*?))?( SSL enabled|$)`)

// Connections are the logins of user the server logged so far.
func Connections(tb testing.TB, inst *postgres.Instance, user string) []Connection {
	tb.Helper()
	b, err := os.ReadFile(inst.LogPath())
	if err != nil {
		tb.Fatal(err)
	}
	var out []Connection
	for line := range strings.Lines(string(b)) {
		line = strings.TrimRight(line, "\n")
		m := authorizedRE.FindStringSubmatch(line)
		if m == nil || m[2] != user {
			continue
		}
		out = append(out, Connection{User: m[2], Database: m[3], Application: m[4], Replication: m[1] != "",
			SSL: m[5] != "", Line: line})
	}
	return out
}

// Session is a session the server runs now, as pg_stat_activity and
// pg_stat_ssl show it.
type Session struct {
	PID         int
	Application string
	Backend     string
	SSL         bool
}

// Sessions are the sessions of user the server runs now, except the one
// that asks.
func Sessions(tb testing.TB, inst *postgres.Instance, user string) []Session {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn, err := inst.Connect(ctx, "postgres")
	if err != nil {
		tb.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(ctx, `SELECT a.pid, a.application_name, coalesce(a.backend_type, ''), s.ssl
		FROM pg_stat_activity a JOIN pg_stat_ssl s USING (pid)
		WHERE a.usename = $1 AND a.pid <> pg_backend_pid() ORDER BY a.pid`, user)
	if err != nil {
		tb.Fatal(err)
	}
	var out []Session
	var s Session
	_, err = pgx.ForEachRow(rows, []any{&s.PID, &s.Application, &s.Backend, &s.SSL}, func() error {
		out = append(out, s)
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}
