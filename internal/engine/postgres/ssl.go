package postgres

import (
	"crypto/tls"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dbrig/dbrig/internal/engine"
)

// sslModes are libpq's values of sslmode.
var sslModes = []string{"disable", "allow", "prefer", "require", "verify-ca", "verify-full"}

// sslParams are the TLS parameters dbrig carries from a user's connection
// string to every session and child program, with the environment
// variables libpq reads when the string has none.
var sslParams = []struct{ key, env string }{
	{"sslmode", "PGSSLMODE"},
	{"sslrootcert", "PGSSLROOTCERT"},
	{"sslcert", "PGSSLCERT"},
	{"sslkey", "PGSSLKEY"},
}

// tlsRequest reads the TLS a user asked for the way libpq does: the
// connection string first, then PGSSLMODE and the other variables, then
// libpq's defaults (sslmode prefer; ~/.postgresql/root.crt,
// postgresql.crt and postgresql.key when they exist), so that dbrig's own
// sessions, pg_dump's and a server's subscription all do what psql would
// with the same string.
func tlsRequest(connString string) (engine.TLS, error) {
	given := sslSettings(connString)
	value := func(key, env string) string {
		if v, ok := given[key]; ok {
			return v
		}
		return os.Getenv(env)
	}
	vals := map[string]string{}
	for _, p := range sslParams {
		vals[p.key] = value(p.key, p.env)
	}
	t := engine.TLS{Mode: vals["sslmode"], RootCert: vals["sslrootcert"], Cert: vals["sslcert"], Key: vals["sslkey"]}
	if t.Mode == "" {
		t.Mode = "prefer"
	}
	if !slices.Contains(sslModes, t.Mode) {
		return engine.TLS{}, fmt.Errorf("sslmode %q is not one of %s", t.Mode, strings.Join(sslModes, ", "))
	}
	if home, err := os.UserHomeDir(); err == nil {
		dir := filepath.Join(home, ".postgresql")
		t.RootCert = orExisting(t.RootCert, filepath.Join(dir, "root.crt"))
		t.Cert = orExisting(t.Cert, filepath.Join(dir, "postgresql.crt"))
		if t.Cert != "" {
			t.Key = orExisting(t.Key, filepath.Join(dir, "postgresql.key"))
		}
	}
	return t, nil
}

// orExisting is v, or libpq's default file when v is empty and the file
// exists.
func orExisting(v, def string) string {
	if v != "" {
		return v
	}
	if _, err := os.Stat(def); err == nil {
		return def
	}
	return ""
}

// sslSettings are the ssl* parameters a connection string (a URI or
// keyword/value, already accepted by pgx) sets, decoded as libpq does.
func sslSettings(s string) map[string]string {
	all := map[string]string{}
	if rest, ok := cutScheme(s); ok {
		// The user info ends at the first '@' before any '/', as in libpq.
		if i := strings.IndexAny(rest, "@/"); i >= 0 && rest[i] == '@' {
			rest = rest[i+1:]
		}
		_, query, _ := strings.Cut(rest, "?")
		for pair := range strings.SplitSeq(query, "&") {
			k, v, _ := strings.Cut(pair, "=")
			k, kerr := url.PathUnescape(strings.TrimSpace(k))
			v, verr := url.PathUnescape(strings.TrimSpace(v))
			if kerr == nil && verr == nil {
				all[k] = v
			}
		}
		if all["ssl"] == "true" {
			if _, explicit := all["sslmode"]; !explicit {
				all["sslmode"] = "require" // pgx's and JDBC's alias
			}
		}
	} else {
		all = keywordValues(s)
	}
	out := map[string]string{}
	for _, p := range sslParams {
		if v, ok := all[p.key]; ok {
			out[p.key] = v
		}
	}
	return out
}

func cutScheme(s string) (string, bool) {
	for _, p := range []string{"postgresql://", "postgres://"} {
		if rest, ok := strings.CutPrefix(s, p); ok {
			return rest, true
		}
	}
	return "", false
}

// keywordValues reads libpq's keyword/value form: key = value pairs
// separated by spaces, a value in single quotes when it holds spaces, a
// backslash taking the next character literally.
func keywordValues(s string) map[string]string {
	out := map[string]string{}
	isSpace := func(c byte) bool { return strings.IndexByte(" \t\n\r\v\f", c) >= 0 }
	for {
		s = strings.TrimLeft(s, " \t\n\r\v\f")
		eq := strings.IndexByte(s, '=')
		if eq < 0 {
			return out
		}
		key := strings.TrimSpace(s[:eq])
		s = strings.TrimLeft(s[eq+1:], " \t\n\r\v\f")
		var val strings.Builder
		quoted := strings.HasPrefix(s, "'")
		if quoted {
			s = s[1:]
		}
		i := 0
		for ; i < len(s); i++ {
			c := s[i]
			if quoted && c == '\'' || !quoted && isSpace(c) {
				break
			}
			if c == '\\' && i+1 < len(s) {
				i++
				c = s[i]
			}
			val.WriteByte(c)
		}
		if quoted && i < len(s) {
			i++ // the closing quote
		}
		s = s[i:]
		out[key] = val.String()
	}
}

// withServerName makes every TLS attempt of cfg check the certificate
// against (and send as SNI) the server's own name when a proxy stands in
// front of it: pgx takes both from the host it dials, here the proxy's
// 127.0.0.1, which the server's certificate does not name.
func (c ConnInfo) withServerName(cfg *pgconn.Config) {
	if c.TLS.ServerName == "" || c.IsUnix() {
		return
	}
	set := func(t *tls.Config) *tls.Config {
		if t == nil {
			return nil
		}
		t = t.Clone()
		t.ServerName = c.TLS.ServerName
		return t
	}
	cfg.TLSConfig = set(cfg.TLSConfig)
	for _, fb := range cfg.Fallbacks {
		fb.TLSConfig = set(fb.TLSConfig)
	}
}

// PgConnConfig is the pgconn configuration of the login, for connections
// that speak the protocol below pgx (replication, COPY streams).
func (c ConnInfo) PgConnConfig() (*pgconn.Config, error) {
	cfg, err := pgconn.ParseConfig(c.URI())
	if err != nil {
		return nil, fmt.Errorf("connection to %s: %w", c, err)
	}
	c.withServerName(cfg)
	return cfg, nil
}
