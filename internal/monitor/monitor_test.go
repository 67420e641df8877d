package monitor_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/enginetest"
	"github.com/dbrig/dbrig/internal/engine/mariadb"
	"github.com/dbrig/dbrig/internal/engine/mariadb/mariatest"
	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
	"github.com/dbrig/dbrig/internal/monitor"
)

const interval = 100 * time.Millisecond

// samplesAfter waits for n more samples than the series had at mark and
// returns those new samples.
func samplesAfter(t *testing.T, s *monitor.Sampler, mark, n int) []monitor.Sample {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if got := s.Series().Samples; len(got) >= mark+n {
			return got[mark:]
		}
		time.Sleep(interval)
	}
	t.Fatalf("fewer than %d samples after %d in 20 s", n, mark)
	return nil
}

func lastOK(samples []monitor.Sample) (monitor.Sample, bool) {
	for i := len(samples) - 1; i >= 0; i-- {
		if samples[i].OK() {
			return samples[i], true
		}
	}
	return monitor.Sample{}, false
}

// TestPostgresSamplingSurvivesExhaustedConnections fills a PostgreSQL
// server's ordinary connection slots with a workload's role, shows that
// sampling goes on over the reserved superuser slots (also after the
// monitoring connection is killed and must connect again), then fills the
// reserved slots too and shows the samples that could not be taken, with
// the reason.
func TestPostgresSamplingSurvivesExhaustedConnections(t *testing.T) {
	inst := pgtest.Start(t, "monitor", map[string]string{"max_connections": "8", "superuser_reserved_connections": "3"})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if err := inst.Exec(ctx, "postgres", "CREATE ROLE load_user LOGIN PASSWORD 'load-user-pw'"); err != nil {
		t.Fatal(err)
	}
	connect := func(login engine.Conn) (*pgx.Conn, error) {
		cfg, err := postgres.ConnInfoOf(login).ConnConfig()
		if err != nil {
			t.Fatal(err)
		}
		c, err := pgx.ConnectConfig(ctx, cfg)
		if err == nil {
			t.Cleanup(func() { c.Close(context.Background()) })
		}
		return c, err
	}
	super, _ := inst.UnixLogin("postgres")
	user := super
	user.User = "load_user"
	user = user.WithPassword("load-user-pw")

	s := monitor.Start(ctx, enginetest.Registry(), inst, "postgres", interval)
	defer s.Stop()
	if !strings.Contains(s.Series().Via, "reserved superuser slots") {
		t.Errorf("via %q", s.Series().Via)
	}

	// The workload takes every slot it can.
	var users []*pgx.Conn
	var refused error
	for range 10 {
		c, err := connect(user)
		if err != nil {
			refused = err
			break
		}
		users = append(users, c)
	}
	var pgErr *pgconn.PgError
	if !errors.As(refused, &pgErr) || pgErr.Code != "53300" {
		t.Fatalf("after %d connections: %v, want too_many_connections", len(users), refused)
	}
	mark := len(s.Series().Samples)
	got := samplesAfter(t, s, mark, 3)
	last, ok := lastOK(got)
	if !ok || last.Sessions != len(users) {
		t.Fatalf("with every ordinary slot taken (%d users): samples %+v", len(users), got)
	}

	// The monitoring connection is lost; it connects again through a
	// reserved slot.
	admin, err := connect(super)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'dbrig monitor'"); err != nil {
		t.Fatal(err)
	}
	mark = len(s.Series().Samples)
	got = samplesAfter(t, s, mark, 5)
	if last, ok := lastOK(got); !ok || last.Sessions != len(users)+1 {
		t.Fatalf("after the monitoring connection was killed: samples %+v", got)
	}

	// Now superusers take the reserved slots too: a sampler started now
	// cannot connect, and its samples say so.
	for range 5 {
		if _, err := connect(super); err != nil {
			break
		}
	}
	locked := monitor.Start(ctx, enginetest.Registry(), inst, "postgres", interval)
	got = samplesAfter(t, locked, 0, 3)
	lockedOut := locked.Stop()
	for _, x := range got {
		if x.OK() || !strings.Contains(x.Error, "connect") {
			t.Errorf("with every slot taken, a sample is %+v", x)
		}
	}
	line := lockedOut.MissedLine()
	t.Log(line)
	if !strings.Contains(line, "could not be taken") || !strings.Contains(line, "connect") {
		t.Errorf("missed line %q", line)
	}
	series := s.Stop()
	if sum := series.Summarize(); sum.Missed < 1 || sum.Taken < 5 || sum.MeanCPU < 0 {
		t.Errorf("summary %+v", sum)
	}
}

// TestMariaDBSamplingSurvivesExhaustedConnections fills a MariaDB server's
// max_connections and shows that sampling goes on through the extra port,
// also after the monitoring connection is killed.
func TestMariaDBSamplingSurvivesExhaustedConnections(t *testing.T) {
	inst := mariatest.Start(t, "monitor", map[string]string{"max_connections": "10"})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	s := monitor.Start(ctx, enginetest.Registry(), inst, "", interval)
	defer s.Stop()
	if !strings.Contains(s.Series().Via, "extra port") {
		t.Errorf("via %q", s.Series().Via)
	}
	login, _ := inst.UnixLogin("")
	var conns []*sql.Conn
	var refused error
	for range 20 {
		db, err := mariadb.Open(ctx, login)
		if err != nil {
			refused = err
			break
		}
		t.Cleanup(func() { db.Close() })
		c, err := db.Conn(ctx)
		if err != nil {
			refused = err
			break
		}
		conns = append(conns, c)
	}
	var myErr *mysql.MySQLError
	if !errors.As(refused, &myErr) || myErr.Number != 1040 {
		t.Fatalf("after %d connections: %v, want too many connections", len(conns), refused)
	}
	got := samplesAfter(t, s, len(s.Series().Samples), 3)
	if last, ok := lastOK(got); !ok || last.Sessions != len(conns) {
		t.Fatalf("with max_connections taken (%d connections): samples %+v", len(conns), got)
	}
	// Kill the monitoring connection (the one over TCP) from a saturating
	// one: it connects again through the extra port.
	if _, err := conns[0].ExecContext(ctx, "BEGIN NOT ATOMIC FOR t IN (SELECT ID FROM information_schema.PROCESSLIST WHERE HOST LIKE '127.0.0.1:%') DO KILL CONNECTION t.ID; END FOR; END"); err != nil {
		t.Fatal(err)
	}
	got = samplesAfter(t, s, len(s.Series().Samples), 5)
	if last, ok := lastOK(got); !ok || last.Sessions != len(conns) {
		t.Fatalf("after the monitoring connection was killed: samples %+v", got)
	}
	killed := false
	for _, x := range got {
		killed = killed || !x.OK()
	}
	if !killed {
		t.Errorf("no sample failed after the monitoring connection was killed: %+v", got)
	}
	if sum := s.Stop().Summarize(); sum.MeanCPU < 0 {
		t.Errorf("no CPU figures: %+v", sum)
	}
}
