package mariadb

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/dbrig/dbrig/internal/engine"
)

// DefaultPort is MariaDB's TCP port when a URI names none.
const DefaultPort = 3306

// ParseURI reads a user's connection URI for a MariaDB (or MySQL) server:
//
//	mysql://user:password@host:port/database     (mariadb:// alike)
//	mysql://user:password@unix(/run/mysqld/mysqld.sock)/database
//	mysql://user:password@/database?socket=/run/mysqld/mysqld.sock
//
// The user name and password are percent-encoded where they hold
// reserved characters (@ : / ? #). TLS is asked for with go-sql-driver's
// tls=true|false|skip-verify|preferred or MySQL's
// ssl-mode=DISABLED|PREFERRED|REQUIRED|VERIFY_CA|VERIFY_IDENTITY with
// ssl-ca, ssl-cert and ssl-key files; without them dbrig uses TLS when the
// server offers it (PREFERRED, the mysql client's default). Errors never
// contain the password: they show the URI up to its user and say in words
// what is wrong, since in a URI that does not parse a password cannot be
// told from a host or a path.
func ParseURI(uri string) (engine.Conn, error) {
	c, why := parseURI(uri)
	if why != "" {
		return engine.Conn{}, uriError(uri, why)
	}
	return c, nil
}

// uriError says what is wrong with a URI without its password; a generic
// malformation, which may come from a password's characters, wins over the
// step's own reason.
func uriError(uri, why string) error {
	if generic := engine.Malformation(uri); generic != "" {
		why = generic
	}
	return fmt.Errorf("connection URI %s: %s (want mysql://user:password@host:port/database, "+
		"mysql://user:password@unix(/path/to/socket)/database or ...?socket=/path/to/socket; mariadb:// alike)",
		engine.RedactUnparsed(uri), why)
}

// parseURI returns the connection, or why the URI is refused. Each step
// returns "" or its reason, which must never quote the password.
func parseURI(uri string) (engine.Conn, string) {
	if why := engine.Malformation(uri); why != "" {
		return engine.Conn{}, why
	}
	scheme, rest, ok := strings.Cut(uri, "://")
	if !ok || !slices.Contains([]string{"mysql", "mariadb"}, strings.ToLower(scheme)) {
		return engine.Conn{}, "the scheme is not mysql:// or mariadb://"
	}
	p, why := splitURI(rest)
	if why == "" {
		why = p.decode()
	}
	if why != "" {
		return engine.Conn{}, why
	}
	tlsReq, socketParam, why := parseURIParams(p.rawQuery)
	if why != "" {
		return engine.Conn{}, why
	}
	if socketParam != "" {
		if p.socket != "" {
			return engine.Conn{}, "both unix(...) and socket= name a socket"
		}
		p.socket = socketParam
	}
	c, why := p.conn()
	if why != "" {
		return engine.Conn{}, why
	}
	c.TLS = tlsReq
	return c, ""
}

// uriParts are the pieces of a URI after its scheme, raw until decode.
type uriParts struct {
	user, password, db string
	host, socket       string
	path, rawQuery     string
}

// splitURI cuts the user info, the host or unix(socket), the database path
// and the parameters apart. The user info ends at the last "@" before the
// host part, so that an unencoded "@" in a password does not cut it short.
func splitURI(rest string) (uriParts, string) {
	var p uriParts
	var userinfo, hostpart string
	if at := strings.Index(rest, "@unix("); at >= 0 {
		userinfo, hostpart = rest[:at], rest[at+1:]
	} else if at := strings.LastIndex(rest, "@"); at >= 0 {
		userinfo, hostpart = rest[:at], rest[at+1:]
	} else {
		hostpart = rest
	}
	p.user, p.password, _ = strings.Cut(userinfo, ":")
	if inner, ok := strings.CutPrefix(hostpart, "unix("); ok {
		end := strings.Index(inner, ")")
		if end < 0 {
			return p, "unix( has no closing parenthesis"
		}
		p.socket, hostpart = inner[:end], inner[end+1:]
		p.path, p.rawQuery, _ = strings.Cut(hostpart, "?")
		return p, ""
	}
	var hp string
	hp, p.rawQuery, _ = strings.Cut(hostpart, "?")
	if slash := strings.Index(hp, "/"); slash >= 0 {
		p.host, p.path = hp[:slash], hp[slash:]
	} else {
		p.host = hp
	}
	return p, ""
}

// decode undoes the percent-encoding of the user, the password and the
// database.
func (p *uriParts) decode() string {
	var err error
	if p.user, err = url.PathUnescape(p.user); err != nil {
		return "the user name is not valid percent-encoding"
	}
	if p.password, err = url.PathUnescape(p.password); err != nil {
		return "the password is not valid percent-encoding"
	}
	if p.user == "" {
		return "no user name"
	}
	if p.path != "" && !strings.HasPrefix(p.path, "/") {
		return "the database must follow a /"
	}
	db, err := url.PathUnescape(strings.TrimPrefix(p.path, "/"))
	if err != nil || strings.Contains(db, "/") {
		return "the database name is not valid (a '/' or a '%' not followed by two hexadecimal digits)"
	}
	p.db = db
	return ""
}

// parseURIParams reads the parameters after '?': the TLS ones and socket=.
func parseURIParams(rawQuery string) (tlsReq engine.TLS, socket, why string) {
	query, err := url.ParseQuery(rawQuery)
	if err != nil {
		return engine.TLS{}, "", "the parameters after '?' are not key=value pairs"
	}
	for k := range query {
		if k != "socket" && tlsParam(k) == "" {
			return engine.TLS{}, "", unknownParameter(k)
		}
	}
	if tlsReq, err = parseTLS(query); err != nil {
		return engine.TLS{}, "", err.Error()
	}
	return tlsReq, query.Get("socket"), ""
}

// conn makes the connection to the socket or to host[:port].
func (p *uriParts) conn() (engine.Conn, string) {
	if p.socket != "" {
		if !filepath.IsAbs(p.socket) {
			return engine.Conn{}, "the socket is not an absolute path"
		}
		if p.host != "" {
			return engine.Conn{}, "both a host and a socket are given"
		}
		return engine.NewConn(Name, filepath.Clean(p.socket), 0, p.user, p.db, p.password), ""
	}
	if p.host == "" {
		return engine.Conn{}, "no host or socket"
	}
	host, port, why := splitHostPort(p.host)
	if why != "" {
		return engine.Conn{}, why
	}
	return engine.NewConn(Name, host, port, p.user, p.db, p.password), ""
}

// splitHostPort takes the port from host:port, DefaultPort without one, and
// the brackets from an IPv6 address.
func splitHostPort(hostport string) (host string, port int, why string) {
	if h, p, err := net.SplitHostPort(hostport); err == nil {
		n, err := strconv.Atoi(p)
		if err != nil || n <= 0 || n > 65535 {
			return "", 0, "the port is not a number from 1 to 65535"
		}
		return h, n, ""
	}
	if strings.HasPrefix(hostport, "[") && strings.HasSuffix(hostport, "]") {
		return hostport[1 : len(hostport)-1], DefaultPort, ""
	}
	if strings.Contains(hostport, ":") {
		return "", 0, "the host holds a ':' that does not start a port (an IPv6 address is written [::1])"
	}
	return hostport, DefaultPort, ""
}

// unknownParameter names a parameter dbrig does not read only when it is
// a known parameter name: in a malformed URI any other key may be a piece
// of a password.
func unknownParameter(key string) string {
	if engine.IsConnKeyword(key) {
		return fmt.Sprintf("unknown parameter %q (dbrig reads socket=)", key)
	}
	return "an unknown parameter (dbrig reads socket=)"
}
