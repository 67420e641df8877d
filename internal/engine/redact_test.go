package engine

import (
	"strings"
	"testing"
)

func TestRedactURI(t *testing.T) {
	tests := []struct{ in, want string }{
		{"postgres://app:s3cret@db.example:5432/shop?sslmode=disable", "postgres://app:xxxxx@db.example:5432/shop?sslmode=disable"},
		{"postgres://app@db/shop", "postgres://app@db/shop"},
		{"postgresql://db/shop?password=s3cret&user=app", "postgresql://db/shop?password=xxxxx&user=app"},
		{"host=db user=app password=s3cret dbname=shop", "host=db user=app password=xxxxx dbname=shop"},
		{"host=db password = 'se cr\\'et' dbname=shop", "host=db password = xxxxx dbname=shop"},
		{"mysql://root:pw@tcp(127.0.0.1:3306)/x", "mysql://root:xxxxx@tcp(127.0.0.1:3306)/x"},
	}
	for _, tt := range tests {
		got := RedactURI(tt.in)
		if got != tt.want {
			t.Errorf("RedactURI(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if strings.Contains(got, "s3cret") || strings.Contains(got, "pw@") {
			t.Errorf("RedactURI(%q) leaks the password: %q", tt.in, got)
		}
	}
}

// TestRedactMalformed: whatever a user typed as a connection string, well
// formed or not, its password is gone from RedactURI's result and listed
// by Passwords.
func TestRedactMalformed(t *testing.T) {
	const pw = "Zq7pMarker"
	for _, in := range []string{
		"postgres//repl:" + pw + "@host/db",
		"postgres:/repl:" + pw + "@host/db",
		"repl:" + pw + "@host/db",
		"postgres://repl:" + pw + "@host:99999/db",
		"postgres://repl:" + pw + "@[::1/db",
		"postgresql://repl:" + pw + "@host/db?sslmode=bogus",
		"postgres://repl:" + pw + "@host/",
		"postgres://repl:p@" + pw + "@host/db",
		"postgres://repl:" + pw + "/x@host/db",
		"mysql://repl:" + pw + "@tcp(127.0.0.1:3306)/db",
		"host=x password=" + pw + " port=abc",
		"host=x password='" + pw,
		"host=x password='a b " + pw + "' port=1",
		"user=repl password=" + pw + " dbname",
		"password = '" + pw + "' host=x port=",
		"postgresql://h/db?user=u&password=" + pw,
		"postgresql://h/db?user=u&password=" + pw + "&x=%zz",
	} {
		got := RedactURI(in)
		if strings.Contains(got, pw) {
			t.Errorf("RedactURI(%q) = %q: the password shows", in, got)
		}
		found := false
		for _, p := range Passwords(in) {
			found = found || strings.Contains(p, pw)
		}
		if !found {
			t.Errorf("Passwords(%q) = %q: misses the password", in, Passwords(in))
		}
	}
	// Nothing that is not a password is taken for one.
	for _, in := range []string{"postgres://app@db/shop", "host=db user=app dbname=shop", "ops@example.com", "10.0.0.1:5432"} {
		if p := Passwords(in); len(p) > 0 {
			t.Errorf("Passwords(%q) = %q, want none", in, p)
		}
	}
}
