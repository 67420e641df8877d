package engine

import (
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
)

// Conn says how to reach one database of one server, whatever its engine.
// The password is private so that it cannot end up in a log line, a result
// or a report by accident: String redacts it; only the engines' driver
// adapters (postgres.ConnConfig, mariadb.Config) and Seal read it.
type Conn struct {
	// Engine is the engine's name ("postgres", "mariadb").
	Engine string
	// Host is an IP address or host name or, when it starts with "/", a
	// unix socket: PostgreSQL's socket directory, MariaDB's socket file.
	Host     string
	Port     int
	User     string
	Database string
	// Schema, when set, is where the workload's objects live inside
	// Database: a target whose login may not create databases gets a schema
	// of dbrig's own instead.
	Schema string
	// TLS is the encryption the user asked for; zero for a server dbrig
	// started.
	TLS TLS
	// session holds server settings applied to each session this login
	// opens (a study's session-level settings on a server dbrig may not
	// reconfigure), encoded so that a Conn stays comparable with ==.
	session  string
	password string
}

// NewConn makes a login with a password.
func NewConn(engineName, host string, port int, user, database, password string) Conn {
	return Conn{Engine: engineName, Host: host, Port: port, User: user, Database: database, password: password}
}

// Password returns the login's password, for code that must hand it to a
// driver or a server (a user mapping, a subscription). Never print it.
func (c Conn) Password() string { return c.password }

// WithPassword returns the same login with another password.
func (c Conn) WithPassword(pw string) Conn { c.password = pw; return c }

// IsUnix reports whether the connection goes through a unix socket.
func (c Conn) IsUnix() bool { return strings.HasPrefix(c.Host, "/") }

// SocketPath is the unix socket's path (only meaningful when IsUnix).
func (c Conn) SocketPath() string {
	if c.Engine == "postgres" {
		return fmt.Sprintf("%s/.s.PGSQL.%d", c.Host, c.Port)
	}
	return c.Host
}

// Addr is "host:port" for TCP, or "unix:<socket path>" for a unix socket:
// the form the link's upstream takes.
func (c Conn) Addr() string {
	if c.IsUnix() {
		return "unix:" + c.SocketPath()
	}
	return net.JoinHostPort(c.Host, strconv.Itoa(c.Port))
}

// String describes the endpoint without the password.
func (c Conn) String() string {
	scheme := c.Engine
	if scheme == "" {
		scheme = "db"
	}
	where := net.JoinHostPort(c.Host, strconv.Itoa(c.Port))
	if c.IsUnix() {
		where = "[unix:" + c.SocketPath() + "]"
	}
	s := fmt.Sprintf("%s://%s@%s/%s", scheme, c.User, where, c.Database)
	if c.Schema != "" {
		s += "?schema=" + c.Schema
	}
	return s
}

// WithDatabase returns the same endpoint for another database.
func (c Conn) WithDatabase(db string) Conn { c.Database = db; return c }

// WithSession returns the login with session settings added.
func (c Conn) WithSession(settings map[string]string) Conn {
	if len(settings) == 0 {
		return c
	}
	merged := c.Session()
	maps.Copy(merged, settings)
	c.session = encodeSession(merged)
	return c
}

// Session returns the session settings (a copy).
func (c Conn) Session() map[string]string {
	out := map[string]string{}
	if c.session == "" {
		return out
	}
	for _, kv := range strings.Split(c.session, "\x00") {
		k, v, _ := strings.Cut(kv, "=")
		out[k] = v
	}
	return out
}

func encodeSession(m map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, "\x00")
}

// Via returns the same login through another TCP address, e.g. a link
// proxy listening in front of the server. The proxy relays bytes, so TLS
// stays end to end: the server's certificate is still checked against the
// server's own name, not the proxy's address.
func (c Conn) Via(addr string) (Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return Conn{}, fmt.Errorf("address %q: %w", addr, err)
	}
	p, err := strconv.Atoi(port)
	if err != nil {
		return Conn{}, fmt.Errorf("address %q: port: %w", addr, err)
	}
	if c.TLS.Encrypts() && c.TLS.ServerName == "" && !c.IsUnix() {
		c.TLS.ServerName = c.Host
	}
	c.Host, c.Port = host, p
	return c, nil
}

// Sealed is a Conn with its password in an exported field, to hand a login
// to a child process over a pipe. Never log, print or store it.
type Sealed struct {
	Engine   string            `json:"engine"`
	Host     string            `json:"host"`
	Port     int               `json:"port"`
	User     string            `json:"user"`
	Database string            `json:"database"`
	Schema   string            `json:"schema,omitempty"`
	Session  map[string]string `json:"session,omitempty"`
	TLS      TLS               `json:"tls"`
	Password string            `json:"password"`
}

// Seal exposes the password for a child process's pipe.
func (c Conn) Seal() Sealed {
	return Sealed{Engine: c.Engine, Host: c.Host, Port: c.Port, User: c.User, Database: c.Database,
		Schema: c.Schema, Session: c.Session(), TLS: c.TLS, Password: c.password}
}

// Open turns a sealed login back into a Conn.
func (s Sealed) Open() Conn {
	return Conn{Engine: s.Engine, Host: s.Host, Port: s.Port, User: s.User, Database: s.Database,
		Schema: s.Schema, TLS: s.TLS, session: encodeSession(s.Session), password: s.Password}
}

// SessionKeys lists the session settings in a stable order.
func (c Conn) SessionKeys() []string { return slices.Sorted(maps.Keys(c.Session())) }
