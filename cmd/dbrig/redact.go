package main

import (
	"io"
	"slices"
	"strings"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/postgres"
)

// secretEnv are the environment variables dbrig reads connection strings
// from by name.
var secretEnv = []string{"DBRIG_PUBLISHER", "DBRIG_SUBSCRIBER"}

// connFlags are the flags whose value is a connection string, or env:VAR
// naming one, after an optional NAME= (splitConnName).
var connFlags = []string{"--target", "--db", "--publisher", "--subscriber"}

// userSecrets returns the passwords in every connection string the user
// gave: as a flag's value or an argument, in an environment variable a
// flag names with env:VAR, or in the variables dbrig reads by name. A
// string given as a connection that does not parse has no structure to
// find its password by, so every part of it that could be one is listed.
// Short ones are left to structural redaction.
func userSecrets(args []string, getenv func(string) string) []string {
	var out []string
	add := func(pws ...string) {
		for _, pw := range pws {
			if len(pw) >= 3 && !slices.Contains(out, pw) {
				out = append(out, pw)
			}
		}
	}
	for _, a := range args {
		add(engine.Passwords(a)...)
	}
	for _, c := range connectionTexts(args, getenv) {
		add(connectionSecrets(c)...)
	}
	// Longest first, so that a password is replaced whole before a piece
	// of it is.
	slices.SortStableFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// connectionSecrets are the passwords of a string given as a connection:
// when it parses with an engine dbrig has, the parsed password and what the
// patterns find, else every part that could be one.
func connectionSecrets(s string) []string {
	if _, c, err := newEngines(binDirs{}).ParseTarget(s); err == nil {
		return parsedSecrets(s, c)
	}
	if ci, err := postgres.ParseConnInfo(s); err == nil {
		return parsedSecrets(s, ci.Conn)
	}
	return engine.UnparsedSecrets(s)
}

// parsedSecrets are the passwords of a string that parsed into c. A user
// or database name holding what ends a password (':', '@', '/', a space, a
// quote) may be the rest of a password the string did not delimit as the
// user meant (a '/' in it, say): every part of such a name that could be
// one is listed too. Names like that are rare, and filtering them costs a
// name in the output, never a password.
func parsedSecrets(s string, c engine.Conn) []string {
	out := append(engine.Passwords(s), c.Password())
	for _, name := range []string{c.User, c.Database} {
		if strings.ContainsAny(name, " @:/?&=%'\"\\#") {
			out = append(out, engine.UnparsedSecrets(name)...)
		}
	}
	return out
}

// connectionTexts are the strings of a command line and its environment
// that are given as connections: the values of connFlags, arguments that
// look like one, and the environment variables named by env:VAR or read by
// name.
func connectionTexts(args []string, getenv func(string) string) []string {
	var texts []string
	for i, a := range args {
		flag, value, inline := strings.Cut(a, "=")
		if !inline && i+1 < len(args) {
			value = args[i+1]
		}
		switch {
		case slices.Contains(connFlags, flag) && (inline || i+1 < len(args)):
			_, conn := splitConnName(value)
			texts = append(texts, conn)
		case looksLikeConnection(a):
			texts = append(texts, a)
		}
	}
	if getenv == nil {
		return texts
	}
	for _, name := range envNames(args) {
		texts = append(texts, getenv(name))
	}
	for _, name := range secretEnv {
		texts = append(texts, getenv(name))
	}
	return slices.DeleteFunc(texts, func(t string) bool { return t == "" || strings.HasPrefix(t, "env:") })
}

// looksLikeConnection: an argument with an engine's scheme or a password=
// is a connection string whatever flag it follows.
func looksLikeConnection(a string) bool {
	scheme, _, ok := strings.Cut(a, "://")
	_, scheme, _ = strings.Cut(scheme, "=") // run's --target NAME=URI
	if ok && slices.Contains([]string{"postgres", "postgresql", "mysql", "mariadb"}, strings.ToLower(scheme)) {
		return true
	}
	return strings.Contains(strings.ToLower(a), "password=")
}

// envNames are the variables named with env:NAME anywhere on the command
// line.
func envNames(args []string) []string {
	var names []string
	for _, a := range args {
		for rest := a; ; {
			i := strings.Index(rest, "env:")
			if i < 0 {
				break
			}
			rest = rest[i+4:]
			name := rest
			if j := strings.IndexAny(name, " ,;="); j >= 0 {
				name = name[:j]
			}
			if name != "" {
				names = append(names, name)
			}
		}
	}
	return names
}

// redactingWriter replaces the secrets in everything written through it.
type redactingWriter struct {
	w       io.Writer
	secrets []string
}

func (r *redactingWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(r.w, redactSecrets(string(p), r.secrets)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// redactSecrets replaces every secret in s, longest first.
func redactSecrets(s string, secrets []string) string {
	for _, sec := range secrets {
		s = strings.ReplaceAll(s, sec, "xxxxx")
	}
	return s
}

// Fd lets the terminal checks see through the filter.
func (r *redactingWriter) Fd() uintptr {
	if f, ok := r.w.(interface{ Fd() uintptr }); ok {
		return f.Fd()
	}
	return ^uintptr(0)
}
