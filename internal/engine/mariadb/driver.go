package mariadb

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/dbrig/dbrig/internal/engine"
)

// Config is the go-sql-driver/mysql configuration of a login: TCP or, when
// c.Host is a socket file's path, the unix socket; TLS as c.TLS asks;
// c.Session's settings are set as session system variables on every
// connection it opens. It holds the password: never print it.
func Config(c engine.Conn) (*mysql.Config, error) {
	cfg := mysql.NewConfig()
	// The driver logs only what it recovers from (an idle connection the
	// server closed, a failed goodbye to a stopped server) straight to
	// stderr; what matters comes back as errors.
	cfg.Logger = &mysql.NopLogger{}
	cfg.User = c.User
	cfg.Passwd = c.Password()
	cfg.DBName = c.Database
	if c.Schema != "" {
		cfg.DBName = c.Schema // a MariaDB schema is a database
	}
	if c.IsUnix() {
		cfg.Net, cfg.Addr = "unix", c.Host
	} else {
		cfg.Net, cfg.Addr = "tcp", net.JoinHostPort(c.Host, strconv.Itoa(c.Port))
	}
	if err := setTLS(cfg, c); err != nil {
		return nil, fmt.Errorf("connection to %s: %w", c, err)
	}
	if session := c.Session(); len(session) > 0 {
		cfg.Params = map[string]string{}
		for _, k := range c.SessionKeys() {
			if !variableNameRE.MatchString(k) {
				return nil, fmt.Errorf("connection to %s: session setting %q is not a variable name", c, k)
			}
			cfg.Params[normalize(k)] = sqlValue(session[k])
		}
	}
	return cfg, nil
}

// setTLS gives cfg the login's TLS, by value for the connector and by a
// registered name for FormatDSN.
func setTLS(cfg *mysql.Config, c engine.Conn) error {
	t, fallback, err := tlsConfig(c.TLS, c.Host, c.IsUnix())
	if err != nil || t == nil {
		return err
	}
	name, err := registerTLS(c.TLS, c.Host, t)
	if err != nil {
		return err
	}
	cfg.TLS, cfg.TLSConfig, cfg.AllowFallbackToPlaintext = t, name, fallback
	return nil
}

// DSN is the login as a go-sql-driver/mysql data source name, for drivers
// only: it holds the password.
func DSN(c engine.Conn) (string, error) {
	cfg, err := Config(c)
	if err != nil {
		return "", err
	}
	return cfg.FormatDSN(), nil
}

// Open opens a connection pool for the login and checks that it logs in.
func Open(ctx context.Context, c engine.Conn) (*sql.DB, error) {
	cfg, err := Config(c)
	if err != nil {
		return nil, err
	}
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, fmt.Errorf("connection to %s: %w", c, err)
	}
	db := sql.OpenDB(connector)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connect to %s: %w", c, err)
	}
	return db, nil
}

// variableNameRE is what a system variable's name may be made of: it is
// written into SQL, so nothing else gets through.
var variableNameRE = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)

var (
	numberRE   = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$`)
	suffixedRE = regexp.MustCompile(`^([0-9]+)([kKmMgGtTpPeE])$`)
)

// sqlValue writes a setting's value as an SQL literal for SET: numbers as
// they are, sizes with the suffixes the command line accepts (64M) as the
// number of bytes (SET does not read suffixes), anything else as a quoted
// string (which the server also accepts for booleans: 'ON').
func sqlValue(v string) string {
	if numberRE.MatchString(v) {
		return v
	}
	if n, ok := expandSize(v); ok {
		return strconv.FormatUint(n, 10)
	}
	return quote(v)
}

// expandSize reads "64M" as 67108864.
func expandSize(v string) (uint64, bool) {
	m := suffixedRE.FindStringSubmatch(v)
	if m == nil {
		return 0, false
	}
	n, err := strconv.ParseUint(m[1], 10, 64)
	if err != nil {
		return 0, false
	}
	shift := map[string]uint{"k": 10, "m": 20, "g": 30, "t": 40, "p": 50, "e": 60}[strings.ToLower(m[2])]
	if n > (^uint64(0))>>shift {
		return 0, false
	}
	return n << shift, true
}

// quote writes s as a MariaDB string literal.
func quote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `''`, "\x00", `\0`).Replace(s) + "'"
}

// quoteIdent writes s as a MariaDB identifier.
func quoteIdent(s string) string {
	return "`" + strings.ReplaceAll(s, "`", "``") + "`"
}
