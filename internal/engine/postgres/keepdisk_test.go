package postgres_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/blockdev"
	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
)

// TestKeepOnAnEmulatedDiskKeepsTheData: an instance kept (--keep) whose
// data is on an emulated disk leaves that disk's image, with a note
// beside it; mounted as the note says, the data directory is where the
// server had it, with PG_VERSION and the table's file. The loop device
// itself goes at Stop, kept or not.
func TestKeepOnAnEmulatedDiskKeepsTheData(t *testing.T) {
	t.Parallel()
	if err := blockdev.Permitted(); err != nil {
		t.Skipf("skipped: %v", err)
	}
	if _, err := engine.CgroupSupport("blkio"); err != nil {
		t.Skipf("skipped: %v", err)
	}
	bin := pgtest.Binaries(t)
	base := pgtest.BaseDir(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	inst, err := postgres.Start(ctx, postgres.Options{Binaries: bin, InstanceConfig: engine.InstanceConfig{Name: "kept", DataDisk: "nvme"},
		StartOptions: engine.StartOptions{BaseDir: base, Keep: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = inst.Stop(context.Background()) })
	conn, err := inst.Connect(ctx, "postgres")
	if err != nil {
		t.Fatal(err)
	}
	var table string
	_, err = conn.Exec(ctx, "CREATE TABLE kept AS SELECT g FROM generate_series(1, 1000) g")
	if err == nil {
		err = conn.QueryRow(ctx, "SELECT pg_relation_filepath('kept')").Scan(&table)
	}
	if err == nil {
		_, err = conn.Exec(ctx, "CHECKPOINT")
	}
	_ = conn.Close(ctx)
	if err != nil {
		t.Fatal(err)
	}
	data := inst.DataDir()
	if err := inst.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	notes, _ := filepath.Glob(filepath.Join(base, "dbrig-loop-*", blockdev.KeptFile))
	if len(notes) != 1 {
		t.Fatalf("%d notes of a kept disk under %s, want 1", len(notes), base)
	}
	mount := mountAsNoted(t, notes[0])
	if !strings.HasPrefix(data, mount+"/") {
		t.Fatalf("the data directory %s is not on the kept disk mounted at %s", data, mount)
	}
	for _, f := range []string{"PG_VERSION", table} {
		if _, err := os.Stat(filepath.Join(data, f)); err != nil {
			t.Errorf("the kept disk lacks the data directory's %s: %v", f, err)
		}
	}
}

// mountAsNoted runs the mount command a kept disk's note gives, unmounts
// it when the test ends, and returns the mount point.
func mountAsNoted(t *testing.T, note string) string {
	t.Helper()
	b, err := os.ReadFile(note)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		args := strings.Fields(line)
		if len(args) == 5 && args[0] == "mount" {
			if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
				t.Fatalf("%s: %v: %s", line, err, out)
			}
			t.Cleanup(func() {
				if out, err := exec.Command("umount", args[4]).CombinedOutput(); err != nil {
					t.Errorf("umount %s: %v: %s", args[4], err, out)
				}
			})
			return args[4]
		}
	}
	t.Fatalf("the note %s says no mount command:\n%s", note, b)
	return ""
}
