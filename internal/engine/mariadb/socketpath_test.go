package mariadb_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/enginetest"
	"github.com/dbrig/dbrig/internal/engine/mariadb/mariatest"
)

// TestLongInstancePathKeepsItsSocket starts a server whose instance
// directory lies deeper than a unix socket's path may reach (as one on an
// emulated disk does, under its loop device's mount under TMPDIR): the
// server starts, answers through its socket, and the socket's directory
// apart goes at Stop.
func TestLongInstancePathKeepsItsSocket(t *testing.T) {
	t.Parallel()
	e := mariatest.Engine(t)
	base := mariatest.BaseDir(t)
	deep := enginetest.DeepDir(t, base)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	inst, err := e.StartInstance(ctx, engine.InstanceConfig{Name: "long-path", Settings: mariatest.FastSettings},
		engine.StartOptions{BaseDir: deep})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = inst.Stop(context.Background()) })
	sock := inst.Socket()
	if len(sock) > 107 {
		t.Errorf("socket %s is longer than a unix socket's path may be", sock)
	}
	dir := filepath.Dir(sock)
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("socket directory %s: %v, mode %v; want 0700", dir, err, st.Mode().Perm())
	}
	unix, ok := inst.UnixLogin("")
	if !ok || unix.Host != sock {
		t.Fatalf("UnixLogin = %v, %v; want the socket %s", unix, ok, sock)
	}
	var one int
	if err := open(t, unix).QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		t.Fatalf("query through the socket %s: %v", sock, err)
	}
	if err := inst.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the socket directory apart %s outlived Stop: %v", dir, err)
	}
}
