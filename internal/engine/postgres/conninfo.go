package postgres

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

// ConnInfo says how to reach a database. The password is private so that
// it cannot end up in a log line, a result or a report by accident: String
// redacts it; only URI (for drivers) and Env (for child programs) carry it.
type ConnInfo struct {
	// Host is an IP address or, when it starts with "/", a unix socket
	// directory.
	Host     string
	Port     int
	User     string
	Database string
	password string
}

// URI returns the connection URI including the password, for drivers only.
func (c ConnInfo) URI() string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword(c.User, c.password), Path: "/" + c.Database}
	q := url.Values{}
	q.Set("sslmode", "disable")
	if c.IsUnix() {
		u.Host = ""
		q.Set("host", c.Host)
		q.Set("port", strconv.Itoa(c.Port))
	} else {
		u.Host = net.JoinHostPort(c.Host, strconv.Itoa(c.Port))
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// String describes the endpoint without the password.
func (c ConnInfo) String() string {
	if c.IsUnix() {
		return fmt.Sprintf("postgres://%s@[unix:%s/.s.PGSQL.%d]/%s", c.User, c.Host, c.Port, c.Database)
	}
	return fmt.Sprintf("postgres://%s@%s/%s", c.User, net.JoinHostPort(c.Host, strconv.Itoa(c.Port)), c.Database)
}

// IsUnix reports whether the connection goes through a unix socket.
func (c ConnInfo) IsUnix() bool { return strings.HasPrefix(c.Host, "/") }

// SocketPath is the unix socket's path (only meaningful when IsUnix).
func (c ConnInfo) SocketPath() string {
	return fmt.Sprintf("%s/.s.PGSQL.%d", c.Host, c.Port)
}

// Addr is "host:port" for TCP, or "unix:<socket path>" for a unix socket: the
// form the link's upstream takes.
func (c ConnInfo) Addr() string {
	if c.IsUnix() {
		return "unix:" + c.SocketPath()
	}
	return net.JoinHostPort(c.Host, strconv.Itoa(c.Port))
}

// WithDatabase returns the same endpoint for another database.
func (c ConnInfo) WithDatabase(db string) ConnInfo { c.Database = db; return c }

// Via returns the same login through another TCP address, e.g. a link proxy
// listening in front of the server.
func (c ConnInfo) Via(addr string) (ConnInfo, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return ConnInfo{}, fmt.Errorf("address %q: %w", addr, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return ConnInfo{}, fmt.Errorf("address %q: port: %w", addr, err)
	}
	c.Host, c.Port = host, p
	return c, nil
}

// Env is the libpq environment for child programs (psql, pgbench, pg_dump),
// which keeps the password out of their argument lists.
func (c ConnInfo) Env() []string {
	return []string{
		"PGHOST=" + c.Host,
		"PGPORT=" + strconv.Itoa(c.Port),
		"PGUSER=" + c.User,
		"PGDATABASE=" + c.Database,
		"PGPASSWORD=" + c.password,
		"PGSSLMODE=disable",
	}
}

// Keywords returns a libpq keyword/value string with the password, for
// servers that connect to other servers (CREATE SUBSCRIPTION, postgres_fdw).
func (c ConnInfo) Keywords() string {
	q := func(s string) string {
		return "'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), `'`, `\'`) + "'"
	}
	return fmt.Sprintf("host=%s port=%d user=%s password=%s dbname=%s sslmode=disable",
		q(c.Host), c.Port, q(c.User), q(c.password), q(c.Database))
}

// Password returns the login's password, for code that must hand it to a
// server (a user mapping, a subscription). Never print it.
func (c ConnInfo) Password() string { return c.password }

// ConnConfig is the pgx configuration of the login.
func (c ConnInfo) ConnConfig() (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(c.URI())
	if err != nil {
		return nil, fmt.Errorf("connection to %s: %w", c, err)
	}
	return cfg, nil
}

// ParseConnInfo reads a user's URI or keyword/value string into a ConnInfo.
func ParseConnInfo(uri string) (ConnInfo, error) {
	cfg, err := pgx.ParseConfig(uri)
	if err != nil {
		// pgx's own message already hides the password.
		return ConnInfo{}, fmt.Errorf("connection string: %w", err)
	}
	return ConnInfo{Host: cfg.Host, Port: int(cfg.Port), User: cfg.User, Database: cfg.Database, password: cfg.Password}, nil
}

// Sealed is a ConnInfo with its password in an exported field, to hand a
// login to a child process over a pipe. Never log, print or store it.
type Sealed struct {
	Host     string `json:"host"`
	Port     int    `json:"port"`
	User     string `json:"user"`
	Database string `json:"database"`
	Password string `json:"password"`
}

// Seal exposes the password for a child process's pipe.
func (c ConnInfo) Seal() Sealed {
	return Sealed{Host: c.Host, Port: c.Port, User: c.User, Database: c.Database, Password: c.password}
}

// Open turns a sealed login back into a ConnInfo.
func (s Sealed) Open() ConnInfo {
	return ConnInfo{Host: s.Host, Port: s.Port, User: s.User, Database: s.Database, password: s.Password}
}
