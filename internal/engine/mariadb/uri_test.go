package mariadb_test

import (
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/mariadb"
)

func TestParseURI(t *testing.T) {
	tests := []struct {
		uri                    string
		host                   string
		port                   int
		user, password, dbName string
	}{
		{"mysql://app:s3cret@db.example:3307/shop", "db.example", 3307, "app", "s3cret", "shop"},
		{"mariadb://app:s3cret@db.example/shop", "db.example", 3306, "app", "s3cret", "shop"},
		{"MySQL://app:s3cret@10.0.0.5", "10.0.0.5", 3306, "app", "s3cret", ""},
		{"mysql://app:s3cret@[::1]:3310/shop", "::1", 3310, "app", "s3cret", "shop"},
		{"mysql://app:p%40ss%3Aw%2Frd@db/shop", "db", 3306, "app", "p@ss:w/rd", "shop"},
		{"mysql://app:p@ss@db/shop", "db", 3306, "app", "p@ss", "shop"},
		{"mysql://app:s3cret@unix(/run/mysqld/mysqld.sock)/shop", "/run/mysqld/mysqld.sock", 0, "app", "s3cret", "shop"},
		{"mariadb://app:s3cret@/shop?socket=/run/mysqld/mysqld.sock", "/run/mysqld/mysqld.sock", 0, "app", "s3cret", "shop"},
		{"mysql://app@db/shop", "db", 3306, "app", "", "shop"},
	}
	for _, tt := range tests {
		c, err := mariadb.ParseURI(tt.uri)
		if err != nil {
			t.Errorf("ParseURI(%s): %v", engine.RedactURI(tt.uri), err)
			continue
		}
		if c.Engine != "mariadb" || c.Host != tt.host || c.Port != tt.port || c.User != tt.user || c.Password() != tt.password || c.Database != tt.dbName {
			t.Errorf("ParseURI(%s) = %+v (password ok: %v)", engine.RedactURI(tt.uri), c, c.Password() == tt.password)
		}
		if tt.password != "" && strings.Contains(c.String(), tt.password) {
			t.Errorf("String() = %q shows the password", c.String())
		}
	}
}

func TestParseURIErrorsHideThePassword(t *testing.T) {
	tests := []struct{ uri, want string }{
		{"mysql://app:s3cret@db:notaport/shop", "port"},
		{"mysql://app:s3cret@db:99999/shop", "port"},
		{"mysql://:s3cret@db/shop", "no user name"},
		{"mysql://app:s3cret@/shop", "no host or socket"},
		{"mysql://app:s3cret@unix(/run/x.sock/shop", "closing parenthesis"},
		{"mysql://app:s3cret@unix(run/x.sock)/shop", "absolute"},
		{"mysql://app:s3cret@db/shop?compress=true", `unknown parameter "compress"`},
		{"mysql://app:s3cret@db/shop?socket=/x.sock", "both a host and a socket"},
		{"mysql://app:s3%ZZcret@db/shop", "percent-encoding"},
		{"postgres://app:s3cret@db/shop", "scheme"},
		{"mysql://app:s3cret@db/a/b", "database name"},
		{"mysql://app:s3cret/shop", "no '@' after the password"},
		{"mysql://app:s3cret 127.0.0.1/shop", "a space in the string"},
		{"mariadb://app:s3cret@db/shop?s3cret=1", "an unknown parameter"},
		{"mysql://app:s3cret@db:1:2/shop", "the host holds a ':'"},
	}
	for _, tt := range tests {
		_, err := mariadb.ParseURI(tt.uri)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseURI(%s) = %v, want an error saying %q", engine.RedactURI(tt.uri), err, tt.want)
			continue
		}
		// Nothing after the user shows: in a URI that does not parse, a
		// password cannot be told from a host, a path or a key.
		for _, part := range []string{"s3cret", "cret", "shop", "@db", "127.0.0.1"} {
			if strings.Contains(err.Error(), part) {
				t.Errorf("ParseURI(%s) error shows %q: %v", engine.RedactURI(tt.uri), part, err)
			}
		}
	}
}
