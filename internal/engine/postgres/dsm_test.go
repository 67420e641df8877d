package postgres_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine/enginetest"
	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
)

// segmentsOf returns the instance's dynamic shared memory files, each of
// which must exist while its server runs.
func segmentsOf(t *testing.T, dir string) []string {
	t.Helper()
	files, err := postgres.DSMSegments(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if _, err := os.Lstat(f); err != nil {
			t.Fatalf("a running server's segment: %v", err)
		}
	}
	return files
}

func checkGone(t *testing.T, files []string) {
	t.Helper()
	for _, f := range files {
		if _, err := os.Lstat(f); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is left behind (%v)", f, err)
		}
	}
}

// TestStopAfterKillRemovesSharedMemory: a postmaster killed with SIGKILL
// (what the kernel does to dbrig's servers when dbrig dies) leaves its
// dynamic shared memory in /dev/shm; Stop removes it.
func TestStopAfterKillRemovesSharedMemory(t *testing.T) {
	t.Parallel()
	inst := pgtest.Start(t, "dsmkill", nil)
	files := segmentsOf(t, inst.Dir())
	if err := syscall.Kill(inst.PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-inst.Exited()
	if err := inst.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkGone(t, files)
}

// TestRemoveStaleRemovesAKilledRunsSharedMemory: a dbrig killed with its
// server running leaves the server's segments; the next run's RemoveStale
// removes them with the directory.
func TestRemoveStaleRemovesAKilledRunsSharedMemory(t *testing.T) {
	pgtest.Binaries(t)
	base := pgtest.BaseDir(t)
	env := []string{helperBaseEnv + "=" + base}
	record := enginetest.KillWhenMade(t, env, filepath.Join(base, "dbrig-pg-child-*", "dsm-control"), "the dynamic shared memory record")
	waitNoProcessIn(t, base, 30*time.Second)
	files := segmentsOf(t, filepath.Dir(record))
	postgres.RemoveStale(base)
	checkGone(t, files)
	if _, err := os.Lstat(filepath.Dir(record)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the killed run's directory stays: %v", err)
	}
}
