package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
	"github.com/dbrig/dbrig/internal/engine/tlstest"
	"github.com/dbrig/dbrig/internal/link"
)

// TestTLSAsTheLoginAsks connects to a server with TLS on, whose certificate
// names "localhost" only, in every way dbrig connects to a server it did not
// start: pgx (a target's Attach and Exec), pgconn (the replication
// system's sessions), a libpq child program with the login's environment
// (pg_dump's way) and a server connecting to another with the login's
// keyword string (a subscription's way), directly and through a link proxy.
// The server's log says for each session whether it was encrypted.
func TestTLSAsTheLoginAsks(t *testing.T) {
	t.Parallel()
	server, files := pgtest.StartTLS(t, "tls", nil, "localhost")
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	if err := server.Exec(ctx, "postgres", "CREATE EXTENSION dblink"); err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(server.Port())
	const pw = "Tls9SecretPw"
	for _, tt := range []struct {
		name, host, query string
		viaLink           bool
		ssl               bool
		refused           string // in the error of a refused login; "" = it logs in
	}{
		{"require", "127.0.0.1", "sslmode=require", false, true, ""},
		{"no sslmode is prefer", "127.0.0.1", "", false, true, ""},
		{"ssl=true", "127.0.0.1", "ssl=true", false, true, ""},
		{"verify-ca by address", "127.0.0.1", "sslmode=verify-ca&sslrootcert=" + files.CA, false, true, ""},
		{"verify-full", "localhost", "sslmode=verify-full&sslrootcert=" + files.CA, false, true, ""},
		{"verify-full through a link", "localhost", "sslmode=verify-full&sslrootcert=" + files.CA, true, true, ""},
		{"require through a link", "127.0.0.1", "sslmode=require", true, true, ""},
		{"disable", "127.0.0.1", "sslmode=disable", false, false, ""},
		{"verify-full, wrong CA", "localhost", "sslmode=verify-full&sslrootcert=" + files.OtherCA, false, false, "certificate signed by unknown authority"},
		{"verify-full, wrong host", "127.0.0.1", "sslmode=verify-full&sslrootcert=" + files.CA, false, false, "certificate for 127.0.0.1"},
	} {
		role := "app_" + strings.NewReplacer(" ", "_", ",", "", "-", "_", "=", "_").Replace(tt.name)
		if err := server.Exec(ctx, "postgres", "CREATE ROLE "+role+" LOGIN PASSWORD '"+pw+"'"); err != nil {
			t.Fatal(err)
		}
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			uri := "postgres://" + role + ":" + pw + "@" + tt.host + ":" + port + "/postgres?" + tt.query
			c, err := postgres.New(pgtest.Binaries(t).Dir).ParseURI(uri)
			if err != nil {
				t.Fatal(err)
			}
			ci := postgres.ConnInfoOf(c)
			if tt.viaLink {
				proxy, err := link.Listen(ctx, "127.0.0.1:0", "127.0.0.1:"+port, link.Config{})
				if err != nil {
					t.Fatal(err)
				}
				defer proxy.Close()
				if ci, err = ci.Via(proxy.Addr()); err != nil {
					t.Fatal(err)
				}
			}
			errs := sessionsOfEveryKind(ctx, t, server, ci)
			if tt.refused != "" {
				for what, err := range errs {
					if err == nil {
						t.Errorf("%s logged in", what)
					} else if strings.Contains(err.Error(), pw) {
						t.Errorf("%s: the error shows the password: %v", what, err)
					}
				}
				if err := errs["pgx"]; err != nil && !strings.Contains(err.Error(), tt.refused) {
					t.Errorf("pgx: %v, want it to say %q", err, tt.refused)
				}
				if n := len(pgtest.Connections(t, server, role)); n != 0 {
					t.Errorf("the server logged %d logins of a refused login", n)
				}
				return
			}
			for what, err := range errs {
				if err != nil {
					t.Errorf("%s: %v", what, err)
				}
			}
			conns := pgtest.Connections(t, server, role)
			if len(conns) < len(errs) {
				t.Errorf("the server logged %d logins, want at least %d", len(conns), len(errs))
			}
			for _, c := range conns {
				if c.SSL != tt.ssl {
					t.Errorf("encrypted %v, want %v: %s (%+v)", c.SSL, tt.ssl, c.Line, c)
				}
			}
		})
	}
}

// sessionsOfEveryKind opens a session of ci with each of dbrig's clients
// and says what each did: nil when it logged in and pg_stat_ssl agreed
// with the server's log.
func sessionsOfEveryKind(ctx context.Context, t *testing.T, server *postgres.Instance, ci postgres.ConnInfo) map[string]error {
	errs := map[string]error{}
	target, err := postgres.New(pgtest.Binaries(t).Dir).Attach(ctx, "db", ci.Conn, engine.AttachOptions{})
	if err == nil {
		err = target.Exec(ctx, "postgres", "SELECT 1")
	}
	errs["pgx"] = err
	cfg, err := ci.PgConnConfig()
	if err == nil {
		var pc *pgconn.PgConn
		if pc, err = pgconn.ConnectConfig(ctx, cfg); err == nil {
			_, err = pc.Exec(ctx, "SELECT 1").ReadAll()
			pc.Close(ctx)
		}
	}
	errs["pgconn"] = err
	psql := exec.CommandContext(ctx, pgtest.Binaries(t).Path("psql"), "-XAtc", "SELECT 1")
	psql.Env = append(withoutPG(os.Environ()), ci.Env()...)
	if out, err := psql.CombinedOutput(); err != nil {
		errs["psql"] = &exitError{err, string(out)}
	} else {
		errs["psql"] = nil
	}
	dblink := "SELECT * FROM dblink(" + quote(ci.Keywords()) + ", 'SELECT 1') AS t(one int)"
	errs["a server's keyword string"] = withDetail(server.Exec(ctx, "postgres", dblink))
	return errs
}

// withDetail adds the server's detail to an error: dblink's says why its
// connection failed.
func withDetail(err error) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Detail != "" {
		return fmt.Errorf("%w: %s", err, pe.Detail)
	}
	return err
}

type exitError struct {
	err error
	out string
}

func (e *exitError) Error() string { return e.err.Error() + ": " + e.out }

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// withoutPG drops the PG* variables of the test's own environment, as
// dbrig does for its child programs.
func withoutPG(env []string) []string {
	var out []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "PG") {
			out = append(out, kv)
		}
	}
	return out
}

// TestTLSRequestFollowsLibpq reads the TLS of a login as libpq would: the
// string first, then PGSSLMODE and its kin, then libpq's defaults.
func TestTLSRequestFollowsLibpq(t *testing.T) {
	files := tlstest.Make(t, "db.example")
	home := t.TempDir()
	t.Setenv("HOME", home)
	for _, k := range []string{"PGSSLMODE", "PGSSLROOTCERT", "PGSSLCERT", "PGSSLKEY"} {
		t.Setenv(k, "")
	}
	parse := func(s string) engine.TLS {
		t.Helper()
		ci, err := postgres.ParseConnInfo(s)
		if err != nil {
			t.Fatal(err)
		}
		return ci.TLS
	}
	if got := parse("postgres://u:p@db.example/x"); got != (engine.TLS{Mode: "prefer"}) {
		t.Errorf("no sslmode: %+v, want prefer as libpq", got)
	}
	spaced := filepath.Join(t.TempDir(), "ca dir", "ca.crt")
	if err := os.MkdirAll(filepath.Dir(spaced), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(files.CA, spaced); err != nil {
		t.Fatal(err)
	}
	want := engine.TLS{Mode: "verify-full", RootCert: spaced, Cert: files.Cert, Key: files.Key}
	kv := "host=db.example user=u password=p sslmode=verify-full sslrootcert='" + spaced + "' sslcert=" + files.Cert + " sslkey=" + files.Key
	if got := parse(kv); got != want {
		t.Errorf("keyword/value: %+v, want %+v", got, want)
	}
	uri := "postgresql://u:p@db.example/x?sslmode=verify-full&sslrootcert=" + strings.ReplaceAll(url.QueryEscape(spaced), "+", "%20") + "&sslcert=" + files.Cert + "&sslkey=" + files.Key
	if got := parse(uri); got != want {
		t.Errorf("URI: %+v, want %+v", got, want)
	}
	t.Setenv("PGSSLMODE", "require")
	t.Setenv("PGSSLROOTCERT", files.CA)
	if got := parse("postgres://u:p@db.example/x"); got != (engine.TLS{Mode: "require", RootCert: files.CA}) {
		t.Errorf("with PGSSLMODE and PGSSLROOTCERT: %+v", got)
	}
	if got := parse("postgres://u:p@db.example/x?sslmode=disable"); got.Mode != "disable" {
		t.Errorf("PGSSLMODE overrode the string's sslmode: %+v", got)
	}
	services := filepath.Join(t.TempDir(), "pg_service.conf")
	if err := os.WriteFile(services, []byte("[shop]\nhost=db.example\nsslmode=verify-ca\nsslrootcert="+files.CA+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PGSERVICEFILE", services)
	if got := parse("service=shop user=u"); got != (engine.TLS{Mode: "verify-ca", RootCert: files.CA}) {
		t.Errorf("a service's sslmode yields to PGSSLMODE: %+v", got)
	}
	if got := parse("postgres://u:pw@/x?service=shop&sslmode=require"); got != (engine.TLS{Mode: "require", RootCert: files.CA}) {
		t.Errorf("the string's sslmode yields to the service's: %+v", got)
	}
	t.Setenv("PGSERVICEFILE", "")
	t.Setenv("PGSSLMODE", "")
	t.Setenv("PGSSLROOTCERT", "")
	dir := filepath.Join(home, ".postgresql")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for from, to := range map[string]string{files.CA: "root.crt", files.Cert: "postgresql.crt", files.Key: "postgresql.key"} {
		if err := os.Link(from, filepath.Join(dir, to)); err != nil {
			t.Fatal(err)
		}
	}
	want = engine.TLS{Mode: "prefer", RootCert: filepath.Join(dir, "root.crt"), Cert: filepath.Join(dir, "postgresql.crt"), Key: filepath.Join(dir, "postgresql.key")}
	if got := parse("host=db.example user=u"); got != want {
		t.Errorf("libpq's default files: %+v, want %+v", got, want)
	}
	if _, err := postgres.ParseConnInfo("host=/run/postgresql user=u password=Zq9pw sslmode=sometimes"); err == nil || !strings.Contains(err.Error(), `sslmode "sometimes"`) || strings.Contains(err.Error(), "Zq9pw") {
		t.Errorf("a bad sslmode: %v", err)
	}
}

// TestOwnedLoginStaysPlain: a login to a server dbrig started asks for
// no TLS, whatever the environment says.
func TestOwnedLoginStaysPlain(t *testing.T) {
	ci := postgres.ConnInfoOf(engine.NewConn(postgres.Name, "127.0.0.1", 5432, "dbrig", "x", "pw"))
	env := strings.Join(ci.Env(), " ")
	if !strings.Contains(env, "PGSSLMODE=disable") || !strings.Contains(ci.Keywords(), "sslmode='disable'") || !strings.Contains(ci.URI(), "sslmode=disable") {
		t.Errorf("an owned login asks for TLS: env %q, keywords %q", env, ci.Keywords())
	}
	via, err := ci.Via("127.0.0.1:6432")
	if err != nil || via.TLS != (engine.TLS{}) {
		t.Errorf("Via gave an owned login TLS: %+v (%v)", via.TLS, err)
	}
}
