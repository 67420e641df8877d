package tpch

import (
	"context"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/dbrig/dbrig/internal/engine"
)

// session is one connection to the database holding the TPC-H tables, in
// the driver of its engine, with the engine's own SQL for what the stream
// asks of it (sql/<engine>/).
type session struct {
	engine.Session
	dialect engine.Dialect
	// settingSQL reads a setting by name (a format with one %s).
	settingSQL string
	// serialSQL makes the session run every query on one process.
	serialSQL []string
}

// openSession connects to a database through its engine's session.
func openSession(ctx context.Context, engines *engine.Registry, c engine.Conn) (*session, error) {
	setting, err := sessionSQL(c.Engine, "setting")
	if err != nil {
		return nil, err
	}
	serial, err := sessionSQL(c.Engine, "serial")
	if err != nil {
		return nil, err
	}
	opener, err := engines.SessionOf(c)
	if err != nil {
		return nil, err
	}
	s, err := opener.OpenSession(ctx, c, engine.SessionOptions{})
	if err != nil {
		return nil, err
	}
	return &session{Session: s, dialect: opener.Dialect(), settingSQL: strings.Join(setting, ""), serialSQL: serial}, nil
}

// sessionSQL reads the statements of sql/<engine>/<name>.sql.
func sessionSQL(engineName, name string) ([]string, error) {
	b, err := sqlFiles.ReadFile("sql/" + engineName + "/" + name + ".sql")
	if err != nil {
		return nil, fmt.Errorf("the tpch workload has no %s dialect yet (no sql/%s/%s.sql)", engineName, engineName, name)
	}
	return splitStatements(string(b)), nil
}

// exec runs statements that return no rows.
func (s *session) exec(ctx context.Context, sql ...string) error { return s.Exec(ctx, sql...) }

// query runs one query, reading every row as it arrives.
func (s *session) query(ctx context.Context, sql string) (Answer, error) {
	h := newAnswerHash()
	rows := s.Query(ctx, sql, nil)
	for rows.Next() {
		h.add(rows.Values())
	}
	if _, err := rows.Close(); err != nil {
		return Answer{}, err
	}
	return h.answer(), nil
}

// values runs a query with a small answer and returns its rows as text.
func (s *session) values(ctx context.Context, sql string) ([][]string, error) {
	return engine.Values(ctx, s.Session, sql)
}

// setting reads a setting as the session sees it.
func (s *session) setting(ctx context.Context, name string) (string, error) {
	return engine.Value(ctx, s.Session, fmt.Sprintf(s.settingSQL, name))
}

var workersPlanned = regexp.MustCompile(`Workers Planned: (\d+)`)

// plannedWorkers is the largest number of parallel workers the plan of a
// query asks for (0: it runs serially, as every query does on an engine
// without parallel query).
func (s *session) plannedWorkers(ctx context.Context, sql string) (int, error) {
	if !s.dialect.ParallelQuery {
		return 0, nil
	}
	plan, err := engine.Values(ctx, s.Session, "EXPLAIN "+sql)
	if err != nil {
		return 0, err
	}
	most := 0
	for _, row := range plan {
		if m := workersPlanned.FindStringSubmatch(row[0]); m != nil {
			n, _ := strconv.Atoi(m[1])
			most = max(most, n)
		}
	}
	return most, nil
}

// serial makes the session run every query without parallel workers.
func (s *session) serial(ctx context.Context) error { return s.Exec(ctx, s.serialSQL...) }

// load streams rows in the generator's format into a table.
func (s *session) load(ctx context.Context, table string, rows io.Reader) (int64, error) {
	return s.Load(ctx, table, rows, engine.LoadOptions{Delimiter: '|'})
}

func (s *session) close(ctx context.Context) { _ = s.Close(ctx) }
