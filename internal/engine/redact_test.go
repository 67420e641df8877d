package engine

import (
	"slices"
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

// malformedForms are connection strings as users mistype them, each with
// the password pw in it; structured says whether the string still has the
// structure (a user's ':' or a password= key) by which RedactURI and
// Passwords find a password without knowing it is one.
func malformedForms(pw string) []struct {
	in         string
	structured bool
} {
	return []struct {
		in         string
		structured bool
	}{
		{"postgres//repl:" + pw + "@host/db", true},
		{"postgres:/repl:" + pw + "@host/db", true},
		{"repl:" + pw + "@host/db", true},
		{"postgres://repl:" + pw + "@host:99999/db", true},
		{"postgres://repl:" + pw + "@[::1/db", true},
		{"postgresql://repl:" + pw + "@host/db?sslmode=bogus", true},
		{"postgres://repl:" + pw + "@host/", true},
		{"postgres://repl:p@" + pw + "@host/db", true},
		{"postgres://repl:" + pw + "/x@host/db", true},
		{"mysql://repl:" + pw + "@tcp(127.0.0.1:3306)/db", true},
		{"host=x password=" + pw + " port=abc", true},
		{"host=x password='" + pw, true},
		{"host=x password='a b " + pw + "' port=1", true},
		{"user=repl password=" + pw + " dbname", true},
		{"password = '" + pw + "' host=x port=", true},
		{"postgresql://h/db?user=u&password=" + pw, true},
		{"postgresql://h/db?user=u&password=" + pw + "&x=%zz", true},
		{"postgresql://h/db?sslpassword=" + pw, true},
		{"postgresql://h/db?pass%77ord=" + pw, true},
		// A space instead of '@', no host, user/password@, a bare password.
		{"postgres://repl:" + pw + " 127.0.0.1:55911/shop", true},
		{"postgres://app:" + pw + "/appdb", true},
		{"app/" + pw + "@127.0.0.1:55913/appdb", true},
		{"mysql://app:" + pw + "/appdb", true},
		{"mysql://app:" + pw + " 127.0.0.1/appdb", true},
		{"postgres://app:" + pw + "%zz@127.0.0.1/appdb", true},
		{"postgres://app:a b" + pw + "@127.0.0.1/appdb", false},
		{"postgres://app:" + pw + "\nx@127.0.0.1/appdb", true},
		{pw, false},
		{"host=x password=a\\ " + pw, false},
		{"postgres://app:a/" + pw + "@127.0.0.1/appdb", true},
	}
}

// TestRedactMalformed: whatever a user typed as a connection string, well
// formed or not, its password is gone from RedactURI's result and listed
// by Passwords where the string shows where a password is, and always by
// UnparsedSecrets; nothing that is not a password is taken for one.
func TestRedactMalformed(t *testing.T) {
	const pw = "Zq7pMarker"
	for _, f := range malformedForms(pw) {
		if !f.structured {
			continue
		}
		if got := RedactURI(f.in); strings.Contains(got, pw) {
			t.Errorf("RedactURI(%q) = %q: the password shows", f.in, got)
		}
		if !slices.ContainsFunc(Passwords(f.in), func(p string) bool { return strings.Contains(p, pw) }) {
			t.Errorf("Passwords(%q) = %q: misses the password", f.in, Passwords(f.in))
		}
		// run's --target NAME=URI: the name changes nothing.
		if named := "db=" + f.in; !slices.ContainsFunc(Passwords(named), func(p string) bool { return strings.Contains(p, pw) }) {
			t.Errorf("Passwords(%q) = %q: misses the password", named, Passwords(named))
		}
	}
	for _, in := range []string{"postgres://app@db/shop", "host=db user=app dbname=shop", "ops@example.com", "10.0.0.1:5432",
		"postgres://db:5432/shop", "postgres://h1:5432,h2:5433/shop", "mysql://[::1]:3306/shop", "rbar-latency",
		"ssh://root@db.example", "db=ssh://root@198.18.163.10", "db=postgres://app@db/shop"} {
		if p := Passwords(in); len(p) > 0 {
			t.Errorf("Passwords(%q) = %q, want none", in, p)
		}
	}
}

// TestUnparsed: a message about a string that did not parse shows at most
// its scheme and user (or a keyword/value string's keys) and says what is
// wrong in words; UnparsedSecrets lists every part that could be the
// password, and not the keywords a message names.
func TestUnparsed(t *testing.T) {
	const pw = "Zq7pMarker"
	for _, f := range malformedForms(pw) {
		shown, why := RedactUnparsed(f.in), Malformation(f.in)
		if strings.Contains(shown+why, pw) || strings.Contains(shown+why, "Marker") {
			t.Errorf("RedactUnparsed/Malformation(%q) = %q, %q: a part of the password shows", f.in, shown, why)
		}
		secrets := UnparsedSecrets(f.in)
		if !slices.Contains(secrets, pw) && !slices.ContainsFunc(secrets, func(s string) bool { return strings.Contains(s, pw) }) {
			t.Errorf("UnparsedSecrets(%q) = %q: misses the password", f.in, secrets)
		}
		for _, kw := range []string{"host", "password", "port", "postgres", "mysql"} {
			if slices.Contains(secrets, kw) {
				t.Errorf("UnparsedSecrets(%q) lists the keyword %q", f.in, kw)
			}
		}
	}
	tests := []struct{ in, shown, why string }{
		{"postgres://repl:" + pw + " 127.0.0.1:55911/shop", "postgres://repl@… (the rest is not shown)", "a space in the string"},
		{"postgres://app:" + pw + "/appdb", "postgres://app@… (the rest is not shown)", "no '@' after the password"},
		{"app/" + pw + "@127.0.0.1:55913/appdb", "(not shown)", "no scheme"},
		{pw, "(not shown)", "neither a URI"},
		{"mysql://app:" + pw + "/appdb", "mysql://app@… (the rest is not shown)", "no '@' after the password"},
		{"MySQL://app:" + pw + " 127.0.0.1/appdb", "MySQL://app@… (the rest is not shown)", "a space in the string"},
		{"postgres://app:" + pw + "%zz@127.0.0.1/appdb", "postgres://app@… (the rest is not shown)", "percent-encoding"},
		{"postgres//repl:" + pw + "@host/db", "(not shown)", "not followed by '://'"},
		{"http://repl:" + pw + "@host/db", "(not shown)", "not one dbrig reads"},
		{"host=x password='" + pw, "host=… password=… (values not shown)", "no closing quote"},
		{"host=x password=a b" + pw + " port=1", "host=… password=… (values not shown)", "not key=value"},
		{"host=x " + pw + "=1 port=abc", "host=… ?=… port=… (values not shown)", ""},
		{"postgres://" + pw + " x@h/db", "postgres://… (the rest is not shown)", "a space"},
		{"postgres://h:5432/db?x=1", "postgres://… (the rest is not shown)", ""},
	}
	for _, tt := range tests {
		if got := RedactUnparsed(tt.in); got != tt.shown {
			t.Errorf("RedactUnparsed(%q) = %q, want %q", tt.in, got, tt.shown)
		}
		if got := Malformation(tt.in); (tt.why == "") != (got == "") || !strings.Contains(got, tt.why) {
			t.Errorf("Malformation(%q) = %q, want %q", tt.in, got, tt.why)
		}
	}
}
