package mariadb_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/mariadb"
	"github.com/dbrig/dbrig/internal/engine/mariadb/mariatest"
)

func itoa(n int) string { return strconv.Itoa(n) }

func open(t *testing.T, c engine.Conn) *sql.DB {
	t.Helper()
	db, err := mariadb.Open(t.Context(), c)
	if err != nil {
		t.Fatalf("open %s: %v", c, err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestInstancesStartConnectAndStop(t *testing.T) {
	e := mariatest.Engine(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	base := mariatest.BaseDir(t)

	// Two instances at once, each with its own settings.
	settings := []map[string]string{{"max_connections": "61"}, {"max-connections": "62"}}
	insts := make([]*mariadb.Instance, len(settings))
	errs := make([]error, len(settings))
	var wg sync.WaitGroup
	for n := range settings {
		wg.Go(func() {
			insts[n], errs[n] = e.StartInstance(ctx, engine.InstanceConfig{Name: "t" + string(rune('a'+n)), Engine: "mariadb", Settings: settings[n]},
				engine.StartOptions{BaseDir: base})
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
	if got := len(mariatest.Servers(base)); got != 2 {
		t.Errorf("%d mariadbd processes under %s, want 2", got, base)
	}
	for n, inst := range insts {
		unix, ok := inst.UnixLogin("")
		if !ok || !strings.HasPrefix(unix.Host, inst.Dir()) {
			t.Fatalf("UnixLogin = %v, %v", unix, ok)
		}
		for _, c := range []engine.Conn{inst.Login(""), unix} {
			var maxConn, bind, user, charset string
			err := open(t, c).QueryRowContext(ctx, "SELECT @@max_connections, @@bind_address, CURRENT_USER(), @@character_set_server").Scan(&maxConn, &bind, &user, &charset)
			if err != nil {
				t.Fatalf("query over %s: %v", c, err)
			}
			if want := []string{"61", "62"}[n]; maxConn != want {
				t.Errorf("instance %d: max_connections = %s, want %s", n, maxConn, want)
			}
			if bind != "127.0.0.1" {
				t.Errorf("instance %d listens on %q, want 127.0.0.1 only", n, bind)
			}
			if !strings.HasPrefix(user, mariadb.SuperUser+"@") || charset != "utf8mb4" {
				t.Errorf("instance %d over %s: user %s, character set %s", n, c, user, charset)
			}
		}
		if pw := inst.Login("x").Password(); len(pw) < 32 || strings.Contains(inst.Login("x").String(), pw) || strings.Contains(unix.String(), pw) {
			t.Errorf("the password is short (%d) or shows in %s", len(pw), inst.Login("x"))
		}
		st, err := os.Stat(filepath.Dir(inst.Socket()))
		if err != nil || st.Mode().Perm() != 0o700 {
			t.Errorf("socket directory: mode %v, %v; want 0700", st.Mode().Perm(), err)
		}
		if st, err := os.Stat(inst.Dir()); err != nil || st.Mode().Perm() != 0o700 {
			t.Errorf("instance directory: mode %v, %v; want 0700", st.Mode().Perm(), err)
		}
		if os.Geteuid() == 0 {
			// As root, the server runs as the unprivileged account.
			status, _ := os.ReadFile("/proc/" + itoa(inst.PID()) + "/status")
			if strings.Contains(string(status), "\nUid:\t0\t") {
				t.Errorf("mariadbd runs as root")
			}
		}
	}

	// A wrong password is refused, and the error does not show the real one.
	bad := insts[0].Login("").WithPassword("wrong")
	if db, err := mariadb.Open(ctx, bad); err == nil {
		db.Close()
		t.Error("login with a wrong password succeeded")
	} else if strings.Contains(err.Error(), insts[0].Login("").Password()) {
		t.Errorf("error shows the password: %v", err)
	}

	// No account logs in without a password: dbrig's login is the only
	// one that can log in, with a password; the others are locked (the
	// definer of the sys views) or roles; none is anonymous, and there is
	// no root. Trying an empty password over TCP and through the socket
	// fails for every one of them.
	admin := open(t, insts[0].Login(""))
	rows, err := admin.QueryContext(ctx, `SELECT user, host, JSON_VALUE(priv, '$.plugin'), IFNULL(JSON_VALUE(priv, '$.authentication_string'), ''),
		IFNULL(JSON_VALUE(priv, '$.account_locked'), 'false'), IFNULL(JSON_VALUE(priv, '$.is_role'), 'false') FROM mysql.global_priv`)
	if err != nil {
		t.Fatal(err)
	}
	type account struct{ user, host, plugin, auth, locked, role string }
	var accounts []account
	for rows.Next() {
		var a account
		if err := rows.Scan(&a.user, &a.host, &a.plugin, &a.auth, &a.locked, &a.role); err != nil {
			t.Fatal(err)
		}
		accounts = append(accounts, a)
	}
	rows.Close()
	logins := 0
	for _, a := range accounts {
		switch {
		case a.user == "":
			t.Errorf("anonymous account @%s", a.host)
		case a.role == "true" || a.role == "1" || a.locked == "true" || a.locked == "1": // JSON true reads as 1
		case a.user != mariadb.SuperUser:
			t.Errorf("account %s@%s (%s) can log in: only dbrig's login should", a.user, a.host, a.plugin)
		case a.plugin != "mysql_native_password" || len(a.auth) != 41:
			t.Errorf("dbrig's login %s@%s: plugin %s, hash %q; want a password", a.user, a.host, a.plugin, a.auth)
		default:
			logins++
		}
	}
	if logins != 2 {
		t.Errorf("%d logins of dbrig's, want two (127.0.0.1 and the socket's localhost): %+v", logins, accounts)
	}
	for _, a := range append(accounts, account{user: "", host: "%"}, account{user: "root"}, account{user: "mysql"}) {
		for _, c := range []engine.Conn{engine.NewConn("mariadb", "127.0.0.1", insts[0].Port(), a.user, "", ""), engine.NewConn("mariadb", insts[0].Socket(), 0, a.user, "", "")} {
			if db, err := mariadb.Open(ctx, c); err == nil {
				db.Close()
				t.Errorf("%q logs in without a password over %s", a.user, c)
			}
		}
	}

	// Stop: the process is gone, the directory removed, Exited closed.
	pid, dir := insts[0].PID(), insts[0].Dir()
	if err := insts[0].Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); err == nil {
		t.Errorf("mariadbd %d still runs after Stop", pid)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("directory %s still exists after Stop (err %v)", dir, err)
	}
	select {
	case <-insts[0].Exited():
	default:
		t.Error("Exited is open after Stop")
	}
	if err := insts[0].Stop(ctx); err != nil {
		t.Errorf("second Stop: %v", err)
	}
	// A crash closes Exited; Stop still cleans up.
	if err := syscall.Kill(insts[1].PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-insts[1].Exited():
	case <-time.After(10 * time.Second):
		t.Error("Exited still open 10 s after the server was killed")
	}
	if err := insts[1].Stop(ctx); err != nil {
		t.Fatal(err)
	}
	mariatest.WaitNoServers(t, base, 5*time.Second)
	if entries, _ := os.ReadDir(base); len(entries) != 0 {
		t.Errorf("Stop left %d entries in %s", len(entries), base)
	}
}

func TestStartErrorsLeaveNothingBehind(t *testing.T) {
	e := mariatest.Engine(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	tests := []struct {
		name     string
		settings map[string]string
		want     []string
	}{
		{"unknown setting", map[string]string{"innodb_bufer_pool_size": "64M"}, []string{"innodb_bufer_pool_size", `did you mean "innodb_buffer_pool_size"`}},
		{"bad value", map[string]string{"innodb_buffer_pool_size": "lots"}, []string{"innodb_buffer_pool_size", "lots"}},
		{"owned setting", map[string]string{"bind_address": "0.0.0.0"}, []string{"bind_address decides where the server listens", "belongs to dbrig"}},
		// mariadb-install-db passes this one on unquoted, so a space
		// would start an option of the study's own.
		{"a data file", map[string]string{"innodb_data_file_path": "ibdata1:12M --init-file=/tmp/x"}, []string{"innodb_data_file_path decides which files"}},
		{"a newline in a value", map[string]string{"innodb_buffer_pool_size": "64M\n"}, []string{"control character"}},
		// Only a server knows its storage engines: the start fails and
		// the error ends with the server's log.
		{"refused by the server", map[string]string{"default_storage_engine": "NoSuchEngine"}, []string{"exited during start-up", "NoSuchEngine"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := mariatest.BaseDir(t)
			_, err := e.StartInstance(ctx, engine.InstanceConfig{Name: "bad", Engine: "mariadb", Settings: tt.settings}, engine.StartOptions{BaseDir: base})
			if err == nil {
				t.Fatal("Start succeeded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Start error does not say %q:\n%v", w, err)
				}
			}
			if entries, _ := os.ReadDir(base); len(entries) != 0 {
				t.Errorf("a failed start left %d entries in %s", len(entries), base)
			}
			mariatest.WaitNoServers(t, base, 5*time.Second)
		})
	}
	var se *engine.SettingError
	_, err := e.StartInstance(ctx, engine.InstanceConfig{Name: "bad", Settings: map[string]string{"port": "1"}}, engine.StartOptions{BaseDir: mariatest.BaseDir(t)})
	if !errors.As(err, &se) || se.Key != "port" {
		t.Errorf("Start error %v does not carry a *engine.SettingError for port", err)
	}
	if _, err := mariadb.FindBinaries(ctx, "/nonexistent"); err == nil || !strings.Contains(err.Error(), "--mariadb-bin") {
		t.Errorf("FindBinaries(/nonexistent) = %v, want an error naming --mariadb-bin", err)
	}
}

func TestReconfigureAndDatabases(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	inst := mariatest.Start(t, "re", map[string]string{"max_connections": "100", "innodb_sort_buffer_size": "16M"})
	setting := func(name string) string {
		t.Helper()
		v, err := inst.Setting(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	fast := func(s map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range mariatest.FastSettings {
			out[k] = v
		}
		for k, v := range s {
			out[k] = v
		}
		return out
	}

	// Databases: dbrig's are replaced, the user's are left alone.
	if err := inst.CreateDatabase(ctx, "w1"); err != nil {
		t.Fatal(err)
	}
	if err := inst.Exec(ctx, "w1", "CREATE TABLE kept (v int)", "SET @x = 42", "INSERT INTO kept SELECT @x"); err != nil {
		t.Fatal(err) // @x is only set for the INSERT if Exec is one session
	}
	if err := inst.Exec(ctx, "", "CREATE DATABASE users_own"); err != nil {
		t.Fatal(err)
	}
	if err := inst.CreateDatabase(ctx, "users_own"); err == nil || !strings.Contains(err.Error(), "did not make it") {
		t.Errorf("CreateDatabase over a database dbrig did not make = %v", err)
	}
	if err := inst.DropDatabase(ctx, "users_own"); err == nil || !strings.Contains(err.Error(), "not made by dbrig") {
		t.Errorf("DropDatabase of a database dbrig did not make = %v", err)
	}
	for _, name := range []string{"mysql", "information_schema", "a/b", ""} {
		if err := inst.CreateDatabase(ctx, name); err == nil {
			t.Errorf("CreateDatabase(%q) succeeded", name)
		}
	}

	// A dynamic setting: SET GLOBAL, no restart.
	pid := inst.PID()
	restarted, err := inst.Reconfigure(ctx, fast(map[string]string{"max_connections": "77", "innodb_sort_buffer_size": "16M",
		"optimizer_switch": "index_merge=off", "query_cache_type": "2", "innodb_max_dirty_pages_pct": "50.5", "sort_buffer_size": "1M"}))
	if err != nil || restarted || inst.PID() != pid {
		t.Fatalf("Reconfigure(dynamic) = %v, %v; pid %d -> %d", restarted, err, pid, inst.PID())
	}
	for name, want := range map[string]string{"max_connections": "77", "query_cache_type": "DEMAND", "innodb_max_dirty_pages_pct": "50.5", "sort_buffer_size": "1048576"} {
		if v := setting(name); v != want {
			t.Errorf("%s = %s after Reconfigure, want %s", name, v, want)
		}
	}
	if v := setting("optimizer_switch"); !strings.Contains(v, "index_merge=off") {
		t.Errorf("optimizer_switch = %s after Reconfigure, want index_merge=off", v)
	}

	// A static one: a restart in place, the data kept.
	restarted, err = inst.Reconfigure(ctx, fast(map[string]string{"max_connections": "77", "innodb_sort_buffer_size": "32M",
		"optimizer_switch": "index_merge=off", "query_cache_type": "2", "innodb_max_dirty_pages_pct": "50.5", "sort_buffer_size": "1M"}))
	if err != nil || !restarted || inst.PID() == pid {
		t.Fatalf("Reconfigure(static) = %v, %v; pid %d -> %d", restarted, err, pid, inst.PID())
	}
	if v := setting("innodb_sort_buffer_size"); v != "33554432" {
		t.Errorf("innodb_sort_buffer_size = %s after a restart, want 33554432", v)
	}
	if v := setting("max_connections"); v != "77" {
		t.Errorf("max_connections = %s after a restart, want 77 (kept)", v)
	}
	var kept int
	if err := open(t, inst.Login("w1")).QueryRowContext(ctx, "SELECT v FROM kept").Scan(&kept); err != nil || kept != 42 {
		t.Errorf("the table made before the restart: %d, %v", kept, err)
	}
	select {
	case <-inst.Exited():
		t.Error("Exited closed by a restart in place")
	default:
	}

	// A removed setting goes back to its default (with a restart).
	restarted, err = inst.Reconfigure(ctx, fast(map[string]string{"innodb_log_buffer_size": "32M"}))
	if err != nil || !restarted {
		t.Fatalf("Reconfigure(removed) = %v, %v", restarted, err)
	}
	if v := setting("max_connections"); v != "151" {
		t.Errorf("max_connections = %s after it was removed, want the default 151", v)
	}

	// Refusals change nothing.
	pid = inst.PID()
	if _, err := inst.Reconfigure(ctx, fast(map[string]string{"max_conections": "5"})); err == nil || !strings.Contains(err.Error(), "max_connections") {
		t.Errorf("Reconfigure(misspelt) = %v, want the closest name", err)
	}
	if _, err := inst.Reconfigure(ctx, fast(map[string]string{"innodb_page_size": "4k"})); err == nil || !strings.Contains(err.Error(), "new instance") {
		t.Errorf("Reconfigure(innodb_page_size) = %v, want a refusal", err)
	}
	if inst.PID() != pid {
		t.Error("a refused Reconfigure restarted the server")
	}

	// Re-creating a database of dbrig's empties it; dropping twice is fine.
	if err := inst.CreateDatabase(ctx, "w1"); err != nil {
		t.Fatal(err)
	}
	var tables int
	if err := open(t, inst.Login("")).QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'w1'").Scan(&tables); err != nil || tables != 0 {
		t.Errorf("w1 re-created holds %d tables (%v)", tables, err)
	}
	for range 2 {
		if err := inst.DropDatabase(ctx, "w1"); err != nil {
			t.Error(err)
		}
	}

	// A restart the server refuses (only a running server knows its
	// storage engines): the error ends with its log, Exited closes.
	_, err = inst.Reconfigure(ctx, fast(map[string]string{"default_storage_engine": "NoSuchEngine"}))
	if err == nil || !strings.Contains(err.Error(), "Unknown/unsupported storage engine") {
		t.Errorf("Reconfigure to a server that cannot start = %v, want its log", err)
	}
	select {
	case <-inst.Exited():
	default:
		t.Error("Exited is open after a failed restart")
	}
}

func TestCPUsMemoryAndPlacement(t *testing.T) {
	e := mariatest.Engine(t)
	bin, err := e.FindBinaries(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// The installation named as --mariadb-bin would name it.
	explicit := mariadb.New(bin.Dir())
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cpu := "0"
	if runtime.NumCPU() > 1 {
		cpu = "1"
	}
	base, dataBase, walBase := mariatest.BaseDir(t), mariatest.BaseDir(t), mariatest.BaseDir(t)
	cfg := engine.InstanceConfig{Name: "placed", Engine: "mariadb", CPUs: cpu, Memory: 512 << 20,
		DataDir: dataBase, WALDir: walBase, Settings: map[string]string{"innodb_log_buffer_size": "16M"}}
	if _, err := engine.MemoryCgroupSupport(); err != nil {
		_, err := explicit.StartInstance(ctx, cfg, engine.StartOptions{BaseDir: base})
		if err == nil || !strings.Contains(err.Error(), "memory cgroup") {
			t.Fatalf("Start with a memory cap on a machine without memory cgroups = %v", err)
		}
		t.Logf("this machine has no writable memory cgroup; checking without a cap: %v", err)
		cfg.Memory = 0
	}
	inst, err := explicit.StartInstance(ctx, cfg, engine.StartOptions{BaseDir: base})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Stop(context.Background())

	check := func(when string) {
		t.Helper()
		tasks, _ := filepath.Glob("/proc/" + itoa(inst.PID()) + "/task/*/status")
		if len(tasks) < 2 {
			t.Fatalf("%s: %d threads of mariadbd", when, len(tasks))
		}
		for _, task := range tasks {
			status, err := os.ReadFile(task)
			if err != nil {
				continue // a thread that ended
			}
			if !strings.Contains(string(status), "\nCpus_allowed_list:\t"+cpu+"\n") {
				t.Errorf("%s: %s is not pinned to CPU %s", when, task, cpu)
				break
			}
		}
		if cfg.Memory == 0 {
			return
		}
		cg := inst.Cgroup()
		procCgroup, _ := os.ReadFile("/proc/" + itoa(inst.PID()) + "/cgroup")
		rel := strings.TrimPrefix(cg.Path(), "/sys/fs/cgroup/memory")
		if !strings.Contains(string(procCgroup), rel) {
			t.Errorf("%s: mariadbd is in %q, not in %s", when, procCgroup, cg.Path())
		}
		limit, err := os.ReadFile(filepath.Join(cg.Path(), "memory.limit_in_bytes"))
		if err != nil {
			limit, err = os.ReadFile(filepath.Join(cg.Path(), "memory.max"))
		}
		if err != nil || strings.TrimSpace(string(limit)) != "536870912" {
			t.Errorf("%s: the cgroup's limit is %q (%v), want 536870912", when, limit, err)
		}
	}
	check("at start")

	if !strings.HasPrefix(inst.DataDir(), dataBase+"/") || !strings.HasPrefix(inst.WALDir(), walBase+"/") {
		t.Errorf("data in %s, redo log in %s: want them under %s and %s", inst.DataDir(), inst.WALDir(), dataBase, walBase)
	}
	for _, f := range []string{filepath.Join(inst.WALDir(), "ib_logfile0"), filepath.Join(inst.DataDir(), "ibdata1")} {
		if _, err := os.Stat(f); err != nil {
			t.Error(err)
		}
	}
	if _, err := os.Stat(filepath.Join(inst.DataDir(), "ib_logfile0")); err == nil {
		t.Error("ib_logfile0 is in the data directory, not the wal_dir")
	}
	if v, _ := inst.Setting(ctx, "innodb_log_group_home_dir"); !strings.HasPrefix(v, inst.WALDir()) {
		t.Errorf("innodb_log_group_home_dir = %q, want %s", v, inst.WALDir())
	}

	// A restart in place keeps the CPUs and the cap.
	if restarted, err := inst.Reconfigure(ctx, map[string]string{"innodb_log_buffer_size": "32M"}); err != nil || !restarted {
		t.Fatalf("Reconfigure = %v, %v", restarted, err)
	}
	check("after a restart")

	cgPath := ""
	if inst.Cgroup() != nil {
		cgPath = inst.Cgroup().Path()
	}
	if err := inst.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{base, dataBase, walBase} {
		if entries, _ := os.ReadDir(d); len(entries) != 0 {
			t.Errorf("Stop left %d entries in %s", len(entries), d)
		}
	}
	if cgPath != "" {
		if _, err := os.Stat(cgPath); !os.IsNotExist(err) {
			t.Errorf("cgroup %s still exists after Stop (%v)", cgPath, err)
		}
	}
}

// TestRestartEmptiesTheBufferPool restarts an instance in place: a new
// server on the same data with the same settings, whose buffer pool holds
// none of the table a query read just before (its dump is not reloaded).
func TestRestartEmptiesTheBufferPool(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	inst := mariatest.Start(t, "restart", map[string]string{
		"innodb_buffer_pool_load_at_startup": "OFF", "innodb_buffer_pool_dump_at_shutdown": "OFF", "max_connections": "90"})
	if err := inst.CreateDatabase(ctx, "keep"); err != nil {
		t.Fatal(err)
	}
	if err := inst.Exec(ctx, "keep", "CREATE TABLE t (id int PRIMARY KEY, pad char(200)) ENGINE=InnoDB",
		"INSERT INTO t SELECT seq, 'x' FROM seq_1_to_20000"); err != nil {
		t.Fatal(err)
	}
	// physicalReads counts the pages a full scan read from disk.
	physicalReads := func() int64 {
		t.Helper()
		db := open(t, inst.Login("keep"))
		defer db.Close()
		status := func() int64 {
			var name string
			var v int64
			if err := db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Innodb_buffer_pool_reads'").Scan(&name, &v); err != nil {
				t.Fatal(err)
			}
			return v
		}
		before := status()
		var n int64
		if err := db.QueryRowContext(ctx, "SELECT count(pad) FROM t").Scan(&n); err != nil || n != 20000 {
			t.Fatalf("count = %d, %v; want 20000", n, err)
		}
		return status() - before
	}
	physicalReads()
	if warm := physicalReads(); warm != 0 {
		t.Fatalf("a second scan read %d pages from disk, want 0", warm)
	}
	pid := inst.PID()
	if err := inst.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if inst.PID() == pid {
		t.Errorf("the server's pid did not change across a restart")
	}
	if cold := physicalReads(); cold == 0 {
		t.Errorf("after the restart the scan read nothing from disk: the buffer pool was not empty")
	}
	if v, err := inst.Setting(ctx, "max_connections"); err != nil || v != "90" {
		t.Errorf("max_connections after the restart = %q, %v; want the instance's 90", v, err)
	}
}
