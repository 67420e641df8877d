package readahead

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dbrig/dbrig/internal/workload/dbconn"
	"github.com/dbrig/dbrig/internal/workload/widetable"
)

// scanQuery is the seed's query: a full scan, since no index holds dt.
const scanQuery = "SELECT max(dt) FROM " + widetable.Table

// scanner runs the cold scan in an engine's way.
type scanner struct {
	c *dbconn.Conn
	// direct: the engine reads its files with O_DIRECT (InnoDB's
	// innodb_flush_method = O_DIRECT), past the OS's cache and read-ahead.
	direct        bool
	engineMetrics map[string]float64
}

// newScanner readies the session: one process for the scan (PostgreSQL),
// InnoDB's own read-ahead off when asked, and the plan checked to be a
// full scan.
func newScanner(ctx context.Context, c *dbconn.Conn, engineOff bool) (*scanner, error) {
	s := &scanner{c: c, engineMetrics: map[string]float64{}}
	var plan [][]string
	var err error
	switch c.Engine() {
	case "postgres":
		if err := c.Exec(ctx, "SET jit = off", "SET max_parallel_workers_per_gather = 0"); err != nil {
			return nil, err
		}
		if plan, err = c.Rows(ctx, "EXPLAIN "+scanQuery); err != nil {
			return nil, err
		}
		if !strings.Contains(fmt.Sprint(plan), "Seq Scan on "+widetable.Table) {
			return nil, fmt.Errorf("the scan's plan is not a sequential scan: %v", plan)
		}
	case "mariadb":
		if engineOff {
			// The seed turned SQL Server's read-ahead off (trace flag 652);
			// 0 turns InnoDB's linear read-ahead off until the next restart.
			if err := c.Exec(ctx, "SET GLOBAL innodb_read_ahead_threshold = 0"); err != nil {
				return nil, err
			}
		}
		th, err := c.Int(ctx, "SELECT @@innodb_read_ahead_threshold")
		if err != nil {
			return nil, err
		}
		s.engineMetrics["engine_read_ahead_threshold"] = float64(th)
		method, err := c.Value(ctx, "SELECT @@innodb_flush_method")
		if err != nil {
			return nil, err
		}
		s.direct = strings.Contains(strings.ToUpper(method), "O_DIRECT")
		if plan, err = c.Rows(ctx, "EXPLAIN "+scanQuery); err != nil {
			return nil, err
		}
		if len(plan) != 1 || len(plan[0]) < 4 || plan[0][3] != "ALL" {
			return nil, fmt.Errorf("the scan's plan is not a full scan: %v", plan)
		}
	default:
		return nil, fmt.Errorf("the read-ahead workload has no %s dialect", c.Engine())
	}
	return s, nil
}

// scan runs the query once and returns its time and the table's pages the
// server read from outside its cache.
func (s *scanner) scan(ctx context.Context) (time.Duration, int64, error) {
	if s.c.Engine() == "postgres" {
		if err := s.c.Exec(ctx, "BEGIN"); err != nil {
			return 0, 0, err
		}
		defer s.c.Exec(context.WithoutCancel(ctx), "COMMIT")
		d, _, err := s.c.Time(ctx, scanQuery)
		if err != nil {
			return 0, 0, err
		}
		// The transaction's own statistics: blocks the scan fetched that
		// were not in the shared buffers.
		read, err := s.c.Int(ctx, "SELECT pg_stat_get_xact_blocks_fetched('"+widetable.Table+"'::regclass) - pg_stat_get_xact_blocks_hit('"+widetable.Table+"'::regclass)")
		return d, read, err
	}
	before, err := s.status(ctx)
	if err != nil {
		return 0, 0, err
	}
	d, _, err := s.c.Time(ctx, scanQuery)
	if err != nil {
		return 0, 0, err
	}
	after, err := s.status(ctx)
	if err != nil {
		return 0, 0, err
	}
	s.engineMetrics["engine_read_ahead_pages"] = float64(after["innodb_buffer_pool_read_ahead"] - before["innodb_buffer_pool_read_ahead"])
	return d, after["innodb_buffer_pool_reads"] - before["innodb_buffer_pool_reads"], nil
}

// status reads InnoDB's read counters (the server's: dbrig's session is
// the only one working).
func (s *scanner) status(ctx context.Context) (map[string]int64, error) {
	rows, err := s.c.Rows(ctx, "SHOW GLOBAL STATUS WHERE Variable_name IN ('Innodb_buffer_pool_reads', 'Innodb_buffer_pool_read_ahead')")
	if err != nil {
		return nil, err
	}
	out := map[string]int64{}
	for _, r := range rows {
		n, err := strconv.ParseInt(r[1], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("status %s = %q", r[0], r[1])
		}
		out[strings.ToLower(r[0])] = n
	}
	return out, nil
}
