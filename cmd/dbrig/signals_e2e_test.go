package main

import (
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

// TestInterruptedLoad: `dbrig load oltp` stopped by SIGINT or SIGTERM in
// its measured interval exits 130; the point is recorded as interrupted with what it measured,
// and is no result (not in the summary's points, not counted measured in
// the report); no server or directory of dbrig's is left, and on a
// target the workload's database is gone.
func TestInterruptedLoad(t *testing.T) {
	pgtest.Binaries(t)
	for _, tt := range []struct {
		name   string
		sig    syscall.Signal
		target bool
	}{
		{"SIGINT", syscall.SIGINT, false},
		{"SIGTERM on a target", syscall.SIGTERM, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			base := pgtest.BaseDir(t)
			dir := filepath.Join(t.TempDir(), "load")
			args := []string{"load", "oltp", "--users", "2", "--duration", "10m", "--warm-up", "1s", "--scale", "0.01", "--json", "--out", dir}
			var server interface {
				Exec(context.Context, string, ...string) error
			}
			if tt.target {
				inst := pgtest.Start(t, "users", nil)
				server = inst
				t.Setenv("DBRIG_TEST_TARGET", inst.Conn("postgres").URI())
				args = append(args, "--target", "env:DBRIG_TEST_TARGET")
			}
			cmd, stdout, lines := startDbrig(t, base, args...)
			log := signalWhenMeasuring(t, cmd, lines, tt.sig)
			err := cmd.Wait()
			all := strings.Join(log, "\n") + "\n" + stdout.String()
			if code := exitCode(err); code != 130 {
				t.Errorf("exit %d (%v) on %v, want 130:\n%s", code, err, tt.sig, all)
			}
			pgtest.WaitNoServers(t, base, 15*time.Second)
			assertNoInstanceDirs(t, base)
			if server != nil && server.Exec(context.Background(), "dbrig_load_oltp", "SELECT 1") == nil {
				t.Error("the workload's database is still on the target")
			}
			saved, err := study.ReadResults(dir)
			if err != nil || len(saved) != 1 {
				t.Fatalf("results.jsonl holds %d points (%v), want the interrupted one:\n%s", len(saved), err, all)
			}
			if p := saved[0]; !p.Interrupted() || p.Measured() || p.Metrics["measured_s"] <= 0 {
				t.Errorf("the point is saved with status %q, measured %v, metrics %v; want interrupted with its partial figures", p.Status, p.Measured(), p.Metrics)
			}
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

// signalWhenMeasuring sends sig once dbrig prints a second of its measured
// interval, and returns every stderr line up to dbrig's end.
func signalWhenMeasuring(t *testing.T, cmd *exec.Cmd, lines <-chan string, sig syscall.Signal) []string {
	t.Helper()
	var log []string
	signalled := false
	for line := range lines {
		log = append(log, line)
		if !signalled && strings.Contains(line, " measured ") && strings.Contains(line, " tps ") {
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			signalled = true
		}
	}
	if !signalled {
		t.Fatalf("dbrig ended before its measured interval:\n%s", strings.Join(log, "\n"))
	}
	return log
}
