package tpch

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"sync/atomic"

	"github.com/go-sql-driver/mysql"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/mariadb"
)

// mariaSession is one MariaDB connection (one session: its variables hold
// from statement to statement).
type mariaSession struct {
	db   *sql.DB
	conn *sql.Conn
}

func openMaria(ctx context.Context, c engine.Conn) (session, error) {
	db, err := mariadb.Open(ctx, c)
	if err != nil {
		return nil, err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("connect to %s: %w", c, err)
	}
	return &mariaSession{db: db, conn: conn}, nil
}

// exec runs statements; a statement that returns rows (ANALYZE TABLE) has
// them read and dropped.
func (s *mariaSession) exec(ctx context.Context, sql ...string) error {
	for _, q := range sql {
		rows, err := s.conn.QueryContext(ctx, q)
		if err != nil {
			return fmt.Errorf("%s: %w", firstLine(q), err)
		}
		for rows.Next() {
		}
		if err := rows.Err(); err != nil {
			rows.Close()
			return fmt.Errorf("%s: %w", firstLine(q), err)
		}
		rows.Close()
	}
	return nil
}

func (s *mariaSession) query(ctx context.Context, q string) (Answer, error) {
	rows, err := s.conn.QueryContext(ctx, q)
	if err != nil {
		return Answer{}, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return Answer{}, err
	}
	h := newAnswerHash()
	raw := make([]sql.RawBytes, len(cols))
	dest := make([]any, len(cols))
	for i := range raw {
		dest[i] = &raw[i]
	}
	row := make([][]byte, len(cols))
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return Answer{}, err
		}
		for i, v := range raw {
			row[i] = v // nil for NULL
		}
		h.add(row)
	}
	if err := rows.Err(); err != nil {
		return Answer{}, err
	}
	return h.answer(), nil
}

func (s *mariaSession) values(ctx context.Context, q string) ([][]string, error) {
	rows, err := s.conn.QueryContext(ctx, q)
	if err != nil {
		return nil, err
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
			return nil, err
		}
		r := make([]string, len(cols))
		for i, v := range vals {
			r[i] = v.String
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

func (s *mariaSession) setting(ctx context.Context, name string) (string, error) {
	var v sql.NullString
	err := s.conn.QueryRowContext(ctx, "SELECT @@"+name).Scan(&v)
	return v.String, err
}

// plannedWorkers: MariaDB runs every query on one thread.
func (s *mariaSession) plannedWorkers(context.Context, string) (int, error) { return 0, nil }

// serial: MariaDB has no parallel query to turn off.
func (s *mariaSession) serial(context.Context) error { return nil }

var readerSeq atomic.Int64

// load streams the rows through LOAD DATA LOCAL INFILE, the driver reading
// them from a registered reader rather than a file.
func (s *mariaSession) load(ctx context.Context, table string, rows io.Reader) (int64, error) {
	// The server waits net_read_timeout (30 s) for each packet of the
	// rows; the generator takes seconds to start and, on a busy machine,
	// more: wait for its first rows before asking the server to read, and
	// let the server wait longer between packets.
	buffered := bufio.NewReaderSize(rows, 1<<16)
	if _, err := buffered.Peek(1); err != nil && err != io.EOF {
		return 0, err
	}
	rows = buffered
	if err := s.exec(ctx, "SET SESSION net_read_timeout = 600"); err != nil {
		return 0, err
	}
	name := fmt.Sprintf("tpch-%s-%d", table, readerSeq.Add(1))
	mysql.RegisterReaderHandler(name, func() io.Reader { return rows })
	defer mysql.DeregisterReaderHandler(name)
	res, err := s.conn.ExecContext(ctx, "LOAD DATA LOCAL INFILE 'Reader::"+name+"' INTO TABLE "+table+
		" CHARACTER SET utf8mb4 FIELDS TERMINATED BY '|' LINES TERMINATED BY '\\n'")
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (s *mariaSession) close(context.Context) {
	s.conn.Close()
	s.db.Close()
}
