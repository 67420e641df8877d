package tenants

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/mariadb"
	"github.com/dbrig/dbrig/internal/engine/postgres"
)

// counters are an instance's cumulative counters at one moment.
type counters struct {
	known bool
	// logSyncs counts log flushes to disk; bufferReads and bufferHits the
	// reads the server's buffers missed and served; tableOpens the table
	// definitions MariaDB opened anew.
	logSyncs, bufferReads, bufferHits, tableOpens float64
	tableOpensKnown                               bool
}

// serverSettings are what the judges read back from a server.
type serverSettings struct {
	bufferBytes   int64
	logForPITR    bool
	commitWaits   bool
	databaseBytes int64
	// describe says it in the engine's words, for the point's notes.
	describe string
}

// statsConn is dbrig's own session on an instance for its counters and
// settings, on the first tenant database. It reconnects once when a query
// fails, since a server that restarted (after the kernel killed one of its
// processes under a memory cap) has closed it.
type statsConn struct {
	login engine.Conn
	pg    *pgx.Conn
	maria *sql.DB
}

func openStats(ctx context.Context, c engine.Conn) (*statsConn, error) {
	s := &statsConn{login: c}
	return s, s.open(ctx)
}

// retry runs f, and again on a new session when it fails.
func (s *statsConn) retry(ctx context.Context, f func() error) error {
	err := f()
	if err == nil || ctx.Err() != nil {
		return err
	}
	s.close()
	if s.open(ctx) != nil {
		return err
	}
	return f()
}

func (s *statsConn) open(ctx context.Context) error {
	c := s.login
	s.pg, s.maria = nil, nil
	switch c.Engine {
	case postgres.Name:
		cfg, err := postgres.ConnInfoOf(c).ConnConfig()
		if err != nil {
			return err
		}
		if s.pg, err = pgx.ConnectConfig(ctx, cfg); err != nil {
			return fmt.Errorf("connect to %s: %w", c, err)
		}
	case mariadb.Name:
		cfg, err := mariadb.Config(c)
		if err != nil {
			return err
		}
		if s.maria, err = openMaria(ctx, cfg); err != nil {
			return fmt.Errorf("connect to %s: %w", c, err)
		}
	default:
		return fmt.Errorf("the tenants workload speaks PostgreSQL's and MariaDB's dialects only, not %q", c.Engine)
	}
	return nil
}

func (s *statsConn) close() {
	if s.pg != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		s.pg.Close(ctx)
		cancel()
	}
	if s.maria != nil {
		s.maria.Close()
	}
}

// read takes the counters.
func (s *statsConn) read(ctx context.Context) (counters, error) {
	var c counters
	if s.pg != nil {
		err := s.retry(ctx, func() error {
			return s.pg.QueryRow(ctx, `SELECT (SELECT wal_sync FROM pg_stat_wal)::float8,
  coalesce(sum(blks_read), 0)::float8, coalesce(sum(blks_hit), 0)::float8 FROM pg_stat_database`).Scan(&c.logSyncs, &c.bufferReads, &c.bufferHits)
		})
		if err != nil {
			return c, fmt.Errorf("read pg_stat_wal and pg_stat_database: %w", err)
		}
		c.known = true
		return c, nil
	}
	var st map[string]float64
	err := s.retry(ctx, func() (err error) {
		st, err = s.mariaStatus(ctx, "Innodb_data_fsyncs", "Innodb_buffer_pool_reads", "Innodb_buffer_pool_read_requests", "Opened_table_definitions")
		return err
	})
	if err != nil {
		return c, err
	}
	c.logSyncs, c.bufferReads = st["Innodb_data_fsyncs"], st["Innodb_buffer_pool_reads"]
	c.bufferHits = st["Innodb_buffer_pool_read_requests"] - c.bufferReads
	c.tableOpens, c.tableOpensKnown = st["Opened_table_definitions"], true
	c.known = true
	return c, nil
}

func (s *statsConn) mariaStatus(ctx context.Context, names ...string) (map[string]float64, error) {
	q := "SHOW GLOBAL STATUS WHERE Variable_name IN ('" + strings.Join(names, "','") + "')"
	rows, err := s.maria.QueryContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("read MariaDB's status: %w", err)
	}
	defer rows.Close()
	out := map[string]float64{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		out[k], _ = strconv.ParseFloat(v, 64)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for _, n := range names {
		if _, ok := out[n]; !ok {
			return nil, fmt.Errorf("MariaDB has no status variable %s", n)
		}
	}
	return out, nil
}

// engineMetrics are the counters' differences per transaction.
func engineMetrics(mm map[string]float64, a, b []counters, ops int64) {
	if ops <= 0 || len(a) == 0 || len(a) != len(b) {
		return
	}
	var syncs, reads, hits, opens float64
	opensKnown := true
	for i := range a {
		if !a[i].known || !b[i].known {
			return
		}
		syncs += b[i].logSyncs - a[i].logSyncs
		reads += b[i].bufferReads - a[i].bufferReads
		hits += b[i].bufferHits - a[i].bufferHits
		opens += b[i].tableOpens - a[i].tableOpens
		opensKnown = opensKnown && b[i].tableOpensKnown
	}
	mm["log_syncs_per_tx"] = syncs / float64(ops)
	if reads+hits > 0 {
		mm["buffer_hit_pct"] = 100 * hits / (reads + hits)
	}
	if opensKnown {
		mm["table_cache_misses_per_tx"] = opens / float64(ops)
	}
}

// settings reads the buffer size and the durability settings back.
func (s *statsConn) settings(ctx context.Context) (serverSettings, error) {
	var st serverSettings
	if s.pg != nil {
		var level, sync string
		err := s.retry(ctx, func() error {
			return s.pg.QueryRow(ctx, `SELECT (SELECT setting::bigint * 8192 FROM pg_settings WHERE name = 'shared_buffers'),
  current_setting('wal_level'), current_setting('synchronous_commit'), pg_database_size(current_database())`).Scan(&st.bufferBytes, &level, &sync, &st.databaseBytes)
		})
		if err != nil {
			return st, fmt.Errorf("read PostgreSQL's settings: %w", err)
		}
		st.logForPITR = level != "minimal"
		st.commitWaits = sync != "off"
		st.describe = fmt.Sprintf("PostgreSQL: wal_level = %s, synchronous_commit = %s (%s)", level, sync, durabilityName(st.logForPITR, st.commitWaits))
		return st, nil
	}
	var logBin, flush, syncBinlog int64
	err := s.retry(ctx, func() error {
		return s.maria.QueryRowContext(ctx, `SELECT @@innodb_buffer_pool_size, @@log_bin, @@innodb_flush_log_at_trx_commit, @@sync_binlog`).Scan(&st.bufferBytes, &logBin, &flush, &syncBinlog)
	})
	if err != nil {
		return st, fmt.Errorf("read MariaDB's settings: %w", err)
	}
	var size sql.NullInt64
	if err := s.maria.QueryRowContext(ctx, `SELECT SUM(DATA_LENGTH + INDEX_LENGTH) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()`).Scan(&size); err == nil && size.Valid {
		st.databaseBytes = size.Int64
	}
	st.logForPITR = logBin == 1
	st.commitWaits = flush == 1
	st.describe = fmt.Sprintf("MariaDB: log_bin = %s, sync_binlog = %d, innodb_flush_log_at_trx_commit = %d (%s)", onOff(logBin == 1), syncBinlog, flush, durabilityName(st.logForPITR, st.commitWaits))
	return st, nil
}

func onOff(b bool) string {
	if b {
		return "ON"
	}
	return "OFF"
}

// durabilityName maps the settings to the seed's recovery models (see the
// package documentation for the mapping and its limits).
func durabilityName(pitr, waits bool) string {
	switch {
	case pitr && waits:
		return "the full recovery model's analogue"
	case !pitr && waits:
		return "the bulk-logged recovery model's analogue"
	case pitr:
		return "full logging, commits not waiting for the disk"
	}
	return "minimal logging, commits not waiting for the disk"
}
