package load_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
	"github.com/dbrig/dbrig/internal/load"
)

// selectOne is the smallest real workload: one connection per user, SELECT 1.
type selectOne struct {
	inst           *postgres.Instance
	opened, closed atomic.Int64
}

type selectOneWorker struct {
	wl   *selectOne
	conn *pgx.Conn
}

func (s *selectOne) Mix() []load.TxType { return []load.TxType{{Name: "select-1", Weight: 1}} }

func (s *selectOne) NewWorker(ctx context.Context, id int) (load.Worker, error) {
	conn, err := s.inst.Connect(ctx, "postgres")
	if err != nil {
		return nil, err
	}
	s.opened.Add(1)
	return &selectOneWorker{wl: s, conn: conn}, nil
}

func (w *selectOneWorker) Do(ctx context.Context, tx int) error {
	var one int
	return w.conn.QueryRow(ctx, "select 1").Scan(&one)
}

func (w *selectOneWorker) Close() error {
	w.wl.closed.Add(1)
	return w.conn.Close(context.Background())
}

func TestSelectOneAgainstPostgres(t *testing.T) {
	inst := pgtest.Start(t, "load", nil)
	tests := []struct {
		name string
		cfg  load.Config
	}{
		{"closed loop", load.Config{Users: 4, Think: load.Think{Mean: time.Millisecond, Exponential: true},
			WarmUp: 500 * time.Millisecond, Duration: 2 * time.Second}},
		{"open loop", load.Config{Users: 4, Rate: 200, Arrival: load.Poisson,
			WarmUp: 500 * time.Millisecond, Duration: 2 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wl := &selectOne{inst: inst}
			r, err := load.NewRunner(tt.cfg, wl)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			var lines []string
			res, err := r.Run(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, iv := range res.Series {
				lines = append(lines, iv.String())
			}
			t.Logf("%d ops, %.0f tps, p50 %v p99 %v\n%s", res.Overall.Ops, res.Overall.TPS,
				res.Overall.Latency.Quantile(0.5), res.Overall.Latency.Quantile(0.99), lines)
			if o, c := wl.opened.Load(), wl.closed.Load(); o != 4 || c != 4 {
				t.Errorf("opened %d connections, closed %d; want 4 and 4", o, c)
			}
			if e := res.Overall.Errors.Total(); e != 0 {
				t.Errorf("errors: %v", res.Overall.Errors)
			}
			if len(res.Series) < 2 {
				t.Errorf("a series of %d seconds for a 2.5 s run", len(res.Series))
			}
			// Bounds a busy machine cannot break: a SELECT 1 takes some
			// time, and no more than the run lasted.
			if p := res.Overall.Latency.Quantile(0.5); p <= 0 || p > tt.cfg.WarmUp+tt.cfg.Duration {
				t.Errorf("median SELECT 1 latency %v", p)
			}
			if tt.cfg.Open() {
				// Poisson arrivals at 200/s for 2 s: 400 expected, a standard
				// deviation of 20.
				if n := res.Overall.Ops; n < 320 || n > 480 {
					t.Errorf("%d operations, want about 400", n)
				}
				if res.Overloaded {
					t.Errorf("%d arrivals not started at 200/s", res.NotStarted)
				}
				if l, s := res.Overall.Latency.Quantile(0.5), res.Overall.Service.Quantile(0.5); l < s {
					t.Errorf("latency p50 %v below service p50 %v: latency must include the start lag", l, s)
				}
			} else if res.Overall.Ops < int64(tt.cfg.Users) {
				// Each user ends at least one: a count of a busy machine's
				// speed would be judged here otherwise (39 at load 100).
				t.Errorf("only %d SELECT 1 in 2 s with %d users", res.Overall.Ops, tt.cfg.Users)
			}
		})
	}
}

func TestRealPostgresErrorsAreClassified(t *testing.T) {
	inst := pgtest.Start(t, "errors", map[string]string{"deadlock_timeout": "50ms"})
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	// The errors come from the engine's own sessions, which classify
	// them, as every workload's do.
	connect := func() engine.Session {
		t.Helper()
		login, _ := inst.UnixLogin("postgres")
		c, err := postgres.New("").OpenSession(ctx, login, engine.SessionOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close(context.Background()) })
		return c
	}
	exec := func(c engine.Session, sql string) error { return c.Exec(ctx, sql) }
	must := func(c engine.Session, sql string) {
		t.Helper()
		if err := exec(c, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	a, b := connect(), connect()
	must(a, "create table t (id int primary key, v int); insert into t values (1, 0), (2, 0)")

	check := func(name string, err error, want load.ErrorClass) {
		t.Helper()
		if err == nil {
			t.Errorf("%s: no error", name)
			return
		}
		if got := load.ClassifyError(err); got != want {
			t.Errorf("%s: %v classified %v, want %v", name, err, got, want)
		}
	}

	// A repeatable-read transaction updates a row another committed since
	// its snapshot.
	must(a, "begin isolation level repeatable read")
	must(a, "select v from t where id = 1")
	must(b, "update t set v = v + 1 where id = 1")
	check("serialization failure", exec(a, "update t set v = v + 1 where id = 1"), load.Serialization)
	must(a, "rollback")

	// Two transactions lock two rows in opposite orders.
	must(a, "begin")
	must(b, "begin")
	must(a, "update t set v = 1 where id = 1")
	must(b, "update t set v = 2 where id = 2")
	var wg sync.WaitGroup
	var errA error
	wg.Go(func() { errA = exec(a, "update t set v = 1 where id = 2") })
	time.Sleep(20 * time.Millisecond) // let a wait for b's lock first
	errB := exec(b, "update t set v = 2 where id = 1")
	wg.Wait()
	deadlock := errA
	if deadlock == nil {
		deadlock = errB
	}
	check("deadlock", deadlock, load.Deadlock)
	must(a, "rollback")
	must(b, "rollback")

	must(a, "set statement_timeout = '50ms'")
	check("statement timeout", exec(a, "select pg_sleep(5)"), load.Timeout)
	must(a, "reset statement_timeout")

	must(b, "begin")
	must(b, "select * from t where id = 1 for update")
	must(a, "set lock_timeout = '50ms'")
	check("lock timeout", exec(a, "update t set v = 3 where id = 1"), load.Timeout)
	must(b, "rollback")

	short, cancelShort := context.WithTimeout(ctx, 50*time.Millisecond)
	err := a.Exec(short, "select pg_sleep(5)")
	cancelShort()
	check("client deadline", err, load.Timeout)

	// The server ends a session (an administrator, a failover).
	victim := connect()
	must(b, fmt.Sprintf("select pg_terminate_backend(%d)", victim.BackendPID()))
	time.Sleep(100 * time.Millisecond)
	first := exec(victim, "select 1")
	check("terminated session", first, load.ConnectionLost)
	second := exec(victim, "select 1")
	check("closed connection", second, load.ConnectionLost)
	if errors.Is(first, context.DeadlineExceeded) {
		t.Errorf("the terminated session's error is a timeout: %v", first)
	}
}
