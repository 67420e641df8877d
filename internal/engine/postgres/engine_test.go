package postgres_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
)

func TestCheckSettings(t *testing.T) {
	bin := pgtest.Binaries(t)
	e := postgres.New(bin.Dir)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	tests := []struct {
		name     string
		settings map[string]string
		want     []string // substrings, one per expected error; none = valid
		closest  string
	}{
		{"valid", map[string]string{"shared_buffers": "64MB", "synchronous_commit": "off", "jit": "off", "work_mem": "7MB"}, nil, ""},
		{"misspelt", map[string]string{"synchronus_commit": "on"}, []string{`has no synchronus_commit`}, "synchronous_commit"},
		{"bad enum", map[string]string{"synchronous_commit": "maybe"}, []string{`"maybe" (Available values: local, remote_write, remote_apply, on, off)`}, ""},
		{"bad size", map[string]string{"shared_buffers": "lots"}, []string{"shared_buffers"}, ""},
		{"owned", map[string]string{"port": "5432", "hba_file": "/tmp/trust"}, []string{"port decides where the server listens", "hba_file decides who may log in"}, ""},
		{"read-only", map[string]string{"block_size": "16384"}, []string{"has no block_size"}, ""},
		{"a newline", map[string]string{"work_mem": "4MB\nport = 1"}, []string{"control character"}, ""},
		{"two bad at once", map[string]string{"synchronous_commit": "maybe", "shared_buffers": "lots", "jit": "off"}, []string{"synchronous_commit", "shared_buffers"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := e.CheckSettings(ctx, tt.settings)
			if len(errs) != len(tt.want) {
				t.Fatalf("CheckSettings(%v) = %v, want %d error(s)", tt.settings, errs, len(tt.want))
			}
			if len(errs) == 0 {
				return
			}
			all := errors.Join(errs...).Error()
			for _, w := range tt.want {
				if !strings.Contains(all, w) {
					t.Errorf("errors %q lack %q", all, w)
				}
			}
			if tt.closest != "" {
				var se *engine.SettingError
				if !errors.As(errs[0], &se) || se.Closest != tt.closest {
					t.Errorf("closest = %+v, want %q", errs[0], tt.closest)
				}
			}
		})
	}
}

// TestSettingOfAnotherVersion: the list of what a study may vary names
// settings of several versions; one this server lacks is refused by name.
func TestSettingOfAnotherVersion(t *testing.T) {
	bin := pgtest.Binaries(t)
	e := postgres.New(bin.Dir)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	const newer = "io_method" // PostgreSQL 18
	if e.Context(ctx, newer) != "" {
		t.Skipf("PostgreSQL %s has %s", bin.Version, newer)
	}
	errs := e.CheckSettings(ctx, map[string]string{newer: "sync"})
	var se *engine.SettingError
	if len(errs) != 1 || !errors.As(errs[0], &se) || !se.NameRefused || !strings.Contains(se.Msg, `has no setting "io_method"`) {
		t.Errorf("CheckSettings(%s) = %v, want the name refused", newer, errs)
	}
}

func TestReconfigureReloadsOrRestartsInPlace(t *testing.T) {
	inst := pgtest.Start(t, "reconf", map[string]string{"work_mem": "4MB", "shared_buffers": "32MB"})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := inst.CreateDatabase(ctx, "keep"); err != nil {
		t.Fatal(err)
	}
	if err := inst.Exec(ctx, "keep", "CREATE TABLE survivor (id int)", "INSERT INTO survivor VALUES (42)"); err != nil {
		t.Fatal(err)
	}
	base := map[string]string{"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	steps := []struct {
		settings    map[string]string
		restart     bool
		check, want string
	}{
		{with("work_mem", "8MB", "shared_buffers", "32MB"), false, "work_mem", "8MB"},
		{with("work_mem", "8MB", "shared_buffers", "48MB"), true, "shared_buffers", "48MB"},
		{with("shared_buffers", "48MB"), false, "work_mem", "4MB"}, // removed: back to the default
		{with("shared_buffers", "48MB"), false, "shared_buffers", "48MB"},
	}
	pid := inst.PID()
	for n, s := range steps {
		restarted, err := inst.Reconfigure(ctx, s.settings)
		if err != nil {
			t.Fatalf("step %d: %v", n, err)
		}
		if restarted != s.restart {
			t.Errorf("step %d: restarted = %v, want %v", n, restarted, s.restart)
		}
		got, err := inst.Setting(ctx, s.check)
		if err != nil {
			t.Fatal(err)
		}
		if got != s.want {
			t.Errorf("step %d: %s = %s, want %s", n, s.check, got, s.want)
		}
	}
	if inst.PID() == pid {
		t.Errorf("the postmaster's pid did not change across a restart")
	}
	conn, err := inst.Connect(ctx, "keep")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var v int
	if err := conn.QueryRow(ctx, "SELECT id FROM survivor").Scan(&v); err != nil || v != 42 {
		t.Errorf("data after a restart in place: %d, %v; want 42", v, err)
	}
}

// TestRestartEmptiesTheCache restarts an instance in place: a new
// postmaster on the same data with the same settings, whose shared buffers
// hold none of the table a query read just before.
func TestRestartEmptiesTheCache(t *testing.T) {
	inst := pgtest.Start(t, "restart", map[string]string{"work_mem": "5MB"})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := inst.CreateDatabase(ctx, "keep"); err != nil {
		t.Fatal(err)
	}
	if err := inst.Exec(ctx, "keep", "CREATE TABLE t AS SELECT g AS id FROM generate_series(1, 10000) g", "CHECKPOINT"); err != nil {
		t.Fatal(err)
	}
	// blocksRead counts the table's blocks a count(*) found outside the
	// shared buffers, in the session's own transaction statistics.
	blocksRead := func() int64 {
		t.Helper()
		conn, err := inst.Connect(ctx, "keep")
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		tx, err := conn.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(ctx)
		var n, read int64
		if err := tx.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n); err != nil || n != 10000 {
			t.Fatalf("count = %d, %v; want 10000", n, err)
		}
		if err := tx.QueryRow(ctx, "SELECT pg_stat_get_xact_blocks_fetched('t'::regclass) - pg_stat_get_xact_blocks_hit('t'::regclass)").Scan(&read); err != nil {
			t.Fatal(err)
		}
		return read
	}
	blocksRead()
	if warm := blocksRead(); warm != 0 {
		t.Fatalf("a second read found %d blocks outside the cache, want 0", warm)
	}
	pid := inst.PID()
	if err := inst.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if inst.PID() == pid {
		t.Errorf("the postmaster's pid did not change across a restart")
	}
	if cold := blocksRead(); cold == 0 {
		t.Errorf("after the restart every block was still in the shared buffers")
	}
	if v, err := inst.Setting(ctx, "work_mem"); err != nil || v != "5MB" {
		t.Errorf("work_mem after the restart = %q, %v; want the instance's 5MB", v, err)
	}
}

func TestPlacementAffinityAndMemory(t *testing.T) {
	bin := pgtest.Binaries(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	base, data, wal := pgtest.BaseDir(t), pgtest.BaseDir(t), pgtest.BaseDir(t)
	cfg := engine.InstanceConfig{Name: "placed", CPUs: "0", DataDir: data, WALDir: wal,
		Settings: map[string]string{"fsync": "off"}}
	if _, err := engine.MemoryCgroupSupport(); err == nil {
		cfg.Memory = 512 << 20
	}
	inst, err := postgres.Start(ctx, postgres.Options{InstanceConfig: cfg, StartOptions: engine.StartOptions{BaseDir: base}, Binaries: bin})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Stop(context.Background())
	if !strings.HasPrefix(inst.DataDir(), data) {
		t.Errorf("data directory %s is not under %s", inst.DataDir(), data)
	}
	link, err := os.Readlink(filepath.Join(inst.DataDir(), "pg_wal"))
	if err != nil || !strings.HasPrefix(link, wal) {
		t.Errorf("pg_wal -> %q (%v), want a directory under %s", link, err, wal)
	}
	// The postmaster and a backend it forks inherit the CPU list.
	conn, err := inst.Connect(ctx, "postgres")
	if err != nil {
		t.Fatal(err)
	}
	var backend int
	if err := conn.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&backend); err != nil {
		t.Fatal(err)
	}
	for _, pid := range []int{inst.PID(), backend} {
		if got := cpusAllowed(t, pid); got != "0" {
			t.Errorf("process %d runs on CPUs %q, want 0", pid, got)
		}
	}
	conn.Close(ctx)
	if cg := inst.Cgroup(); cfg.Memory > 0 {
		if cg == nil {
			t.Fatal("no cgroup for a memory cap")
		}
		procs, _ := os.ReadFile(filepath.Join(cg.Path(), "cgroup.procs"))
		if !strings.Contains(string(procs), strconvI(inst.PID())) {
			t.Errorf("the postmaster %d is not in its cgroup %s (%q)", inst.PID(), cg.Path(), procs)
		}
		if cur, _ := cg.Usage(); cur <= 0 {
			t.Errorf("cgroup memory use = %d", cur)
		}
	}
	dir, walDir := inst.Dir(), inst.WALDir()
	if err := inst.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{dir, walDir} {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("%s remains after Stop", d)
		}
	}
}

func cpusAllowed(t *testing.T, pid int) string {
	b, err := os.ReadFile("/proc/" + strconvI(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func strconvI(n int) string { return strconv.Itoa(n) }

func TestTargetTouchesOnlyWhatItMade(t *testing.T) {
	server := pgtest.Start(t, "users-server", nil)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	// The user's own database and a login without CREATEDB.
	if err := server.Exec(ctx, "postgres",
		"CREATE DATABASE dbrig_taken", "CREATE DATABASE shop",
		"CREATE ROLE app LOGIN PASSWORD 'app-secret-pw'",
		"GRANT ALL ON DATABASE shop TO app"); err != nil {
		t.Fatal(err)
	}
	if err := server.Exec(ctx, "shop", "GRANT ALL ON SCHEMA public TO app"); err != nil {
		t.Fatal(err)
	}
	e := postgres.New(pgtest.Binaries(t).Dir)

	// A superuser login: a database of dbrig's own, removed at Stop.
	target, err := e.Attach(ctx, "db", server.Login("postgres"), engine.AttachOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if target.Owned() || target.Version() == "" {
		t.Errorf("target: owned %v, version %q", target.Owned(), target.Version())
	}
	if err := target.CreateDatabase(ctx, "dbrig_taken"); err == nil || !strings.Contains(err.Error(), "did not make") {
		t.Errorf("CreateDatabase over the user's database = %v, want a refusal", err)
	}
	if err := target.CreateDatabase(ctx, "dbrig_study"); err != nil {
		t.Fatal(err)
	}
	if err := target.CreateDatabase(ctx, "dbrig_study"); err != nil { // its own: replaced
		t.Fatalf("recreate dbrig's own database: %v", err)
	}
	if err := target.Exec(ctx, "dbrig_study", "CREATE TABLE t (id int)"); err != nil {
		t.Fatal(err)
	}
	if _, err := target.Reconfigure(ctx, map[string]string{"work_mem": "8MB"}); err == nil {
		t.Error("Reconfigure of a target succeeded")
	}
	if err := target.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if dbs := databases(t, server); !dbs["dbrig_taken"] || dbs["dbrig_study"] || !dbs["shop"] {
		t.Errorf("after Stop the server holds %v: want the user's databases only", dbs)
	}
	if server.PID() == 0 {
		t.Fatal("the user's server stopped")
	}

	// A login that may not create databases: a schema in its database.
	app, err := e.ParseURI("postgres://app:app-secret-pw@127.0.0.1:" + strconv.Itoa(server.Port()) + "/shop")
	if err != nil {
		t.Fatal(err)
	}
	target, err = e.Attach(ctx, "db", app, engine.AttachOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := target.CreateDatabase(ctx, "dbrig_study"); err != nil {
		t.Fatal(err)
	}
	login := target.Login("dbrig_study")
	if login.Database != "shop" || login.Schema != "dbrig_study" {
		t.Errorf("login = %s, want database shop, schema dbrig_study", login)
	}
	if err := target.Exec(ctx, "dbrig_study", "CREATE TABLE in_schema (id int)"); err != nil {
		t.Fatal(err)
	}
	var schema string
	conn, err := server.Connect(ctx, "shop")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if err := conn.QueryRow(ctx, "SELECT table_schema FROM information_schema.tables WHERE table_name = 'in_schema'").Scan(&schema); err != nil || schema != "dbrig_study" {
		t.Errorf("table made in schema %q (%v), want dbrig_study", schema, err)
	}
	if err := target.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_namespace WHERE nspname = 'dbrig_study'").Scan(&n); err != nil || n != 0 {
		t.Errorf("schema left after Stop: %d (%v)", n, err)
	}
}

func databases(t *testing.T, inst *postgres.Instance) map[string]bool {
	conn, err := inst.Connect(context.Background(), "postgres")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(context.Background(), "SELECT datname FROM pg_database")
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, n := range names {
		out[n] = true
	}
	return out
}
