package engine

import (
	"net/url"
	"regexp"
	"strings"
)

// Connection strings come from users, and users make mistakes: a missing
// slash, a stray quote, an '@' in a password. Whatever the string looks
// like, dbrig must never echo its password. RedactURI redacts by structure
// where the string parses and by pattern where it does not; Passwords lists
// every part of a string that may be a password, so that a whole output
// stream can be kept free of them.

var (
	// password=secret, password = 'se cr\'et', password='unterminated
	keywordPassword = regexp.MustCompile(`(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*'?|[^\s'][^\s]*)`)
	// ?password=secret&..., &password=...
	queryPassword = regexp.MustCompile(`(?i)([?&]password=)([^&\s]*)`)
	// A URI's scheme, also a mistyped one (postgres:/, postgres//).
	schemePrefix = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*(:/+|/{2,})`)
)

// userinfo finds, in each word of s, the password of a user:password@
// part: after the scheme (if any), from the first ':' to the last '@' of
// the word, since a password may hold '@'. It returns the passwords'
// positions in s.
func userinfo(s string) [][2]int {
	var spans [][2]int
	start := 0
	for start < len(s) {
		for start < len(s) && (s[start] == ' ' || s[start] == '\t' || s[start] == '\n') {
			start++
		}
		end := start
		for end < len(s) && s[end] != ' ' && s[end] != '\t' && s[end] != '\n' {
			end++
		}
		word := s[start:end]
		if at := strings.LastIndex(word, "@"); at > 0 {
			head := word[:at]
			skip := 0
			if m := schemePrefix.FindStringIndex(head); m != nil {
				skip = m[1]
			}
			if c := strings.IndexByte(head[skip:], ':'); c >= 0 {
				spans = append(spans, [2]int{start + skip + c + 1, start + at})
			}
		}
		start = end
	}
	return spans
}

// RedactURI hides the password in a connection string, either a URI
// (postgres://user:secret@host/db, mysql://...) or a keyword/value string
// (host=x password=secret), well formed or not, so it can be printed,
// logged or stored.
func RedactURI(s string) string {
	out := s
	parsed := false
	if i := strings.Index(s, "://"); i > 0 {
		if u, err := url.Parse(s); err == nil {
			parsed = true
			if _, has := u.User.Password(); has {
				u.User = url.UserPassword(u.User.Username(), "xxxxx")
			}
			q := u.Query()
			if q.Has("password") {
				q.Set("password", "xxxxx")
				u.RawQuery = q.Encode()
			}
			out = u.String()
		}
	}
	if !parsed {
		out = keywordPassword.ReplaceAllString(out, "${1}xxxxx")
	}
	out = queryPassword.ReplaceAllString(out, "${1}xxxxx")
	spans := userinfo(out)
	for i := len(spans) - 1; i >= 0; i-- {
		if sp := spans[i]; out[sp[0]:sp[1]] != "xxxxx" {
			out = out[:sp[0]] + "xxxxx" + out[sp[1]:]
		}
	}
	for _, pw := range Passwords(s) {
		if len(pw) >= minSecret {
			out = strings.ReplaceAll(out, pw, "xxxxx")
		}
	}
	return out
}

// minSecret is the shortest candidate password that a stream filter
// replaces wherever it appears: shorter ones would garble ordinary words,
// and RedactURI removes them by structure.
const minSecret = 3

// Passwords returns every part of a connection string that may be its
// password: what a URI parser finds, what the patterns of a malformed one
// find, and for a password holding '@' each piece between them (drivers
// split at the first '@', so a piece may turn up as part of a host name).
func Passwords(s string) []string {
	seen := map[string]bool{}
	var out []string
	var add func(string)
	add = func(p string) {
		p = strings.TrimSpace(p)
		if p == "" || p == "xxxxx" || seen[p] {
			return
		}
		seen[p] = true
		out = append(out, p)
		if dec, err := url.PathUnescape(p); err == nil && dec != p {
			add(dec)
		}
	}
	if u, err := url.Parse(s); err == nil && u.User != nil {
		if pw, ok := u.User.Password(); ok {
			add(pw)
		}
		if pw := u.Query().Get("password"); pw != "" {
			add(pw)
		}
	}
	for _, m := range keywordPassword.FindAllStringSubmatch(s, -1) {
		v := m[2]
		if strings.HasPrefix(v, "'") {
			v = strings.TrimSuffix(strings.TrimPrefix(v, "'"), "'")
			add(v)
			v = strings.NewReplacer(`\'`, `'`, `\\`, `\`).Replace(v)
		}
		add(v)
	}
	for _, m := range queryPassword.FindAllStringSubmatch(s, -1) {
		add(m[2])
	}
	for _, sp := range userinfo(s) {
		pw := s[sp[0]:sp[1]]
		add(pw)
		for _, piece := range strings.Split(pw, "@") {
			add(piece)
		}
	}
	return out
}
