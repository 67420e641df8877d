package mariadb_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/mariadb"
	"github.com/dbrig/dbrig/internal/engine/mariadb/mariatest"
)

// A server dbrig started stands in for one the user runs: the target is
// reached only through the URI the user would give.
func TestTargets(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	e := mariatest.Engine(t)
	server := mariatest.Start(t, "users", nil)
	if err := server.Exec(ctx, "", "CREATE DATABASE users_data",
		"CREATE USER 'app'@'127.0.0.1' IDENTIFIED BY 'app-pw'", "GRANT ALL ON `dbrig\\_%`.* TO 'app'@'127.0.0.1'",
		"CREATE USER 'reader'@'127.0.0.1' IDENTIFIED BY 'reader-pw'", "GRANT SELECT ON *.* TO 'reader'@'127.0.0.1'",
		"CREATE USER 'app'@'localhost' IDENTIFIED BY 'app-pw'", "GRANT ALL ON `dbrig\\_%`.* TO 'app'@'localhost'"); err != nil {
		t.Fatal(err)
	}
	port := server.Port()
	uri := "mysql://app:app-pw@127.0.0.1:" + itoa(port) + "/"
	_, login, err := engine.NewRegistry(e).ParseTarget(uri)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := e.Attach(ctx, "db", login.WithSession(map[string]string{"sql_mode": "ANSI", "unique_checks": "OFF", "sort_buffer_size": "1M"}), engine.AttachOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if inst.Owned() || inst.PID() != 0 || inst.LogPath() != "" || inst.Version() != server.Version() || inst.Engine() != "mariadb" {
		t.Errorf("target: owned %v pid %d log %q version %q engine %q", inst.Owned(), inst.PID(), inst.LogPath(), inst.Version(), inst.Engine())
	}
	if _, ok := inst.UnixLogin("x"); ok {
		t.Error("a target reached over TCP offers a socket")
	}
	// The session settings apply to every session dbrig opens there.
	var mode, uniq, sortBuf string
	if err := open(t, inst.Login("")).QueryRowContext(ctx, "SELECT @@SESSION.sql_mode, @@SESSION.unique_checks, @@SESSION.sort_buffer_size").Scan(&mode, &uniq, &sortBuf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(mode, "ANSI") || uniq != "0" || sortBuf != "1048576" {
		t.Errorf("session: sql_mode %q unique_checks %q sort_buffer_size %q", mode, uniq, sortBuf)
	}

	// Databases: dbrig makes, replaces and drops only its own.
	if err := inst.CreateDatabase(ctx, "dbrig_study"); err != nil {
		t.Fatal(err)
	}
	if err := inst.Exec(ctx, "dbrig_study", "CREATE TABLE t (v int)"); err != nil {
		t.Fatal(err)
	}
	if err := inst.CreateDatabase(ctx, "dbrig_study"); err != nil {
		t.Fatalf("re-create: %v", err)
	}
	// users_data is not this login's to see: absent to it, and left alone.
	if err := inst.DropDatabase(ctx, "users_data"); err != nil {
		t.Errorf("DropDatabase of a database the login cannot see = %v", err)
	}
	// Reconfigure refuses, Stop stops nothing.
	if _, err := inst.Reconfigure(ctx, map[string]string{"max_connections": "10"}); err == nil {
		t.Error("Reconfigure changed a target")
	}
	// SplitSettings: what this server lets a session set, and the rest.
	session, serverOnly := e.SplitSettings(ctx, map[string]string{"sort_buffer_size": "1M", "sql_mode": "ANSI",
		"innodb_buffer_pool_size": "1G", "max_connections": "10", "skip_log_bin": ""})
	if len(session) != 2 || session["sql_mode"] != "ANSI" || session["sort_buffer_size"] != "1M" || len(serverOnly) != 3 {
		t.Errorf("SplitSettings = %v, %v", session, serverOnly)
	}
	if s, _ := mariadb.New("").SplitSettings(ctx, map[string]string{"sql_mode": "ANSI"}); len(s) != 0 {
		t.Errorf("an engine that attached nothing yet splits off %v for sessions", s)
	}
	// The environment records settings, none that may be a secret.
	settings, err := inst.(interface {
		NonDefaultSettings(context.Context) (map[string]string, error)
	}).NonDefaultSettings(ctx)
	if err != nil || settings["port"] != itoa(port) || settings["innodb_flush_log_at_trx_commit"] != "2" {
		t.Errorf("NonDefaultSettings = %v, %v", settings, err)
	}
	for k := range settings {
		if strings.Contains(k, "pass") || strings.Contains(k, "key") {
			t.Errorf("NonDefaultSettings records %s", k)
		}
	}

	// Stop removes what dbrig made there in this run, and nothing else.
	if err := inst.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := server.Exec(ctx, "users_data", "SELECT 1"); err != nil {
		t.Errorf("the user's server after the target's Stop: %v", err)
	}
	if err := server.Exec(ctx, "dbrig_study", "SELECT 1"); err == nil {
		t.Error("the target's Stop left the database dbrig made")
	}
	// Unless kept.
	kept, err := e.Attach(ctx, "db", login, engine.AttachOptions{Keep: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := kept.CreateDatabase(ctx, "dbrig_kept"); err != nil {
		t.Fatal(err)
	}
	if err := kept.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := server.Exec(ctx, "dbrig_kept", "SELECT 1"); err != nil {
		t.Errorf("a kept target's database is gone: %v", err)
	}

	// The same through the socket, marking databases with a table (as on
	// MySQL, which has no database comments).
	sock, err := e.ParseURI("mariadb://app:app-pw@unix(" + server.Socket() + ")/")
	if err != nil {
		t.Fatal(err)
	}
	tgt, err := mariadb.AttachTarget(ctx, "db", sock, engine.AttachOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tgt.MarkByTable()
	if _, ok := tgt.UnixLogin(""); !ok {
		t.Error("a target reached through its socket offers none")
	}
	if err := tgt.CreateDatabase(ctx, "dbrig_marked"); err != nil {
		t.Fatal(err)
	}
	if err := tgt.CreateDatabase(ctx, "dbrig_marked"); err != nil {
		t.Fatalf("re-create a table-marked database: %v", err)
	}
	if err := server.Exec(ctx, "", "CREATE DATABASE dbrig_users"); err != nil {
		t.Fatal(err)
	}
	if err := tgt.CreateDatabase(ctx, "dbrig_users"); err == nil || !strings.Contains(err.Error(), "did not make") {
		t.Errorf("CreateDatabase over an unmarked database = %v", err)
	}
	if err := tgt.DropDatabase(ctx, "dbrig_users"); err != nil {
		t.Errorf("DropDatabase of a database dbrig did not make = %v, want nothing done", err)
	}
	if err := server.Exec(ctx, "dbrig_users", "SELECT 1"); err != nil {
		t.Errorf("the user's dbrig_users is gone: %v", err)
	}
	if err := tgt.DropDatabase(ctx, "dbrig_marked"); err != nil {
		t.Error(err)
	}

	// A login that may not create databases: the error says what it needs.
	reader, _ := e.ParseURI("mysql://reader:reader-pw@127.0.0.1:" + itoa(port) + "/")
	ro, err := e.Attach(ctx, "db", reader, engine.AttachOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := ro.CreateDatabase(ctx, "dbrig_ro"); err == nil || !strings.Contains(err.Error(), "needs CREATE and DROP") {
		t.Errorf("CreateDatabase as a read-only login = %v", err)
	}

	// A wrong password: refused, and the message does not show it.
	wrong, _ := e.ParseURI("mysql://app:not-the-pw@127.0.0.1:" + itoa(port) + "/")
	if _, err := e.Attach(ctx, "db", wrong, engine.AttachOptions{}); err == nil || strings.Contains(err.Error(), "not-the-pw") {
		t.Errorf("Attach with a wrong password = %v", err)
	}
}
