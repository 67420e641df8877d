package mariadb

import (
	"bufio"
	"cmp"
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/dbrig/dbrig/internal/engine"
)

var _ engine.SessionOpener = (*Engine)(nil)

// Dialect is MariaDB's: ? parameters, server-side prepared statements for
// bound parameters, no pipeline, the generated key in the OK packet,
// backslash escapes in strings.
func (e *Engine) Dialect() engine.Dialect {
	return engine.Dialect{
		Placeholder:      func(int) string { return "?" },
		InsertID:         true,
		BackslashEscapes: true,
	}
}

// session speaks to MariaDB through go-sql-driver/mysql's connection
// itself, below database/sql (whose bookkeeping per statement is a dozen
// allocations): prepared statements are server-side (COM_STMT_PREPARE once,
// then COM_STMT_EXECUTE with binary parameters, as sysbench runs them),
// text goes as COM_QUERY. A blocking session does not use the driver's
// per-statement context watch (it hands each statement's context to a
// goroutine of the connection): the context interrupts a statement
// through the connection's deadline instead.
type session struct {
	conn     driver.Conn
	netc     net.Conn // as dialed, when the session dialed it
	blocking bool
	stmts    []driver.Stmt
	vals     []driver.Value
	rows     rows
	scratch  []byte

	// watch interrupts a blocking session's statement when the context
	// it runs under ends.
	watch engine.ContextWatch
}

// textConn is the driver connection without a context, so without the
// driver's context watch.
type textConn interface {
	Exec(query string, args []driver.Value) (driver.Result, error)
	Query(query string, args []driver.Value) (driver.Rows, error)
}

// OpenSession connects as the login says.
func (e *Engine) OpenSession(ctx context.Context, c engine.Conn, o engine.SessionOptions) (engine.Session, error) {
	cfg, err := Config(c)
	if err != nil {
		return nil, err
	}
	s := &session{blocking: o.Blocking}
	if o.Blocking || o.Traffic {
		cfg.DialFunc = engine.SessionDialer(o, func(nc net.Conn) { s.netc = nc })
	}
	cfg.MultiStatements = o.MultiStatements
	// A statement with parameters that is not prepared goes as text with
	// the values written in: one round trip, nothing kept on the server.
	cfg.InterpolateParams = true
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("connection to %s: %w", c, err)
	}
	if s.conn, err = connector.Connect(ctx); err != nil {
		return nil, engine.Classified(fmt.Errorf("connect to %s: %w", c, err), classify)
	}
	s.rows.s = s
	return s, nil
}

func (s *session) fail(ctx context.Context, err error) error {
	return engine.Failed(ctx, s.blocking, err, classify)
}

// text runs a statement as COM_QUERY, with its values written in.
func (s *session) text(ctx context.Context, q string, args []driver.Value) (driver.Rows, error) {
	if s.blocking {
		s.watch.Watch(ctx, s.netc)
		return s.conn.(textConn).Query(q, args)
	}
	named := make([]driver.NamedValue, len(args))
	for i, v := range args {
		named[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return s.conn.(driver.QueryerContext).QueryContext(ctx, q, named)
}

func (s *session) Exec(ctx context.Context, sql ...string) error {
	for _, q := range sql {
		dr, err := s.text(ctx, q, nil)
		if err != nil {
			err = s.fail(ctx, err)
		} else {
			_, err = s.rows.over(ctx, dr).Close()
		}
		if err != nil {
			return fmt.Errorf("%s: %w", engine.FirstLine(q), err)
		}
	}
	return nil
}

// bind gives parameters as the binary protocol and the driver's
// interpolation take them.
func (s *session) bind(a *engine.Args) []driver.Value {
	s.vals = s.vals[:0]
	for i := range a.Len() {
		v := a.At(i)
		switch v.Kind {
		case engine.IntArg, engine.BoolArg:
			s.vals = append(s.vals, v.I)
		case engine.FloatArg:
			s.vals = append(s.vals, v.F)
		case engine.NullArg:
			s.vals = append(s.vals, nil)
		case engine.DecimalArg:
			s.scratch = engine.AppendDecimal(s.scratch[:0], v.I, v.Scale)
			s.vals = append(s.vals, string(s.scratch))
		default:
			if v.B != nil && v.S == "" {
				s.vals = append(s.vals, string(v.B))
			} else {
				s.vals = append(s.vals, v.S)
			}
		}
	}
	return s.vals
}

func (s *session) Query(ctx context.Context, sql string, args *engine.Args) engine.Rows {
	var vals []driver.Value
	if args != nil {
		vals = s.bind(args)
	}
	dr, err := s.text(ctx, sql, vals)
	if err != nil {
		return engine.FailedRows(s.fail(ctx, err))
	}
	return s.rows.over(ctx, dr)
}

func (s *session) Prepare(ctx context.Context, sql string) (engine.Stmt, error) {
	pctx := ctx
	if s.blocking {
		s.watch.Watch(ctx, s.netc)
		pctx = context.Background()
	}
	st, err := s.conn.(driver.ConnPrepareContext).PrepareContext(pctx, sql)
	if err != nil {
		return 0, s.fail(ctx, err)
	}
	s.stmts = append(s.stmts, st)
	return engine.Stmt(len(s.stmts) - 1), nil
}

func (s *session) QueryPrepared(ctx context.Context, st engine.Stmt, args *engine.Args) engine.Rows {
	var dr driver.Rows
	var err error
	if s.blocking {
		s.watch.Watch(ctx, s.netc)
		dr, err = s.stmts[st].Query(s.bind(args)) //nolint:staticcheck // the context-free call skips the driver's watch
	} else {
		dr, err = s.stmts[st].(driver.StmtQueryContext).QueryContext(ctx, named(s.bind(args)))
	}
	if err != nil {
		return engine.FailedRows(s.fail(ctx, err))
	}
	return s.rows.over(ctx, dr)
}

func (s *session) ExecPrepared(ctx context.Context, st engine.Stmt, args *engine.Args) (engine.Result, error) {
	var res driver.Result
	var err error
	if s.blocking {
		s.watch.Watch(ctx, s.netc)
		res, err = s.stmts[st].Exec(s.bind(args)) //nolint:staticcheck // the context-free call skips the driver's watch
	} else {
		res, err = s.stmts[st].(driver.StmtExecContext).ExecContext(ctx, named(s.bind(args)))
	}
	if err != nil {
		return engine.Result{}, s.fail(ctx, err)
	}
	return result(res), nil
}

func named(vals []driver.Value) []driver.NamedValue {
	out := make([]driver.NamedValue, len(vals))
	for i, v := range vals {
		out[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return out
}

func result(res driver.Result) engine.Result {
	var r engine.Result
	r.RowsAffected, _ = res.RowsAffected()
	r.LastInsertID, _ = res.LastInsertId()
	return r
}

// execText runs a statement that returns no rows as COM_QUERY.
func (s *session) execText(ctx context.Context, q string) (engine.Result, error) {
	var res driver.Result
	var err error
	if s.blocking {
		s.watch.Watch(ctx, s.netc)
		res, err = s.conn.(textConn).Exec(q, nil)
	} else {
		res, err = s.conn.(driver.ExecerContext).ExecContext(ctx, q, nil)
	}
	if err != nil {
		return engine.Result{}, s.fail(ctx, err)
	}
	return result(res), nil
}

var readerSeq atomic.Int64

// Load streams the rows through LOAD DATA LOCAL INFILE, the driver reading
// them from a registered reader rather than a file; a server that refuses
// local files (local_infile off) gets them as multi-row INSERTs.
func (s *session) Load(ctx context.Context, table string, r io.Reader, o engine.LoadOptions) (int64, error) {
	// The server waits net_read_timeout (30 s) for each packet of the
	// rows; a generator may take seconds to start and, on a busy machine,
	// more: wait for its first rows before asking the server to read, and
	// let the server wait longer between packets.
	buffered := bufio.NewReaderSize(r, 1<<16)
	if _, err := buffered.Peek(1); err != nil && err != io.EOF {
		return 0, err
	}
	if err := s.Exec(ctx, "SET SESSION net_read_timeout = 600"); err != nil {
		return 0, err
	}
	delim := cmp.Or(o.Delimiter, '\t')
	name := fmt.Sprintf("dbrig-%s-%d", table, readerSeq.Add(1))
	var read atomic.Bool
	mysql.RegisterReaderHandler(name, func() io.Reader { read.Store(true); return buffered })
	defer mysql.DeregisterReaderHandler(name)
	res, err := s.execText(ctx, "LOAD DATA LOCAL INFILE 'Reader::"+name+"' INTO TABLE "+quoteIdent(table)+
		" CHARACTER SET utf8mb4 FIELDS TERMINATED BY "+quote(string(delim)))
	var myErr *mysql.MySQLError
	if errors.As(err, &myErr) && (myErr.Number == 1148 || myErr.Number == 3948) && !read.Load() {
		return s.insertRows(ctx, table, buffered, delim)
	}
	return res.RowsAffected, err
}

// insertRows loads a table with INSERTs of 1,000 rows in one transaction.
func (s *session) insertRows(ctx context.Context, table string, r *bufio.Reader, delim byte) (int64, error) {
	if err := s.Exec(ctx, "START TRANSACTION"); err != nil {
		return 0, err
	}
	var q []byte
	var n int64
	flush := func() error {
		if len(q) == 0 {
			return nil
		}
		_, err := s.execText(ctx, string(q))
		q = q[:0]
		return err
	}
	inRow := 0
	for {
		line, err := r.ReadSlice('\n')
		if len(line) > 0 {
			if inRow == 0 {
				q = append(q, "INSERT INTO "+quoteIdent(table)+" VALUES "...)
			} else {
				q = append(q, ',')
			}
			q = appendRow(q, line, delim)
			n++
			if inRow++; inRow == 1000 {
				if ferr := flush(); ferr != nil {
					s.Rollback()
					return 0, fmt.Errorf("insert into %s: %w", table, ferr)
				}
				inRow = 0
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil && err != bufio.ErrBufferFull {
			s.Rollback()
			return 0, err
		}
	}
	if err := flush(); err != nil {
		s.Rollback()
		return 0, fmt.Errorf("insert into %s: %w", table, err)
	}
	return n, s.Exec(ctx, "COMMIT")
}

// appendRow writes one line of the load's text format as a row of SQL
// values: \N as NULL, every other field a quoted string (the server
// converts it to the column's type), its backslash escapes undone.
func appendRow(q, line []byte, delim byte) []byte {
	for len(line) > 0 && (line[len(line)-1] == '\n' || line[len(line)-1] == '\r') {
		line = line[:len(line)-1]
	}
	q = append(q, '(')
	field, first := []byte(nil), true
	end := func() {
		if !first {
			q = append(q, ',')
		}
		first = false
		if string(field) == `\N` {
			q = append(q, "NULL"...)
		} else {
			q = append(q, quote(unescape(field))...)
		}
		field = field[:0]
	}
	for _, c := range line {
		if c == delim {
			end()
			continue
		}
		field = append(field, c)
	}
	end()
	return append(q, ')')
}

// unescape undoes the load format's backslash escapes.
func unescape(f []byte) string {
	out := make([]byte, 0, len(f))
	for i := 0; i < len(f); i++ {
		c := f[i]
		if c == '\\' && i+1 < len(f) {
			i++
			switch f[i] {
			case 't':
				c = '\t'
			case 'n':
				c = '\n'
			case 'r':
				c = '\r'
			default:
				c = f[i]
			}
		}
		out = append(out, c)
	}
	return string(out)
}

func (s *session) Rollback() bool {
	if !s.Alive() {
		return false
	}
	if s.blocking && s.netc != nil {
		_ = s.netc.SetDeadline(time.Now().Add(10 * time.Second))
		defer func() { _ = s.netc.SetDeadline(time.Time{}) }()
		_, _ = s.conn.(textConn).Exec("ROLLBACK", nil)
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, _ = s.conn.(driver.ExecerContext).ExecContext(ctx, "ROLLBACK", nil)
	return true
}

// InTransaction is unknown: the driver keeps the server's status to
// itself.
func (s *session) InTransaction() (open, known bool) { return false, false }

func (s *session) Alive() bool {
	v, ok := s.conn.(driver.Validator)
	return !ok || v.IsValid()
}

func (s *session) Traffic() (out, in int64) { return engine.TrafficOf(s.netc) }

// BackendPID is 0: MariaDB serves every session on a thread of its one
// process.
func (s *session) BackendPID() int { return 0 }

func (s *session) Close(context.Context) error {
	s.watch.Stop()
	for _, st := range s.stmts {
		_ = st.Close()
	}
	// The run's end may have shut the socket down already (see watch):
	// the goodbye then fails, which loses nothing a user measured.
	_ = s.conn.Close()
	return nil
}

// rows are a session's answers to one statement, reused for the next.
type rows struct {
	s    *session
	ctx  context.Context
	dr   driver.Rows
	dest []driver.Value
	cols [][]byte
	bufs [][]byte
	err  error
}

func (r *rows) over(ctx context.Context, dr driver.Rows) *rows {
	r.ctx, r.dr, r.err = ctx, dr, nil
	r.size()
	return r
}

// size fits the row's buffers to the current result set's columns.
func (r *rows) size() {
	n := len(r.dr.Columns())
	if cap(r.dest) < n {
		r.dest, r.cols, r.bufs = make([]driver.Value, n), make([][]byte, n), make([][]byte, n)
	}
	r.dest, r.cols, r.bufs = r.dest[:n], r.cols[:n], r.bufs[:cap(r.bufs)]
}

func (r *rows) Next() bool {
	if r.dr == nil || r.err != nil {
		return false
	}
	err := r.dr.Next(r.dest)
	if err == nil {
		return true
	}
	if !errors.Is(err, io.EOF) {
		r.err = err
	}
	return false
}

// Values writes the row's values as text into the rows' buffers: the
// binary protocol gives numbers as numbers.
func (r *rows) Values() [][]byte {
	for i, v := range r.dest {
		switch x := v.(type) {
		case []byte:
			r.cols[i] = x
		case nil:
			r.cols[i] = nil
		case int64:
			r.bufs[i] = strconv.AppendInt(r.bufs[i][:0], x, 10)
			r.cols[i] = r.bufs[i]
		case uint64:
			r.bufs[i] = strconv.AppendUint(r.bufs[i][:0], x, 10)
			r.cols[i] = r.bufs[i]
		case float64:
			r.bufs[i] = strconv.AppendFloat(r.bufs[i][:0], x, 'g', -1, 64)
			r.cols[i] = r.bufs[i]
		case float32:
			r.bufs[i] = strconv.AppendFloat(r.bufs[i][:0], float64(x), 'g', -1, 32)
			r.cols[i] = r.bufs[i]
		case string:
			r.bufs[i] = append(r.bufs[i][:0], x...)
			r.cols[i] = r.bufs[i]
		default:
			r.bufs[i] = fmt.Append(r.bufs[i][:0], x)
			r.cols[i] = r.bufs[i]
		}
	}
	return r.cols
}

func (r *rows) Columns() []string {
	if r.dr == nil {
		return nil
	}
	return r.dr.Columns()
}

func (r *rows) NextResultSet() bool {
	if r.dr == nil || r.err != nil {
		return false
	}
	for r.Next() {
	}
	next, ok := r.dr.(driver.RowsNextResultSet)
	if r.err != nil || !ok || !next.HasNextResultSet() {
		return false
	}
	if err := next.NextResultSet(); err != nil {
		if !errors.Is(err, io.EOF) {
			r.err = err
		}
		return false
	}
	r.size()
	return true
}

func (r *rows) Close() (engine.Result, error) {
	if r.dr == nil {
		return engine.Result{}, nil
	}
	for r.NextResultSet() {
	}
	err := cmp.Or(r.err, r.dr.Close())
	r.dr = nil
	return engine.Result{}, r.s.fail(r.ctx, err)
}
