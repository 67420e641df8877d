package tenants

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
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
	engines *engine.Registry
	login   engine.Conn
	sql     engineSQL
	s       engine.Session
}

func openStats(ctx context.Context, engines *engine.Registry, c engine.Conn) (*statsConn, error) {
	sq, err := sqlOf(c.Engine)
	if err != nil {
		return nil, err
	}
	s := &statsConn{engines: engines, login: c, sql: sq}
	return s, s.open(ctx)
}

// retry runs f, and again on a new session when it fails; on a session
// opened first when the last reconnection failed.
func (s *statsConn) retry(ctx context.Context, f func() error) error {
	if s.s == nil {
		if err := s.open(ctx); err != nil {
			return err
		}
	}
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
	ss, err := s.engines.OpenSession(ctx, s.login, engine.SessionOptions{})
	if err != nil {
		return err
	}
	s.s = ss
	return nil
}

func (s *statsConn) close() {
	if s.s != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		s.s.Close(ctx)
		cancel()
		s.s = nil
	}
}

// read takes the counters.
func (s *statsConn) read(ctx context.Context) (counters, error) {
	var c counters
	err := s.retry(ctx, func() (err error) {
		c, err = s.sql.counters(ctx, s.s)
		return err
	})
	return c, err
}

// settings reads the buffer size and the durability settings back.
func (s *statsConn) settings(ctx context.Context) (serverSettings, error) {
	var st serverSettings
	err := s.retry(ctx, func() (err error) {
		st, err = s.sql.settings(ctx, s.s)
		return err
	})
	return st, err
}

// floats reads one row of numbers (NULL as 0).
func floats(ctx context.Context, s engine.Session, q string) ([]float64, error) {
	rows, err := engine.Values(ctx, s, q)
	if err != nil {
		return nil, err
	}
	if len(rows) != 1 {
		return nil, fmt.Errorf("%s: %d rows, want one", engine.FirstLine(q), len(rows))
	}
	out := make([]float64, len(rows[0]))
	for i, v := range rows[0] {
		if v == "" {
			continue
		}
		if out[i], err = strconv.ParseFloat(v, 64); err != nil {
			return nil, fmt.Errorf("%s: column %d is %q, not a number", engine.FirstLine(q), i+1, v)
		}
	}
	return out, nil
}

func pgCounters(ctx context.Context, s engine.Session) (counters, error) {
	var c counters
	v, err := floats(ctx, s, `SELECT (SELECT wal_sync FROM pg_stat_wal)::float8,
  coalesce(sum(blks_read), 0)::float8, coalesce(sum(blks_hit), 0)::float8 FROM pg_stat_database`)
	if err != nil {
		return c, fmt.Errorf("read pg_stat_wal and pg_stat_database: %w", err)
	}
	c.logSyncs, c.bufferReads, c.bufferHits = v[0], v[1], v[2]
	c.known = true
	return c, nil
}

func mariaCounters(ctx context.Context, s engine.Session) (counters, error) {
	var c counters
	st, err := mariaStatus(ctx, s, "Innodb_data_fsyncs", "Innodb_buffer_pool_reads", "Innodb_buffer_pool_read_requests", "Opened_table_definitions")
	if err != nil {
		return c, err
	}
	c.logSyncs, c.bufferReads = st["Innodb_data_fsyncs"], st["Innodb_buffer_pool_reads"]
	c.bufferHits = st["Innodb_buffer_pool_read_requests"] - c.bufferReads
	c.tableOpens, c.tableOpensKnown = st["Opened_table_definitions"], true
	c.known = true
	return c, nil
}

func mariaStatus(ctx context.Context, s engine.Session, names ...string) (map[string]float64, error) {
	q := "SHOW GLOBAL STATUS WHERE Variable_name IN ('" + strings.Join(names, "','") + "')"
	rows, err := engine.Values(ctx, s, q)
	if err != nil {
		return nil, fmt.Errorf("read MariaDB's status: %w", err)
	}
	out := map[string]float64{}
	for _, r := range rows {
		if len(r) != 2 {
			return nil, fmt.Errorf("read MariaDB's status: %d columns, want 2", len(r))
		}
		out[r[0]], _ = strconv.ParseFloat(r[1], 64)
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

func pgSettings(ctx context.Context, s engine.Session) (serverSettings, error) {
	var st serverSettings
	rows, err := engine.Values(ctx, s, `SELECT (SELECT setting::bigint * 8192 FROM pg_settings WHERE name = 'shared_buffers'),
  current_setting('wal_level'), current_setting('synchronous_commit'), pg_database_size(current_database())`)
	if err == nil && (len(rows) != 1 || len(rows[0]) != 4) {
		err = fmt.Errorf("%d rows, want one of 4 columns", len(rows))
	}
	if err != nil {
		return st, fmt.Errorf("read PostgreSQL's settings: %w", err)
	}
	level, sync := rows[0][1], rows[0][2]
	st.bufferBytes, _ = strconv.ParseInt(rows[0][0], 10, 64)
	st.databaseBytes, _ = strconv.ParseInt(rows[0][3], 10, 64)
	st.logForPITR = level != "minimal"
	st.commitWaits = sync != "off"
	st.describe = fmt.Sprintf("PostgreSQL: wal_level = %s, synchronous_commit = %s (%s)", level, sync, durabilityName(st.logForPITR, st.commitWaits))
	return st, nil
}

func mariaSettings(ctx context.Context, s engine.Session) (serverSettings, error) {
	var st serverSettings
	v, err := floats(ctx, s, `SELECT @@innodb_buffer_pool_size, @@log_bin, @@innodb_flush_log_at_trx_commit, @@sync_binlog`)
	if err != nil {
		return st, fmt.Errorf("read MariaDB's settings: %w", err)
	}
	st.bufferBytes = int64(v[0])
	logBin, flush, syncBinlog := int64(v[1]), int64(v[2]), int64(v[3])
	if size, err := engine.Value(ctx, s, `SELECT SUM(DATA_LENGTH + INDEX_LENGTH) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE()`); err == nil && size != "" {
		st.databaseBytes, _ = strconv.ParseInt(size, 10, 64)
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
