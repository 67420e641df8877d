package main

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
	"github.com/dbrig/dbrig/internal/study"
)

// TestUsersWithoutASlotAreSaidBesideTheTPS: a load of more users than
// the server has connection slots runs, and says so beside its tps: on
// the point's line, at the end of the output, and at the top of
// report.html and report.md.
func TestUsersWithoutASlotAreSaidBesideTheTPS(t *testing.T) {
	t.Parallel()
	server := pgtest.Start(t, "few-slots", map[string]string{"max_connections": "12", "superuser_reserved_connections": "2"})
	base := pgtest.BaseDir(t)
	dir := filepath.Join(t.TempDir(), "load")
	code, stdout, stderr := runDbrig(t, base, []string{"MY_PG=" + server.Conn("postgres").URI()},
		"load", "oltp", "--target", "env:MY_PG", "--users", "20", "--duration", "2s", "--warm-up", "500ms", "--scale", "0.01", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	const says = "users found every connection slot taken"
	pointLine := ""
	sc := bufio.NewScanner(strings.NewReader(stderr))
	for sc.Scan() {
		if strings.Contains(sc.Text(), "users=20 #1: tps ") {
			pointLine = sc.Text()
		}
	}
	if !strings.Contains(pointLine, "WARNING: ") || !strings.Contains(pointLine, says) {
		t.Errorf("the point's line does not say it: %q\n%s", pointLine, stderr)
	}
	if !strings.Contains(stdout, "WARNING: 20 users, ") || !strings.Contains(stdout, " tps: ") || !strings.Contains(stdout, says) {
		t.Errorf("the output's end does not say it beside the tps:\n%s", stdout)
	}
	for _, f := range []struct{ name, prefix string }{{"report.md", "> **Warning.** users=20 #1 (tps "}, {"report.html", `<p class="warning"><strong>Warning.</strong> users=20 #1 (tps `}} {
		b, err := os.ReadFile(filepath.Join(dir, f.name))
		line := ""
		for _, l := range strings.Split(string(b), "\n") {
			if strings.Contains(l, f.prefix) {
				line = l
			}
		}
		if err != nil || !strings.Contains(line, says) {
			t.Errorf("%s (%v) does not say it beside the tps at its top", f.name, err)
		}
	}
	saved, err := study.ReadResults(dir)
	if err != nil || len(saved) != 1 || saved[0].Metrics["users_without_slot"] < 1 || !saved[0].Measured() {
		t.Errorf("results.jsonl: %+v (%v)", saved, err)
	}
}
