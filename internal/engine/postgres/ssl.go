package postgres

import (
	"crypto/tls"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/jackc/pgservicefile"
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

// tlsRequest reads the TLS a user asked for the way libpq and pgx do: the
// connection string first, then the service it names (service=,
// PGSERVICE), then PGSSLMODE and the other variables, then the defaults
// (sslmode prefer; ~/.postgresql/root.crt, and postgresql.crt with
// postgresql.key, when they exist), so that dbrig's own sessions, pg_dump's
// and a server's subscription all do what psql would with the same string.
func tlsRequest(connString string) (engine.TLS, error) {
	given := connStringSettings(connString)
	fromService, err := serviceSettings(given)
	if err != nil {
		return engine.TLS{}, err
	}
	vals := map[string]string{}
	for _, p := range sslParams {
		v, ok := given[p.key]
		if !ok {
			v, ok = fromService[p.key]
		}
		if !ok {
			v = os.Getenv(p.env)
		}
		vals[p.key] = v
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
		if t.RootCert == "" && exists(filepath.Join(dir, "root.crt")) {
			t.RootCert = filepath.Join(dir, "root.crt")
		}
		// The client certificate and its key are used together or not at all.
		if t.Cert == "" && t.Key == "" && exists(filepath.Join(dir, "postgresql.crt")) && exists(filepath.Join(dir, "postgresql.key")) {
			t.Cert, t.Key = filepath.Join(dir, "postgresql.crt"), filepath.Join(dir, "postgresql.key")
		}
	}
	return t, nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// serviceSettings are the settings of the service a connection string or
// PGSERVICE names, from its service file (servicefile=, PGSERVICEFILE,
// else ~/.pg_service.conf), as pgx reads them.
func serviceSettings(given map[string]string) (map[string]string, error) {
	name, ok := given["service"]
	if !ok {
		name = os.Getenv("PGSERVICE")
	}
	if name == "" {
		return nil, nil
	}
	file, ok := given["servicefile"]
	if !ok {
		file = os.Getenv("PGSERVICEFILE")
	}
	if file == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return nil, fmt.Errorf("service %q: %w", name, err)
		}
		file = filepath.Join(home, ".pg_service.conf")
	}
	sf, err := pgservicefile.ReadServicefile(file)
	if err != nil {
		return nil, fmt.Errorf("service file %s: %w", file, err)
	}
	svc, err := sf.GetService(name)
	if err != nil {
		return nil, fmt.Errorf("service file %s: %w", file, err)
	}
	return svc.Settings, nil
}

// connStringSettings are the parameters a connection string (a URI or
// keyword/value, already accepted by pgx) sets, decoded as libpq does.
func connStringSettings(s string) map[string]string {
	rest, ok := cutScheme(s)
	if !ok {
		return keywordValues(s)
	}
	all := map[string]string{}
	// The user info ends at the first '@' before any '/', as in libpq.
	if i := strings.IndexAny(rest, "@/"); i >= 0 && rest[i] == '@' {
		rest = rest[i+1:]
	}
	_, query, _ := strings.Cut(rest, "?")
	for pair := range strings.SplitSeq(query, "&") {
		k, v, _ := strings.Cut(pair, "=")
		k, kerr := url.PathUnescape(strings.TrimSpace(k))
		v, verr := url.PathUnescape(strings.TrimSpace(v))
		if kerr == nil && verr == nil && k != "" {
			all[k] = v
		}
	}
	if all["ssl"] == "true" {
		if _, explicit := all["sslmode"]; !explicit {
			all["sslmode"] = "require" // pgx's and JDBC's alias
		}
	}
	return all
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
