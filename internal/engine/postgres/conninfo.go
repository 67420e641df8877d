package postgres

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
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
// Its errors never contain the password, whether the string parses or not:
// one that does not parse is shown only up to its user, and what is wrong
// with it is said in words.
func ParseConnInfo(uri string) (ConnInfo, error) {
	cfg, err := pgx.ParseConfig(uri)
	if why := engine.Malformation(uri); err != nil || why != "" {
		// pgx forgives some mistakes (spaces around a URI's parts, an
		// empty string) that leave a password where a database name or a
		// user is read: those are refused too.
		return ConnInfo{}, fmt.Errorf("connection string %s: %s; want postgres://user:password@host:port/database or host=... user=... dbname=...",
			engine.RedactUnparsed(uri), parseProblem(err, uri))
	}
	if strings.Contains(cfg.Host, "@") {
		// libpq and pgx end the password at the first '@': the rest of it
		// would be taken for the host.
		return ConnInfo{}, fmt.Errorf("connection string %s: the password holds '@': write it as %%40", engine.RedactUnparsed(uri))
	}
	for k := range cfg.RuntimeParams {
		if !settingName.MatchString(k) {
			// pgx takes any other key for a session setting, which the
			// server would name in its error: such a key is most often the
			// end of an unquoted password that held a space.
			return ConnInfo{}, fmt.Errorf("connection string %s: a key that is not a setting name (quote a value that holds a space: password='a b')", engine.RedactUnparsed(uri))
		}
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

// settingName is the form of a server setting's name (work_mem,
// DateStyle, an extension's auto_explain.log_min_duration).
var settingName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_$]*(\.[A-Za-z_][A-Za-z0-9_$]*)*$`)

// pgxProblems translate pgx's parse errors, which quote the string or
// parts of it (a key, a value, a host that may be the end of a password),
// into words: the first whose text the error holds. Nothing of pgx's
// message is shown.
var pgxProblems = []struct{ says, words string }{
	{"forbidden NUL", "a NUL byte in the string"},
	{"unexpected spaces", "a space in the string (a space in a password is written %20)"},
	{"percent-encoded", "invalid percent-encoding: a '%' not followed by two hexadecimal digits, or %00 (a '%' in a password is written %25)"},
	{`matching "]"`, "an IPv6 address has no closing ']'"},
	{"IPv6 host address may not be empty", "an IPv6 address between [] is empty"},
	{`(expected ":" or "/")`, "something other than ':' or '/' after an IPv6 address's ']'"},
	{`separator "=" in URI query parameter`, "a parameter after '?' is not one key=value"},
	{"unterminated quoted string", "a quoted value has no closing quote (a quote inside a value is written \\')"},
	{`missing "=" after`, "a word that is not key=value (quote a value that holds a space: password='a b')"},
	{"invalid keyword/value", "neither a URI starting with postgres:// or postgresql:// nor key=value pairs"},
	{"port numbers to", "the hosts and the ports do not pair up"},
	{"invalid port", "the port is not a number from 1 to 65535"},
	{"failed to configure TLS", "the TLS settings (sslmode, sslrootcert, sslcert, sslkey, sslpassword) are not valid"},
	{"failed to read service", "the service, or the service file that names it, cannot be read"},
}

// pgxCheckedKeys are the settings whose values pgx checks when it parses.
var pgxCheckedKeys = []string{"connect_timeout", "sslcertmode", "target_session_attrs", "min_protocol_version",
	"max_protocol_version", "channel_binding", "require_auth"}

// parseProblem says in words why pgx could not parse uri.
func parseProblem(err error, uri string) string {
	if why := engine.Malformation(uri); why != "" {
		return why
	}
	msg := err.Error()
	if strings.Contains(msg, "invalid port") && slashBeforeAt(uri) {
		return "a '/' before the '@' (a '/' in a password is written %2F)"
	}
	for _, p := range pgxProblems {
		if strings.Contains(msg, p.says) {
			return p.words
		}
	}
	for _, k := range pgxCheckedKeys {
		if strings.Contains(msg, k) {
			return "the value of " + k + " is not valid"
		}
	}
	return "not a connection string PostgreSQL reads"
}

// slashBeforeAt reports whether a URI's user information ends at a '/'
// before the '@', as it does for a password holding '/': pgx then reads
// what follows the user's ':' as a port.
func slashBeforeAt(uri string) bool {
	_, rest, ok := strings.Cut(uri, "://")
	slash, at := strings.IndexByte(rest, '/'), strings.LastIndexByte(rest, '@')
	return ok && slash >= 0 && at > slash
}

// Sealed is a ConnInfo with its password in an exported field, to hand a
// login to a child process over a pipe. Never log, print or store it.
type Sealed struct{ engine.Sealed }

// Seal exposes the password for a child process's pipe.
func (c ConnInfo) Seal() Sealed { return Sealed{c.Conn.Seal()} }

// Open turns a sealed login back into a ConnInfo.
func (s Sealed) Open() ConnInfo { return ConnInfoOf(s.Sealed.Open()) }
