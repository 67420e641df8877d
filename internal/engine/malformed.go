package engine

import (
	"net/url"
	"regexp"
	"slices"
	"strings"
	"unicode"
)

// A connection string that does not parse has no structure to trust: what
// looks like a host may be the end of a password that held a '/', and what
// looks like a user may be a bare password. So a message about such a
// string shows at most its scheme and its user (RedactUnparsed), says in
// words what is wrong (Malformation), and every part of it that could be a
// password is filtered from the output (UnparsedSecrets). None of these
// depends on a driver's parser, whose errors quote the input.

// knownSchemes are the connection schemes dbrig's engines read; a message
// shows a scheme only when it is one of them, since an unknown "scheme"
// may be the start of a bare password.
var knownSchemes = []string{"postgres", "postgresql", "mysql", "mariadb"}

// connKeywords are the keys of a keyword/value string (libpq's and pgx's)
// and the parameter names of a URI that a message may show: a key that is
// not one of them may be a piece of a password.
var connKeywords = []string{
	"host", "hostaddr", "port", "dbname", "database", "user", "password", "passfile",
	"require_auth", "channel_binding", "connect_timeout", "client_encoding", "options",
	"application_name", "fallback_application_name", "keepalives", "keepalives_idle",
	"keepalives_interval", "keepalives_count", "tcp_user_timeout", "replication",
	"gssencmode", "sslmode", "sslnegotiation", "sslcompression", "sslcert", "sslkey",
	"sslkeylogfile", "sslpassword", "sslcertmode", "sslrootcert", "sslcrl", "sslcrldir",
	"sslsni", "requirepeer", "ssl_min_protocol_version", "ssl_max_protocol_version",
	"min_protocol_version", "max_protocol_version", "krbsrvname", "gsslib", "gssdelegation",
	"service", "servicefile", "target_session_attrs", "load_balance_hosts", "search_path",
	"timezone", "statement_cache_capacity", "description_cache_capacity",
	"default_query_exec_mode", "socket", "tls", "charset", "collation", "timeout",
	"readtimeout", "writetimeout", "parsetime", "loc", "compress", "allowallfiles",
	"allowcleartextpasswords", "allownativepasswords", "allowoldpasswords", "checkconnliveness",
	"clientfoundrows", "columnswithalias", "interpolateparams", "maxallowedpacket",
	"multistatements", "rejectreadonly", "serverpubkey", "connectionattributes",
	"ssl-mode", "ssl_mode", "ssl-ca", "ssl_ca", "ssl-cert", "ssl_cert", "ssl-key", "ssl_key",
}

// IsConnKeyword reports whether k is a key of a connection string (libpq's
// keywords, pgx's and the MySQL driver's parameters), which a message may
// show where it must not show a value.
func IsConnKeyword(k string) bool { return slices.Contains(connKeywords, strings.ToLower(k)) }

// schemeUser splits a URI of a known scheme into its scheme, the user a
// message may show (empty when no ':' or '@' ends it) and the rest.
func schemeUser(s string) (scheme, user, rest string, ok bool) {
	scheme, rest, ok = strings.Cut(s, "://")
	if !ok || !slices.Contains(knownSchemes, strings.ToLower(scheme)) {
		return "", "", "", false
	}
	end := strings.IndexAny(rest, ":@/?#[]()=&'\"\\% \t\r\n\v\f")
	if end <= 0 || (rest[end] != ':' && rest[end] != '@') {
		return scheme, "", rest, true
	}
	if rest[end] == ':' && !strings.Contains(rest, "@") && portFollows(rest, end) {
		return scheme, "", rest, true // a host, not a user
	}
	return scheme, rest[:end], rest, true
}

// portFollows reports whether what follows the ':' at rest[colon], up to a
// '/', '?' or ',', is a port number: host:port rather than user:password.
func portFollows(rest string, colon int) bool {
	port := rest[colon+1:]
	if i := strings.IndexAny(port, "/?,"); i >= 0 {
		port = port[:i]
	}
	return strings.Trim(port, "0123456789") == ""
}

// RedactUnparsed is what a message may show of a connection string that did
// not parse: the scheme and the user of a URI ("postgres://app@… (the rest
// is not shown)"), the known keys of a keyword/value string ("host=…
// password=… (values not shown)"), or nothing.
func RedactUnparsed(s string) string {
	s = strings.TrimSpace(s)
	if scheme, user, _, ok := schemeUser(s); ok {
		if user != "" {
			return scheme + "://" + user + "@… (the rest is not shown)"
		}
		return scheme + "://… (the rest is not shown)"
	}
	if keys, _ := keywordKeys(s); slices.ContainsFunc(keys, IsConnKeyword) {
		var b strings.Builder
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(' ')
			}
			if !IsConnKeyword(k) {
				k = "?"
			}
			b.WriteString(k + "=…")
		}
		return b.String() + " (values not shown)"
	}
	return "(not shown)"
}

// keywordKeys reads s as libpq reads a keyword/value string and returns its
// keys up to the first thing that is not key=value, and what that was, in
// words ("" when every pair was well formed).
func keywordKeys(s string) (keys []string, problem string) {
	s = strings.TrimLeft(s, asciiSpace)
	for s != "" {
		eq := strings.IndexByte(s, '=')
		if eq < 0 {
			return keys, "a word that is not key=value (quote a value that holds a space: password='a b')"
		}
		key := strings.Trim(s[:eq], asciiSpace)
		if key == "" {
			return keys, "an '=' with no key before it"
		}
		if strings.ContainsAny(key, asciiSpace) {
			return keys, "a word that is not key=value (quote a value that holds a space: password='a b')"
		}
		keys = append(keys, key)
		rest, ok := skipKeywordValue(strings.TrimLeft(s[eq+1:], asciiSpace))
		if !ok {
			return keys, "a quoted value has no closing quote (a quote inside a value is written \\')"
		}
		s = strings.TrimLeft(rest, asciiSpace)
	}
	return keys, ""
}

// asciiSpace are the characters libpq (and pgx) take for spaces between a
// keyword/value string's pairs.
const asciiSpace = " \t\n\r\v\f"

// skipKeywordValue returns what follows the value at the start of s:
// quoted with backslash escapes, or up to the next space.
func skipKeywordValue(s string) (string, bool) {
	if !strings.HasPrefix(s, "'") {
		for i := 0; i < len(s); i++ {
			switch {
			case s[i] == '\\':
				i++
			case strings.IndexByte(asciiSpace, s[i]) >= 0:
				return s[i:], true
			}
		}
		return "", true
	}
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '\'':
			return s[i+1:], true
		}
	}
	return "", false
}

var (
	mistypedScheme = regexp.MustCompile(`(?i)^(postgres|postgresql|mysql|mariadb)(:/?[^/]|//|:$)`)
	anyScheme      = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9+.-]*://`)
	badPercent     = regexp.MustCompile(`%($|[^0-9A-Fa-f]|.$|.[^0-9A-Fa-f])`)
)

// Malformation says in words what makes s unreadable as a connection
// string whatever the engine, or "" when nothing does and the engine's own
// parser must say. It never quotes any part of s.
func Malformation(s string) string {
	t := strings.TrimSpace(s)
	switch {
	case t == "":
		return "the string is empty"
	case strings.IndexByte(t, 0) >= 0:
		return "a NUL byte in the string"
	case strings.ContainsFunc(t, func(r rune) bool { return unicode.IsControl(r) && r != ' ' && r != '\t' }):
		return "a control character (a newline, a carriage return...) in the string"
	}
	if _, _, rest, ok := schemeUser(t); ok {
		return uriMalformation(rest)
	}
	switch {
	case mistypedScheme.MatchString(t):
		return "the scheme is not followed by '://'"
	case anyScheme.MatchString(t):
		return "the scheme is not one dbrig reads (postgres://, postgresql://, mysql://, mariadb://)"
	case strings.Contains(t, "="):
		_, problem := keywordKeys(t)
		return problem
	case strings.ContainsAny(t, "@/:"):
		return "no scheme such as postgres:// (user/password@host and user:password@host are not forms dbrig reads)"
	}
	return "neither a URI (postgres://..., mysql://...) nor key=value pairs"
}

// uriMalformation is Malformation for what follows a known scheme's "://".
func uriMalformation(rest string) string {
	switch {
	case strings.ContainsFunc(rest, unicode.IsSpace):
		return "a space in the string (a space in a password is written %20)"
	case badPercent.MatchString(rest):
		return "invalid percent-encoding: a '%' not followed by two hexadecimal digits (a '%' in a password is written %25)"
	}
	if strings.Contains(rest, "@") || strings.HasPrefix(rest, "[") {
		return ""
	}
	colon, end := strings.IndexByte(rest, ':'), strings.IndexAny(rest, "/?,")
	if colon >= 0 && (end < 0 || colon < end) && !portFollows(rest, colon) {
		return "no '@' after the password, so no host (or a port that is not a number)"
	}
	return ""
}

// secretDelims end the tokens of a string that did not parse: a password
// may be any run of tokens, or end at any of these.
const secretDelims = " \t\r\n\v\f@:/?&=,;()[]'\"`#\\"

// maxSecretTokens bounds the runs of tokens UnparsedSecrets lists (their
// number grows with the square of the tokens'); a longer string gets its
// tokens, pairs, words and whole.
const maxSecretTokens = 40

// UnparsedSecrets returns every part of s that could be a password, for a
// string given as a connection that did not parse: besides what Passwords
// finds, every run of its tokens after what RedactUnparsed shows, at least
// minSecret bytes long, with their decoded forms. A run that did not parse
// exits before anything but its error is printed, so filtering too much
// costs nothing; connection keywords and schemes are kept, so that the
// words of that error stay readable.
func UnparsedSecrets(s string) []string {
	seen := map[string]bool{}
	var out []string
	add := func(p string) {
		candidates := []string{p, strings.TrimSpace(p)}
		for _, c := range []string{p, unescapeKeyword(p)} {
			if dec, err := url.PathUnescape(c); err == nil {
				candidates = append(candidates, dec)
			}
			candidates = append(candidates, c)
		}
		for _, c := range candidates {
			if len(c) >= minSecret && c != "xxxxx" && !seen[c] && !IsConnKeyword(c) && !slices.Contains(knownSchemes, strings.ToLower(c)) {
				seen[c] = true
				out = append(out, c)
			}
		}
	}
	for _, p := range Passwords(s) {
		add(p)
	}
	tail := strings.TrimSpace(s)
	if _, user, rest, ok := schemeUser(tail); ok {
		tail = strings.TrimPrefix(rest, user)
	}
	add(tail)
	for _, w := range strings.Fields(tail) {
		add(w)
	}
	toks := tokens(tail)
	for i := range toks {
		last := len(toks) - 1
		if len(toks) > maxSecretTokens {
			last = min(i+1, last)
		}
		for j := i; j <= last; j++ {
			add(tail[toks[i][0]:toks[j][1]])
		}
	}
	return out
}

// tokens are the positions of the runs of s between secretDelims.
func tokens(s string) [][2]int {
	var toks [][2]int
	start := -1
	for i := 0; i <= len(s); i++ {
		if i == len(s) || strings.IndexByte(secretDelims, s[i]) >= 0 {
			if start >= 0 {
				toks = append(toks, [2]int{start, i})
				start = -1
			}
		} else if start < 0 {
			start = i
		}
	}
	return toks
}

// unescapeKeyword drops libpq's backslashes from a keyword/value string's
// value, as the driver does before the password reaches a message.
func unescapeKeyword(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
