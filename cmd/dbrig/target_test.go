package main

import (
	"bytes"
	"context"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// countingListener accepts TCP connections on loopback, counts them and
// closes each at once: a dial to it shows, and fails fast.
func countingListener(t *testing.T) (port string, accepted *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted = &atomic.Int64{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			_ = c.Close()
		}
	}()
	t.Cleanup(func() { _ = ln.Close(); <-done })
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port), accepted
}

// TestOneTargetSyntaxForEveryCommand gives every command that names a
// server of the user's (run's and every load's --target, doctor's --db,
// replicate's --publisher and --subscriber) the same forms, [NAME=]URI and
// [NAME=]env:VAR. A form that parses dials the server it names; one that
// does not, or names another instance, exits 2 and dials nothing, not
// even libpq's default server (PGHOST, PGPORT point at a second listener
// here): `load oltp --target db=env:MY_PG` was once read as a keyword/value
// string and dialled the local default socket as root.
func TestOneTargetSyntaxForEveryCommand(t *testing.T) {
	out := t.TempDir()
	commands := []struct {
		name, role string   // role: the NAME= the command takes
		args       []string // the flag's value follows
	}{
		{"run", "db", []string{"run", "rbar-latency", "--scale", "smoke", "--out", filepath.Join(out, "run"), "--target"}},
		{"load oltp", "db", []string{"load", "oltp", "--users", "1", "--duration", "1s", "--out", filepath.Join(out, "oltp"), "--target"}},
		{"load tpch", "db", []string{"load", "tpch", "--scale", "0.01", "--out", filepath.Join(out, "tpch"), "--target"}},
		{"doctor", "db", []string{"doctor", "--db"}},
		{"replicate", "publisher", []string{"replicate", "status", "--subscriber", "env:MY_PG", "--publisher"}},
	}
	forms := []struct {
		name  string
		value func(role, uri string) string
		dials bool
		want  string // in stderr when it does not dial
	}{
		{"URI", func(_, uri string) string { return uri }, true, ""},
		{"NAME=URI", func(role, uri string) string { return role + "=" + uri }, true, ""},
		{"env:VAR", func(string, string) string { return "env:MY_PG" }, true, ""},
		{"NAME=env:VAR", func(role, _ string) string { return role + "=env:MY_PG" }, true, ""},
		{"NAME=nonsense", func(role, _ string) string { return role + "=nonsense" }, false, "unknown connection scheme"},
		{"another NAME", func(_, uri string) string { return "other=" + uri }, false, "other"},
		{"env:VAR unset", func(role, _ string) string { return role + "=env:DBRIG_NO_SUCH_VAR" }, false, "the environment variable DBRIG_NO_SUCH_VAR is empty or unset"},
		{"env:VAR holding NAME=", func(string, string) string { return "env:NAMED_PG" }, false, "a variable holds the connection string alone"},
		{"NAME= alone", func(role, _ string) string { return role + "=" }, false, "want [NAME=]URI or [NAME=]env:VAR"},
	}
	for _, c := range commands {
		for _, f := range forms {
			t.Run(c.name+"/"+f.name, func(t *testing.T) {
				yours, dialled := countingListener(t)
				fallback, defaulted := countingListener(t)
				t.Setenv("PGHOST", "127.0.0.1")
				t.Setenv("PGPORT", fallback)
				t.Setenv("PGCONNECT_TIMEOUT", "5")
				uri := "postgres://app@127.0.0.1:" + yours + "/app?connect_timeout=5"
				env := map[string]string{"MY_PG": uri, "NAMED_PG": "db=" + uri}
				value := f.value(c.role, uri)
				ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
				defer cancel()
				var stdout, stderr bytes.Buffer
				code := run(ctx, append(c.args, value), &app{stdout: &stdout, stderr: &stderr, getenv: func(k string) string { return env[k] }, version: "test"})
				// Each dial was accepted before dbrig saw it closed, so
				// the counts are whole once run returns.
				n := dialled.Load()
				if d := defaulted.Load(); d != 0 {
					t.Errorf("dbrig dialled libpq's default server %d times:\n%s", d, stderr.String())
				}
				if !f.dials {
					if code != exitUsage || n != 0 || !strings.Contains(stderr.String(), f.want) {
						t.Errorf("exit %d after %d dials, want 2 after none with %q:\n%s", code, n, f.want, stderr.String())
					}
					return
				}
				if code == exitUsage || n == 0 {
					t.Errorf("exit %d after %d dials, want the server %s names dialled:\n%s", code, n, value, stderr.String())
				}
			})
		}
	}
}

// TestRunTargetWithoutAName: a --target without NAME= stands for the
// study's only instance; in a study of several it is refused, naming them.
func TestRunTargetWithoutAName(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"run", "geo-replication", "--target", "postgres://app@127.0.0.1:1/app"},
		&app{stdout: &stdout, stderr: &stderr, getenv: func(string) string { return "" }, version: "test"})
	if want := "--target without a name: study geo-replication has"; code != exitUsage || !strings.Contains(stderr.String(), want) {
		t.Errorf("exit %d, want 2 with %q:\n%s", code, want, stderr.String())
	}
}
