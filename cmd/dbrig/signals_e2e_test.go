package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
	"github.com/dbrig/dbrig/internal/study"
)

// interruptedOLTPJSON is the part of an interrupted `dbrig load oltp
// --json` the tests read.
type interruptedOLTPJSON struct {
	Points      []struct{} `json:"points"`
	Interrupted []struct {
		Interrupted bool    `json:"interrupted"`
		MeasuredS   float64 `json:"measured_s"`
	} `json:"interrupted_points"`
}

// TestInterruptedLoad: `dbrig load oltp` stopped by SIGINT, SIGTERM or
// SIGHUP (a dropped terminal or ssh session) in its measured interval
// exits 130; the point is recorded as interrupted with what it measured,
// and is no result (not in the summary's points, not counted measured in
// the report); no server or directory of dbrig's is left, and on a
// target the workload's database is gone. A second signal does not cut
// the clean-up short, and dbrig says so.
func TestInterruptedLoad(t *testing.T) {
	t.Parallel()
	pgtest.Binaries(t)
	for _, tt := range []struct {
		name   string
		sig    syscall.Signal
		target bool
		twice  bool
	}{
		{"SIGINT", syscall.SIGINT, false, false},
		{"SIGTERM twice", syscall.SIGTERM, false, true},
		{"SIGHUP on a target", syscall.SIGHUP, true, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			base := pgtest.BaseDir(t)
			dir := filepath.Join(t.TempDir(), "load")
			args := []string{"load", "oltp", "--users", "2", "--duration", "10m", "--warm-up", "200ms", "--scale", "0.01", "--json", "--out", dir}
			var target *targetDB
			if tt.target {
				target = startTarget(t)
				args = append(args, "--target", "env:DBRIG_TEST_TARGET")
			}
			cmd, stdout, lines := startDbrigEnv(t, base, target.environ(), args...)
			log := signalWhenMeasuring(t, cmd, lines, tt.sig, tt.twice)
			err := cmd.Wait()
			all := strings.Join(log, "\n") + "\n" + stdout.String()
			if code := exitCode(err); code != 130 {
				t.Errorf("exit %d (%v) on %v, want 130:\n%s", code, err, tt.sig, all)
			}
			if tt.twice && !strings.Contains(all, "still stopping") {
				t.Errorf("a second signal is not answered:\n%s", all)
			}
			assertNothingLeft(t, base, target)
			assertInterruptedPoint(t, dir, all)
			j := decodeJSON[interruptedOLTPJSON](t, stdout.String())
			if len(j.Points) != 0 || len(j.Interrupted) != 1 || !j.Interrupted[0].Interrupted || j.Interrupted[0].MeasuredS <= 0 {
				t.Errorf("--json reports %d points and interrupted %+v; want none and the interrupted one", len(j.Points), j.Interrupted)
			}
			md, err := os.ReadFile(filepath.Join(dir, "report.md"))
			if err != nil || !bytes.Contains(md, []byte(": 0 measured")) || !bytes.Contains(md, []byte("### Interrupted")) {
				t.Errorf("report.md (%v) does not list the point as interrupted and none measured:\n%s", err, md)
			}
		})
	}
}

// TestHangupWithItsReaderGone: a hang-up reaches dbrig and the program
// reading its output (tee, less) at once; dbrig's writes to the closed
// pipe must not kill it before it has cleaned up on the target.
func TestHangupWithItsReaderGone(t *testing.T) {
	t.Parallel()
	pgtest.Binaries(t)
	base := pgtest.BaseDir(t)
	dir := filepath.Join(t.TempDir(), "load")
	target := startTarget(t)
	cmd := exec.Command(dbrigBinary(t), "load", "oltp", "--target", "env:DBRIG_TEST_TARGET", "--users", "2", "--duration", "10m",
		"--warm-up", "200ms", "--scale", "0.01", "--out", dir)
	cmd.Env = append(os.Environ(), append(target.environ(), "TMPDIR="+base, "NO_COLOR=1")...)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	w.Close()
	var log []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		log = append(log, sc.Text())
		if strings.Contains(sc.Text(), " measured ") && strings.Contains(sc.Text(), " tps ") {
			if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
				t.Fatal(err)
			}
			break
		}
	}
	r.Close() // the reader goes with the terminal
	if code := exitCode(cmd.Wait()); code != 130 {
		t.Errorf("exit %d, want 130:\n%s", code, strings.Join(log, "\n"))
	}
	assertNothingLeft(t, base, target)
	assertInterruptedPoint(t, dir, strings.Join(log, "\n"))
}

// TestReaderGone: `dbrig load oltp | head -1` stops dbrig as Ctrl-C
// does once head quits: the next per-second line finds the pipe closed,
// and dbrig stops its server and removes its directory, says so once on
// stderr, and exits 141 (a shell's status for SIGPIPE) instead of dying
// by the signal with its instance directory left in TMPDIR.
func TestReaderGone(t *testing.T) {
	t.Parallel()
	pgtest.Binaries(t)
	base := pgtest.BaseDir(t)
	cmd := exec.Command(dbrigBinary(t), "load", "oltp", "--users", "2", "--duration", "10m", "--warm-up", "200ms",
		"--scale", "0.01", "--out", filepath.Join(t.TempDir(), "load"))
	cmd.Env = append(os.Environ(), "TMPDIR="+base, "NO_COLOR=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	first, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("no line on stdout (%v)", err)
	}
	stdout.Close() // what head does after its line
	code := exitCode(cmd.Wait())
	if code != 141 {
		t.Errorf("exit %d, want 141 (first line %q):\n%s", code, first, stderr.String())
	}
	if n := strings.Count(stderr.String(), "broken pipe"); n != 1 {
		t.Errorf("stderr says %d times that the reader quit, want once:\n%s", n, stderr.String())
	}
	assertNothingLeft(t, base, nil)
}

// targetDB is a PostgreSQL server standing in for the user's, named to
// dbrig by DBRIG_TEST_TARGET in dbrig's environment alone (not the test
// process's, which parallel tests share).
type targetDB struct {
	exec func(context.Context, string, ...string) error
	uri  string
}

func startTarget(t *testing.T) *targetDB {
	inst := pgtest.Start(t, "users", nil)
	return &targetDB{exec: inst.Exec, uri: inst.Conn("postgres").URI()}
}

// environ is what dbrig's environment adds for the target (nothing
// without one).
func (d *targetDB) environ() []string {
	if d == nil {
		return nil
	}
	return []string{"DBRIG_TEST_TARGET=" + d.uri}
}

// assertNothingLeft: no server or instance directory under base, and no
// database of the load's on the target.
func assertNothingLeft(t *testing.T, base string, target *targetDB) {
	t.Helper()
	pgtest.WaitNoServers(t, base, 15*time.Second)
	assertNoInstanceDirs(t, base)
	if target != nil && target.exec(context.Background(), "dbrig_load_oltp", "SELECT 1") == nil {
		t.Error("the workload's database is still on the target")
	}
}

// assertInterruptedPoint: results.jsonl holds the one point, labelled
// interrupted, with the figures it measured.
func assertInterruptedPoint(t *testing.T, dir, log string) {
	t.Helper()
	saved, err := study.ReadResults(dir)
	if err != nil || len(saved) != 1 {
		t.Fatalf("results.jsonl holds %d points (%v), want the interrupted one:\n%s", len(saved), err, log)
	}
	if p := saved[0]; !p.Interrupted() || p.Measured() || p.Metrics["measured_s"] <= 0 {
		t.Errorf("the point is saved with status %q, measured %v, metrics %v; want interrupted with its partial figures", p.Status, p.Measured(), p.Metrics)
	}
}

// signalWhenMeasuring sends sig once dbrig prints a second of its measured
// interval (and, when twice, again once dbrig says it is stopping), and
// returns every stderr line up to dbrig's end.
func signalWhenMeasuring(t *testing.T, cmd *exec.Cmd, lines <-chan string, sig syscall.Signal, twice bool) []string {
	t.Helper()
	var log []string
	sent := 0
	for line := range lines {
		log = append(log, line)
		first := sent == 0 && strings.Contains(line, " measured ") && strings.Contains(line, " tps ")
		again := sent == 1 && twice && strings.Contains(line, ": stopping;")
		if first || again {
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			sent++
		}
	}
	if sent == 0 || twice && sent == 1 {
		t.Fatalf("dbrig ended after %d signals:\n%s", sent, strings.Join(log, "\n"))
	}
	return log
}
