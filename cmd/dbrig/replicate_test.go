package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
)

// replRun runs dbrig with the arguments and returns the exit code, stdout
// and stderr.
func replRun(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	code := run(ctx, args, &app{stdout: &out, stderr: &errb, getenv: func(k string) string { return env[k] }, version: "test"})
	return code, out.String(), errb.String()
}

// replSubscribers is the subscribers' server: what dbrig makes on a
// subscriber (its schema, the tables) lives in the subscriber's database, so
// each test's database of its own keeps the tests apart.
var replSubscribers = pgtest.NewShared("sub", nil)

// replServers starts a publisher (wal_level as given), with a database
// "shop", and makes the test's own database on the shared subscribers'
// server. A publisher is the test's own: its distribution database and
// replication slot are the server's.
func replServers(t *testing.T, walLevel string) (pub, sub *postgres.Instance, subDB string) {
	t.Helper()
	pub = pgtest.Start(t, "pub", map[string]string{"wal_level": walLevel, "max_replication_slots": "4", "max_wal_senders": "4"})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := pub.CreateDatabase(ctx, "shop"); err != nil {
		t.Fatal(err)
	}
	sub, subDB = replSubscribers.Database(t)
	return pub, sub, subDB
}

func mustExec(t *testing.T, i *postgres.Instance, db string, sql ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := i.Exec(ctx, db, sql...); err != nil {
		t.Fatal(err)
	}
}

func queryInt(t *testing.T, i *postgres.Instance, db, sql string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := i.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var n int
	if err := c.QueryRow(ctx, sql).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// nothingCreated checks that a failed setup left no trace on either side:
// the publisher's server is the test's own, the subscriber's database too.
// ownSubTables are the subscriber's tables the test made itself.
func nothingCreated(t *testing.T, pub, sub *postgres.Instance, subDB string, ownSubTables ...string) {
	t.Helper()
	own := "''"
	for _, name := range ownSubTables {
		own += ", '" + name + "'"
	}
	for what, n := range map[string]int{
		"replication slots":       queryInt(t, pub, "shop", "SELECT count(*) FROM pg_replication_slots"),
		"publications":            queryInt(t, pub, "shop", "SELECT count(*) FROM pg_publication"),
		"distribution databases":  queryInt(t, pub, "shop", "SELECT count(*) FROM pg_database WHERE datname LIKE 'dbrig%'"),
		"dbrig schemas (pub)":     queryInt(t, pub, "shop", "SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'dbrig%'"),
		"dbrig schemas (sub)":     queryInt(t, sub, subDB, "SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'dbrig%'"),
		"subscriber tables (sub)": queryInt(t, sub, subDB, "SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tablename NOT IN ("+own+")"),
	} {
		if n != 0 {
			t.Errorf("a refused setup left %d %s", n, what)
		}
	}
}

func TestReplicateBadInput(t *testing.T) {
	t.Parallel()
	pub, sub, subDB := replServers(t, "logical")
	mustExec(t, pub, "shop",
		"CREATE TABLE nokey (a int, b text)",
		"CREATE TABLE odd (id int PRIMARY KEY, p point)",
		"CREATE TABLE fine (id int PRIMARY KEY, t text)",
		"CREATE TABLE held (id int PRIMARY KEY, t text)",
		"CREATE TABLE rekeyed (id int PRIMARY KEY, t text)")
	mustExec(t, sub, subDB, "CREATE TABLE held (id int PRIMARY KEY, t text)", "INSERT INTO held VALUES (1, 'already here')",
		"CREATE TABLE rekeyed (id int, t text PRIMARY KEY)")
	pubURI, subURI := pub.Conn("shop").URI(), sub.Conn(subDB).URI()
	secret := pub.Conn("shop").Password()

	for _, tc := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"no action", []string{"replicate"}, 2, []string{"accepts 1 arg"}},
		{"unknown action", []string{"replicate", "frobnicate", "--publisher", pubURI, "--subscriber", subURI}, 2, []string{"unknown action"}},
		{"missing URIs", []string{"replicate", "setup"}, 2, []string{"--publisher is required", "--subscriber is required"}},
		{"bad URI", []string{"replicate", "setup", "--publisher", "postgres://u:" + secret + "@host:notaport/db", "--subscriber", subURI}, 2, []string{"--publisher"}},
		{"bad mode", []string{"replicate", "run", "--publisher", pubURI, "--subscriber", subURI, "--mode", "sideways"}, 2, []string{"--mode"}},
		{"bad pipeline", []string{"replicate", "run", "--publisher", pubURI, "--subscriber", subURI, "--pipeline", "lots"}, 2, []string{"--pipeline"}},
		{"bad buffer size", []string{"replicate", "run", "--publisher", pubURI, "--subscriber", subURI, "--buffer-size", "tiny"}, 2, []string{"--buffer-size"}},
		{"empty table list", []string{"replicate", "setup", "--publisher", pubURI, "--subscriber", subURI, "--tables", "", "--init", "snapshot"}, 2,
			[]string{`--tables "": name at least one table, or leave --tables out for every table`}},
		{"table list of commas", []string{"replicate", "verify", "--publisher", pubURI, "--subscriber", subURI, "--tables", ",,"}, 2,
			[]string{`--tables ",,": name at least one table`}},
		{"buffer of 0 bytes", []string{"replicate", "status", "--publisher", pubURI, "--subscriber", subURI, "--buffer-size", "0"}, 2,
			[]string{"--buffer-size 0: want 1KiB to 256MiB"}},
		{"negative progress", []string{"replicate", "status", "--publisher", pubURI, "--subscriber", subURI, "--progress", "-1s"}, 2,
			[]string{"--progress -1s: want how often to print progress, or 0 for never"}},
		{"negative max differences", []string{"replicate", "verify", "--publisher", pubURI, "--subscriber", subURI, "--max-differences", "-1"}, 2,
			[]string{"--max-differences -1: want 1 to 10000"}},
		{"streams beyond their bound", []string{"replicate", "setup", "--publisher", pubURI, "--subscriber", subURI, "--init", "snapshot", "--streams", "65"}, 2,
			[]string{"--streams 65: want 1 to 64 publisher sessions"}},
		{"no stream", []string{"replicate", "setup", "--publisher", pubURI, "--subscriber", subURI, "--init", "snapshot", "--streams", "0"}, 2,
			[]string{"--streams 0: want 1 to 64"}},
		{"read streams beyond their bound", []string{"replicate", "run", "--publisher", pubURI, "--subscriber", subURI, "--read-streams", "17"}, 2,
			[]string{"read streams 17: want 1 to 16"}},
		{"commit batch beyond its bound", []string{"replicate", "run", "--publisher", pubURI, "--subscriber", subURI, "--commit-batch-size", "2000000"}, 2,
			[]string{"commit batch size 2000000: want 1 to 1000000"}},
		{"missing primary key", []string{"replicate", "setup", "--publisher", pubURI, "--subscriber", subURI, "--tables", "nokey,fine", "--init", "snapshot"}, 2,
			[]string{"table nokey has no primary key"}},
		{"unsupported type", []string{"replicate", "setup", "--publisher", pubURI, "--subscriber", subURI, "--tables", "odd", "--init", "snapshot"}, 2,
			[]string{"table odd has columns of types dbrig does not replicate: p (point)"}},
		{"missing table", []string{"replicate", "setup", "--publisher", pubURI, "--subscriber", subURI, "--tables", "ghost", "--init", "snapshot"}, 2,
			[]string{"table ghost does not exist"}},
		{"subscriber table missing with init none", []string{"replicate", "setup", "--publisher", pubURI, "--subscriber", subURI, "--tables", "fine"}, 2,
			[]string{"does not exist on the subscriber"}},
		{"subscriber table with rows", []string{"replicate", "setup", "--publisher", pubURI, "--subscriber", subURI, "--tables", "held", "--init", "snapshot"}, 2,
			[]string{"subscriber table held is not empty: initialization (snapshot) copies every row"}},
		{"subscriber table with another key", []string{"replicate", "setup", "--publisher", pubURI, "--subscriber", subURI, "--tables", "rekeyed,held"}, 2,
			[]string{"subscriber table rekeyed has primary key (t), the publisher's is (id)"}},
		{"unreachable subscriber", []string{"replicate", "setup", "--publisher", pubURI, "--subscriber", "postgres://u:" + secret + "@127.0.0.1:1/shop", "--tables", "fine", "--init", "snapshot"}, 1,
			[]string{"subscriber"}},
		{"status before setup", []string{"replicate", "status", "--publisher", pubURI, "--subscriber", subURI}, 1, []string{`no replication "dbrig"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := replRun(t, nil, tc.args...)
			t.Logf("exit %d: %s", code, strings.TrimSpace(errs))
			if code != tc.code {
				t.Errorf("exit code %d, want %d; stderr: %s", code, tc.code, errs)
			}
			for _, w := range tc.want {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errs)
				}
			}
			if strings.Contains(out+errs, secret) {
				t.Errorf("the password was printed:\n%s%s", out, errs)
			}
			nothingCreated(t, pub, sub, subDB, "held", "rekeyed")
		})
	}
}

func TestReplicateRefusesPhysicalWAL(t *testing.T) {
	t.Parallel()
	pub, sub, subDB := replServers(t, "replica")
	mustExec(t, pub, "shop", "CREATE TABLE fine (id int PRIMARY KEY, t text)")
	code, _, errs := replRun(t, map[string]string{"DBRIG_PUBLISHER": pub.Conn("shop").URI(), "DBRIG_SUBSCRIBER": sub.Conn(subDB).URI()},
		"replicate", "setup", "--init", "snapshot")
	if code != 1 || !strings.Contains(errs, "wal_level = replica") || !strings.Contains(errs, "wal_level = logical") {
		t.Errorf("exit %d, stderr: %s", code, errs)
	}
	nothingCreated(t, pub, sub, subDB)
}

func TestReplicateLifecycle(t *testing.T) {
	t.Parallel()
	pub, sub, subDB := replServers(t, "logical")
	mustExec(t, pub, "shop",
		"CREATE TABLE orders (id bigint PRIMARY KEY, customer text NOT NULL, total numeric(12,2), placed timestamptz DEFAULT now())",
		"CREATE TABLE lines (order_id bigint, n int, item text, qty int, PRIMARY KEY (order_id, n))",
		"INSERT INTO orders SELECT g, 'customer ' || g, g * 1.5 FROM generate_series(1, 500) g",
		"INSERT INTO lines SELECT g, 1, 'item ü ' || g, g % 7 FROM generate_series(1, 500) g")
	env := map[string]string{"DBRIG_PUBLISHER": pub.Conn("shop").URI(), "DBRIG_SUBSCRIBER": sub.Conn(subDB).URI()}
	secret := pub.Conn("shop").Password()
	check := func(code int, out, errs string, want int) {
		t.Helper()
		if code != want {
			t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, want, out, errs)
		}
		if strings.Contains(out+errs, secret) {
			t.Fatalf("the password was printed:\n%s%s", out, errs)
		}
	}

	code, out, errs := replRun(t, env, "replicate", "setup", "--tables", "orders,lines", "--init", "snapshot", "--mode", "pull")
	check(code, out, errs, 0)
	t.Logf("setup:\n%s", out)
	if !strings.Contains(out, "initialized by snapshot: 2 tables, 1000 rows") {
		t.Errorf("setup output:\n%s", out)
	}
	code, out, errs = replRun(t, env, "replicate", "setup", "--tables", "orders,lines", "--init", "snapshot")
	check(code, out, errs, 1)
	if !strings.Contains(errs, "already") {
		t.Errorf("second setup: %s", errs)
	}

	mustExec(t, pub, "shop",
		"INSERT INTO orders SELECT g, 'late ' || g, g FROM generate_series(501, 800) g",
		"UPDATE orders SET total = total + 1 WHERE id % 3 = 0",
		"DELETE FROM lines WHERE order_id > 450")
	code, out, errs = replRun(t, env, "replicate", "run", "--until-caught-up", "--mode", "pull", "--pipeline", "auto", "--progress", "0", "--link", "rtt-10ms")
	check(code, out, errs, 0)
	if !strings.Contains(out, "caught up with") {
		t.Errorf("run output:\n%s", out)
	}

	code, out, errs = replRun(t, env, "replicate", "status", "--json")
	check(code, out, errs, 0)
	var st struct {
		Pending      int64 `json:"pending"`
		Subscription struct {
			Mode         string `json:"mode"`
			Transactions int64  `json:"transactions"`
		} `json:"subscription"`
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil || st.Pending != 0 || st.Subscription.Transactions != 3 || st.Subscription.Mode != "pull" {
		t.Errorf("status %+v (%v):\n%s", st, err, out)
	}
	code, out, errs = replRun(t, env, "replicate", "status")
	t.Logf("status:\n%s", out)
	check(code, out, errs, 0)
	if !strings.Contains(out, "pending") || !strings.Contains(out, "0 commands in 0 transactions") {
		t.Errorf("status:\n%s", out)
	}

	code, out, errs = replRun(t, env, "replicate", "verify")
	check(code, out, errs, 0)
	if strings.Count(out, "identical") != 2 {
		t.Errorf("verify:\n%s", out)
	}

	// A difference on the subscriber: verify exits 1 and names the keys.
	mustExec(t, sub, subDB, "DELETE FROM orders WHERE id = 42", "UPDATE lines SET qty = 99 WHERE order_id = 7")
	code, out, errs = replRun(t, env, "replicate", "verify")
	t.Logf("verify after changing the subscriber:\n%s%s", out, errs)
	check(code, out, errs, 1)
	for _, w := range []string{"(id)=(42): missing on the subscriber", "(order_id, n)=(7, 1): differs", "DIFFERS"} {
		if !strings.Contains(out, w) {
			t.Errorf("verify output lacks %q:\n%s", w, out)
		}
	}

	code, out, errs = replRun(t, env, "replicate", "teardown")
	check(code, out, errs, 0)
	if n := queryInt(t, pub, "shop", "SELECT count(*) FROM pg_replication_slots"); n != 0 {
		t.Errorf("%d slots left", n)
	}
	if n := queryInt(t, pub, "shop", "SELECT count(*) FROM pg_database WHERE datname = 'dbrig_distribution'"); n != 0 {
		t.Errorf("distribution database left")
	}
	if n := queryInt(t, sub, subDB, "SELECT count(*) FROM orders"); n != 799 {
		t.Errorf("subscriber orders: %d rows, want 799 (the tables stay)", n)
	}
}
