package oltp

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dbrig/dbrig/internal/blockconn"
	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/postgres"
)

// pgSession speaks to PostgreSQL through pgconn, pgx's protocol layer: each
// statement is prepared once per connection and run with Bind and Execute
// only (ExecStatement, no Describe), parameters and results in text, no
// row decoding beyond what a transaction reads. That is what pgbench -M
// prepared sends, so neither side of the comparison does more work on the
// wire than the other.
type pgSession struct {
	pc    *pgconn.PgConn
	stmts [numStmts]*pgconn.StatementDescription
	// params are reused buffers, one per parameter.
	params [][]byte
	bufs   [len(args{}.v)][]byte
	// stop ends the watch of the run's context (see watch).
	stop    func() bool
	watched context.Context
}

// openPostgres connects and prepares every statement.
func openPostgres(ctx context.Context, login engine.Conn) (session, error) {
	cfg, err := postgres.ConnInfoOf(login).ConnConfig()
	if err != nil {
		return nil, err
	}
	cfg.DialFunc = blockconn.Dial // see blockconn: the poller cost a third more CPU per transaction
	pc, err := pgconn.ConnectConfig(ctx, &cfg.Config)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", login, err)
	}
	s := &pgSession{pc: pc, params: make([][]byte, 0, len(args{}.v))}
	for st := range numStmts {
		sd, err := pc.Prepare(ctx, "oltp_"+strconv.Itoa(int(st)), numbered(sqlFor(postgres.Name, st)), nil)
		if err != nil {
			pc.Close(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("prepare %q: %w", sqlFor(postgres.Name, st), err)
		}
		s.stmts[st] = sd
	}
	return s, nil
}

// watch makes the run's context interrupt a statement in flight: when ctx
// ends, the connection's deadline passes and its read returns. Statements
// themselves run under context.Background(), since pgconn watches a
// cancellable context with a callback registered and removed around every
// statement, which pgbench does not pay for.
func (s *pgSession) watch(ctx context.Context) {
	if ctx == s.watched {
		return
	}
	if s.stop != nil {
		s.stop()
	}
	s.watched = ctx
	s.stop = context.AfterFunc(ctx, func() { _ = s.pc.Conn().SetDeadline(time.Now()) }) // shuts a blocking socket down
}

func (s *pgSession) bind(a *args) [][]byte {
	s.params = s.params[:0]
	if a == nil {
		return s.params
	}
	for i := range a.n {
		v := &a.v[i]
		b := s.bufs[i][:0]
		switch v.kind {
		case intArg:
			b = strconv.AppendInt(b, v.i, 10)
		case centsArg:
			b = appendCents(b, v.i)
		case textArg:
			b = append(b, v.s...)
		}
		s.bufs[i] = b
		s.params = append(s.params, b)
	}
	return s.params
}

func (s *pgSession) query(ctx context.Context, st stmt, a *args, row func([][]byte) error) (int, error) {
	s.watch(ctx)
	rr := s.pc.ExecStatement(context.Background(), s.stmts[st], s.bind(a), nil, nil)
	n := 0
	var rowErr error
	for rr.NextRow() {
		n++
		if row != nil && rowErr == nil {
			rowErr = row(rr.Values())
		}
	}
	if _, err := rr.Close(); err != nil {
		return n, s.failed(ctx, err)
	}
	return n, rowErr
}

func (s *pgSession) exec(ctx context.Context, st stmt, a *args) (int64, error) {
	s.watch(ctx)
	tag, err := s.pc.ExecStatement(context.Background(), s.stmts[st], s.bind(a), nil, nil).Close()
	if err != nil {
		return 0, s.failed(ctx, err)
	}
	return tag.RowsAffected(), nil
}

func (s *pgSession) insertOrder(ctx context.Context, a *args) (int64, error) {
	var id int64
	var perr error
	n, err := s.query(ctx, sInsertOrd, a, func(cols [][]byte) error {
		id, perr = strconv.ParseInt(string(cols[0]), 10, 64)
		return perr
	})
	if err == nil && n != 1 {
		err = fmt.Errorf("INSERT INTO orders returned %d rows", n)
	}
	return id, err
}

// failed says why a statement failed: the run's end when that is what
// interrupted it.
func (s *pgSession) failed(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%w (%w)", ctx.Err(), err)
	}
	return err
}

func (s *pgSession) rollback() {
	if s.pc.IsClosed() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = s.pc.Exec(ctx, "ROLLBACK").Close()
}

func (s *pgSession) close() error {
	if s.stop != nil {
		s.stop()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// The session ends with its Terminate message: the server may close
	// its end before TLS's closing alert is sent ("failed to send
	// closeNotify alert"), which loses nothing a user measured.
	_ = s.pc.Close(ctx)
	return nil
}
