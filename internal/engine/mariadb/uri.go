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
// contain the password.
func ParseURI(uri string) (engine.Conn, error) {
	fail := func(format string, args ...any) (engine.Conn, error) {
		return engine.Conn{}, fmt.Errorf("connection URI %s: %s (want mysql://user:password@host:port/database, "+
			"mysql://user:password@unix(/path/to/socket)/database or ...?socket=/path/to/socket; mariadb:// alike)",
			engine.RedactURI(uri), fmt.Sprintf(format, args...))
	}
	scheme, rest, ok := strings.Cut(uri, "://")
	if !ok || !slices.Contains([]string{"mysql", "mariadb"}, strings.ToLower(scheme)) {
		return fail("the scheme is not mysql:// or mariadb://")
	}
	// The user info ends at the last "@" before the host part, so that an
	// unencoded "@" in a password does not cut it short.
	var userinfo, hostpart string
	if at := strings.Index(rest, "@unix("); at >= 0 {
		userinfo, hostpart = rest[:at], rest[at+1:]
	} else if at := strings.LastIndex(rest, "@"); at >= 0 {
		userinfo, hostpart = rest[:at], rest[at+1:]
	} else {
		hostpart = rest
	}
	var host, socket, path, rawQuery string
	if inner, ok := strings.CutPrefix(hostpart, "unix("); ok {
		end := strings.Index(inner, ")")
		if end < 0 {
			return fail("unix( has no closing parenthesis")
		}
		socket, hostpart = inner[:end], inner[end+1:]
		path, rawQuery, _ = strings.Cut(hostpart, "?")
	} else {
		var hp string
		hp, rawQuery, _ = strings.Cut(hostpart, "?")
		if slash := strings.Index(hp, "/"); slash >= 0 {
			host, path = hp[:slash], hp[slash:]
		} else {
			host = hp
		}
	}
	user, password, _ := strings.Cut(userinfo, ":")
	var err error
	if user, err = url.PathUnescape(user); err != nil {
		return fail("the user name is not valid percent-encoding")
	}
	if password, err = url.PathUnescape(password); err != nil {
		return fail("the password is not valid percent-encoding")
	}
	if user == "" {
		return fail("no user name")
	}
	if path != "" && !strings.HasPrefix(path, "/") {
		return fail("the database must follow a /")
	}
	db, err := url.PathUnescape(strings.TrimPrefix(path, "/"))
	if err != nil || strings.Contains(db, "/") {
		return fail("the database name %q is not valid", strings.TrimPrefix(path, "/"))
	}
	query, err := url.ParseQuery(rawQuery)
	if err != nil {
		return fail("the parameters are not valid: %v", err)
	}
	for k := range query {
		if k != "socket" && tlsParam(k) == "" {
			return fail("unknown parameter %q (dbrig reads socket=)", k)
		}
	}
	tlsReq, err := parseTLS(query)
	if err != nil {
		return fail("%v", err)
	}
	if s := query.Get("socket"); s != "" {
		if socket != "" {
			return fail("both unix(...) and socket= name a socket")
		}
		socket = s
	}
	if socket != "" {
		if !filepath.IsAbs(socket) {
			return fail("the socket %q is not an absolute path", socket)
		}
		if host != "" {
			return fail("both a host and a socket are given")
		}
		c := engine.NewConn(EngineName, filepath.Clean(socket), 0, user, db, password)
		c.TLS = tlsReq
		return c, nil
	}
	if host == "" {
		return fail("no host or socket")
	}
	port := DefaultPort
	if h, p, err := net.SplitHostPort(host); err == nil {
		n, err := strconv.Atoi(p)
		if err != nil || n <= 0 || n > 65535 {
			return fail("port %q is not a number from 1 to 65535", p)
		}
		host, port = h, n
	} else if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	} else if strings.Contains(host, ":") {
		return fail("host %q: %v", host, err)
	}
	c := engine.NewConn(EngineName, host, port, user, db, password)
	c.TLS = tlsReq
	return c, nil
}
