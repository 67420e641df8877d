package tpch

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/postgres"
)

// session is one connection to the database holding the TPC-H tables, in
// an engine's own driver.
type session interface {
	// exec runs statements that return no rows.
	exec(ctx context.Context, sql ...string) error
	// query runs one query, reading every row as it arrives.
	query(ctx context.Context, sql string) (Answer, error)
	// values runs a query with a small answer and returns its rows as text.
	values(ctx context.Context, sql string) ([][]string, error)
	// setting reads a setting as the session sees it.
	setting(ctx context.Context, name string) (string, error)
	// plannedWorkers is the largest number of parallel workers the plan of
	// a query asks for (0: it runs serially).
	plannedWorkers(ctx context.Context, sql string) (int, error)
	// serial makes the session run every query without parallel workers.
	serial(ctx context.Context) error
	// load streams rows in the generator's format into a table.
	load(ctx context.Context, table string, rows io.Reader) (int64, error)
	close(ctx context.Context)
}

// openSession connects to a database in the engine's driver.
func openSession(ctx context.Context, c engine.Conn) (session, error) {
	switch c.Engine {
	case postgres.Name:
		cfg, err := postgres.ConnInfoOf(c).ConnConfig()
		if err != nil {
			return nil, err
		}
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			return nil, fmt.Errorf("connect to %s: %w", c, err)
		}
		return &pgSession{conn: conn}, nil
	case "mariadb":
		return openMaria(ctx, c)
	}
	return nil, fmt.Errorf("the tpch workload has no %s dialect yet", c.Engine)
}

type pgSession struct{ conn *pgx.Conn }

func (s *pgSession) exec(ctx context.Context, sql ...string) error {
	for _, q := range sql {
		if err := s.conn.PgConn().Exec(ctx, q).Close(); err != nil {
			return fmt.Errorf("%s: %w", firstLine(q), err)
		}
	}
	return nil
}

func (s *pgSession) query(ctx context.Context, sql string) (Answer, error) {
	h := newAnswerHash()
	rr := s.conn.PgConn().ExecParams(ctx, sql, nil, nil, nil, nil)
	for rr.NextRow() {
		h.add(rr.Values())
	}
	if _, err := rr.Close(); err != nil {
		return Answer{}, err
	}
	return h.answer(), nil
}

func (s *pgSession) values(ctx context.Context, sql string) ([][]string, error) {
	res := s.conn.PgConn().ExecParams(ctx, sql, nil, nil, nil, nil).Read()
	if res.Err != nil {
		return nil, res.Err
	}
	out := make([][]string, len(res.Rows))
	for i, r := range res.Rows {
		for _, v := range r {
			out[i] = append(out[i], string(v))
		}
	}
	return out, nil
}

func (s *pgSession) setting(ctx context.Context, name string) (string, error) {
	var v string
	err := s.conn.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&v)
	return v, err
}

var workersPlanned = regexp.MustCompile(`Workers Planned: (\d+)`)

func (s *pgSession) plannedWorkers(ctx context.Context, sql string) (int, error) {
	res, err := s.conn.PgConn().Exec(ctx, "EXPLAIN "+sql).ReadAll()
	if err != nil {
		return 0, err
	}
	most := 0
	for _, r := range res {
		for _, row := range r.Rows {
			if m := workersPlanned.FindSubmatch(row[0]); m != nil {
				n, _ := strconv.Atoi(string(m[1]))
				most = max(most, n)
			}
		}
	}
	return most, nil
}

func (s *pgSession) load(ctx context.Context, table string, rows io.Reader) (int64, error) {
	tag, err := s.conn.PgConn().CopyFrom(ctx, rows, "COPY "+pgx.Identifier{table}.Sanitize()+" FROM STDIN (FORMAT text, DELIMITER '|')")
	if err != nil {
		return 0, err
	}
	return tag.RowsAffected(), nil
}

func (s *pgSession) serial(ctx context.Context) error {
	return s.exec(ctx, "SET max_parallel_workers_per_gather = 0")
}

func (s *pgSession) close(ctx context.Context) { _ = s.conn.Close(context.WithoutCancel(ctx)) }

// firstLine is a statement's first line, for errors.
func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " ..."
	}
	return s
}
