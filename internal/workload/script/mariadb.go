package script

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/mariadb"
	"github.com/dbrig/dbrig/internal/workload/script/expr"
)

// mariaSession runs a program on MariaDB through go-sql-driver/mysql's
// connection itself, below database/sql: the simple protocol sends the
// variables' text in the SQL (COM_QUERY); the extended and prepared ones
// run server-side prepared statements (COM_STMT_PREPARE once per
// connection, then COM_STMT_EXECUTE with binary parameters), MariaDB
// having no unnamed statement to parse each time. A statement MariaDB
// will not prepare (ER_UNSUPPORTED_PS) goes as text. The run's context
// interrupts a statement through the connection's deadline, not the
// driver's per-statement watch.
type mariaSession struct {
	conn  driver.Conn
	netc  *countingConn
	prog  *Program
	stmts []driver.Stmt
	text  []bool // statements sent as text
	vals  []driver.Value
	dest  []driver.Value
	trips int64

	stop    func() bool
	watched context.Context
}

// mariaConn is the driver connection without a context, so without the
// driver's context watch.
type mariaConn interface {
	Exec(query string, args []driver.Value) (driver.Result, error)
	Query(query string, args []driver.Value) (driver.Rows, error)
}

// erUnsupportedPS is MariaDB's "This command is not supported in the
// prepared statement protocol yet".
const erUnsupportedPS = 1295

// openMaria connects and prepares every SQL command, unless the protocol
// is the simple one.
func openMaria(ctx context.Context, login engine.Conn, prog *Program) (*mariaSession, error) {
	cfg, err := mariadb.Config(login)
	if err != nil {
		return nil, err
	}
	s := &mariaSession{prog: prog, stmts: make([]driver.Stmt, prog.Statements), text: make([]bool, prog.Statements)}
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dialCounting(ctx, network, addr)
		if err == nil {
			s.netc = c
		}
		return c, err
	}
	cfg.MultiStatements = prog.HasCompound()
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("connection to %s: %w", login, err)
	}
	if s.conn, err = connector.Connect(ctx); err != nil {
		return nil, fmt.Errorf("connect to %s: %w", login, err)
	}
	if prog.Protocol != Simple {
		for _, sc := range prog.Scripts {
			for _, c := range sc.Commands {
				if c.Type == SQLCommand {
					_ = s.prepare(ctx, c.SQL)
				}
			}
		}
	}
	return s, nil
}

// prepare prepares a statement, or marks it as text when MariaDB cannot
// prepare it.
func (s *mariaSession) prepare(ctx context.Context, q *SQL) error {
	st, err := s.conn.(driver.ConnPrepareContext).PrepareContext(ctx, q.Numbered)
	var myErr *mysql.MySQLError
	switch {
	case errors.As(err, &myErr) && myErr.Number == erUnsupportedPS:
		s.text[q.ID] = true
		return nil
	case err != nil:
		return err
	}
	s.stmts[q.ID] = st
	return nil
}

func (s *mariaSession) watch(ctx context.Context) {
	if ctx == s.watched {
		return
	}
	if s.stop != nil {
		s.stop()
	}
	s.watched = ctx
	if s.netc != nil {
		s.stop = context.AfterFunc(ctx, func() { _ = s.netc.SetDeadline(time.Now()) })
	}
}

func (s *mariaSession) exec(c *client, q *SQL) error {
	if s.prog.Protocol != Simple && s.stmts[q.ID] == nil && !s.text[q.ID] {
		s.trips++
		if err := s.prepare(context.Background(), q); err != nil {
			return err
		}
	}
	s.trips++
	var rows driver.Rows
	var err error
	if st := s.stmts[q.ID]; st != nil {
		rows, err = st.Query(s.bind(c, q))
	} else {
		rows, err = s.conn.(mariaConn).Query(string(c.textOf(q)), nil)
	}
	if err != nil {
		return err
	}
	return s.read(c, q, rows)
}

// bind gives the variables as MariaDB's binary protocol takes them: a
// boolean as 1 or 0, MariaDB's TRUE and FALSE.
func (s *mariaSession) bind(c *client, q *SQL) []driver.Value {
	s.vals = s.vals[:0]
	for _, slot := range q.Vars {
		v := c.vars[slot]
		switch v.Type {
		case expr.Int, expr.Bool:
			s.vals = append(s.vals, v.I)
		case expr.Double:
			s.vals = append(s.vals, v.F)
		case expr.Null:
			s.vals = append(s.vals, nil)
		default:
			s.vals = append(s.vals, v.S)
		}
	}
	return s.vals
}

// read reads a command's results (several when \; joined statements),
// keeping the last row of the last one (\gset) or of each (\aset).
func (s *mariaSession) read(c *client, q *SQL, rows driver.Rows) error {
	defer rows.Close()
	var row [][]byte
	n := 0
	var names []string
	for {
		cols := rows.Columns()
		if cap(s.dest) < len(cols) {
			s.dest = make([]driver.Value, len(cols))
		}
		dest := s.dest[:len(cols)]
		n = 0
		for {
			err := rows.Next(dest)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return err
			}
			n++
			if q.Result != Discard {
				row = c.rowOf(dest)
			}
		}
		names = cols
		if q.Result == Aset && n > 0 {
			if err := c.keep(q, names, row); err != nil {
				return err
			}
		}
		next, ok := rows.(driver.RowsNextResultSet)
		if !ok || !next.HasNextResultSet() {
			break
		}
		if err := next.NextResultSet(); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return err
		}
	}
	if err := rows.Close(); err != nil {
		return err
	}
	if q.Result != Gset {
		return nil
	}
	if n != 1 {
		return fmt.Errorf("\\gset: expected one row, got %d", n)
	}
	return c.keep(q, names, row)
}

// rowOf writes a row's values as text into the client's buffers.
func (c *client) rowOf(dest []driver.Value) [][]byte {
	for len(c.row) < len(dest) {
		c.row = append(c.row, nil)
	}
	row := c.row[:len(dest)]
	for i, v := range dest {
		b := row[i][:0]
		switch x := v.(type) {
		case []byte:
			b = append(b, x...)
		case int64:
			b = strconv.AppendInt(b, x, 10)
		case uint64:
			b = strconv.AppendUint(b, x, 10)
		case float64:
			b = strconv.AppendFloat(b, x, 'g', -1, 64)
		case float32:
			b = strconv.AppendFloat(b, float64(x), 'g', -1, 32)
		case string:
			b = append(b, x...)
		case nil:
		default:
			b = fmt.Append(b, x)
		}
		row[i] = b
	}
	return row
}

func (s *mariaSession) startPipeline() error {
	return errors.New("MariaDB's protocol has no pipeline")
}

func (s *mariaSession) endPipeline(*client) error {
	return errors.New("MariaDB's protocol has no pipeline")
}

// inTransaction is false: the driver keeps the server's status to itself,
// and recover rolls back after any error anyway.
func (s *mariaSession) inTransaction() bool { return false }

// recover rolls back whatever the error left: ROLLBACK outside a
// transaction does nothing, and a deadlock has already rolled back.
func (s *mariaSession) recover() {
	if v, ok := s.conn.(driver.Validator); ok && !v.IsValid() {
		return
	}
	if s.netc != nil {
		_ = s.netc.SetDeadline(time.Now().Add(10 * time.Second))
		defer func() { _ = s.netc.SetDeadline(time.Time{}) }()
	}
	s.trips++
	_, _ = s.conn.(mariaConn).Exec("ROLLBACK", nil)
}

func (s *mariaSession) traffic() (out, in, trips int64) {
	if s.netc == nil {
		return 0, 0, s.trips
	}
	return s.netc.out.Load(), s.netc.in.Load(), s.trips
}

func (s *mariaSession) close() error {
	if s.stop != nil {
		s.stop()
	}
	for _, st := range s.stmts {
		if st != nil {
			_ = st.Close()
		}
	}
	// The run's end may have shut the socket down already (see watch): the
	// goodbye then fails, which loses nothing a user measured.
	_ = s.conn.Close()
	return nil
}
