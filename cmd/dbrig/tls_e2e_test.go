package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine/mariadb/mariatest"
	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
)

// tlsStudy runs the row-by-row workload on one target, directly and
// across an emulated link (a proxy whose address the server's certificate
// does not name).
const tlsStudy = `name = "tls-target"
title = "a study on the user's server with TLS"
[[instance]]
name = "db"
engine = "ENGINE"
[[link]]
between = ["client", "db"]
profile = "${net}"
[workload]
kind = "rbar"
experiment = "client-row-by-row"
rows = 50
[sweep]
net = ["direct", "lan-1g"]
[repeat]
runs = 1
`

// runIn runs dbrig in this process with env as its whole environment and
// returns the exit code and what it printed.
func runIn(t *testing.T, env map[string]string, args ...string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	code := run(ctx, args, &app{stdout: &out, stderr: &out, getenv: func(k string) string { return env[k] }, version: "test"})
	return code, out.String()
}

func writeStudy(t *testing.T, engineName string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "tls-target.toml")
	if err := os.WriteFile(file, []byte(strings.Replace(tlsStudy, "ENGINE", engineName, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestTLSToAPostgresTarget runs every dbrig path that logs in to a
// PostgreSQL server the user runs (a study across a link, load oltp with
// its monitor, replicate setup with a backup through pg_dump and
// pg_restore, the log reader's replication connection and the agent,
// doctor --db) against a server with TLS on, each as a role of its own,
// and reads from the server's side whether each session was encrypted:
// its log for every login, pg_stat_ssl for the replication system's
// sessions while they run. verify-full with the wrong CA or host is
// refused saying why; sslmode=disable stays plain.
func TestTLSToAPostgresTarget(t *testing.T) {
	t.Parallel()
	server, files := pgtest.StartTLS(t, "tls-target", map[string]string{"wal_level": "logical", "max_replication_slots": "4",
		"max_wal_senders": "4", "log_min_error_statement": "panic"}, "localhost")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	const pw = "Tls9TargetPw"
	roles := []string{"app_study", "app_load", "app_repl", "app_doctor", "app_plain", "app_refused"}
	for _, r := range roles {
		if err := server.Exec(ctx, "postgres", "CREATE ROLE "+r+" LOGIN SUPERUSER PASSWORD '"+pw+"'"); err != nil {
			t.Fatal(err)
		}
	}
	if err := server.Exec(ctx, "postgres", "CREATE DATABASE shop", "CREATE DATABASE shop_copy"); err != nil {
		t.Fatal(err)
	}
	if err := server.Exec(ctx, "shop", "CREATE TABLE orders (id int PRIMARY KEY, v text)",
		"INSERT INTO orders SELECT g, 'order ' || g FROM generate_series(1, 100) g"); err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(server.Port())
	uri := func(role, host, db, query string) string {
		return "postgres://" + role + ":" + pw + "@" + host + ":" + port + "/" + db + "?" + query
	}
	verifyFull := "sslmode=verify-full&sslrootcert=" + files.CA
	expect := func(code int, out string, want int, says ...string) {
		t.Helper()
		if code != want {
			t.Errorf("exit %d, want %d:\n%s", code, want, out)
		}
		for _, s := range says {
			if !strings.Contains(out, s) {
				t.Errorf("the output does not say %q:\n%s", s, out)
			}
		}
		if strings.Contains(out, pw) {
			t.Errorf("the output shows the password:\n%s", out)
		}
	}

	study := writeStudy(t, "postgres")
	code, out := runIn(t, map[string]string{"MY_PG": uri("app_study", "localhost", "postgres", verifyFull)},
		"run", study, "--out", filepath.Join(t.TempDir(), "run"), "--target", "db=env:MY_PG")
	expect(code, out, 0)

	code, out = runIn(t, map[string]string{"MY_PG": uri("app_load", "127.0.0.1", "postgres", "sslmode=require")},
		"load", "oltp", "--target", "env:MY_PG", "--users", "2", "--duration", "2s", "--warm-up", "500ms", "--scale", "0.01", "--out", filepath.Join(t.TempDir(), "load"))
	expect(code, out, 0)

	repl := map[string]string{"DBRIG_PUBLISHER": uri("app_repl", "localhost", "shop", verifyFull), "DBRIG_SUBSCRIBER": uri("app_repl", "localhost", "shop_copy", verifyFull)}
	code, out = runIn(t, repl, "replicate", "setup", "--tables", "orders", "--init", "backup")
	expect(code, out, 0)
	replicating := replStart(t, repl, "replicate", "run", "--progress", "0")
	waitStatus(t, repl, "both roles running", func(s statusJSON) bool {
		return s.Agent.State == "running" && s.LogReader.State == "running"
	})
	live := pgtest.Sessions(t, server, "app_repl")
	walsender := false
	for _, s := range live {
		walsender = walsender || s.Backend == "walsender"
		if !s.SSL {
			t.Errorf("a replication session runs in plain text: %+v", s)
		}
	}
	if !walsender {
		t.Errorf("no replication connection among the sessions: %+v", live)
	}
	if code := replicating.stop(); code != 130 {
		t.Errorf("replicate run: exit %d after Ctrl-C, want 130: %s", code, replicating.err.String())
	}
	code, out = runIn(t, repl, "replicate", "teardown")
	expect(code, out, 0)

	code, out = runIn(t, nil, "doctor", "--db", uri("app_doctor", "127.0.0.1", "postgres", "sslmode=require"), "--json")
	if strings.Contains(out, pw) || !strings.Contains(out, `"db.connect"`) {
		t.Errorf("doctor --db: exit %d\n%s", code, out)
	}

	for _, role := range roles[:4] {
		conns := pgtest.Connections(t, server, role)
		if len(conns) == 0 {
			t.Errorf("%s: the server logged no login", role)
		}
		for _, c := range conns {
			if !c.SSL {
				t.Errorf("%s: a session in plain text: %s", role, c.Line)
			}
		}
	}
	apps := map[string]bool{}
	for _, c := range pgtest.Connections(t, server, "app_repl") {
		apps[c.Application] = apps[c.Application] || c.Replication
	}
	for _, app := range []string{"pg_dump", "pg_restore", "dbrig log reader dbrig", "dbrig agent dbrig"} {
		if _, ok := apps[app]; !ok {
			t.Errorf("no login of %s among the replication system's: %v", app, apps)
		}
	}
	if !apps["dbrig log reader dbrig"] {
		t.Errorf("no replication connection of the log reader among the logins: %v", apps)
	}

	code, out = runIn(t, map[string]string{"MY_PG": uri("app_plain", "127.0.0.1", "postgres", "sslmode=disable")},
		"load", "oltp", "--target", "env:MY_PG", "--users", "1", "--duration", "1s", "--warm-up", "0s", "--scale", "0.01", "--out", filepath.Join(t.TempDir(), "plain"))
	expect(code, out, 0)
	for _, c := range pgtest.Connections(t, server, "app_plain") {
		if c.SSL {
			t.Errorf("sslmode=disable, and a session is encrypted: %s", c.Line)
		}
	}

	code, out = runIn(t, map[string]string{"MY_PG": uri("app_refused", "localhost", "postgres", "sslmode=verify-full&sslrootcert="+files.OtherCA)},
		"run", study, "--out", filepath.Join(t.TempDir(), "wrong-ca"), "--target", "db=env:MY_PG")
	expect(code, out, 1, "certificate signed by unknown authority")
	code, out = runIn(t, map[string]string{"MY_PG": uri("app_refused", "127.0.0.1", "postgres", verifyFull)},
		"load", "oltp", "--target", "env:MY_PG", "--users", "1", "--duration", "1s", "--scale", "0.01", "--out", filepath.Join(t.TempDir(), "wrong-host"))
	expect(code, out, 1, "certificate for 127.0.0.1")
	wrongCA := map[string]string{"DBRIG_PUBLISHER": uri("app_refused", "localhost", "shop", "sslmode=verify-full&sslrootcert="+files.OtherCA),
		"DBRIG_SUBSCRIBER": uri("app_refused", "localhost", "shop_copy", "sslmode=verify-full&sslrootcert="+files.OtherCA)}
	code, out = runIn(t, wrongCA, "replicate", "setup", "--tables", "orders", "--init", "backup")
	expect(code, out, 1, "certificate signed by unknown authority")
	if n := len(pgtest.Connections(t, server, "app_refused")); n != 0 {
		t.Errorf("the refused logins logged in %d times", n)
	}
}

// TestTLSToAMariaDBTarget runs a study across a link and load oltp against
// a MariaDB server with TLS on, as an account that may log in only over
// TLS (REQUIRE SSL), and reads the server's general log for every login.
func TestTLSToAMariaDBTarget(t *testing.T) {
	t.Parallel()
	server, files := mariatest.StartTLS(t, "tls-target", nil, "localhost")
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	const pw = "Tls9MariaTargetPw"
	for _, host := range []string{"127.0.0.1", "localhost"} {
		if err := server.Exec(ctx, "", "CREATE USER 'app'@'"+host+"' IDENTIFIED BY '"+pw+"' REQUIRE SSL", "GRANT ALL ON *.* TO 'app'@'"+host+"'"); err != nil {
			t.Fatal(err)
		}
	}
	mariatest.LogConnections(t, server)
	port := strconv.Itoa(server.Port())
	code, out := runIn(t, map[string]string{"MY_DB": "mysql://app:" + pw + "@localhost:" + port + "/?ssl-mode=VERIFY_IDENTITY&ssl-ca=" + files.CA},
		"run", writeStudy(t, "mariadb"), "--out", filepath.Join(t.TempDir(), "run"), "--target", "db=env:MY_DB")
	if code != 0 || strings.Contains(out, pw) {
		t.Errorf("study: exit %d:\n%s", code, out)
	}
	code, out = runIn(t, map[string]string{"MY_DB": "mariadb://app:" + pw + "@127.0.0.1:" + port + "/?ssl-mode=REQUIRED"},
		"load", "oltp", "--target", "env:MY_DB", "--users", "2", "--duration", "2s", "--warm-up", "500ms", "--scale", "0.01", "--out", filepath.Join(t.TempDir(), "load"))
	if code != 0 || strings.Contains(out, pw) {
		t.Errorf("load oltp: exit %d:\n%s", code, out)
	}
	conns := mariatest.Connections(t, server, "app")
	if len(conns) < 4 {
		t.Errorf("the server logged %d logins of dbrig's", len(conns))
	}
	for _, c := range conns {
		if !c.SSL {
			t.Errorf("a session in plain text: %s", c.Line)
		}
	}
	code, out = runIn(t, map[string]string{"MY_DB": "mysql://app:" + pw + "@127.0.0.1:" + port + "/?ssl-mode=VERIFY_IDENTITY&ssl-ca=" + files.CA},
		"load", "oltp", "--target", "env:MY_DB", "--users", "1", "--duration", "1s", "--scale", "0.01", "--out", filepath.Join(t.TempDir(), "wrong-host"))
	if code != 1 || !strings.Contains(out, "certificate for 127.0.0.1") || strings.Contains(out, pw) {
		t.Errorf("verify-full against the wrong host: exit %d, want 1 saying why:\n%s", code, out)
	}
}
