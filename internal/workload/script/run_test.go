package script

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/enginetest"
	"github.com/dbrig/dbrig/internal/engine/mariadb"
	"github.com/dbrig/dbrig/internal/load"
	"github.com/dbrig/dbrig/internal/workload/dbconn"
)

// exec runs statements on a database of inst.
func execOn(t *testing.T, inst engine.Instance, db string, stmts ...string) {
	t.Helper()
	withConn(t, inst, db, func(c *dbconn.Conn) {
		if err := c.Exec(t.Context(), stmts...); err != nil {
			t.Fatal(err)
		}
	})
}

// withConn runs f with a session on a database of inst.
func withConn(t *testing.T, inst engine.Instance, db string, f func(*dbconn.Conn)) {
	t.Helper()
	login, _ := inst.UnixLogin(db)
	c, err := dbconn.Open(t.Context(), enginetest.Registry(), login)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	f(c)
}

// loadRun runs a program for exactly ops transactions (no warm-up, so
// that every transaction counts), and returns the load's result and the
// scripts' report.
func loadRun(t *testing.T, inst engine.Instance, db string, prog *Program, users int, ops int64, maxTries int) (*load.Result, Report) {
	t.Helper()
	login, _ := inst.UnixLogin(db)
	lw := &loadWorkload{prog: prog, login: login, scale: 1, seed: 3, users: users, maxTries: maxTries, clock: &window{}}
	r, err := load.NewRunner(load.Config{Users: users, Ops: ops, Seed: 3}, lw)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	res, err := r.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return res, newReport(prog, res, lw.stats())
}

func parseFor(t *testing.T, inst engine.Instance, protocol string, scripts ...Source) *Program {
	t.Helper()
	p, err := Parse(scripts, Options{Protocol: protocol, MariaDB: inst.Engine() == mariadb.Name})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.CheckEngine(inst.Engine()); err != nil {
		t.Fatal(err)
	}
	return p
}

const stepsScript = `-- each client counts its own steps and takes the branch the count says
SELECT count(*) AS n FROM steps WHERE client = :client_id \gset
\if :n % 3 = 0
INSERT INTO steps (client, n, branch) VALUES (:client_id, :n, 'zero');
\elif :n % 3 = 1
INSERT INTO steps (client, n, branch)
  VALUES (:client_id, :n, 'one');
\else
\set two :n + 2 - 2
INSERT INTO steps (client, n, branch) VALUES (:client_id, :two, 'two');
\endif
`

const marksScript = `SELECT count(*) AS seen FROM steps WHERE client = :client_id;
\gset b_
INSERT INTO marks (client, seen) VALUES (:client_id, :b_seen);
`

// TestWeightedScriptsWithGsetAndIf runs two files at weights 3 and 1 on
// each engine and protocol: a script that reads a count with \gset and
// takes an \if branch by it, and one that keeps a row under a prefix.
// Every transaction's effect is in the tables: one row per run of each
// script, each step's branch the one its count called for.
func TestWeightedScriptsWithGsetAndIf(t *testing.T) {
	t.Parallel()
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			inst, db := e.database(t)
			for _, protocol := range []string{Prepared, Extended, Simple} {
				execOn(t, inst, db, "DROP TABLE IF EXISTS steps", "DROP TABLE IF EXISTS marks",
					"CREATE TABLE steps (client int, n int, branch varchar(10))", "CREATE TABLE marks (client int, seen int)")
				prog := parseFor(t, inst, protocol, Source{Name: "steps.sql", Text: stepsScript, Weight: 3}, Source{Name: "marks.sql", Text: marksScript, Weight: 1})
				const users, ops = 3, 300
				res, rep := loadRun(t, inst, db, prog, users, ops, 1)
				if res.Overall.Errors.Total() != 0 {
					t.Fatalf("%s: errors %v", protocol, res.Overall.Errors)
				}
				steps, marks := res.Types[0].Ops, res.Types[1].Ops
				if steps+marks != ops || steps <= marks || marks == 0 {
					t.Errorf("%s: %d steps and %d marks of %d, want about 3 to 1", protocol, steps, marks, ops)
				}
				if got := queryInt(t, inst, db, "SELECT count(*) FROM steps"); got != steps {
					t.Errorf("%s: %d rows in steps, %d transactions", protocol, got, steps)
				}
				if got := queryInt(t, inst, db, "SELECT count(*) FROM marks"); got != marks {
					t.Errorf("%s: %d rows in marks, %d transactions", protocol, got, marks)
				}
				wrong := queryInt(t, inst, db, "SELECT count(*) FROM steps WHERE branch <> CASE n % 3 WHEN 0 THEN 'zero' WHEN 1 THEN 'one' ELSE 'two' END")
				gaps := queryInt(t, inst, db, "SELECT count(*) FROM (SELECT client, count(*) - max(n) - 1 AS gap FROM steps GROUP BY client) g WHERE gap <> 0")
				if wrong != 0 || gaps != 0 {
					t.Errorf("%s: %d steps in the wrong branch, %d clients whose steps are not 0..n", protocol, wrong, gaps)
				}
				if r := rep.Scripts[1].RoundTrips; r != 2 {
					t.Errorf("%s: marks.sql took %v round trips, want 2", protocol, r)
				}
			}
		})
	}
}

// TestAsetAndCompound keeps every result of statements joined with \; in
// the simple protocol (\aset), and the last one's only with \gset.
func TestAsetAndCompound(t *testing.T) {
	t.Parallel()
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			inst, db := e.database(t)
			execOn(t, inst, db, "CREATE TABLE seen (a int, b int, c int)")
			text := "SELECT 4 AS four \\; SELECT 5 AS five \\aset\n" +
				"SELECT 6 AS six \\; SELECT 7 AS seven \\gset g_\n" +
				"\\set g_six 0\n" +
				"INSERT INTO seen VALUES (:four + :five, :g_seven, :g_six);\n"
			prog := parseFor(t, inst, Simple, Source{Name: "aset.sql", Text: text, Weight: 1})
			res, _ := loadRun(t, inst, db, prog, 1, 3, 1)
			if res.Overall.Errors.Total() != 0 {
				t.Fatalf("errors %v", res.Overall.Errors)
			}
			if got := queryInt(t, inst, db, "SELECT count(*) FROM seen WHERE a = 9 AND b = 7 AND c = 0"); got != 3 {
				t.Errorf("%d rows as \\aset and \\gset should have made them, of 3", got)
			}
		})
	}
}

// TestRetriesCountedAsPgbench15: on PostgreSQL, clients that update one
// row at REPEATABLE READ meet serialization failures. With unlimited tries
// every transaction succeeds in the end (the row counts each once), and
// the retries are counted per transaction and at the statement that
// failed; with one try the failures are counted as serialization errors
// and the row misses exactly them.
func TestRetriesCountedAsPgbench15(t *testing.T) {
	t.Parallel()
	inst, db := sharedServer.Database(t)
	text := "BEGIN ISOLATION LEVEL REPEATABLE READ;\nSELECT v FROM hot WHERE id = 1;\n\\sleep 1 ms\nUPDATE hot SET v = v + 1 WHERE id = 1;\nEND;\n"
	for _, tries := range []int{0, 1} {
		execOn(t, inst, db, "DROP TABLE IF EXISTS hot", "CREATE TABLE hot (id int PRIMARY KEY, v int)", "INSERT INTO hot VALUES (1, 0)")
		prog := parseFor(t, inst, Prepared, Source{Name: "hot.sql", Text: text, Weight: 1})
		const ops = 200
		res, rep := loadRun(t, inst, db, prog, 4, ops, tries)
		s := rep.Scripts[0]
		failed := res.Overall.Errors[load.Serialization]
		if other := res.Overall.Errors.Total() - failed; other != 0 {
			t.Fatalf("max_tries %d: errors %v", tries, res.Overall.Errors)
		}
		if got := queryInt(t, inst, db, "SELECT v FROM hot"); got != ops-failed {
			t.Errorf("max_tries %d: the row counted %d transactions, %d succeeded", tries, got, ops-failed)
		}
		update := s.Commands[3]
		switch tries {
		case 0:
			if failed != 0 || s.Retried == 0 || s.Retries < s.Retried || update.Retries != s.Retries || update.Failures != 0 {
				t.Errorf("unlimited tries: %d failed, %d retried, %d retries, at the UPDATE %d retries %d failures", failed, s.Retried, s.Retries, update.Retries, update.Failures)
			}
		case 1:
			if failed == 0 || s.Retried != 0 || s.Retries != 0 || update.Failures != failed {
				t.Errorf("one try: %d failed, %d retried, %d retries, %d failures at the UPDATE", failed, s.Retried, s.Retries, update.Failures)
			}
		}
	}
}

// TestDeadlocksRetriedOnMariaDB: clients that update two rows in either
// order deadlock on MariaDB (error 1213); retried until they succeed, the
// rows count every transaction twice, and the retries are counted.
func TestDeadlocksRetriedOnMariaDB(t *testing.T) {
	t.Parallel()
	inst, db := sharedMaria.Database(t)
	execOn(t, inst, db, "CREATE TABLE hot (id int PRIMARY KEY, v int) ENGINE=InnoDB", "INSERT INTO hot VALUES (1, 0), (2, 0)")
	text := "\\set a random(1, 2)\n\\set b 3 - :a\nBEGIN;\nUPDATE hot SET v = v + 1 WHERE id = :a;\n\\sleep 2 ms\nUPDATE hot SET v = v + 1 WHERE id = :b;\nCOMMIT;\n"
	prog := parseFor(t, inst, Prepared, Source{Name: "deadlock.sql", Text: text, Weight: 1})
	const ops = 200
	res, rep := loadRun(t, inst, db, prog, 4, ops, 0)
	if res.Overall.Errors.Total() != 0 {
		t.Fatalf("errors %v", res.Overall.Errors)
	}
	if got := queryInt(t, inst, db, "SELECT sum(v) FROM hot"); got != 2*ops {
		t.Errorf("the rows counted %d updates, want %d", got, 2*ops)
	}
	if s := rep.Scripts[0]; s.Retried == 0 || s.Retries < s.Retried {
		t.Errorf("%d retried, %d retries: no deadlock was retried", s.Retried, s.Retries)
	}
}

// TestPipelines runs statements in pgbench's pipeline mode on PostgreSQL:
// one round trip per pipeline whatever it holds, every statement run; an
// error in a pipeline fails its transaction, and the connection serves the
// next one.
func TestPipelines(t *testing.T) {
	t.Parallel()
	inst, db := sharedServer.Database(t)
	execOn(t, inst, db, "CREATE TABLE pipe (client int, x int)")
	text := "\\set x 2\n\\startpipeline\nBEGIN;\nINSERT INTO pipe VALUES (:client_id, 1);\n\\set y :x * 2\nINSERT INTO pipe VALUES (:client_id, :y);\nSELECT count(*) FROM pipe;\nEND;\n\\endpipeline\n"
	for _, protocol := range []string{Prepared, Extended} {
		execOn(t, inst, db, "TRUNCATE pipe")
		prog := parseFor(t, inst, protocol, Source{Name: "pipe.sql", Text: text, Weight: 1})
		res, rep := loadRun(t, inst, db, prog, 2, 50, 1)
		if res.Overall.Errors.Total() != 0 {
			t.Fatalf("%s: errors %v", protocol, res.Overall.Errors)
		}
		if got := queryInt(t, inst, db, "SELECT count(*) FROM pipe WHERE x IN (1, 4)"); got != 100 {
			t.Errorf("%s: %d rows, want 100", protocol, got)
		}
		if r := rep.Scripts[0].RoundTrips; r != 1 {
			t.Errorf("%s: %v round trips per transaction, want 1", protocol, r)
		}
	}
	bad := "\\startpipeline\nBEGIN;\nINSERT INTO pipe VALUES (-1, 1);\nSELECT 1 / (:client_id - :client_id);\nEND;\n\\endpipeline\n"
	mixed := parseFor(t, inst, Prepared, Source{Name: "bad.sql", Text: bad, Weight: 1}, Source{Name: "good.sql", Text: "SELECT 1;", Weight: 1})
	res, rep := loadRun(t, inst, db, mixed, 1, 40, 1)
	if res.Types[1].Errors.Total() != 0 || res.Types[0].Ops != 0 || res.Types[0].Errors[load.OtherError] == 0 {
		t.Errorf("bad pipelines: %d ok, errors %v; good statements: errors %v", res.Types[0].Ops, res.Types[0].Errors, res.Types[1].Errors)
	}
	if got := queryInt(t, inst, db, "SELECT count(*) FROM pipe WHERE client = -1"); got != 0 {
		t.Errorf("%d rows of failed pipelines committed", got)
	}
	if c := rep.Scripts[0].Commands[5]; c.Failures != res.Types[0].Errors.Total() {
		t.Errorf("%d failures at \\endpipeline, %d failed transactions", c.Failures, res.Types[0].Errors.Total())
	}
}

// TestFailedTransactionsRolledBack: a statement's error fails the
// transaction (counted by class) and rolls its block back, so the client's
// next transaction runs; so does a script that ends inside a block.
func TestFailedTransactionsRolledBack(t *testing.T) {
	t.Parallel()
	inst, db := sharedServer.Database(t)
	execOn(t, inst, db, "CREATE TABLE t (x int)")
	prog := parseFor(t, inst, Prepared,
		Source{Name: "fail.sql", Text: "BEGIN;\nINSERT INTO t VALUES (1);\nSELECT 1 / 0;\nEND;\n", Weight: 1},
		Source{Name: "open.sql", Text: "BEGIN;\nINSERT INTO t VALUES (2);\n", Weight: 1},
		Source{Name: "ok.sql", Text: "INSERT INTO t VALUES (3);\n", Weight: 1})
	res, rep := loadRun(t, inst, db, prog, 2, 90, 1)
	fail, open, ok := res.Types[0], res.Types[1], res.Types[2]
	if fail.Ops != 0 || open.Ops != 0 || ok.Errors.Total() != 0 || fail.Errors[load.OtherError] == 0 || open.Errors[load.OtherError] == 0 {
		t.Errorf("fail.sql %d ok %v; open.sql %d ok %v; ok.sql errors %v", fail.Ops, fail.Errors, open.Ops, open.Errors, ok.Errors)
	}
	if got := queryInt(t, inst, db, "SELECT count(*) FROM t"); got != ok.Ops {
		t.Errorf("%d rows, %d from ok.sql: failed transactions committed", got, ok.Ops)
	}
	if c := rep.Scripts[0].Commands[2]; c.Failures != fail.Errors.Total() {
		t.Errorf("%d failures at the division, %d failed transactions", c.Failures, fail.Errors.Total())
	}
}

// TestSleepHonoursTheRunsEnd: a \sleep ends when the run's context does.
func TestSleepHonoursTheRunsEnd(t *testing.T) {
	t.Parallel()
	c := newTestClient(t, "\\sleep 1000 s\n")
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		time.Sleep(10 * time.Millisecond)
		cancel()
	}()
	if err := c.run(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("got %v, want the run's end", err)
	}
	if err := newTestClient(t, "\\sleep :missing ms\n").run(context.Background(), 0); err == nil || !strings.Contains(err.Error(), `undefined variable "missing"`) {
		t.Errorf("got %v", err)
	}
	if err := newTestClient(t, "\\set d 0\n\\sleep :d us\n\\sleep -5\n").run(context.Background(), 0); err != nil {
		t.Errorf("a sleep of none: %v", err)
	}
}
