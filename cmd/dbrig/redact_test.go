package main

import (
	"bytes"
	"context"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dbrig/dbrig/internal/engine/postgres"
)

// pwMarker starts every planted password, so that no text dbrig prints of
// its own can be taken for one.
const pwMarker = "Zq7"

// connForms put a password where a user means one, in the forms users type
// right and wrong: by URI, keyword/value, query parameter, percent-encoded,
// without the '@', with a space, bare. The form is picked by a fuzzed byte.
var connForms = []func(user, pw, rest string) string{
	func(u, pw, r string) string { return "postgres://" + u + ":" + pw + "@" + r },
	func(u, pw, r string) string { return "postgres://" + u + ":" + pw + " " + r },
	func(u, pw, r string) string { return "postgres://" + u + ":" + pw + "/" + r },
	func(u, pw, r string) string { return u + "/" + pw + "@" + r },
	func(u, pw, r string) string { return pw },
	func(u, pw, r string) string { return "mysql://" + u + ":" + pw + "@" + r },
	func(u, pw, r string) string { return "mysql://" + u + ":" + pw + "/" + r },
	func(u, pw, r string) string { return "mariadb://" + u + ":" + pw + " " + r },
	func(u, pw, r string) string { return "host=127.0.0.1 port=1 user=" + u + " password=" + pw + " " + r },
	func(u, pw, r string) string {
		return "host=127.0.0.1 port=1 user=" + u + " password='" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(pw) + "' " + r
	},
	func(u, pw, r string) string { return "postgresql://" + u + "@" + r + "?password=" + pw },
	func(u, pw, r string) string {
		return "postgresql://" + u + "@" + r + "?sslmode=disable&sslpassword=" + pw
	},
	func(u, pw, r string) string { return "postgres://" + u + ":" + url.PathEscape(pw) + "@" + r },
	func(u, pw, r string) string { return "mariadb://" + u + ":" + url.QueryEscape(pw) + "@" + r },
	func(u, pw, r string) string { return u + ":" + pw + "@" + r },
	func(u, pw, r string) string { return "postgres//" + u + ":" + pw + "@" + r },
}

// FuzzNoPasswordInOutput: whatever connection string a user gives, well
// formed or not, and however it arrives (a flag, env:VAR, DBRIG_PUBLISHER),
// no command that takes a server prints its password on stdout or stderr
// (--json included) or writes it under --out. A string that parses names
// 127.0.0.1:1 or a socket, so that each case ends at a refused connection;
// one that does not parse must be refused before anything starts (exit 2).
func FuzzNoPasswordInOutput(f *testing.F) {
	// Each form with two of the passwords that have broken redaction
	// before: '@', ':', '/', spaces, quotes, percent signs.
	pws := []string{"S3cretPW!", "a b", "p@ss", "p:ss@x", "p/ss", "it's", `q"u'o\te`, "%41%zz", " 'x y' ", "", "%20x", "x@127.0.0.1:1/db?a="}
	for form := range connForms {
		for _, pw := range []string{pws[form%len(pws)], pws[(form+5)%len(pws)]} {
			f.Add(uint8(form), "app", pw, "127.0.0.1:1/db")
		}
	}
	// The forms the issue reported, and a string that parses with the
	// password cut by a '/'.
	f.Add(uint8(1), "repl", "S3cretPW!", "127.0.0.1:55911/shop")
	f.Add(uint8(2), "app", "S3cretPW!", "appdb")
	f.Add(uint8(3), "app", "S3cretPW!", "127.0.0.1:55913/appdb")
	f.Add(uint8(6), "app", "S3cretPW!", "appdb")
	f.Add(uint8(0), "127.0.0.1:1/b", "x", "127.0.0.1:1/db")
	f.Add(uint8(8), "app", "a S3cretPW=x", "dbname=db")
	f.Fuzz(func(t *testing.T, form uint8, user, pw, rest string) {
		pw = pwMarker + pw
		if strings.Contains(user+rest, pwMarker) || strings.ContainsRune(user+pw+rest, 0) {
			t.Skip("the marker or a NUL outside the password")
		}
		s := connForms[int(form)%len(connForms)](user, pw, rest)
		if !safeToDial(s) {
			t.Skip("parses to a server other than 127.0.0.1:1 or a socket")
		}
		_, _, err := newEngines(binDirs{}).ParseTarget(s)
		_, pgErr := postgres.ParseConnInfo(s)
		parses := err == nil || pgErr == nil
		secrets := []string{pw}
		if dec, err := url.PathUnescape(pw); err == nil && dec != pw {
			secrets = append(secrets, dec)
		}
		for _, c := range serverCommands(t.TempDir(), s) {
			code, out := runCaptured(t, c.args, c.env)
			for _, sec := range secrets {
				if strings.Contains(out, sec) {
					t.Fatalf("dbrig %s with %q (%s): the password %q shows:\n%s", strings.Join(c.args, " "), s, c.via, sec, out)
				}
			}
			if code == 0 || code == 130 || (!parses && code != 2) {
				t.Errorf("dbrig %s with %q (%s): exit %d, want 2 for a string that does not parse, else 1 or 2", strings.Join(c.args, " "), s, c.via, code)
			}
		}
	})
}

// safeToDial reports whether every server a string names, if it parses,
// is 127.0.0.1 (or ::1, localhost) port 1 or a unix socket: the fuzzer may
// build a real host name, and no case may reach a server.
func safeToDial(s string) bool {
	safe := func(host string, port uint16) bool {
		return strings.HasPrefix(host, "/") || (port == 1 && (host == "127.0.0.1" || host == "::1" || host == "localhost"))
	}
	if cfg, err := pgx.ParseConfig(s); err == nil {
		if !safe(cfg.Host, cfg.Port) {
			return false
		}
		for _, fb := range cfg.Fallbacks {
			if !safe(fb.Host, fb.Port) {
				return false
			}
		}
	}
	if ci, err := postgres.ParseConnInfo(s); err == nil && !safe(ci.Host, uint16(ci.Port)) {
		return false
	}
	if _, c, err := newEngines(binDirs{}).ParseTarget(s); err == nil && !safe(c.Host, uint16(c.Port)) {
		return false
	}
	return true
}

// serverCommand is one command line of a command that takes a server,
// with the environment it runs in and how the string arrives (via).
type serverCommand struct {
	args []string
	env  map[string]string
	via  string
}

// serverCommands are the command lines of every command that takes a
// server, with the connection string s given by flag and through the
// environment, writing under dir.
func serverCommands(dir, s string) []serverCommand {
	const sub = "postgres://u@127.0.0.1:1/sub"
	byEnv := map[string]string{"DBRIG_FUZZ_URI": s}
	out := func(name string) string { return filepath.Join(dir, name) }
	cmds := []serverCommand{
		{[]string{"run", "rbar-latency", "--scale", "smoke", "--json", "--out", out("run-flag"), "--target", "db=" + s}, nil, "flag"},
		{[]string{"run", "rbar-latency", "--scale", "smoke", "--json", "--out", out("run-env"), "--target", "db=env:DBRIG_FUZZ_URI"}, byEnv, "env:"},
		{[]string{"load", "oltp", "--users", "1", "--duration", "1s", "--json", "--out", out("oltp-flag"), "--target", s}, nil, "flag"},
		{[]string{"load", "oltp", "--users", "1", "--duration", "1s", "--json", "--out", out("oltp-env"), "--target", "env:DBRIG_FUZZ_URI"}, byEnv, "env:"},
		{[]string{"load", "tpch", "--scale", "1", "--json", "--out", out("tpch-flag"), "--target=" + s}, nil, "flag"},
		{[]string{"load", "tpch", "--scale", "1", "--json", "--out", out("tpch-env"), "--target=env:DBRIG_FUZZ_URI"}, byEnv, "env:"},
		{[]string{"doctor", "--json", "--db", s}, nil, "flag"},
		{[]string{"doctor", "--db", "env:DBRIG_FUZZ_URI"}, byEnv, "env:"},
	}
	for _, action := range []string{"setup", "run", "status", "verify", "teardown"} {
		cmds = append(cmds,
			serverCommand{[]string{"replicate", action, "--json", "--verbose", "--publisher", s, "--subscriber", sub}, nil, "flag"},
			serverCommand{[]string{"replicate", action, "--json", "--verbose"}, map[string]string{"DBRIG_PUBLISHER": sub, "DBRIG_SUBSCRIBER": s}, "DBRIG_SUBSCRIBER"})
	}
	return cmds
}

// runCaptured runs one command line in this process and returns its exit
// code and everything it printed and wrote: stdout, stderr, and every file
// under the --out directory it was given.
func runCaptured(t *testing.T, args []string, env map[string]string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	code := run(ctx, args, &app{stdout: &stdout, stderr: &stderr, getenv: func(k string) string { return env[k] }, version: "test"})
	all := stdout.String() + stderr.String()
	for i, a := range args {
		if a == "--out" && i+1 < len(args) {
			all += filesUnder(t, args[i+1])
		}
	}
	return code, all
}

// filesUnder is the content of every file under dir, each after its path.
func filesUnder(t *testing.T, dir string) string {
	t.Helper()
	var all strings.Builder
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		all.WriteString("\n== " + path + "\n" + string(b))
		return err
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatalf("read %s: %v", dir, err)
	}
	return all.String()
}
