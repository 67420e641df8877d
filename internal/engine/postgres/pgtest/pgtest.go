// Package pgtest starts real PostgreSQL instances for tests. Locally a test
// is skipped, with the reason, when no server binaries are installed; in CI
// (CI=true) that is a failure, never a skip.
package pgtest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/postgres"
)

// Start starts an instance that is stopped and removed when the test ends.
// Settings speed tests up (no fsync) unless the caller overrides them.
func Start(tb testing.TB, name string, settings map[string]string) *postgres.Instance {
	tb.Helper()
	bin := Binaries(tb)
	merged := map[string]string{"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}
	for k, v := range settings {
		merged[k] = v
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	inst, err := postgres.Start(ctx, postgres.Options{InstanceConfig: engine.InstanceConfig{Name: name, Settings: merged}, Binaries: bin})
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
