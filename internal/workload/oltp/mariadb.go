package oltp

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

	"github.com/dbrig/dbrig/internal/blockconn"
	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/mariadb"
)

// mariaSession speaks to MariaDB through go-sql-driver/mysql's connection
// itself, below database/sql: each statement is a server-side prepared
// statement (COM_STMT_PREPARE once, then COM_STMT_EXECUTE with binary
// parameters), BEGIN and COMMIT go as text, as sysbench sends them. The
// driver's own per-statement context watch is not used (it hands each
// statement's context to a goroutine of the connection): the run's context
// interrupts a statement through the connection's deadline instead.
type mariaSession struct {
	conn  driver.Conn
	netc  net.Conn
	stmts [numStmts]driver.Stmt
	vals  []driver.Value
	dest  []driver.Value
	cols  [][]byte
	bufs  [][]byte

	stop    func() bool
	watched context.Context
}

// mariaExecer is the driver connection's Exec without a context, so
// without the driver's context watch.
type mariaExecer interface {
	Exec(query string, args []driver.Value) (driver.Result, error)
}

// openMaria connects and prepares every statement.
func openMaria(ctx context.Context, login engine.Conn) (session, error) {
	cfg, err := mariadb.Config(login)
	if err != nil {
		return nil, err
	}
	s := &mariaSession{}
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := blockconn.Dial(ctx, network, addr)
		s.netc = c
		return c, err
	}
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("connection to %s: %w", login, err)
	}
	conn, err := connector.Connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", login, err)
	}
	s.conn = conn
	prep := conn.(driver.ConnPrepareContext)
	for st := range numStmts {
		if st == sBegin || st == sCommit {
			continue
		}
		stmt, err := prep.PrepareContext(ctx, sqlFor(mariadb.Name, st))
		if err != nil {
			conn.Close()
			return nil, fmt.Errorf("prepare %q: %w", sqlFor(mariadb.Name, st), err)
		}
		s.stmts[st] = stmt
	}
	return s, nil
}

// watch makes the run's context interrupt a statement in flight through
// the connection's deadline.
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

func (s *mariaSession) bind(a *args) []driver.Value {
	s.vals = s.vals[:0]
	if a == nil {
		return s.vals
	}
	for i := range a.n {
		v := &a.v[i]
		switch v.kind {
		case intArg:
			s.vals = append(s.vals, v.i)
		case centsArg:
			s.vals = append(s.vals, string(appendCents(nil, v.i)))
		case textArg:
			s.vals = append(s.vals, v.s)
		}
	}
	return s.vals
}

func (s *mariaSession) query(ctx context.Context, st stmt, a *args, row func([][]byte) error) (int, error) {
	s.watch(ctx)
	rows, err := s.stmts[st].Query(s.bind(a))
	if err != nil {
		return 0, s.failed(ctx, err)
	}
	ncol := len(rows.Columns())
	if cap(s.dest) < ncol {
		s.dest, s.cols, s.bufs = make([]driver.Value, ncol), make([][]byte, ncol), make([][]byte, ncol)
	}
	dest, cols := s.dest[:ncol], s.cols[:ncol]
	n := 0
	var rowErr error
	for {
		err := rows.Next(dest)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			rows.Close()
			return n, s.failed(ctx, err)
		}
		n++
		if row == nil || rowErr != nil {
			continue
		}
		for i, v := range dest {
			switch x := v.(type) {
			case []byte:
				cols[i] = x
			case int64:
				s.bufs[i] = strconv.AppendInt(s.bufs[i][:0], x, 10)
				cols[i] = s.bufs[i]
			case nil:
				cols[i] = nil
			default:
				s.bufs[i] = fmt.Append(s.bufs[i][:0], x)
				cols[i] = s.bufs[i]
			}
		}
		rowErr = row(cols)
	}
	if err := rows.Close(); err != nil {
		return n, s.failed(ctx, err)
	}
	return n, rowErr
}

func (s *mariaSession) run(ctx context.Context, st stmt, a *args) (driver.Result, error) {
	s.watch(ctx)
	var res driver.Result
	var err error
	switch st {
	case sBegin, sCommit:
		res, err = s.conn.(mariaExecer).Exec(statements[st], nil)
	default:
		res, err = s.stmts[st].Exec(s.bind(a))
	}
	if err != nil {
		return nil, s.failed(ctx, err)
	}
	return res, nil
}

func (s *mariaSession) exec(ctx context.Context, st stmt, a *args) (int64, error) {
	res, err := s.run(ctx, st, a)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (s *mariaSession) insertOrder(ctx context.Context, a *args) (int64, error) {
	res, err := s.run(ctx, sInsertOrd, a)
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

func (s *mariaSession) failed(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w (%w)", ctx.Err(), err)
	}
	return err
}

func (s *mariaSession) rollback() {
	if v, ok := s.conn.(driver.Validator); ok && !v.IsValid() {
		return
	}
	if s.netc != nil {
		_ = s.netc.SetDeadline(time.Now().Add(10 * time.Second))
		defer func() { _ = s.netc.SetDeadline(time.Time{}) }()
	}
	_, _ = s.conn.(mariaExecer).Exec("ROLLBACK", nil)
}

func (s *mariaSession) close() error {
	// The run's end shuts the socket down (watch), and the load runner ends
	// the run before it closes the workers: a shut socket cannot take the
	// driver's goodbye (COM_QUIT), whose failed write it reports as a "bad
	// connection" that is not driver.ErrBadConn. The session is closed all
	// the same.
	interrupted := s.stop != nil && !s.stop()
	for _, st := range s.stmts {
		if st != nil {
			_ = st.Close()
		}
	}
	// A statement the run's end interrupted (watch) leaves the driver's
	// connection broken, which its Close reports: it is closed all the same.
	if err := s.conn.Close(); err != nil && !interrupted && !errors.Is(err, driver.ErrBadConn) {
		return err
	}
	return nil
}
