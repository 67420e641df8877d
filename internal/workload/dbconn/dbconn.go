// Package dbconn is one session on one database, in the driver of the
// login's engine (an [engine.Session]), for workloads that run a few
// statements and read small answers as text: the seed-002 notes
// (key-lookup, read-ahead, page-compression). A session is one server
// connection, so what a statement sets (SET, session variables) holds for
// the statements after it. It names no engine: the engine's [Dialect]
// says what a workload may ask of it.
package dbconn

import (
	"context"
	"fmt"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
)

// Conn is one session. It is not safe for concurrent use.
type Conn struct {
	engine.Session
	engine  string
	dialect engine.Dialect
}

// Open connects to the login's database through its engine's session.
func Open(ctx context.Context, engines *engine.Registry, c engine.Conn) (*Conn, error) {
	if engines == nil {
		return nil, fmt.Errorf("no engines to open a session on %s with", c)
	}
	opener, err := engines.SessionOf(c)
	if err != nil {
		return nil, err
	}
	s, err := opener.OpenSession(ctx, c, engine.SessionOptions{})
	if err != nil {
		return nil, err
	}
	return &Conn{Session: s, engine: c.Engine, dialect: opener.Dialect()}, nil
}

// Engine is the engine's name ("postgres", "mariadb"), for what a
// workload keeps per engine (its sql/<engine>/ files, its results).
func (c *Conn) Engine() string { return c.engine }

// Dialect is the engine's.
func (c *Conn) Dialect() engine.Dialect { return c.dialect }

// Rows runs a query and returns its rows as text (NULL as "").
func (c *Conn) Rows(ctx context.Context, q string) ([][]string, error) {
	return engine.Values(ctx, c.Session, q)
}

// Each runs a query and calls f with each row as it arrives, as text (NULL
// as ""), without holding the answer in memory; f's row is reused for the
// next. An error from f stops the query.
func (c *Conn) Each(ctx context.Context, q string, f func(row []string) error) error {
	var row []string
	return engine.Each(ctx, c.Session, q, nil, func(vals [][]byte) error {
		row = row[:0]
		for _, v := range vals {
			row = append(row, string(v))
		}
		return f(row)
	})
}

// Value runs a query and returns the first column of its one row.
func (c *Conn) Value(ctx context.Context, q string) (string, error) {
	return engine.Value(ctx, c.Session, q)
}

// Int runs a query whose one value is a whole number.
func (c *Conn) Int(ctx context.Context, q string) (int64, error) {
	return engine.Int(ctx, c.Session, q)
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
func (c *Conn) Close(ctx context.Context) { _ = c.Session.Close(ctx) }
