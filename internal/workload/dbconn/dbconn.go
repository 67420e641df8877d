// Package dbconn is one session on one database of either engine, in the
// engine's own driver (pgx for PostgreSQL, go-sql-driver/mysql for
// MariaDB), for workloads that run a few statements and read small answers
// as text: the seed-002 notes (key-lookup, read-ahead, page-compression).
// A session is one server connection, so what a statement sets (SET,
// session variables) holds for the statements after it.
package dbconn

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/mariadb"
	"github.com/dbrig/dbrig/internal/engine/postgres"
)

// Conn is one session. It is not safe for concurrent use.
type Conn struct {
	engine string
	pg     *pgx.Conn
	pool   *sql.DB
	my     *sql.Conn
}

// Open connects to the login's database.
func Open(ctx context.Context, c engine.Conn) (*Conn, error) {
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
		return &Conn{engine: c.Engine, pg: conn}, nil
	case mariadb.EngineName:
		pool, err := mariadb.Open(ctx, c)
		if err != nil {
			return nil, err
		}
		conn, err := pool.Conn(ctx)
		if err != nil {
			pool.Close()
			return nil, fmt.Errorf("connect to %s: %w", c, err)
		}
		return &Conn{engine: c.Engine, pool: pool, my: conn}, nil
	}
	return nil, fmt.Errorf("no session for engine %q", c.Engine)
}

// Engine is the engine's name ("postgres", "mariadb").
func (c *Conn) Engine() string { return c.engine }

// PG is the PostgreSQL connection, for what only PostgreSQL has (nil on
// MariaDB).
func (c *Conn) PG() *pgx.Conn { return c.pg }

// Exec runs statements in order; rows a statement returns (ANALYZE TABLE,
// SELECT pg_prewarm(...)) are read and dropped. The first error stops it,
// naming the statement.
func (c *Conn) Exec(ctx context.Context, stmts ...string) error {
	for _, q := range stmts {
		var err error
		if c.pg != nil {
			_, err = c.pg.PgConn().Exec(ctx, q).ReadAll()
		} else {
			var rows *sql.Rows
			if rows, err = c.my.QueryContext(ctx, q); err == nil {
				for rows.Next() {
				}
				err = errors.Join(rows.Err(), rows.Close())
			}
		}
		if err != nil {
			return fmt.Errorf("%s: %w", FirstLine(q), err)
		}
	}
	return nil
}

// Rows runs a query and returns its rows as text (NULL as "").
func (c *Conn) Rows(ctx context.Context, q string) ([][]string, error) {
	if c.pg != nil {
		res := c.pg.PgConn().ExecParams(ctx, q, nil, nil, nil, nil).Read()
		if res.Err != nil {
			return nil, fmt.Errorf("%s: %w", FirstLine(q), res.Err)
		}
		out := make([][]string, len(res.Rows))
		for i, r := range res.Rows {
			for _, v := range r {
				out[i] = append(out[i], string(v))
			}
		}
		return out, nil
	}
	rows, err := c.my.QueryContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", FirstLine(q), err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out [][]string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		dest := make([]any, len(cols))
		for i := range vals {
			dest[i] = &vals[i]
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("%s: %w", FirstLine(q), err)
		}
		r := make([]string, len(cols))
		for i, v := range vals {
			r[i] = v.String
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", FirstLine(q), err)
	}
	return out, nil
}

// Each runs a query and calls f with each row as it arrives, as text (NULL
// as ""), without holding the answer in memory; f's row is reused for the
// next. An error from f stops the query.
func (c *Conn) Each(ctx context.Context, q string, f func(row []string) error) error {
	var ferr error
	if c.pg != nil {
		rr := c.pg.PgConn().ExecParams(ctx, q, nil, nil, nil, nil)
		var row []string
		for rr.NextRow() && ferr == nil {
			row = row[:0]
			for _, v := range rr.Values() {
				row = append(row, string(v))
			}
			ferr = f(row)
		}
		_, err := rr.Close()
		if ferr != nil {
			return ferr
		}
		if err != nil {
			return fmt.Errorf("%s: %w", FirstLine(q), err)
		}
		return nil
	}
	rows, err := c.my.QueryContext(ctx, q)
	if err != nil {
		return fmt.Errorf("%s: %w", FirstLine(q), err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	vals := make([]sql.NullString, len(cols))
	dest := make([]any, len(cols))
	for i := range vals {
		dest[i] = &vals[i]
	}
	row := make([]string, len(cols))
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return fmt.Errorf("%s: %w", FirstLine(q), err)
		}
		for i, v := range vals {
			row[i] = v.String
		}
		if err := f(row); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("%s: %w", FirstLine(q), err)
	}
	return nil
}

// Value runs a query and returns the first column of its one row.
func (c *Conn) Value(ctx context.Context, q string) (string, error) {
	rows, err := c.Rows(ctx, q)
	if err != nil {
		return "", err
	}
	if len(rows) != 1 || len(rows[0]) == 0 {
		return "", fmt.Errorf("%s: %d rows, want one", FirstLine(q), len(rows))
	}
	return rows[0][0], nil
}

// Int runs a query whose one value is a whole number.
func (c *Conn) Int(ctx context.Context, q string) (int64, error) {
	v, err := c.Value(ctx, q)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		// Sums and averages come back as decimals ("123.0000").
		f, ferr := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if ferr != nil {
			return 0, fmt.Errorf("%s: %q is not a number", FirstLine(q), v)
		}
		n = int64(f)
	}
	return n, nil
}

// Time runs a query, reads its whole answer and returns how long that took
// (the client's wall clock, from sending it to the last row) and the answer
// as text.
func (c *Conn) Time(ctx context.Context, q string) (time.Duration, [][]string, error) {
	start := time.Now()
	rows, err := c.Rows(ctx, q)
	return time.Since(start), rows, err
}

// Close ends the session.
func (c *Conn) Close(ctx context.Context) {
	if c.pg != nil {
		_ = c.pg.Close(context.WithoutCancel(ctx))
		return
	}
	c.my.Close()
	c.pool.Close()
}

// FirstLine is a statement's first line, for errors.
func FirstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " ..."
	}
	return s
}
