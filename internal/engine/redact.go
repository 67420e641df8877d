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
	// ?key=value&... : a value is a password when its key, decoded, is
	// password or sslpassword (pgx decodes pass%77ord to password).
	queryParam = regexp.MustCompile(`([?&])([^=&?\s]*)=([^&\s]*)`)
	// A URI's scheme, also a mistyped one (postgres:/, postgres//).
	schemePrefix = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*(:/+|/{2,})`)
	// The NAME= of --target NAME=URI and --host NAME=ssh://..., before a
	// scheme: no part of the URI.
	namePrefix = regexp.MustCompile(`^[A-Za-z0-9_.-]+=`)
)

// userinfo finds, in each word of s, the password of a user:password@
// part: after the scheme (if any), from the first ':' to the last '@' of
// the word, since a password may hold '@'; the password of user/password@
// (a form dbrig does not read, but people type); and in a URI word with
// no '@' at all, what follows the user's ':' when it is not a port (the
// '@' forgotten, or the word cut by a space in the password). It returns
// the passwords' positions in s.
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
		if from, to, ok := wordPassword(s[start:end]); ok {
			spans = append(spans, [2]int{start + from, start + to})
		}
		start = end
	}
	return spans
}

// wordPassword is userinfo's rule for one word.
func wordPassword(word string) (from, to int, ok bool) {
	if m := namePrefix.FindStringIndex(word); m != nil && schemePrefix.MatchString(word[m[1]:]) {
		from, to, ok = wordPassword(word[m[1]:])
		return from + m[1], to + m[1], ok
	}
	skip := 0
	if m := schemePrefix.FindStringIndex(word); m != nil {
		skip = m[1]
	}
	if at := strings.LastIndex(word, "@"); at > skip {
		head := word[skip:at]
		if c := strings.IndexByte(head, ':'); c >= 0 {
			return skip + c + 1, at, true
		}
		if slash := strings.IndexByte(head, '/'); skip == 0 && slash > 0 {
			return slash + 1, at, true
		}
		return 0, 0, false
	}
	if skip == 0 || strings.Contains(word, "@") {
		return 0, 0, false
	}
	rest := word[skip:]
	c := strings.IndexByte(rest, ':')
	if c < 0 || strings.HasPrefix(rest, "[") {
		return 0, 0, false
	}
	end := len(rest)
	if i := strings.IndexAny(rest[c+1:], "/?,"); i >= 0 {
		end = c + 1 + i
	}
	if strings.Trim(rest[c+1:end], "0123456789") == "" {
		return 0, 0, false // host:port
	}
	return skip + c + 1, skip + end, true
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
			for k := range q {
				if isPasswordKey(k) {
					q.Set(k, "xxxxx")
					u.RawQuery = q.Encode()
				}
			}
			out = u.String()
		}
	}
	if !parsed {
		out = keywordPassword.ReplaceAllString(out, "${1}xxxxx")
	}
	out = queryParam.ReplaceAllStringFunc(out, func(m string) string {
		key, _, _ := strings.Cut(m, "=")
		if isPasswordKey(key[1:]) {
			return key + "=xxxxx"
		}
		return m
	})
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

// isPasswordKey reports whether a URI parameter's key, percent-decoded as
// drivers decode it, names a password.
func isPasswordKey(raw string) bool {
	k, err := url.QueryUnescape(raw)
	if err != nil {
		k = raw
	}
	k = strings.ToLower(strings.TrimSpace(k))
	return k == "password" || k == "sslpassword"
}

// minSecret is the shortest candidate password that a stream filter
// replaces wherever it appears: shorter ones would garble ordinary words,
// and RedactURI removes them by structure.
const minSecret = 3

// Passwords returns every part of a connection string that may be its
// password: what a URI parser finds, what the patterns of a malformed one
// find, and for a password holding '@', '/' or ':' each piece between them
// (drivers end a password at the first '@' or '/', so a piece may turn up
// as part of a host, a port or a database name).
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
		for k, vs := range u.Query() {
			if isPasswordKey(k) {
				for _, v := range vs {
					add(v)
				}
			}
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
	for _, m := range queryParam.FindAllStringSubmatch(s, -1) {
		if isPasswordKey(m[2]) {
			add(m[3])
		}
	}
	for _, sp := range userinfo(s) {
		pw := s[sp[0]:sp[1]]
		add(pw)
		for _, piece := range strings.FieldsFunc(pw, func(r rune) bool { return r == '@' || r == '/' || r == ':' }) {
			add(piece)
		}
	}
	return out
}
