package postgres_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/enginetest"
	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
)

// The test binary doubles as a dbrig that starts an instance and is killed.
const helperBaseEnv = "DBRIG_PG_HELPER_BASE"

func TestMain(m *testing.M) {
	if base := os.Getenv(helperBaseEnv); base != "" && os.Getenv(helperOnceEnv) != "" {
		os.Exit(helperOnce(base))
	}
	if base := os.Getenv(helperBaseEnv); base != "" {
		os.Exit(helperMain(base))
	}
	os.Exit(enginetest.RunWithTempCache(m))
}

// helperMain starts an instance under base and waits to be killed.
func helperMain(base string) int {
	inst, err := postgres.Start(context.Background(), postgres.Options{
		InstanceConfig: engine.InstanceConfig{Name: "child", Settings: map[string]string{"fsync": "off"}},
		StartOptions:   engine.StartOptions{BaseDir: base},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 1
	}
	fmt.Println("ready", inst.PID())
	select {}
}

// TestKilledDuringDataDir: a dbrig killed (SIGKILL) while it makes an
// instance's data directory (the template's copy, then postgres --single
// to set the password) leaves no statement setting the password on disk,
// the single-user server dies with it, and the next run's RemoveStale
// removes the directory at once, however young.
func TestKilledDuringDataDir(t *testing.T) {
	pgtest.Binaries(t)
	base := pgtest.BaseDir(t)
	env := []string{helperBaseEnv + "=" + base}
	dir := filepath.Dir(enginetest.KillWhenMade(t, env, filepath.Join(base, "dbrig-pg-child-*", "data"), "the data directory"))
	if _, err := os.Stat(filepath.Join(dir, "server.log")); err == nil {
		t.Skip("the data directory was made before the kill: nothing to judge here")
	}
	waitNoProcessIn(t, base, 30*time.Second)
	// The password reaches a copy only as a verifier in the statement on
	// postgres --single's stdin: no file may hold that statement (the
	// password the helper made is its own, unknown here).
	if file := enginetest.FileHolding(t, dir, []byte("ALTER ROLE")); file != "" {
		t.Errorf("a killed dbrig left the statement that sets its password in %s", file)
	}
	if removed := postgres.RemoveStale(base); len(removed) != 1 || removed[0] != dir {
		t.Errorf("RemoveStale = %v, want %s at once", removed, dir)
	}
	if entries, _ := os.ReadDir(base); len(entries) != 0 {
		t.Errorf("%d entries left in %s", len(entries), base)
	}
}

// waitNoProcessIn waits until no process works in a directory under base:
// initdb and the postgres it runs in bootstrap mode name no directory on
// their command line, but work in the template's or the instance's.
func waitNoProcessIn(t *testing.T, base string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		var pids []string
		cwds, _ := filepath.Glob("/proc/[0-9]*/cwd")
		for _, c := range cwds {
			if d, err := os.Readlink(c); err == nil && strings.HasPrefix(d, base+"/") {
				pids = append(pids, filepath.Base(filepath.Dir(c)))
			}
		}
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("processes %v still work under %s", pids, base)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestRemoveStaleByOwner: a directory whose recorded dbrig is dead goes,
// however young; one of a live dbrig stays; one without a record (an
// older dbrig's) keeps the hour's grace. The settings check's scratch
// directories go by the same rule.
func TestRemoveStaleByOwner(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	mk := func(name, owner string, age time.Duration) string {
		dir := filepath.Join(base, name)
		if err := os.MkdirAll(filepath.Join(dir, "data"), 0o700); err != nil {
			t.Fatal(err)
		}
		if owner != "" {
			if err := os.WriteFile(filepath.Join(dir, engine.OwnerFile), []byte(owner), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		old := time.Now().Add(-age)
		if err := os.Chtimes(dir, old, old); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	// pid 1 runs, but was not started at tick 0: a recycled pid is no owner.
	dead := mk("dbrig-pg-dead-1", "1 0\n", 0)
	live := mk("dbrig-pg-live-1", "", 0)
	if err := engine.WriteOwner(live); err != nil {
		t.Fatal(err)
	}
	young := mk("dbrig-pg-young-1", "", time.Minute)
	old := mk("dbrig-pg-old-1", "", 2*time.Hour)
	deadCheck := mk("dbrig-pgcheck-1", "1 0\n", 0)
	youngCheck := mk("dbrig-pgcheck-2", "", time.Minute)
	removed := postgres.RemoveStale(base)
	want := map[string]bool{dead: true, old: true, deadCheck: true}
	if len(removed) != len(want) {
		t.Errorf("RemoveStale = %v, want %s, %s and %s", removed, dead, old, deadCheck)
	}
	for _, d := range removed {
		if !want[d] {
			t.Errorf("RemoveStale removed %s", d)
		}
	}
	for _, d := range []string{live, young, youngCheck} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s: %v", d, err)
		}
	}
}
