package engine

import (
	"net/url"
	"regexp"
	"strings"
)

var keywordPassword = regexp.MustCompile(`(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)`)

// RedactURI hides the password in a connection string, either a URI
// (postgres://user:secret@host/db, mysql://...) or a keyword/value string
// (host=x password=secret), so it can be printed, logged or stored.
func RedactURI(s string) string {
	if i := strings.Index(s, "://"); i > 0 {
		if u, err := url.Parse(s); err == nil {
			if _, has := u.User.Password(); has {
				u.User = url.UserPassword(u.User.Username(), "xxxxx")
			}
			q := u.Query()
			if q.Has("password") {
				q.Set("password", "xxxxx")
				u.RawQuery = q.Encode()
			}
			return u.String()
		}
		// Unparseable URI: cut out anything between "://" and "@".
		if at := strings.LastIndex(s, "@"); at > i {
			userinfo := s[i+3 : at]
			if c := strings.Index(userinfo, ":"); c >= 0 {
				return s[:i+3] + userinfo[:c] + ":xxxxx" + s[at:]
			}
		}
		return s
	}
	return keywordPassword.ReplaceAllString(s, "${1}xxxxx")
}
