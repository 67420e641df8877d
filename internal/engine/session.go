package engine

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// SessionOpener is an optional ability of an Engine: sessions in the
// engine's own driver, through which workloads run their SQL without
// naming the engine or its driver. The engine's [Dialect] says what its
// SQL and protocol can do, for a workload that writes statements at run
// time or needs an ability not every engine has.
type SessionOpener interface {
	OpenSession(ctx context.Context, c Conn, o SessionOptions) (Session, error)
	Dialect() Dialect
}

// SessionOptions are what a workload asks of a session's connection.
type SessionOptions struct {
	// Blocking puts the connection on a blocking socket (package
	// blockconn: cheaper per round trip for one request at a time, as a
	// load's user or a row-by-row client makes them) and runs statements
	// without the driver's per-statement watch of their context: the
	// session watches each context it is given once, with one callback,
	// and its end shuts the connection down (so it is unusable after).
	Blocking bool
	// Traffic counts the bytes the connection carries each way, TLS
	// included: what a link between client and server carries
	// (Session.Traffic).
	Traffic bool
	// MultiStatements lets one text statement hold several, separated by
	// ';' (PostgreSQL's simple protocol always lets it; MariaDB only when
	// asked).
	MultiStatements bool
	// Application names the session to the server (PostgreSQL's
	// application_name), for whoever lists the sessions.
	Application string
	// OnNotice, when set, is called for each message the server sends a
	// session beside a statement's results (PostgreSQL's NOTICE, which a
	// server-side loop may send per row without waiting for the client).
	OnNotice func()
}

// Session is one connection to one database of one server, in the
// engine's own driver. What a statement sets (SET, session variables)
// holds for the statements after it. It is not safe for concurrent use.
// Every error it returns is an [*Error] with the engine's class.
type Session interface {
	// Exec runs statements in order through the text protocol, each one's
	// rows (ANALYZE TABLE, SELECT pg_prewarm(...)) read and dropped. The
	// first error stops it, naming the statement.
	Exec(ctx context.Context, sql ...string) error
	// Query runs one statement. With args nil it goes through the text
	// protocol (several statements when the session lets one hold them,
	// each a result set); with args, in one round trip with its
	// parameters bound and nothing kept on the server (PostgreSQL's
	// unnamed statement; MariaDB's text with the values written in by the
	// driver). The Rows are the session's own: read and close them before
	// the next statement.
	Query(ctx context.Context, sql string, args *Args) Rows
	// Prepare prepares a statement once for this session's connection.
	// An error with the condition ErrNotPreparable says the server cannot
	// prepare it (run it as text instead).
	Prepare(ctx context.Context, sql string) (Stmt, error)
	// QueryPrepared runs a prepared statement that returns rows.
	QueryPrepared(ctx context.Context, st Stmt, args *Args) Rows
	// ExecPrepared runs a prepared statement and reads what it changed.
	ExecPrepared(ctx context.Context, st Stmt, args *Args) (Result, error)
	// Load streams rows of text (fields separated by o's delimiter, one
	// row a line, \N for NULL, as PostgreSQL's COPY and MariaDB's LOAD
	// DATA read them by default) into a table and returns how many it
	// loaded.
	Load(ctx context.Context, table string, rows io.Reader, o LoadOptions) (int64, error)
	// Rollback ends the transaction an error interrupted, if the
	// connection still works (within 10 s): sent says whether it sent
	// ROLLBACK (a round trip).
	Rollback() (sent bool)
	// InTransaction reports whether a transaction block is open, when the
	// engine says so at no cost (PostgreSQL's ReadyForQuery); known is
	// false else.
	InTransaction() (open, known bool)
	// Alive is false once the connection is broken or closed.
	Alive() bool
	// Traffic is the bytes sent and received so far (with
	// SessionOptions.Traffic; zero without).
	Traffic() (out, in int64)
	// BackendPID is the server's process serving this session, 0 when the
	// server serves sessions on threads of one process (MariaDB).
	BackendPID() int
	// Close ends the session.
	Close(ctx context.Context) error
}

// Pipeliner is an optional ability of a Session (Dialect.Pipeline): send
// statements without waiting for each one's answer, then read every answer
// at once.
type Pipeliner interface {
	// StartPipeline enters pipeline mode: Send and SendPrepared then send
	// without waiting.
	StartPipeline() error
	Send(sql string, args *Args)
	SendPrepared(st Stmt, args *Args)
	// EndPipeline syncs and reads every answer, dropping their rows; the
	// first error is the pipeline's (the server skips what follows it up
	// to the sync).
	EndPipeline() error
}

// Stmt is a statement prepared on one session: valid on that session
// only, until it closes.
type Stmt int32

// Result is what a statement changed.
type Result struct {
	RowsAffected int64
	// LastInsertID is the key an INSERT generated, where the engine's
	// protocol reports it (Dialect.InsertID).
	LastInsertID int64
}

// Rows are a statement's answers as they arrive: one or more result sets
// (several when a text statement held several), each of rows of columns
// as text. The first result set is current from the start.
type Rows interface {
	// Next moves to the current result set's next row.
	Next() bool
	// Values are the row's columns as text, nil for NULL: valid until
	// Next is called again.
	Values() [][]byte
	// Columns are the current result set's column names (valid once a
	// row was read, or at the end of the set).
	Columns() []string
	// NextResultSet moves to the next result set, false when there is
	// none.
	NextResultSet() bool
	// Close reads what is left and returns what the last statement
	// changed and the error of the whole, if any. It must be called.
	Close() (Result, error)
}

// LoadOptions say how Session.Load reads its rows.
type LoadOptions struct {
	// Delimiter separates fields (0: a tab).
	Delimiter byte
	// Freeze: the table was made or truncated in this session's open
	// transaction, so its rows may be loaded frozen (PostgreSQL's COPY
	// FREEZE, which spares a later vacuum the work); ignored elsewhere.
	Freeze bool
}

// Dialect is what an engine declares about its SQL and its protocol:
// abilities a workload asks for by name instead of asking which engine it
// talks to.
type Dialect struct {
	// Placeholder writes a statement's n-th parameter (from 1): "$1" or
	// "?".
	Placeholder func(n int) string
	// UnnamedStatements: a statement with parameters is parsed, bound and
	// run in one round trip without naming it (PostgreSQL's extended
	// protocol). Without it (MariaDB), the server binds parameters only
	// to a statement prepared first.
	UnnamedStatements bool
	// Pipeline: sessions implement [Pipeliner].
	Pipeline bool
	// InsertID: ExecPrepared's Result carries the key an INSERT generated
	// (MariaDB's OK packet); without it an INSERT returns its key as a
	// row (INSERT ... RETURNING).
	InsertID bool
	// BackslashEscapes: a backslash escapes the next character inside a
	// quoted string (MariaDB's default sql_mode).
	BackslashEscapes bool
	// EndIsCommit: END ends a transaction as COMMIT does (PostgreSQL).
	EndIsCommit bool
	// ParallelQuery: the server may run one query on several processes,
	// and EXPLAIN says how many it plans as "Workers Planned: N"
	// (PostgreSQL); without it every query runs on one thread.
	ParallelQuery bool
	// SlotsForSuperusers: the server keeps connection slots for
	// superusers, so a workload's users that log in as one may take the
	// slots monitoring needs (PostgreSQL's
	// superuser_reserved_connections). An engine with it has a
	// [RoleMaker] on the instances it starts.
	SlotsForSuperusers bool
}

// RoleMaker is an optional ability of an owned Instance (an engine whose
// Dialect has SlotsForSuperusers): a login without superuser rights for a
// workload's users, so that the slots the server keeps for superusers stay
// free for monitoring.
type RoleMaker interface {
	// MakeRole creates (or updates) role with the administrative login's
	// password, sent to the server only as a verifier, and lets it read
	// and write every table of database db.
	MakeRole(ctx context.Context, db, role string) error
}

// SessionOf finds the session opener of a login's engine.
func (r *Registry) SessionOf(c Conn) (SessionOpener, error) {
	e, ok := r.Lookup(c.Engine)
	if !ok {
		return nil, fmt.Errorf("no engine %q (dbrig has: %s)", c.Engine, strings.Join(r.Names(), ", "))
	}
	o, ok := e.(SessionOpener)
	if !ok {
		return nil, fmt.Errorf("%s has no sessions for workloads", e.Title())
	}
	return o, nil
}

// OpenSession opens a session in the driver of the login's engine.
func (r *Registry) OpenSession(ctx context.Context, c Conn, o SessionOptions) (Session, error) {
	so, err := r.SessionOf(c)
	if err != nil {
		return nil, err
	}
	return so.OpenSession(ctx, c, o)
}

// Dialect is an engine's dialect, by the engine's name.
func (r *Registry) Dialect(name string) (Dialect, error) {
	so, err := r.SessionOf(Conn{Engine: name})
	if err != nil {
		return Dialect{}, err
	}
	return so.Dialect(), nil
}

// Title is an engine's name for people ("PostgreSQL"), or its name when
// the registry does not know it.
func (r *Registry) Title(name string) string {
	if e, ok := r.Lookup(name); ok {
		return e.Title()
	}
	return name
}

// FirstLine is a statement's first line, for errors.
func FirstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " ..."
	}
	return s
}

// Values runs a query through the text protocol and returns its rows as
// text (NULL as "").
func Values(ctx context.Context, s Session, q string) ([][]string, error) {
	var out [][]string
	err := Each(ctx, s, q, nil, func(row [][]byte) error {
		r := make([]string, len(row))
		for i, v := range row {
			r[i] = string(v)
		}
		out = append(out, r)
		return nil
	})
	return out, err
}

// Each runs a query (through the text protocol when args is nil) and calls
// f with each row of its first result set as it arrives, without holding
// the answer in memory; f's row is valid only during the call. An error
// from f stops the query and is returned as it is.
func Each(ctx context.Context, s Session, q string, args *Args, f func(row [][]byte) error) error {
	rows := s.Query(ctx, q, args)
	var ferr error
	for ferr == nil && rows.Next() {
		ferr = f(rows.Values())
	}
	_, err := rows.Close()
	if ferr != nil {
		return ferr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", FirstLine(q), err)
	}
	return nil
}

// Value runs a query and returns the first column of its one row.
func Value(ctx context.Context, s Session, q string) (string, error) {
	rows, err := Values(ctx, s, q)
	if err != nil {
		return "", err
	}
	if len(rows) != 1 || len(rows[0]) == 0 {
		return "", fmt.Errorf("%s: %d rows, want one", FirstLine(q), len(rows))
	}
	return rows[0][0], nil
}

// Int runs a query whose one value is a whole number (a decimal's whole
// part: sums and averages come back as "123.0000").
func Int(ctx context.Context, s Session, q string) (int64, error) {
	v, err := Value(ctx, s, q)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		f, ferr := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if ferr != nil {
			return 0, fmt.Errorf("%s: %q is not a number", FirstLine(q), v)
		}
		n = int64(f)
	}
	return n, nil
}

// errRows are the Rows of a statement that failed before it was sent.
type errRows struct{ err error }

// FailedRows are Rows that hold only err: what a session returns for a
// statement it could not send.
func FailedRows(err error) Rows { return errRows{err} }

func (r errRows) Next() bool             { return false }
func (r errRows) Values() [][]byte       { return nil }
func (r errRows) Columns() []string      { return nil }
func (r errRows) NextResultSet() bool    { return false }
func (r errRows) Close() (Result, error) { return Result{}, r.err }
