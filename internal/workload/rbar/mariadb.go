package rbar

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/mariadb"
	"github.com/dbrig/dbrig/internal/workload"
)

// mariadbSchema makes the table of objects and the two cursor loops in
// MariaDB's dialect. The values are listed rather than read from the
// sequence engine so that a MySQL target takes them too.
func mariadbSchema() []string {
	values := make([]string, objects)
	for i := range values {
		values[i] = "(" + strconv.Itoa(i+1) + ")"
	}
	return []string{
		`CREATE TABLE rbar_objects (id INT NOT NULL PRIMARY KEY) ENGINE=InnoDB`,
		`INSERT INTO rbar_objects (id) VALUES ` + strings.Join(values, ","),
		`ANALYZE TABLE rbar_objects`,
		// The seed's empty cursor: FETCH each row into a variable, assign
		// it; the count is the procedure's one result.
		procedureLoop("rbar_cursor", "SET v = v;", "SELECT k;"),
		// The seed's cursor that returns each row as a result set of its
		// own: the server sends each as it comes, without a round trip.
		procedureLoop("rbar_messages", "SELECT v;", ""),
	}
}

// procedureLoop makes a stored procedure name(n) that FETCHes n rows of the
// cross join one at a time from a cursor, runs perRow on each and then
// after. (A MariaDB cursor materializes its rows in a temporary table when
// it is opened: the study's max_heap_table_size keeps that in memory.)
func procedureLoop(name, perRow, after string) string {
	return `CREATE PROCEDURE ` + name + `(IN n BIGINT)
  READS SQL DATA SQL SECURITY INVOKER
BEGIN
  DECLARE v INT;
  DECLARE k BIGINT DEFAULT 0;
  DECLARE done BOOL DEFAULT FALSE;
  DECLARE c CURSOR FOR ` + crossJoin + ` LIMIT n;
  DECLARE CONTINUE HANDLER FOR NOT FOUND SET done = TRUE;
  OPEN c;
  each_row: LOOP
    FETCH c INTO v;
    IF done THEN LEAVE each_row; END IF;
    ` + perRow + `
    SET k = k + 1;
  END LOOP;
  CLOSE c;
  ` + after + `
END`
}

// serverLoopSQL counts exactly the first n rows of the cross join on the
// server: q whole blocks of 10^6 rows (c.id <= q), r rows of 1,000 of the
// next block and s single rows. MariaDB would materialize a derived table
// cut by LIMIT into a temporary table before counting it (22 s instead of
// 0.3 s for 10^7 rows here); bounded ranges keep it a count over the join
// as it runs, on one thread (MariaDB has no parallel query).
func serverLoopSQL(n int64) string {
	q, r, s := n/(objects*objects), n/objects%objects, n%objects
	count := "(SELECT COUNT(*) FROM rbar_objects a, rbar_objects b, rbar_objects c WHERE "
	return fmt.Sprintf("SELECT %sc.id <= %d) + %sc.id = %d AND b.id <= %d) + %sc.id = %d AND b.id = %d AND a.id <= %d)",
		count, q, count, q+1, r, count, q+1, r+1, s)
}

// socket is the client's end of a MariaDB connection. It reads and writes
// with blocking system calls, as a C client does, instead of Go's network
// poller: one round trip is then a write and a read that waits, not a
// write, a read that would block, a wait in epoll and the read again, and
// the row-by-row client costs no more CPU per round trip than sysbench's
// (BenchmarkRowByRowVsSysbench). It counts the bytes it reads: the wire
// bytes of every packet the server sends.
type socket struct {
	net.Conn // owns the descriptor
	fd       int
	read     atomic.Int64
	mu       sync.Mutex
	closed   bool
}

func newSocket(c net.Conn) (*socket, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil, fmt.Errorf("%T has no file descriptor", c)
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil, err
	}
	s := &socket{Conn: c, fd: -1}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		s.fd = int(fd)
		serr = syscall.SetNonblock(s.fd, false)
	}); err != nil {
		return nil, err
	}
	if serr != nil {
		return nil, fmt.Errorf("make the socket blocking: %w", serr)
	}
	return s, nil
}

func (s *socket) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		n, err := syscall.Read(s.fd, p)
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return 0, &net.OpError{Op: "read", Net: s.LocalAddr().Network(), Addr: s.RemoteAddr(), Err: err}
		case n == 0:
			return 0, io.EOF
		}
		s.read.Add(int64(n))
		return n, nil
	}
}

func (s *socket) Write(p []byte) (int, error) {
	written := 0
	for written < len(p) {
		n, err := syscall.Write(s.fd, p[written:])
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return written, &net.OpError{Op: "write", Net: s.LocalAddr().Network(), Addr: s.RemoteAddr(), Err: err}
		}
		written += n
	}
	return written, nil
}

// shutdown ends the connection's traffic both ways, which wakes a read or
// write blocked on it; the descriptor stays open until Close.
func (s *socket) shutdown() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		_ = syscall.Shutdown(s.fd, syscall.SHUT_RDWR)
	}
}

func (s *socket) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	return s.Conn.Close()
}

// session is one MariaDB connection on a socket of its own.
type session struct {
	db     *sql.DB
	conn   *sql.Conn
	socket atomic.Pointer[socket]
	// stop ends the watch that shuts the socket down when the run's
	// context is cancelled.
	stop func() bool
}

// openSession connects through go-sql-driver/mysql. The per-row loops pass
// the driver a context that is never cancelled, so that neither
// database/sql nor the driver watches a context per statement; the session
// instead shuts its socket down once, when ctx is cancelled, which ends a
// statement in flight at once.
func openSession(ctx context.Context, login engine.Conn) (*session, error) {
	cfg, err := mariadb.Config(login)
	if err != nil {
		return nil, err
	}
	s := &session{}
	var dialer net.Dialer
	// The socket reads and writes with blocking calls, which no deadline
	// interrupts: the driver's read and write timeouts stay off.
	cfg.ReadTimeout, cfg.WriteTimeout = 0, 0
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dialer.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		sock, err := newSocket(c)
		if err != nil {
			c.Close()
			return nil, err
		}
		s.socket.Store(sock)
		return sock, nil
	}
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("connection to %s: %w", login, err)
	}
	s.db = sql.OpenDB(connector)
	s.db.SetMaxOpenConns(1)
	if s.conn, err = s.db.Conn(ctx); err != nil {
		s.db.Close()
		return nil, fmt.Errorf("connect to %s: %w", login, err)
	}
	s.stop = context.AfterFunc(ctx, func() {
		if sock := s.socket.Load(); sock != nil {
			sock.shutdown()
		}
	})
	return s, nil
}

func (s *session) close() {
	s.stop()
	s.conn.Close()
	s.db.Close()
}

// bytesRead is what the client has read from the server so far.
func (s *session) bytesRead() int64 {
	if sock := s.socket.Load(); sock != nil {
		return sock.read.Load()
	}
	return 0
}

// runMariaDB measures one point on MariaDB through go-sql-driver/mysql.
func (w *rbar) runMariaDB(ctx context.Context, env *workload.Env, login engine.Conn) (workload.Measurement, error) {
	s, err := openSession(ctx, login)
	if err != nil {
		return workload.Measurement{}, err
	}
	defer s.close()
	if _, err := s.conn.ExecContext(ctx, "DO 1"); err != nil { // warm the connection
		return workload.Measurement{}, err
	}
	n := strconv.FormatInt(w.rows, 10)
	var m workload.Measurement
	switch w.experiment {
	case "server-loop", "server-cursor":
		query := serverLoopSQL(w.rows)
		if w.experiment == "server-cursor" {
			query = "CALL rbar_cursor(" + n + ")"
		}
		trip := func() error { _, err := s.conn.ExecContext(ctx, "DO 1"); return err }
		m, err = w.probedServerSide(serverSideSteps{
			probe: func(timer func(trip func() error) (map[string]float64, error)) (map[string]float64, error) {
				return timer(trip)
			},
			trip:      trip,
			sample:    func(exp string, n int64) (int64, error) { return w.mySample(ctx, s, exp, n) },
			statement: func() (workload.Measurement, error) { return w.myServerSide(ctx, s, query) },
		})
	case "cursor-messages":
		m, err = w.myMessages(ctx, s, env)
	case "client-stream", "wide-rows":
		m, err = w.myStream(ctx, s, env, w.myStreamSQL(w.rows), w.myStreamWidth())
	case "client-row-by-row":
		m, err = w.myRowByRow(ctx, s, env)
	default:
		err = fmt.Errorf("unknown experiment %q", w.experiment)
	}
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("%w (%v)", ctx.Err(), err)
	}
	return m, err
}

// myServerSide times one statement that processes every row on the server
// and returns the count: one round trip whatever the row count (a CALL's
// closing status comes in the same answer).
func (w *rbar) myServerSide(ctx context.Context, s *session, query string) (workload.Measurement, error) {
	var k int64
	clock := startClientClock()
	err := s.conn.QueryRowContext(ctx, query).Scan(&k)
	elapsed, _ := clock.stop()
	if err != nil {
		return workload.Measurement{}, err
	}
	if k != w.rows {
		return workload.Measurement{}, fmt.Errorf("the server counted %d rows, want %d", k, w.rows)
	}
	return w.serverSideMetrics(elapsed), nil
}

// myStreamSQL is the statement of a stream of n rows: the cross join's
// ids, or rows of row_bytes characters.
func (w *rbar) myStreamSQL(n int64) string {
	limit := strconv.FormatInt(n, 10)
	if w.experiment == "wide-rows" {
		return "SELECT REPEAT('a', " + strconv.FormatInt(w.rowBytes, 10) + ") AS x FROM rbar_objects a, rbar_objects b, rbar_objects c LIMIT " + limit
	}
	return crossJoin + " LIMIT " + limit
}

// myStreamWidth is the length every value of the stream must have (0: any).
func (w *rbar) myStreamWidth() int64 {
	if w.experiment == "wide-rows" {
		return w.rowBytes
	}
	return 0
}

// mySample runs n rows of another experiment on the point's session, with
// none of the client's per-row cost, and returns the bytes it read.
func (w *rbar) mySample(ctx context.Context, s *session, exp string, n int64) (int64, error) {
	sample := *w
	sample.experiment, sample.rows, sample.clientCost = exp, n, 0
	var m workload.Measurement
	var err error
	switch exp {
	case "client-stream", "wide-rows":
		m, err = sample.myStream(ctx, s, &workload.Env{}, sample.myStreamSQL(n), sample.myStreamWidth())
	case "cursor-messages":
		m, err = sample.myMessages(ctx, s, &workload.Env{})
	case "server-cursor":
		_, err = sample.myServerSide(ctx, s, "CALL rbar_cursor("+strconv.FormatInt(n, 10)+")")
	default:
		err = fmt.Errorf("no sample of %q", exp)
	}
	return int64(m.Metrics["wire_bytes"]), err
}

// myStream reads one result set of rows and discards them as they arrive;
// with width > 0 it checks that every value has that many bytes (the
// server returns NULL for a value longer than max_allowed_packet).
func (w *rbar) myStream(ctx context.Context, s *session, env *workload.Env, query string, width int64) (workload.Measurement, error) {
	var got int64
	var value sql.RawBytes
	before := s.bytesRead()
	clock := startClientClock()
	rows, err := s.conn.QueryContext(ctx, query)
	if err != nil {
		return workload.Measurement{}, err
	}
	for rows.Next() {
		if width > 0 {
			if err := rows.Scan(&value); err != nil {
				rows.Close()
				return workload.Measurement{}, err
			}
			if int64(len(value)) != width {
				rows.Close()
				return workload.Measurement{}, fmt.Errorf("row %d has %d bytes, want %d", got+1, len(value), width)
			}
		}
		got++
		w.spend(time.Now())
		if got&4095 == 0 && env.Progress != nil {
			env.Progress(got, w.rows)
		}
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return workload.Measurement{}, err
	}
	elapsed, cpu := clock.stop()
	if got != w.rows {
		return workload.Measurement{}, fmt.Errorf("received %d rows, want %d", got, w.rows)
	}
	return withClientCPU(streamMetrics(got, s.bytesRead()-before, elapsed), cpu, got), nil
}

// myMessages calls the procedure that SELECTs each row as a result set of
// its own and walks them: the seed's "10^7 result sets".
func (w *rbar) myMessages(ctx context.Context, s *session, env *workload.Env) (workload.Measurement, error) {
	var got, sets int64
	before := s.bytesRead()
	clock := startClientClock()
	rows, err := s.conn.QueryContext(ctx, "CALL rbar_messages("+strconv.FormatInt(w.rows, 10)+")")
	if err != nil {
		return workload.Measurement{}, err
	}
	for {
		sets++
		for rows.Next() {
			got++
			w.spend(time.Now())
			if got&4095 == 0 && env.Progress != nil {
				env.Progress(got, w.rows)
			}
		}
		if !rows.NextResultSet() {
			break
		}
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return workload.Measurement{}, err
	}
	elapsed, cpu := clock.stop()
	if got != w.rows || sets != w.rows {
		return workload.Measurement{}, fmt.Errorf("received %d rows in %d result sets, want %d of each", got, sets, w.rows)
	}
	m := withClientCPU(w.serverSideMetrics(elapsed), cpu, got)
	wire := s.bytesRead() - before
	m.Metrics["wire_bytes"] = float64(wire)
	m.Metrics["throughput_bps"] = float64(wire) * 8 / elapsed.Seconds()
	m.Metrics["rows_per_s"] = float64(got) / elapsed.Seconds()
	return m, nil
}

// handlerName is the HANDLER the fetch mode reads rbar_objects through.
const handlerName = "rbar_h"

// myRowByRow makes one round trip per row: a server-side prepared SELECT ?
// (the binary protocol), or HANDLER ... READ NEXT, the next row of a
// position the server keeps between round trips (a client cursor's FETCH
// NEXT), from READ FIRST again every 1,000 rows. It talks to the driver's
// connection itself: database/sql's own bookkeeping per statement (a dozen
// allocations) is not part of a round trip.
func (w *rbar) myRowByRow(ctx context.Context, s *session, env *workload.Env) (workload.Measurement, error) {
	// See openSession: ctx's cancellation shuts the socket down.
	bg := context.WithoutCancel(ctx)
	var m workload.Measurement
	err := s.conn.Raw(func(dc any) error {
		r := &rowReader{bg: bg, dest: make([]driver.Value, 1)}
		var next func() error
		switch w.rowByRow {
		case "select":
			stmt, err := r.prepareSelect(ctx, dc)
			if err != nil {
				return err
			}
			defer stmt.Close()
			next = r.nextSelect
		case "fetch":
			ex, err := r.openHandler(ctx, dc)
			if err != nil {
				return err
			}
			defer func() { _, _ = ex.ExecContext(bg, "HANDLER "+handlerName+" CLOSE", nil) }()
			next = r.nextFetch
		default:
			return fmt.Errorf("row_by_row = %q: want fetch or select", w.rowByRow)
		}
		var err error
		m, err = w.roundTrips(env, func() error {
			if err := ctx.Err(); err != nil {
				return err
			}
			return next()
		})
		return err
	})
	return m, err
}

// The HANDLER reads of the fetch mode: the table's first row, and the row
// after the handler's position.
const (
	handlerFirst = "HANDLER " + handlerName + " READ `PRIMARY` FIRST"
	handlerNext  = "HANDLER " + handlerName + " READ `PRIMARY` NEXT"
)

// rowReader makes myRowByRow's round trips on the driver's connection, one
// row each, and checks each row's value. Its buffers are reused by every
// round trip, which allocates nothing of its own.
type rowReader struct {
	bg    context.Context // the round trips' context: see openSession
	i     int64           // round trips made
	dest  []driver.Value
	args  []driver.NamedValue     // the select mode's one argument
	stmt  driver.StmtQueryContext // the select mode's SELECT ?
	query driver.QueryerContext   // the fetch mode's connection
}

// prepareSelect prepares the select mode's SELECT ? on dc; the caller
// closes the statement.
func (r *rowReader) prepareSelect(ctx context.Context, dc any) (driver.Stmt, error) {
	prep, ok := dc.(driver.ConnPrepareContext)
	if !ok {
		return nil, fmt.Errorf("the driver's connection %T cannot prepare", dc)
	}
	stmt, err := prep.PrepareContext(ctx, "SELECT ?")
	if err != nil {
		return nil, err
	}
	query, ok := stmt.(driver.StmtQueryContext)
	if !ok {
		stmt.Close()
		return nil, fmt.Errorf("the driver's statement %T cannot query", stmt)
	}
	r.stmt, r.args = query, []driver.NamedValue{{Ordinal: 1}}
	return stmt, nil
}

// openHandler opens the fetch mode's HANDLER on dc and returns what closes
// it.
func (r *rowReader) openHandler(ctx context.Context, dc any) (driver.ExecerContext, error) {
	q, ok := dc.(driver.QueryerContext)
	if !ok {
		return nil, fmt.Errorf("the driver's connection %T cannot query", dc)
	}
	ex, ok := dc.(driver.ExecerContext)
	if !ok {
		return nil, fmt.Errorf("the driver's connection %T cannot execute", dc)
	}
	if _, err := ex.ExecContext(ctx, "HANDLER rbar_objects OPEN AS "+handlerName, nil); err != nil {
		return nil, err
	}
	r.query = q
	return ex, nil
}

func (r *rowReader) nextSelect() error {
	r.i++
	want := r.i%objects + 1
	r.args[0].Value = want
	rows, err := r.stmt.QueryContext(r.bg, r.args)
	return r.one(rows, err, "SELECT ?", want)
}

func (r *rowReader) nextFetch() error {
	query, want := handlerNext, r.i%objects+1
	if want == 1 {
		query = handlerFirst
	}
	r.i++
	rows, err := r.query.QueryContext(r.bg, query, nil)
	return r.one(rows, err, query, want)
}

// one reads the one row of a result and checks its value.
func (r *rowReader) one(rows driver.Rows, err error, what string, want int64) error {
	if err != nil {
		return err
	}
	err = rows.Next(r.dest)
	if err == nil {
		if v, ok := asInt64(r.dest[0]); !ok || v != want {
			err = fmt.Errorf("%s returned %v, want %d", what, r.dest[0], want)
		} else if rows.Next(r.dest) != io.EOF {
			err = fmt.Errorf("%s returned more than one row", what)
		}
	} else if err == io.EOF {
		err = fmt.Errorf("%s returned no row", what)
	}
	return errors.Join(err, rows.Close())
}

// asInt64 reads an integer the driver returned: int64 from the binary
// protocol, digits from the text protocol.
func asInt64(v driver.Value) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case []byte:
		n, err := strconv.ParseInt(string(x), 10, 64)
		return n, err == nil
	}
	return 0, false
}
