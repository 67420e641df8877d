package mariadb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/dbrig/dbrig/internal/engine"
)

// markerComment is the database comment that says dbrig made a database
// (MariaDB 10.5 and later keep a comment per database). On a server
// without database comments (MySQL) a table named markerTable in the
// database says the same.
const (
	markerComment = "made by dbrig"
	markerTable   = "dbrig_owner"
)

// systemSchemas are never created, replaced or dropped.
var systemSchemas = []string{"mysql", "sys", "information_schema", "performance_schema"}

// server is the SQL side shared by instances dbrig starts and targets: one
// administrative login.
type server struct {
	name  string
	admin engine.Conn // database ""
	// markByTable is set on servers without database comments.
	markByTable bool
}

// connect opens one session on database db.
func (s *server) connect(ctx context.Context, db string) (*sql.DB, *sql.Conn, error) {
	cfg, err := Config(s.admin.WithDatabase(db))
	if err != nil {
		return nil, nil, err
	}
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, nil, err
	}
	pool := sql.OpenDB(connector)
	conn, err := pool.Conn(ctx)
	if err != nil {
		pool.Close()
		return nil, nil, fmt.Errorf("instance %q: connect to %s: %w", s.name, s.admin.WithDatabase(db), err)
	}
	return pool, conn, nil
}

// Exec runs SQL statements in one session on database db ("" = none).
func (s *server) Exec(ctx context.Context, db string, stmts ...string) error {
	pool, conn, err := s.connect(ctx, db)
	if err != nil {
		return err
	}
	defer pool.Close()
	defer conn.Close()
	for _, stmt := range stmts {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("instance %q: %s: %w", s.name, firstLine(stmt), err)
		}
	}
	return nil
}

// Setting reads a server variable's global value.
func (s *server) Setting(ctx context.Context, name string) (string, error) {
	if !variableNameRE.MatchString(name) {
		return "", fmt.Errorf("instance %q: %q is not a variable name", s.name, name)
	}
	pool, conn, err := s.connect(ctx, "")
	if err != nil {
		return "", err
	}
	defer pool.Close()
	defer conn.Close()
	var v sql.NullString
	if err := conn.QueryRowContext(ctx, "SELECT @@GLOBAL."+normalize(name)).Scan(&v); err != nil {
		return "", fmt.Errorf("instance %q: read setting %s: %w", s.name, name, err)
	}
	return v.String, nil
}

func checkDatabaseName(name string) error {
	if name == "" || len(name) > 64 || strings.ContainsAny(name, "/\\.\x00") || strings.TrimSpace(name) != name {
		return fmt.Errorf("database name %q: want 1 to 64 characters without / \\ . or surrounding spaces", name)
	}
	if slices.Contains(systemSchemas, strings.ToLower(name)) {
		return fmt.Errorf("database %s is the server's own: dbrig never creates or drops it", name)
	}
	return nil
}

// ours reports whether database name exists and whether dbrig made it.
func (s *server) ours(ctx context.Context, conn *sql.Conn, name string) (exists, ours bool, err error) {
	if s.markByTable {
		err = conn.QueryRowContext(ctx, "SELECT COUNT(*) > 0 FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", name).Scan(&exists)
		if err != nil || !exists {
			return exists, false, err
		}
		err = conn.QueryRowContext(ctx, "SELECT COUNT(*) > 0 FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?", name, markerTable).Scan(&ours)
		return true, ours, err
	}
	var comment string
	err = conn.QueryRowContext(ctx, "SELECT SCHEMA_COMMENT FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", name).Scan(&comment)
	if errors.Is(err, sql.ErrNoRows) {
		return false, false, nil
	}
	return err == nil, comment == markerComment, err
}

// CreateDatabase makes an empty database for a workload, replacing one
// dbrig made before; one dbrig did not make is refused, never dropped.
func (s *server) CreateDatabase(ctx context.Context, name string) error {
	if err := checkDatabaseName(name); err != nil {
		return fmt.Errorf("instance %q: %w", s.name, err)
	}
	pool, conn, err := s.connect(ctx, "")
	if err != nil {
		return err
	}
	defer pool.Close()
	defer conn.Close()
	exists, ours, err := s.ours(ctx, conn, name)
	if err != nil {
		return fmt.Errorf("instance %q: look for database %s: %w", s.name, name, err)
	}
	if exists && !ours {
		return fmt.Errorf("instance %q: database %s exists and dbrig did not make it: dbrig leaves it alone (choose another name or drop it yourself)", s.name, name)
	}
	stmts := []string{"DROP DATABASE IF EXISTS " + quoteIdent(name)}
	if s.markByTable {
		stmts = append(stmts, "CREATE DATABASE "+quoteIdent(name),
			"CREATE TABLE "+quoteIdent(name)+"."+quoteIdent(markerTable)+" (made_by varchar(16) NOT NULL)")
	} else {
		stmts = append(stmts, "CREATE DATABASE "+quoteIdent(name)+" COMMENT "+quote(markerComment))
	}
	for _, stmt := range stmts {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("instance %q: %s: %w%s", s.name, stmt, err, privilegeHint(err, s.admin.User))
		}
	}
	return nil
}

// DropDatabase removes a database dbrig made (no error when absent); one
// dbrig did not make is refused.
func (s *server) DropDatabase(ctx context.Context, name string) error {
	if err := checkDatabaseName(name); err != nil {
		return fmt.Errorf("instance %q: %w", s.name, err)
	}
	pool, conn, err := s.connect(ctx, "")
	if err != nil {
		return err
	}
	defer pool.Close()
	defer conn.Close()
	exists, ours, err := s.ours(ctx, conn, name)
	switch {
	case err != nil:
		return fmt.Errorf("instance %q: look for database %s: %w", s.name, name, err)
	case !exists:
		return nil
	case !ours:
		return fmt.Errorf("instance %q: database %s was not made by dbrig: dbrig does not drop it", s.name, name)
	}
	if _, err := conn.ExecContext(ctx, "DROP DATABASE "+quoteIdent(name)); err != nil {
		return fmt.Errorf("instance %q: drop database %s: %w%s", s.name, name, err, privilegeHint(err, s.admin.User))
	}
	return nil
}

// privilegeHint says what a login lacks when the server denies it.
func privilegeHint(err error, user string) string {
	var me *mysql.MySQLError
	if errors.As(err, &me) && (me.Number == 1044 || me.Number == 1045 || me.Number == 1142 || me.Number == 1227) {
		return fmt.Sprintf(" (the login %s needs CREATE and DROP on the databases dbrig makes, e.g. GRANT ALL ON `dbrig\\_%%`.* TO it)", user)
	}
	return ""
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " ..."
	}
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// secretNameRE matches variables that may hold a secret (a password, a key,
// credentials for state transfer): they are never recorded.
var secretNameRE = regexp.MustCompile(`(?i)pass|key|secret|ssl|tls|auth|cred`)

// NonDefaultSettings are the server's global variables set by its
// configuration, its command line or SET GLOBAL (GLOBAL_VALUE_ORIGIN is not
// COMPILE-TIME or AUTO), without any that may hold a secret: what a run's
// environment records about a server.
func (s *server) NonDefaultSettings(ctx context.Context) (map[string]string, error) {
	pool, conn, err := s.connect(ctx, "")
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	defer conn.Close()
	rows, err := conn.QueryContext(ctx, "SELECT LOWER(VARIABLE_NAME), IFNULL(GLOBAL_VALUE, '') FROM information_schema.SYSTEM_VARIABLES "+
		"WHERE GLOBAL_VALUE_ORIGIN IN ('CONFIG', 'COMMAND-LINE', 'SQL')")
	if err != nil {
		return nil, fmt.Errorf("instance %q: read its settings: %w", s.name, err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var name, value string
		if err := rows.Scan(&name, &value); err != nil {
			return nil, err
		}
		if !secretNameRE.MatchString(name) {
			out[name] = value
		}
	}
	return out, rows.Err()
}

// sessionVariables lists the variables a session may set for itself on
// this server: a session scope and not read-only. Nil when the server has
// no information_schema.SYSTEM_VARIABLES (MySQL).
func (s *server) sessionVariables(ctx context.Context) (map[string]bool, error) {
	pool, conn, err := s.connect(ctx, "")
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	defer conn.Close()
	rows, err := conn.QueryContext(ctx, "SELECT LOWER(VARIABLE_NAME) FROM information_schema.SYSTEM_VARIABLES "+
		"WHERE VARIABLE_SCOPE IN ('SESSION', 'SESSION ONLY') AND READ_ONLY = 'NO'")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, err
		}
		out[name] = true
	}
	return out, rows.Err()
}
