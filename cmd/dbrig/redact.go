package main

import (
	"io"
	"slices"
	"strings"

	"github.com/dbrig/dbrig/internal/engine"
)

// secretEnv are the environment variables dbrig reads connection strings
// from by name.
var secretEnv = []string{"DBRIG_PUBLISHER", "DBRIG_SUBSCRIBER"}

// userSecrets returns the passwords in every connection string the user
// gave: on the command line (as a flag's value or an argument) and in the
// environment variables dbrig reads them from, including those a flag
// names with env:NAME. Short ones are left to structural redaction.
func userSecrets(args []string, getenv func(string) string) []string {
	var texts []string
	for _, a := range args {
		texts = append(texts, a)
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
			if name != "" && getenv != nil {
				texts = append(texts, getenv(name))
			}
		}
	}
	if getenv != nil {
		for _, name := range secretEnv {
			texts = append(texts, getenv(name))
		}
	}
	var out []string
	for _, t := range texts {
		for _, pw := range engine.Passwords(t) {
			if len(pw) >= 3 && !slices.Contains(out, pw) {
				out = append(out, pw)
			}
		}
	}
	// Longest first, so that a password is replaced whole before a piece
	// of it is.
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// redactingWriter replaces the secrets in everything written through it.
type redactingWriter struct {
	w       io.Writer
	secrets []string
}

func (r *redactingWriter) Write(p []byte) (int, error) {
	s := string(p)
	for _, sec := range r.secrets {
		s = strings.ReplaceAll(s, sec, "xxxxx")
	}
	if _, err := io.WriteString(r.w, s); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Fd lets the terminal checks see through the filter.
func (r *redactingWriter) Fd() uintptr {
	if f, ok := r.w.(interface{ Fd() uintptr }); ok {
		return f.Fd()
	}
	return ^uintptr(0)
}
