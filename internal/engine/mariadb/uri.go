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
	fail := func(why string) (engine.Conn, error) {
		if generic := engine.Malformation(uri); generic != "" {
			why = generic
		}
		return engine.Conn{}, fmt.Errorf("connection URI %s: %s (want mysql://user:password@host:port/database, "+
			"mysql://user:password@unix(/path/to/socket)/database or ...?socket=/path/to/socket; mariadb:// alike)",
			engine.RedactUnparsed(uri), why)
	}
	if engine.Malformation(uri) != "" {
		return fail("")
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
		return fail("the database name is not valid (a '/' or a '%' not followed by two hexadecimal digits)")
	}
	query, err := url.ParseQuery(rawQuery)
	if err != nil {
		return fail("the parameters after '?' are not key=value pairs")
	}
	for k := range query {
		if k != "socket" && tlsParam(k) == "" {
			return fail(unknownParameter(k))
		}
	}
	tlsReq, err := parseTLS(query)
	if err != nil {
		return fail(err.Error())
	}
	if s := query.Get("socket"); s != "" {
		if socket != "" {
			return fail("both unix(...) and socket= name a socket")
		}
		socket = s
	}
	if socket != "" {
		if !filepath.IsAbs(socket) {
			return fail("the socket is not an absolute path")
		}
		if host != "" {
			return fail("both a host and a socket are given")
		}
		c := engine.NewConn(Name, filepath.Clean(socket), 0, user, db, password)
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
			return fail("the port is not a number from 1 to 65535")
		}
		host, port = h, n
	} else if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	} else if strings.Contains(host, ":") {
		return fail("the host holds a ':' that does not start a port (an IPv6 address is written [::1])")
	}
	c := engine.NewConn(Name, host, port, user, db, password)
	c.TLS = tlsReq
	return c, nil
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
