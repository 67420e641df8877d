package postgres_test

import (
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/engine/postgres"
)

// TestParseConnInfoErrorsShowNothingAfterTheUser: a string that does not
// parse is shown up to its user at most, whatever pgx's error quotes, and
// the error says what is wrong in words.
func TestParseConnInfoErrorsShowNothingAfterTheUser(t *testing.T) {
	t.Parallel()
	const pw, db = "S3cretPW!", "Tl8db"
	tests := []struct{ in, shows, says string }{
		{"postgres://repl:" + pw + " 127.0.0.1:55911/" + db, "postgres://repl@…", "a space in the string"},
		{"postgres://app:" + pw + "/" + db, "postgres://app@…", "no '@' after the password"},
		{"app/" + pw + "@127.0.0.1:55913/" + db, "(not shown)", "no scheme"},
		{pw, "(not shown)", "neither a URI"},
		{"mysql://app:" + pw + "/" + db, "mysql://app@…", "no '@' after the password"},
		{"mysql://app:" + pw + " 127.0.0.1/" + db, "mysql://app@…", "a space in the string"},
		{"postgres://app:" + pw + "@127.0.0.1:99999/" + db, "postgres://app@…", "the port is not a number"},
		{"postgres://app:a/" + pw + "@127.0.0.1/" + db, "postgres://app@…", "a '/' before the '@'"},
		{"postgres://app:" + pw + "@[::1/" + db, "postgres://app@…", "no closing ']'"},
		{"postgres://app:" + pw + "@h/" + db + "?connect_timeout=x" + db, "postgres://app@…", "connect_timeout is not valid"},
		{"postgres://app:" + pw + "@h/" + db + "?x" + db, "postgres://app@…", "not one key=value"},
		{"postgres://app:" + pw + "%zz@h/" + db, "postgres://app@…", "percent-encoding"},
		{"postgres://app:p@" + pw + "@h/" + db, "postgres://app@…", "the password holds '@'"},
		{"host=h password=" + pw + " dbname=" + db + " port=abc", "host=… password=… dbname=… port=…", "the port is not a number"},
		{"host=h password='" + pw + " dbname=" + db, "host=… password=…", "no closing quote"},
		{"host=h password=a " + pw + "=x" + db, "host=… password=… ?=…", "not a setting name"},
		{"host=h password=" + pw + " " + db, "host=… password=…", "not key=value"},
	}
	for _, tt := range tests {
		_, err := postgres.ParseConnInfo(tt.in)
		if err == nil {
			t.Errorf("ParseConnInfo(%q) parsed", tt.in)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, tt.shows) || !strings.Contains(msg, tt.says) {
			t.Errorf("ParseConnInfo(%q) = %q, want it to show %q and say %q", tt.in, msg, tt.shows, tt.says)
		}
		for _, part := range []string{"S3cret", "PW!", db, "127.0.0.1", "55911"} {
			if strings.Contains(msg, part) {
				t.Errorf("ParseConnInfo(%q) = %q: shows %q", tt.in, msg, part)
			}
		}
	}
}
