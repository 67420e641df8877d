package mariadb_test

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/mariadb"
	"github.com/dbrig/dbrig/internal/engine/mariadb/mariatest"
	"github.com/dbrig/dbrig/internal/link"
)

// TestTLSAsTheURIAsks connects to a server with TLS on, whose certificate
// names "localhost" only, with go-sql-driver's tls= and MySQL's ssl-mode=,
// in each way dbrig opens a MariaDB session (a target's Attach and Exec, a
// pool, a DSN), directly and through a link proxy. The server's general log
// says for each login whether it was encrypted.
func TestTLSAsTheURIAsks(t *testing.T) {
	t.Parallel()
	server, files := mariatest.StartTLS(t, "tls", nil, "localhost")
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	const pw = "Tls9MariaPw"
	cases := []struct {
		name, host, query string
		viaLink           bool
		ssl               bool
		refused           string // in the error of a refused login; "" = it logs in
	}{
		{"ssl-mode REQUIRED", "127.0.0.1", "ssl-mode=REQUIRED", false, true, ""},
		{"none is PREFERRED", "127.0.0.1", "", false, true, ""},
		{"tls skip-verify", "127.0.0.1", "tls=skip-verify", false, true, ""},
		{"ssl-ca alone is VERIFY_CA", "127.0.0.1", "ssl-ca=" + files.CA, false, true, ""},
		{"tls true", "localhost", "tls=true&ssl-ca=" + files.CA, false, true, ""},
		{"VERIFY_IDENTITY through a link", "localhost", "ssl-mode=VERIFY_IDENTITY&ssl-ca=" + files.CA, true, true, ""},
		{"DISABLED", "127.0.0.1", "ssl-mode=disabled", false, false, ""},
		{"VERIFY_IDENTITY, wrong CA", "localhost", "ssl-mode=VERIFY_IDENTITY&ssl-ca=" + files.OtherCA, false, false, "certificate signed by unknown authority"},
		{"VERIFY_CA, wrong CA", "127.0.0.1", "ssl-mode=VERIFY_CA&ssl_ca=" + files.OtherCA, false, false, "certificate signed by unknown authority"},
		{"VERIFY_IDENTITY, wrong host", "127.0.0.1", "ssl-mode=VERIFY_IDENTITY&ssl-ca=" + files.CA, false, false, "certificate for 127.0.0.1"},
	}
	var users []string
	for i := range cases {
		user := "app" + strconv.Itoa(i)
		users = append(users, user)
		for _, host := range []string{"127.0.0.1", "localhost"} {
			if err := server.Exec(ctx, "", "CREATE USER '"+user+"'@'"+host+"' IDENTIFIED BY '"+pw+"'",
				"GRANT ALL ON `dbrig\\_%`.* TO '"+user+"'@'"+host+"'"); err != nil {
				t.Fatal(err)
			}
		}
	}
	mariatest.LogConnections(t, server) // after the statements with the password
	port := strconv.Itoa(server.Port())
	for i, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			login, err := mariadb.ParseURI("mysql://" + users[i] + ":" + pw + "@" + tt.host + ":" + port + "/?" + tt.query)
			if err != nil {
				t.Fatal(err)
			}
			if tt.viaLink {
				proxy, err := link.Listen(ctx, "127.0.0.1:0", "127.0.0.1:"+port, link.Config{})
				if err != nil {
					t.Fatal(err)
				}
				defer proxy.Close()
				if login, err = login.Via(proxy.Addr()); err != nil {
					t.Fatal(err)
				}
			}
			errs := mariaSessions(ctx, t, login)
			if tt.refused != "" {
				for what, err := range errs {
					if err == nil || !strings.Contains(err.Error(), tt.refused) || strings.Contains(err.Error(), pw) {
						t.Errorf("%s: %v, want a refusal that says %q", what, err, tt.refused)
					}
				}
				if n := len(mariatest.Connections(t, server, users[i])); n != 0 {
					t.Errorf("the server logged %d logins of a refused login", n)
				}
				return
			}
			for what, err := range errs {
				if err != nil {
					t.Errorf("%s: %v", what, err)
				}
			}
			conns := mariatest.Connections(t, server, users[i])
			if len(conns) < len(errs) {
				t.Errorf("the server logged %d logins, want at least %d", len(conns), len(errs))
			}
			for _, c := range conns {
				if c.SSL != tt.ssl {
					t.Errorf("encrypted %v, want %v: %s", c.SSL, tt.ssl, c.Line)
				}
			}
		})
	}
}

// mariaSessions opens a session of login in each of dbrig's ways and
// says what each did.
func mariaSessions(ctx context.Context, t *testing.T, login engine.Conn) map[string]error {
	errs := map[string]error{}
	target, err := mariatest.Engine(t).Attach(ctx, "db", login, engine.AttachOptions{})
	if err == nil {
		err = target.Exec(ctx, "", "SELECT 1")
	}
	errs["target"] = err
	db, err := mariadb.Open(ctx, login)
	if err == nil {
		db.Close()
	}
	errs["pool"] = err
	dsn, err := mariadb.DSN(login)
	if err == nil {
		var db *sql.DB
		if db, err = sql.Open("mysql", dsn); err == nil {
			err = db.PingContext(ctx)
			db.Close()
		}
	}
	errs["DSN"] = err
	return errs
}

// TestTLSParameters: what each spelling asks for, and the refusals.
func TestTLSParameters(t *testing.T) {
	t.Parallel()
	for q, want := range map[string]engine.TLS{
		"":                           {Mode: "prefer"},
		"tls=false":                  {Mode: "disable"},
		"tls=preferred":              {Mode: "prefer"},
		"tls=skip-verify":            {Mode: "require"},
		"tls=true":                   {Mode: "verify-full"},
		"ssl-mode=DISABLED":          {Mode: "disable"},
		"ssl_mode=required":          {Mode: "require"},
		"ssl-mode=VERIFY_CA":         {Mode: "verify-ca"},
		"ssl-mode=VERIFY_IDENTITY":   {Mode: "verify-full"},
		"ssl-ca=/ca.pem":             {Mode: "verify-ca", RootCert: "/ca.pem"},
		"ssl-cert=/c.pem&ssl-key=/k": {Mode: "prefer", Cert: "/c.pem", Key: "/k"},
	} {
		c, err := mariadb.ParseURI("mysql://u:Zq9pw@db.example/x?" + q)
		if err != nil || c.TLS != want {
			t.Errorf("%q: %+v (%v), want %+v", q, c.TLS, err, want)
		}
	}
	for q, says := range map[string]string{
		"tls=custom":                 "tls=custom is not one of",
		"ssl-mode=sometimes":         "ssl-mode=sometimes is not one of",
		"tls=true&ssl-mode=REQUIRED": "both tls= and ssl-mode=",
		"ssl-cert=/c.pem":            "ssl-cert and ssl-key go together",
		"sslmode=REQUIRED":           `unknown parameter "sslmode"`,
	} {
		_, err := mariadb.ParseURI("mysql://u:Zq9pw@db.example/x?" + q)
		if err == nil || !strings.Contains(err.Error(), says) || strings.Contains(err.Error(), "Zq9pw") {
			t.Errorf("%q: %v, want a refusal that says %q", q, err, says)
		}
	}
	// A socket is as secure as MariaDB's own client counts it: no TLS there.
	c, err := mariadb.ParseURI("mysql://u:Zq9pw@/x?socket=/run/mysqld/mysqld.sock&ssl-mode=REQUIRED")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := mariadb.Config(c)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.TLS != nil || cfg.TLSConfig != "" {
		t.Errorf("a socket login asks for TLS %q: want none", cfg.TLSConfig)
	}
}
