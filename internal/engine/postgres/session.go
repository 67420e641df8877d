package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dbrig/dbrig/internal/engine"
)

var (
	_ engine.SessionOpener = (*Engine)(nil)
	_ engine.Pipeliner     = (*session)(nil)
)

// Dialect is PostgreSQL's: $n parameters, the extended protocol's unnamed
// statements, pipelines, INSERT ... RETURNING, standard strings, END, parallel
// query, and slots kept for superusers.
func (e *Engine) Dialect() engine.Dialect {
	return engine.Dialect{
		Placeholder:        func(n int) string { return "$" + strconv.Itoa(n) },
		UnnamedStatements:  true,
		Pipeline:           true,
		EndIsCommit:        true,
		ParallelQuery:      true,
		SlotsForSuperusers: true,
	}
}

// session speaks to PostgreSQL through pgconn, pgx's protocol layer:
// statements prepared once and run with Bind and Execute only
// (ExecStatement, no Describe), parameters and results in text, no row
// decoding beyond what the caller reads. That is what pgbench -M prepared
// sends, so neither side of a comparison with it does more work on the
// wire than the other.
type session struct {
	pc       *pgconn.PgConn
	conn     net.Conn // as dialed, when the session dialed it
	blocking bool
	stmts    []*pgconn.StatementDescription
	named    int
	// params and bufs are reused for every statement's parameters.
	params   [][]byte
	bufs     [][]byte
	rows     rows
	pipeline *pgconn.Pipeline
	// watch interrupts a blocking session's statement when the context
	// it runs under ends.
	watch engine.ContextWatch
}

// OpenSession connects as the login says.
func (e *Engine) OpenSession(ctx context.Context, c engine.Conn, o engine.SessionOptions) (engine.Session, error) {
	cfg, err := ConnInfoOf(c).ConnConfig()
	if err != nil {
		return nil, err
	}
	s := &session{blocking: o.Blocking}
	if o.Blocking || o.Traffic {
		cfg.DialFunc = engine.SessionDialer(o, func(nc net.Conn) { s.conn = nc })
	}
	if o.Application != "" {
		cfg.RuntimeParams["application_name"] = o.Application
	}
	if o.OnNotice != nil {
		cfg.OnNotice = func(*pgconn.PgConn, *pgconn.Notice) { o.OnNotice() }
	}
	if s.pc, err = pgconn.ConnectConfig(ctx, &cfg.Config); err != nil {
		return nil, engine.Classified(fmt.Errorf("connect to %s: %w", c, err), classify)
	}
	s.rows.s = s
	return s, nil
}

// ctxFor is the context a statement runs under: a blocking session's runs
// under none (pgconn would otherwise watch a cancellable context with a
// callback registered and removed around every statement, which pgbench
// does not pay for), the session watching ctx itself.
func (s *session) ctxFor(ctx context.Context) context.Context {
	if !s.blocking {
		return ctx
	}
	s.watch.Watch(ctx, s.pc.Conn())
	return context.Background()
}

// fail classifies a failed statement's error, saying that the run's end
// interrupted it when that is what did.
func (s *session) fail(ctx context.Context, err error) error {
	return engine.Failed(ctx, s.blocking, err, classify)
}

func (s *session) Exec(ctx context.Context, sql ...string) error {
	for _, q := range sql {
		if err := s.pc.Exec(s.ctxFor(ctx), q).Close(); err != nil {
			return fmt.Errorf("%s: %w", engine.FirstLine(q), s.fail(ctx, err))
		}
	}
	return nil
}

func (s *session) bind(a *engine.Args) [][]byte {
	s.params = s.params[:0]
	for len(s.bufs) < a.Len() {
		s.bufs = append(s.bufs, nil)
	}
	for i := range a.Len() {
		v := a.At(i)
		if v.Kind == engine.NullArg && v.B == nil {
			s.params = append(s.params, nil)
			continue
		}
		b := engine.AppendText(s.bufs[i][:0], v)
		if b == nil {
			b = []byte{} // the empty string, not NULL
		}
		s.bufs[i] = b
		s.params = append(s.params, b)
	}
	return s.params
}

func (s *session) Query(ctx context.Context, sql string, args *engine.Args) engine.Rows {
	c := s.ctxFor(ctx)
	if args == nil {
		return s.rows.multi(ctx, s.pc.Exec(c, sql))
	}
	return s.rows.single(ctx, s.pc.ExecParams(c, sql, s.bind(args), nil, nil, nil))
}

func (s *session) Prepare(ctx context.Context, sql string) (engine.Stmt, error) {
	s.named++
	sd, err := s.pc.Prepare(s.ctxFor(ctx), "dbrig_"+strconv.Itoa(s.named), sql, nil)
	if err != nil {
		return 0, s.fail(ctx, err)
	}
	s.stmts = append(s.stmts, sd)
	return engine.Stmt(len(s.stmts) - 1), nil
}

func (s *session) QueryPrepared(ctx context.Context, st engine.Stmt, args *engine.Args) engine.Rows {
	return s.rows.single(ctx, s.pc.ExecStatement(s.ctxFor(ctx), s.stmts[st], s.bind(args), nil, nil))
}

func (s *session) ExecPrepared(ctx context.Context, st engine.Stmt, args *engine.Args) (engine.Result, error) {
	tag, err := s.pc.ExecStatement(s.ctxFor(ctx), s.stmts[st], s.bind(args), nil, nil).Close()
	if err != nil {
		return engine.Result{}, s.fail(ctx, err)
	}
	return engine.Result{RowsAffected: tag.RowsAffected()}, nil
}

// Load streams the rows with COPY ... FROM STDIN.
func (s *session) Load(ctx context.Context, table string, r io.Reader, o engine.LoadOptions) (int64, error) {
	var opts []string
	if o.Delimiter != 0 && o.Delimiter != '\t' {
		opts = append(opts, "FORMAT text", "DELIMITER '"+strings.ReplaceAll(string(o.Delimiter), "'", "''")+"'")
	}
	if o.Freeze {
		opts = append(opts, "FREEZE")
	}
	q := "COPY " + pgx.Identifier{table}.Sanitize() + " FROM STDIN"
	if len(opts) > 0 {
		q += " (" + strings.Join(opts, ", ") + ")"
	}
	tag, err := s.pc.CopyFrom(s.ctxFor(ctx), r, q)
	if err != nil {
		return 0, s.fail(ctx, err)
	}
	return tag.RowsAffected(), nil
}

func (s *session) Rollback() bool {
	if s.pc.IsClosed() {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = s.pc.Exec(ctx, "ROLLBACK").Close()
	return true
}

func (s *session) InTransaction() (open, known bool) { return s.pc.TxStatus() != 'I', true }
func (s *session) Alive() bool                       { return !s.pc.IsClosed() }
func (s *session) Traffic() (out, in int64)          { return engine.TrafficOf(s.conn) }
func (s *session) BackendPID() int                   { return int(s.pc.PID()) }

func (s *session) Close(ctx context.Context) error {
	s.watch.Stop()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	// The session ends with its Terminate message: the server may close
	// its end before TLS's closing alert is sent ("failed to send
	// closeNotify alert"), which loses nothing a user measured.
	_ = s.pc.Close(ctx)
	return nil
}

func (s *session) StartPipeline() error {
	if s.pipeline != nil {
		return errors.New("already in pipeline mode")
	}
	s.pipeline = s.pc.StartPipeline(context.Background())
	return nil
}

func (s *session) Send(sql string, args *engine.Args) {
	s.pipeline.SendQueryParams(sql, s.bind(args), nil, nil, nil)
}

func (s *session) SendPrepared(st engine.Stmt, args *engine.Args) {
	s.pipeline.SendQueryStatement(s.stmts[st], s.bind(args), nil, nil)
}

func (s *session) EndPipeline() error {
	p := s.pipeline
	if p == nil {
		return errors.New("not in pipeline mode")
	}
	s.pipeline = nil
	first := p.Sync()
	for first == nil || isServerError(first) {
		res, err := p.GetResults()
		if err != nil {
			first = cmp.Or(first, err)
			if !isServerError(err) {
				break
			}
			continue
		}
		if rr, ok := res.(*pgconn.ResultReader); ok {
			_, err := rr.Close()
			first = cmp.Or(first, err)
			continue
		}
		break // the sync, or nothing left
	}
	return s.fail(s.watch.Watched(), cmp.Or(first, p.Close()))
}

func isServerError(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr)
}

// rows are a session's answers to one statement, reused for the next.
type rows struct {
	s     *session
	ctx   context.Context
	mrr   *pgconn.MultiResultReader // the text protocol's, else nil
	rr    *pgconn.ResultReader      // the current result set
	res   engine.Result
	err   error
	names []string
}

func (r *rows) single(ctx context.Context, rr *pgconn.ResultReader) engine.Rows {
	r.ctx, r.mrr, r.rr, r.res, r.err = ctx, nil, rr, engine.Result{}, nil
	return r
}

func (r *rows) multi(ctx context.Context, mrr *pgconn.MultiResultReader) engine.Rows {
	r.ctx, r.mrr, r.rr, r.res, r.err = ctx, mrr, nil, engine.Result{}, nil
	if mrr.NextResult() {
		r.rr = mrr.ResultReader()
	}
	return r
}

func (r *rows) Next() bool       { return r.rr != nil && r.rr.NextRow() }
func (r *rows) Values() [][]byte { return r.rr.Values() }

func (r *rows) Columns() []string {
	r.names = r.names[:0]
	if r.rr != nil {
		for _, fd := range r.rr.FieldDescriptions() {
			r.names = append(r.names, fd.Name)
		}
	}
	return r.names
}

// endSet closes the current result set, keeping what it changed and its
// error.
func (r *rows) endSet() {
	if r.rr == nil {
		return
	}
	tag, err := r.rr.Close()
	r.rr = nil
	if err != nil {
		r.err = cmp.Or(r.err, err)
		return
	}
	r.res = engine.Result{RowsAffected: tag.RowsAffected()}
}

func (r *rows) NextResultSet() bool {
	r.endSet()
	if r.mrr == nil || !r.mrr.NextResult() {
		return false
	}
	r.rr = r.mrr.ResultReader()
	return true
}

func (r *rows) Close() (engine.Result, error) {
	r.endSet()
	if r.mrr != nil {
		for r.mrr.NextResult() {
			r.rr = r.mrr.ResultReader()
			r.endSet()
		}
		r.err = cmp.Or(r.err, r.mrr.Close())
		r.mrr = nil
	}
	return r.res, r.s.fail(r.ctx, r.err)
}
