package engine_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/mariadb"
	"github.com/dbrig/dbrig/internal/engine/postgres"
)

// TestParseTargetPicksTheEngine: a target's connection string names its
// engine by its scheme, or, without one, by its form (PostgreSQL's
// keyword/value string, which people copy from their tools); a string no
// engine reads is refused without echoing anything of it.
func TestParseTargetPicksTheEngine(t *testing.T) {
	const secret = "Zq9Secret"
	reg := engine.NewRegistry(postgres.New(""), mariadb.New(""))
	tests := []struct {
		in               string
		engine           string
		host, user, db   string
		port             int
		unix, wantSecret bool
	}{
		{in: "postgres://app:" + secret + "@db.example:6543/shop", engine: "postgres", host: "db.example", port: 6543, user: "app", db: "shop", wantSecret: true},
		{in: "POSTGRESQL://app@db.example/shop", engine: "postgres", host: "db.example", port: 5432, user: "app", db: "shop"},
		{in: "host=/var/run/postgresql port=5433 user=app password=" + secret + " dbname=shop", engine: "postgres", host: "/var/run/postgresql", port: 5433, user: "app", db: "shop", unix: true, wantSecret: true},
		{in: " host = 127.0.0.1 user=app dbname=shop", engine: "postgres", host: "127.0.0.1", port: 5432, user: "app", db: "shop"},
		{in: "mysql://app:" + secret + "@127.0.0.1:3307/shop", engine: "mariadb", host: "127.0.0.1", port: 3307, user: "app", db: "shop", wantSecret: true},
		{in: "mariadb://app@/shop?socket=/run/mysqld/mysqld.sock", engine: "mariadb", host: "/run/mysqld/mysqld.sock", user: "app", db: "shop", unix: true},
	}
	for _, tt := range tests {
		e, c, err := reg.ParseTarget(tt.in)
		if err != nil {
			t.Errorf("ParseTarget(%s): %v", engine.RedactURI(tt.in), err)
			continue
		}
		if e.Name() != tt.engine || c.Host != tt.host || c.User != tt.user || c.Database != tt.db || c.IsUnix() != tt.unix || (tt.port != 0 && c.Port != tt.port) {
			t.Errorf("ParseTarget(%s) = %s %+v, want %s host %s port %d user %s db %s", engine.RedactURI(tt.in), e.Name(), c, tt.engine, tt.host, tt.port, tt.user, tt.db)
		}
		if (c.Password() == secret) != tt.wantSecret || strings.Contains(c.String(), secret) {
			t.Errorf("ParseTarget(%s): password %v kept, shown in %s", engine.RedactURI(tt.in), c.Password() == secret, c)
		}
	}
	for _, bad := range []string{"redis://app:" + secret + "@h/0", "app:" + secret + "@tcp(127.0.0.1:3306)/shop", secret, "postgres//app:" + secret + "@h/db"} {
		_, _, err := reg.ParseTarget(bad)
		if !errors.Is(err, engine.ErrUnknownScheme) || strings.Contains(err.Error(), secret) {
			t.Errorf("ParseTarget(%s) = %v, want ErrUnknownScheme without the password", engine.RedactURI(bad), err)
			continue
		}
		for _, want := range []string{"mariadb://", "postgres://", "PostgreSQL's keyword/value form"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("ParseTarget(%s) = %v, want it to name %s", engine.RedactURI(bad), err, want)
			}
		}
	}
}
