package postgres_test

import (
	"context"
	"maps"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
)

func TestInstancesStartConnectAndStop(t *testing.T) {
	bin := pgtest.Binaries(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	// Two instances at once, each with its own settings.
	settings := []map[string]string{
		{"work_mem": "7MB", "fsync": "off"},
		{"work_mem": "9MB", "fsync": "off"},
	}
	insts := make([]*postgres.Instance, len(settings))
	var wg sync.WaitGroup
	errs := make([]error, len(settings))
	for n := range settings {
		wg.Go(func() {
			insts[n], errs[n] = postgres.Start(ctx, postgres.Options{InstanceConfig: engine.InstanceConfig{Name: "t" + string(rune('a'+n)), Settings: settings[n]}, Binaries: bin})
		})
	}
	wg.Wait()
	for n, err := range errs {
		if err != nil {
			t.Fatalf("start instance %d: %v", n, err)
		}
		defer insts[n].Stop(context.Background())
	}
	if insts[0].Port() == insts[1].Port() {
		t.Fatalf("both instances on port %d", insts[0].Port())
	}
	for n, inst := range insts {
		for _, ci := range []postgres.ConnInfo{inst.Conn("postgres"), inst.UnixConn("postgres")} {
			cfg, err := ci.ConnConfig()
			if err != nil {
				t.Fatal(err)
			}
			conn, err := pgx.ConnectConfig(ctx, cfg)
			if err != nil {
				t.Fatalf("connect %s: %v", ci, err)
			}
			var workMem, listen string
			if err := conn.QueryRow(ctx, "SELECT current_setting('work_mem'), current_setting('listen_addresses')").Scan(&workMem, &listen); err != nil {
				t.Fatal(err)
			}
			conn.Close(ctx)
			if want := settings[n]["work_mem"]; workMem != want {
				t.Errorf("instance %d: work_mem = %s, want %s", n, workMem, want)
			}
			if listen != "127.0.0.1" {
				t.Errorf("instance %d listens on %q, want loopback only", n, listen)
			}
		}
		if strings.Contains(inst.Conn("x").String(), inst.Conn("x").Password()) {
			t.Errorf("ConnInfo.String leaks the password")
		}
		st, err := os.Stat(inst.UnixConn("x").Host)
		if err != nil || st.Mode().Perm() != 0o700 {
			t.Errorf("socket directory mode = %v, %v; want 0700", st.Mode().Perm(), err)
		}
	}

	// A wrong password is refused: logins really are scram-sha-256.
	bad := insts[0].Conn("postgres")
	cfg, _ := bad.ConnConfig()
	cfg.Password = "wrong"
	if conn, err := pgx.ConnectConfig(ctx, cfg); err == nil {
		conn.Close(ctx)
		t.Error("login with a wrong password succeeded")
	}

	// Stop: the process is gone and the directory removed.
	pid, dir := insts[0].PID(), insts[0].Dir()
	if err := insts[0].Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("postmaster %d still runs after Stop", pid)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("directory %s still exists after Stop (err %v)", dir, err)
	}
	if err := insts[0].Stop(ctx); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

func TestStartErrors(t *testing.T) {
	bin := pgtest.Binaries(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	tests := []struct {
		name     string
		settings map[string]string
		want     string
	}{
		{"unknown setting", map[string]string{"no_such_setting": "1"}, "no_such_setting"},
		{"bad value", map[string]string{"shared_buffers": "lots"}, "shared_buffers"},
		{"owned setting", map[string]string{"listen_addresses": "*"}, "listen_addresses decides where the server listens (127.0.0.1 only), which belongs to dbrig"},
		{"a trust file", map[string]string{"hba_file": "/tmp/trust.conf"}, "hba_file decides who may log in"},
		{"a newline in a value", map[string]string{"synchronous_commit": "off\nport = 55999"}, "control character"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := pgtest.BaseDir(t)
			_, err := postgres.Start(ctx, postgres.Options{InstanceConfig: engine.InstanceConfig{Name: "bad", Settings: tt.settings}, StartOptions: engine.StartOptions{BaseDir: base}, Binaries: bin})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Start = %v, want an error naming %q", err, tt.want)
			}
			if entries, _ := os.ReadDir(base); len(entries) != 0 {
				t.Errorf("a failed start left %d entries in %s", len(entries), base)
			}
		})
	}
	if _, err := postgres.FindBinaries(ctx, "/nonexistent"); err == nil || !strings.Contains(err.Error(), "--pg-bin") {
		t.Errorf("FindBinaries(/nonexistent) = %v, want an error naming --pg-bin", err)
	}
}

func TestParseConnInfoKeepsPasswordPrivate(t *testing.T) {
	ci, err := postgres.ParseConnInfo("postgres://app:s3cret@db.example:6543/shop")
	if err != nil {
		t.Fatal(err)
	}
	if ci.Host != "db.example" || ci.Port != 6543 || ci.User != "app" || ci.Database != "shop" || ci.Password() != "s3cret" {
		t.Errorf("ParseConnInfo = %+v", ci)
	}
	if s := ci.String(); strings.Contains(s, "s3cret") {
		t.Errorf("String() = %q leaks the password", s)
	}
	if _, err := postgres.ParseConnInfo("postgres://app:s3cret@db:notaport/x"); err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Errorf("ParseConnInfo(bad) = %v: want an error without the password", err)
	}
}

// TestConfigWriterKeepsAValueOneValue: dbrig.conf quotes a value so the
// server reads back exactly what was written, whatever quotes and
// backslashes it holds, and no part of it becomes a setting of its own.
// Quotes doubled alone let x\'# end the string and comment out the rest.
func TestConfigWriterKeepsAValueOneValue(t *testing.T) {
	t.Parallel()
	inst := pgtest.Start(t, "quoting", nil)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	fromConf := func() map[string]string {
		t.Helper()
		conn, err := inst.Connect(ctx, "postgres")
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		rows, err := conn.Query(ctx, "SELECT name, setting FROM pg_settings WHERE sourcefile LIKE '%/dbrig.conf'")
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for rows.Next() {
			var n, v string
			if err := rows.Scan(&n, &v); err != nil {
				t.Fatal(err)
			}
			got[n] = v
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return got
	}
	before := fromConf()
	port := inst.Port()
	for _, value := range []string{`x\'# port = 55999 #`, `a''b\\c\n`, `'`, `\`, `# "quoted" \t`} {
		settings := inst.Settings()
		settings["cluster_name"] = value
		if err := inst.WriteConf(settings); err != nil {
			t.Fatal(err)
		}
		if err := inst.Restart(ctx); err != nil {
			t.Fatalf("restart with cluster_name %q: %v", value, err)
		}
		if got, err := inst.Setting(ctx, "cluster_name"); err != nil || got != value {
			t.Errorf("SHOW cluster_name = %q, %v; want %q", got, err, value)
		}
		after := fromConf()
		delete(after, "cluster_name")
		if !maps.Equal(after, before) || after["port"] != strconv.Itoa(port) || after["listen_addresses"] != "127.0.0.1" {
			t.Errorf("with cluster_name %q, dbrig.conf set %v; before it set %v", value, after, before)
		}
	}
	if err := inst.WriteConf(map[string]string{"cluster_name": "x\nport = 55999"}); err == nil || !strings.Contains(err.Error(), "control character") {
		t.Errorf("WriteConf(a newline) = %v, want it refused", err)
	}
}
