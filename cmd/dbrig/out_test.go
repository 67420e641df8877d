package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOutRefusesAUsersDirectory: --out naming a directory that holds
// files and is no run directory (or a file), and compare --html naming a
// file dbrig did not write, are refused before anything starts, and the
// user's files stay as they were.
func TestOutRefusesAUsersDirectory(t *testing.T) {
	t.Parallel()
	mine := t.TempDir()
	page := filepath.Join(mine, "report.html")
	if err := os.WriteFile(page, []byte("<p>my own report</p>\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The check comes first: were it missed, nothing could start (a target
	// on a closed port is all there is).
	const closed = "postgres://u@127.0.0.1:1/x"
	run1, run2 := runWith(t, "a", "15", map[string][3]float64{"unix": {1, 2, 3}}), runWith(t, "b", "15", map[string][3]float64{"unix": {1, 2, 3}})
	for _, args := range [][]string{
		{"run", "rbar-latency", "--scale", "smoke", "--target", "db=" + closed, "--out", mine},
		{"run", "rbar-latency", "--scale", "smoke", "--target", "db=" + closed, "--out", page},
		{"load", "oltp", "--target", closed, "--out", mine},
		{"load", "tpch", "--scale", "0.01", "--target", closed, "--out", mine},
		{"compare", run1, run2, "--html", page},
	} {
		var out, errb bytes.Buffer
		code := run(t.Context(), args, &app{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }, version: "test"})
		flag := args[len(args)-2]
		if code != 2 || !strings.Contains(errb.String(), flag+": ") {
			t.Errorf("dbrig %s: exit %d, want 2 naming %s:\n%s%s", strings.Join(args, " "), code, flag, out.String(), errb.String())
		}
	}
	entries, _ := os.ReadDir(mine)
	if b, _ := os.ReadFile(page); string(b) != "<p>my own report</p>\n" || len(entries) != 1 {
		t.Errorf("the user's directory changed: %d entries, report.html of %d bytes", len(entries), len(b))
	}
}
