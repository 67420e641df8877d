package engine_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/enginetest"
	"github.com/dbrig/dbrig/internal/engine/mariadb/mariatest"
	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
)

// sessionCase is one engine's server and the SQL its dialect needs.
type sessionCase struct {
	name  string
	start func(t *testing.T) engine.Instance
	// table is the test's table with a generated key.
	table string
	// insert adds a row of (name, price) with the dialect's parameters.
	insert string
	// set and read set a session variable and read it back.
	set, read string
}

var sessionCases = []sessionCase{
	{"postgres", func(t *testing.T) engine.Instance { return pgtest.Start(t, "session", nil) },
		"CREATE TABLE t (id serial PRIMARY KEY, name varchar(20) UNIQUE, price numeric(8,2))",
		"INSERT INTO t (name, price) VALUES ($1, $2) RETURNING id",
		"SET work_mem = '7MB'", "SELECT current_setting('work_mem')"},
	{"mariadb", func(t *testing.T) engine.Instance { return mariatest.Start(t, "session", nil) },
		"CREATE TABLE t (id int AUTO_INCREMENT PRIMARY KEY, name varchar(20) UNIQUE, price decimal(8,2)) ENGINE=InnoDB",
		"INSERT INTO t (name, price) VALUES (?, ?)",
		"SET @w = '7MB'", "SELECT @w"},
}

// open opens a session of the instance's engine on a database of the
// test's own.
func open(t *testing.T, ctx context.Context, inst engine.Instance, o engine.SessionOptions) engine.Session {
	t.Helper()
	if err := inst.CreateDatabase(ctx, "dbrig_session"); err != nil {
		t.Fatal(err)
	}
	login, _ := inst.UnixLogin("dbrig_session")
	s, err := enginetest.Registry().OpenSession(ctx, login, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(context.Background()) })
	return s
}

// TestSessionOnEachEngine runs the same work through each engine's
// session: text and bound statements, prepared ones with typed
// parameters, the generated key as the dialect gives it, a bulk load, the
// bytes counted, and errors classed and naming their statement.
func TestSessionOnEachEngine(t *testing.T) {
	t.Parallel()
	for _, tc := range sessionCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			inst := tc.start(t)
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			s := open(t, ctx, inst, engine.SessionOptions{Traffic: true})
			d, err := enginetest.Registry().Dialect(tc.name)
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Exec(ctx, tc.set, tc.table); err != nil {
				t.Fatal(err)
			}
			if v, err := engine.Value(ctx, s, tc.read); err != nil || v != "7MB" {
				t.Errorf("the session's setting = %q, %v; want 7MB", v, err)
			}
			ins, err := s.Prepare(ctx, tc.insert)
			if err != nil {
				t.Fatal(err)
			}
			var a engine.Args
			var keys []int64
			for i, name := range []string{"ant", "bee"} {
				a.Reset().Text(name).Decimal(int64(1005+i), 2)
				if d.InsertID {
					res, err := s.ExecPrepared(ctx, ins, &a)
					if err != nil || res.RowsAffected != 1 {
						t.Fatalf("insert: %+v, %v", res, err)
					}
					keys = append(keys, res.LastInsertID)
					continue
				}
				rows := s.QueryPrepared(ctx, ins, &a)
				for rows.Next() {
					keys = append(keys, mustInt(t, rows.Values()[0]))
				}
				if _, err := rows.Close(); err != nil {
					t.Fatal(err)
				}
			}
			if !slices.Equal(keys, []int64{1, 2}) {
				t.Errorf("generated keys %v, want 1 2", keys)
			}
			n, err := s.Load(ctx, "t", strings.NewReader("7|cat|\\N\n8|d\\|og|3.50\n"), engine.LoadOptions{Delimiter: '|'})
			if err != nil || n != 2 {
				t.Errorf("load: %d rows, %v", n, err)
			}
			sel, err := s.Prepare(ctx, "SELECT name, price FROM t WHERE id >= "+d.Placeholder(1)+" ORDER BY id")
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			if err := each(ctx, s.QueryPrepared(ctx, sel, a.Reset().Int(2)), &got); err != nil {
				t.Fatal(err)
			}
			if want := []string{"bee 10.06", "cat <nil>", "d|og 3.50"}; !slices.Equal(got, want) {
				t.Errorf("prepared rows %q, want %q", got, want)
			}
			got = nil
			if err := each(ctx, s.Query(ctx, "SELECT count(*), max(price) FROM t WHERE name <> "+d.Placeholder(1), a.Reset().Text("ant")), &got); err != nil || !slices.Equal(got, []string{"3 10.06"}) {
				t.Errorf("a bound query: %q, %v", got, err)
			}
			up, err := s.Prepare(ctx, "UPDATE t SET price = price + 1 WHERE price > "+d.Placeholder(1))
			if err != nil {
				t.Fatal(err)
			}
			if res, err := s.ExecPrepared(ctx, up, a.Reset().Decimal(3, 0)); err != nil || res.RowsAffected != 3 {
				t.Errorf("update: %+v, %v", res, err)
			}
			if out, in := s.Traffic(); out == 0 || in == 0 {
				t.Errorf("traffic %d out, %d in", out, in)
			}
			err = s.Exec(ctx, "INSERT INTO t (name) VALUES ('ant')\n-- again")
			if engine.ClassifyError(err) != engine.OtherError || !strings.Contains(err.Error(), "INSERT INTO t (name) VALUES ('ant') ...") {
				t.Errorf("a duplicate key: %v (class %v)", err, engine.ClassifyError(err))
			}
			var e *engine.Error
			if !errors.As(err, &e) {
				t.Errorf("an error without the engine's class: %#v", err)
			}
			if !s.Alive() {
				t.Error("the session died of a statement's error")
			}
		})
	}
}

// TestSessionResultSets reads two statements' answers from one text
// statement, with their columns.
func TestSessionResultSets(t *testing.T) {
	t.Parallel()
	for _, tc := range sessionCases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			inst := tc.start(t)
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			s := open(t, ctx, inst, engine.SessionOptions{MultiStatements: true})
			rows := s.Query(ctx, "SELECT 1 AS a, NULL AS b; SELECT 'x' AS c", nil)
			var sets []string
			for {
				var vals []string
				for rows.Next() {
					for _, v := range rows.Values() {
						vals = append(vals, fmt.Sprintf("%q", v))
					}
				}
				sets = append(sets, strings.Join(rows.Columns(), ",")+"="+strings.Join(vals, ","))
				if !rows.NextResultSet() {
					break
				}
			}
			if _, err := rows.Close(); err != nil {
				t.Fatal(err)
			}
			if want := []string{`a,b="1",""`, `c="x"`}; !slices.Equal(sets, want) {
				t.Errorf("result sets %q, want %q", sets, want)
			}
		})
	}
}

// TestBlockingSessionInterrupted ends a statement in flight on a blocking
// session by the end of its context: the error says so, and is a lost
// connection's.
func TestBlockingSessionInterrupted(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		sessionCase
		sleep string
	}{{sessionCases[0], "SELECT pg_sleep(30)"}, {sessionCases[1], "SELECT SLEEP(30)"}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			inst := tc.start(t)
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			s := open(t, ctx, inst, engine.SessionOptions{Blocking: true})
			run, stop := context.WithCancel(ctx)
			time.AfterFunc(200*time.Millisecond, stop)
			rows := s.Query(run, tc.sleep, nil)
			for rows.Next() {
			}
			_, err := rows.Close()
			if !errors.Is(err, context.Canceled) || engine.ClassifyError(err) != engine.ConnectionLost {
				t.Errorf("interrupted: %v (class %v)", err, engine.ClassifyError(err))
			}
		})
	}
}

// TestPipeline sends three statements on PostgreSQL without waiting and
// reads their answers at once; the second's error is the pipeline's.
func TestPipeline(t *testing.T) {
	t.Parallel()
	inst := pgtest.Start(t, "pipeline", nil)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	s := open(t, ctx, inst, engine.SessionOptions{Blocking: true})
	p, ok := s.(engine.Pipeliner)
	if !ok {
		t.Fatal("PostgreSQL's session has no pipeline")
	}
	if err := s.Exec(ctx, "CREATE TABLE p (a int PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	ins, err := s.Prepare(ctx, "INSERT INTO p VALUES ($1)")
	if err != nil {
		t.Fatal(err)
	}
	var a engine.Args
	if err := p.StartPipeline(); err != nil {
		t.Fatal(err)
	}
	p.SendPrepared(ins, a.Reset().Int(1))
	p.SendPrepared(ins, a.Reset().Int(1))
	p.Send("INSERT INTO p VALUES ($1)", a.Reset().Int(2))
	if err := p.EndPipeline(); err == nil || !strings.Contains(err.Error(), "23505") {
		t.Errorf("the pipeline's error: %v", err)
	}
	if open, known := s.InTransaction(); open || !known {
		t.Errorf("in a transaction after the pipeline: %v %v", open, known)
	}
}

func each(ctx context.Context, rows engine.Rows, out *[]string) error {
	for rows.Next() {
		var f []string
		for _, v := range rows.Values() {
			if v == nil {
				f = append(f, "<nil>")
			} else {
				f = append(f, string(v))
			}
		}
		*out = append(*out, strings.Join(f, " "))
	}
	_, err := rows.Close()
	return err
}

func mustInt(t *testing.T, b []byte) int64 {
	t.Helper()
	var n int64
	if _, err := fmt.Sscan(string(b), &n); err != nil {
		t.Fatalf("%q: %v", b, err)
	}
	return n
}
