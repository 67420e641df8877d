package postgres

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/dbrig/dbrig/internal/engine"
)

// ConnInfo is a PostgreSQL login: the engine-neutral [engine.Conn] with
// what PostgreSQL's clients need of it (a pgx configuration, a libpq URI,
// keyword/value string and environment). The password stays private to
// engine.Conn: String redacts it.
type ConnInfo struct{ engine.Conn }

// ConnInfoOf views a neutral login as PostgreSQL's.
func ConnInfoOf(c engine.Conn) ConnInfo {
	c.Engine = Name
	return ConnInfo{c}
}

// URI returns the connection URI including the password, for pgx only:
// a proxy's ServerName is not in it (see PgConnConfig and ConnConfig).
func (c ConnInfo) URI() string {
	u := url.URL{Scheme: "postgres", User: url.UserPassword(c.User, c.Password()), Path: "/" + c.Database}
	q := url.Values{}
	for k, v := range c.sslParams() {
		q.Set(k, v)
	}
	if c.IsUnix() {
		u.Host = ""
		q.Set("host", c.Host)
		q.Set("port", strconv.Itoa(c.Port))
	} else {
		u.Host = net.JoinHostPort(c.Host, strconv.Itoa(c.Port))
	}
	if o := c.options(); o != "" {
		q.Set("options", o)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// sslParams are libpq's TLS parameters of the login: sslmode=disable for a
// server dbrig started (plain loopback), else what the user asked for.
// sslmode is always written out, so that a PGSSLMODE where the login is
// read (a child program, a server) cannot change it.
func (c ConnInfo) sslParams() map[string]string {
	mode := c.TLS.Mode
	if mode == "" {
		mode = "disable"
	}
	p := map[string]string{"sslmode": mode}
	for k, v := range map[string]string{"sslrootcert": c.TLS.RootCert, "sslcert": c.TLS.Cert, "sslkey": c.TLS.Key} {
		if v != "" {
			p[k] = v
		}
	}
	return p
}

// viaProxy reports whether the login goes through a proxy at an IP
// address in front of a server named ServerName: libpq then connects to
// hostaddr and checks the certificate against host.
func (c ConnInfo) viaProxy() bool {
	return c.TLS.ServerName != "" && !c.IsUnix() && net.ParseIP(c.Host) != nil
}

// options is libpq's "options" value: the session settings and the
// schema as -c switches, for programs that take a URI or PGOPTIONS.
func (c ConnInfo) options() string {
	var parts []string
	session := c.Session()
	for _, k := range c.SessionKeys() {
		parts = append(parts, "-c "+k+"="+escapeOption(session[k]))
	}
	if c.Schema != "" {
		parts = append(parts, "-c search_path="+escapeOption(c.Schema))
	}
	return strings.Join(parts, " ")
}

func escapeOption(v string) string {
	return strings.ReplaceAll(strings.ReplaceAll(v, `\`, `\\`), " ", `\ `)
}

// WithDatabase returns the same endpoint for another database.
func (c ConnInfo) WithDatabase(db string) ConnInfo { c.Database = db; return c }

// Via returns the same login through another TCP address, e.g. a link
// proxy listening in front of the server.
func (c ConnInfo) Via(addr string) (ConnInfo, error) {
	n, err := c.Conn.Via(addr)
	return ConnInfo{n}, err
}

// Env is the libpq environment for child programs (psql, pgbench, pg_dump),
// which keeps the password out of their argument lists, with the login's
// TLS (PGSSLMODE, PGSSLROOTCERT, PGSSLCERT, PGSSLKEY).
func (c ConnInfo) Env() []string {
	host := "PGHOST=" + c.Host
	if c.viaProxy() {
		host = "PGHOST=" + c.TLS.ServerName
	}
	env := []string{
		host,
		"PGPORT=" + strconv.Itoa(c.Port),
		"PGUSER=" + c.User,
		"PGDATABASE=" + c.Database,
		"PGPASSWORD=" + c.Password(),
	}
	if c.viaProxy() {
		env = append(env, "PGHOSTADDR="+c.Host)
	}
	ssl := c.sslParams()
	for _, p := range sslParams {
		if v, ok := ssl[p.key]; ok {
			env = append(env, p.env+"="+v)
		}
	}
	if o := c.options(); o != "" {
		env = append(env, "PGOPTIONS="+o)
	}
	return env
}

// Keywords returns a libpq keyword/value string with the password, for
// servers that connect to other servers (CREATE SUBSCRIPTION, postgres_fdw).
// Its TLS files are read by that server, on its host and as its account.
func (c ConnInfo) Keywords() string {
	q := func(s string) string {
		return "'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), `'`, `\'`) + "'"
	}
	host := q(c.Host)
	if c.viaProxy() {
		host = q(c.TLS.ServerName) + " hostaddr=" + q(c.Host)
	}
	s := fmt.Sprintf("host=%s port=%d user=%s password=%s dbname=%s",
		host, c.Port, q(c.User), q(c.Password()), q(c.Database))
	ssl := c.sslParams()
	for _, p := range sslParams {
		if v, ok := ssl[p.key]; ok {
			s += " " + p.key + "=" + q(v)
		}
	}
	return s
}

// ConnConfig is the pgx configuration of the login, with its session
// settings and schema as startup parameters.
func (c ConnInfo) ConnConfig() (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(c.URI())
	if err != nil {
		return nil, fmt.Errorf("connection to %s: %w", c, err)
	}
	c.withServerName(&cfg.Config)
	delete(cfg.RuntimeParams, "options")
	for k, v := range c.Session() {
		cfg.RuntimeParams[k] = v
	}
	if c.Schema != "" {
		cfg.RuntimeParams["search_path"] = c.Schema
	}
	return cfg, nil
}

// ParseConnInfo reads a user's URI or keyword/value string into a ConnInfo.
// Its errors never contain the password, whether the string parses or not.
func ParseConnInfo(uri string) (ConnInfo, error) {
	cfg, err := pgx.ParseConfig(uri)
	if err != nil {
		return ConnInfo{}, fmt.Errorf("connection string %s: %s; want postgres://user:password@host:port/database or host=... user=... dbname=...",
			engine.RedactURI(uri), redactedCause(err, uri))
	}
	if strings.Contains(cfg.Host, "@") {
		// libpq and pgx end the password at the first '@': the rest of it
		// would be taken for the host.
		return ConnInfo{}, fmt.Errorf("connection string %s: the password holds '@': write it as %%40", engine.RedactURI(uri))
	}
	ci := ConnInfoOf(engine.NewConn(Name, cfg.Host, int(cfg.Port), cfg.User, cfg.Database, cfg.Password))
	if ci.TLS, err = tlsRequest(uri); err != nil {
		return ConnInfo{}, fmt.Errorf("connection string %s: %w", engine.RedactURI(uri), err)
	}
	// search_path and other startup settings the user put in the URI
	// travel on every session.
	session := map[string]string{}
	for k, v := range cfg.RuntimeParams {
		if k != "application_name" {
			session[k] = v
		}
	}
	ci.Conn = ci.WithSession(session)
	return ci, nil
}

// redactedCause is pgx's parse error without anything of the string that
// could be a password.
func redactedCause(err error, uri string) string {
	msg := err.Error()
	// pgx quotes the string first ("cannot parse `...`: why"): keep why.
	if strings.HasPrefix(msg, "cannot parse `") {
		if i := strings.Index(msg, "`: "); i >= 0 {
			msg = msg[i+3:]
		}
	}
	for _, pw := range engine.Passwords(uri) {
		msg = strings.ReplaceAll(msg, pw, "xxxxx")
	}
	if u, perr := url.Parse(uri); perr == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok && pw != "" {
			msg = strings.ReplaceAll(msg, pw, "xxxxx")
		}
	}
	// pgx quotes the whole string in some messages; never echo it.
	msg = strings.ReplaceAll(msg, uri, engine.RedactURI(uri))
	return msg
}

// Sealed is a ConnInfo with its password in an exported field, to hand a
// login to a child process over a pipe. Never log, print or store it.
type Sealed struct{ engine.Sealed }

// Seal exposes the password for a child process's pipe.
func (c ConnInfo) Seal() Sealed { return Sealed{c.Conn.Seal()} }

// Open turns a sealed login back into a ConnInfo.
func (s Sealed) Open() ConnInfo { return ConnInfoOf(s.Sealed.Open()) }
