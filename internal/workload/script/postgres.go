package script

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/postgres"
)

// pgSession runs a program on PostgreSQL through pgconn, pgx's protocol
// layer, as pgbench runs it through libpq: the simple protocol with the
// variables' text in the SQL (-M simple), Parse/Bind/Execute each time
// (-M extended), or statements prepared once per connection and run with
// Bind and Execute (-M prepared); parameters and results in text, rows
// read and dropped unless \gset or \aset keeps them.
type pgSession struct {
	pc       *pgconn.PgConn
	conn     *countingConn
	prog     *Program
	stmts    []*pgconn.StatementDescription
	pipeline *pgconn.Pipeline
	trips    int64
	// stop ends the watch of the run's context (see watch).
	stop    func() bool
	watched context.Context
}

// openPostgres connects and, under the prepared protocol, prepares every
// SQL command of the program before the run's clock starts. One that
// cannot be prepared yet (a table the script makes itself) is prepared
// when it first runs, as pgbench prepares every one.
func openPostgres(ctx context.Context, login engine.Conn, prog *Program) (*pgSession, error) {
	cfg, err := postgres.ConnInfoOf(login).ConnConfig()
	if err != nil {
		return nil, err
	}
	s := &pgSession{prog: prog, stmts: make([]*pgconn.StatementDescription, prog.Statements)}
	cfg.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dialCounting(ctx, network, addr)
		if err == nil {
			s.conn = c
		}
		return c, err
	}
	if s.pc, err = pgconn.ConnectConfig(ctx, &cfg.Config); err != nil {
		return nil, fmt.Errorf("connect to %s: %w", login, err)
	}
	if prog.Protocol == Prepared {
		for _, sc := range prog.Scripts {
			for _, c := range sc.Commands {
				if c.Type == SQLCommand {
					s.stmts[c.SQL.ID], _ = s.pc.Prepare(ctx, statementName(c.SQL), c.SQL.Numbered, nil)
				}
			}
		}
	}
	return s, nil
}

func statementName(q *SQL) string { return "dbrig_" + strconv.Itoa(q.ID) }

// watch makes the run's context interrupt a statement in flight: when ctx
// ends, the connection's deadline passes and its read returns. Statements
// run under context.Background(), since pgconn would otherwise watch a
// cancellable context around every statement, which pgbench does not pay
// for.
func (s *pgSession) watch(ctx context.Context) {
	if ctx == s.watched {
		return
	}
	if s.stop != nil {
		s.stop()
	}
	s.watched = ctx
	s.stop = context.AfterFunc(ctx, func() { _ = s.pc.Conn().SetDeadline(time.Now()) })
}

func (s *pgSession) exec(c *client, q *SQL) error {
	bg := context.Background()
	switch {
	case s.prog.Protocol == Simple:
		s.trips++
		return s.readAll(c, q, s.pc.Exec(bg, string(c.textOf(q))))
	case s.prog.Protocol == Prepared && s.stmts[q.ID] == nil && s.pipeline == nil:
		sd, err := s.pc.Prepare(bg, statementName(q), q.Numbered, nil)
		s.trips++
		if err != nil {
			return err
		}
		s.stmts[q.ID] = sd
	}
	params := c.bind(q)
	sd := s.stmts[q.ID]
	if s.pipeline != nil {
		if sd != nil {
			s.pipeline.SendQueryStatement(sd, params, nil, nil)
		} else {
			s.pipeline.SendQueryParams(q.Numbered, params, nil, nil, nil)
		}
		return nil
	}
	s.trips++
	if sd != nil {
		return s.read(c, q, s.pc.ExecStatement(bg, sd, params, nil, nil))
	}
	return s.read(c, q, s.pc.ExecParams(bg, q.Numbered, params, nil, nil, nil))
}

// read reads one result, keeping its last row when the command says so.
func (s *pgSession) read(c *client, q *SQL, rr *pgconn.ResultReader) error {
	if q.Result == Discard {
		for rr.NextRow() {
		}
		_, err := rr.Close()
		return err
	}
	n, row := 0, [][]byte(nil)
	for rr.NextRow() {
		n++
		row = c.copyRow(rr.Values())
	}
	if _, err := rr.Close(); err != nil {
		return err
	}
	if q.Result == Gset && n != 1 {
		return fmt.Errorf("\\gset: expected one row, got %d", n)
	}
	if n == 0 {
		return nil
	}
	return c.keep(q, fieldNames(c, rr.FieldDescriptions()), row)
}

func fieldNames(c *client, fds []pgconn.FieldDescription) []string {
	c.names = c.names[:0]
	for _, fd := range fds {
		c.names = append(c.names, fd.Name)
	}
	return c.names
}

// readAll reads the results of a simple-protocol command, which \; may
// make several: \aset keeps each one's last row, \gset the last one's.
func (s *pgSession) readAll(c *client, q *SQL, mrr *pgconn.MultiResultReader) error {
	if q.Result == Discard {
		for mrr.NextResult() {
			rr := mrr.ResultReader()
			for rr.NextRow() {
			}
		}
		return mrr.Close()
	}
	var row [][]byte
	var names []string
	n := 0
	var keepErr error
	for mrr.NextResult() {
		rr := mrr.ResultReader()
		n = 0
		for rr.NextRow() {
			n++
			row = c.copyRow(rr.Values())
		}
		names = fieldNames(c, rr.FieldDescriptions())
		if _, err := rr.Close(); err == nil && q.Result == Aset && n > 0 && keepErr == nil {
			keepErr = c.keep(q, names, row)
		}
	}
	if err := mrr.Close(); err != nil {
		return err
	}
	if q.Result == Gset {
		if n != 1 {
			return fmt.Errorf("\\gset: expected one row, got %d", n)
		}
		return c.keep(q, names, row)
	}
	return keepErr
}

func (s *pgSession) startPipeline() error {
	if s.pipeline != nil {
		return errors.New("already in pipeline mode")
	}
	s.pipeline = s.pc.StartPipeline(context.Background())
	return nil
}

// endPipeline syncs and reads every result; the first error is the
// pipeline's (the server skips what follows it up to the sync).
func (s *pgSession) endPipeline(*client) error {
	p := s.pipeline
	if p == nil {
		return errors.New("not in pipeline mode")
	}
	s.pipeline = nil
	s.trips++
	first := p.Sync()
	for first == nil || isServerError(first) {
		res, err := p.GetResults()
		if err != nil {
			first = cmpErr(first, err)
			if !isServerError(err) {
				break
			}
			continue
		}
		if rr, ok := res.(*pgconn.ResultReader); ok {
			_, err := rr.Close()
			first = cmpErr(first, err)
			continue
		}
		break // the sync, or nothing left
	}
	return cmpErr(first, p.Close())
}

// cmpErr keeps the first error.
func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

func isServerError(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr)
}

func (s *pgSession) inTransaction() bool { return s.pc.TxStatus() != 'I' }

// recover ends a pipeline an error left open and rolls back a transaction
// block, as pgbench does before it retries or goes on.
func (s *pgSession) recover() {
	if s.pipeline != nil {
		_ = s.pipeline.Close()
		s.pipeline = nil
	}
	if s.pc.IsClosed() || s.pc.TxStatus() == 'I' {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.trips++
	_ = s.pc.Exec(ctx, "ROLLBACK").Close()
}

func (s *pgSession) traffic() (out, in, trips int64) {
	if s.conn == nil {
		return 0, 0, s.trips
	}
	return s.conn.out.Load(), s.conn.in.Load(), s.trips
}

func (s *pgSession) close() error {
	if s.stop != nil {
		s.stop()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// The session ends with its Terminate message: the server may close
	// its end before TLS's closing alert is sent, which loses nothing a
	// user measured.
	_ = s.pc.Close(ctx)
	return nil
}
