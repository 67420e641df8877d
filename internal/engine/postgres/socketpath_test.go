package postgres_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/enginetest"
	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
)

// TestLongInstancePathKeepsItsSocket starts a server whose instance
// directory lies deeper than a unix socket's path may reach (as one on an
// emulated disk does, under its loop device's mount under TMPDIR): the
// server starts, answers through its socket, and the socket's directory
// apart goes at Stop.
func TestLongInstancePathKeepsItsSocket(t *testing.T) {
	t.Parallel()
	bin := pgtest.Binaries(t)
	base := pgtest.BaseDir(t)
	deep := enginetest.DeepDir(t, base)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	inst, err := postgres.Start(ctx, postgres.Options{InstanceConfig: engine.InstanceConfig{Name: "long-path"},
		StartOptions: engine.StartOptions{BaseDir: deep}, Binaries: bin})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = inst.Stop(context.Background()) })
	sock := inst.UnixConn("postgres").Host
	if len(sock)+len("/.s.PGSQL.65535") > 107 {
		t.Errorf("socket directory %s leaves no room for a socket's name", sock)
	}
	if st, err := os.Stat(sock); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("socket directory %s: %v, mode %v; want 0700", sock, err, st.Mode().Perm())
	}
	cfg, err := inst.UnixConn("postgres").ConnConfig()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatalf("connect through the socket in %s: %v", sock, err)
	}
	_ = conn.Close(ctx)
	if err := inst.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("the socket directory apart %s outlived Stop: %v", sock, err)
	}
}
