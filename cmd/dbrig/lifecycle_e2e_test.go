package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine/mariadb/mariatest"
	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
	"github.com/dbrig/dbrig/internal/study"
)

// mixedSpec runs row-by-row across a 23 ms link (about 0.5 s a point) on a
// PostgreSQL instance while a set of two MariaDB instances runs beside
// it: three servers of two engines up at once.
const mixedSpec = `name = "mixed"
title = "servers of two engines at once"
[[instance]]
name = "db"
engine = "postgres"
settings = { fsync = "off" }
[[instance]]
name = "side"
engine = "mariadb"
count = 2
settings = { innodb_flush_log_at_trx_commit = 2, innodb_buffer_pool_size = "32M" }
[[link]]
between = ["client", "db"]
profile = "rtt-23ms"
[workload]
kind = "rbar"
experiment = "client-row-by-row"
rows = "${rows}"
[sweep]
rows = [20, 21, 22, 23, 24, 25, 26, 27]
[repeat]
runs = 1
`

// TestNoServerOutlivesDbrig: dbrig interrupted (SIGINT, SIGTERM) stops
// every server of either engine and removes their directories; dbrig
// killed (SIGKILL) leaves no server running (the kernel stops them) and
// the next run, here its resume, removes what they left on disk.
func TestNoServerOutlivesDbrig(t *testing.T) {
	t.Parallel()
	pgtest.Binaries(t)
	mariatest.Engine(t)
	file := filepath.Join(t.TempDir(), "mixed.toml")
	if err := os.WriteFile(file, []byte(mixedSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			base := mariatest.BaseDir(t)
			dir := filepath.Join(t.TempDir(), "run")
			cmd, _, lines := startDbrig(t, base, "run", file, "--out", dir)
			var log []string
			signalled := false
			for line := range lines {
				log = append(log, line)
				if !signalled && strings.HasPrefix(line, "[1/8] ") {
					if n := len(mariatest.Servers(base)); n != 2 {
						t.Errorf("%d mariadbd under %s while the run runs, want 2", n, base)
					}
					if len(pgtest.ServersUnder(base)) == len(mariatest.Servers(base)) {
						t.Errorf("no PostgreSQL server under %s while the run runs", base)
					}
					if err := cmd.Process.Signal(sig); err != nil {
						t.Fatal(err)
					}
					signalled = true
				}
			}
			err := cmd.Wait()
			if !signalled {
				t.Fatalf("the run ended (%v) before its first point:\n%s", err, strings.Join(log, "\n"))
			}
			mariatest.WaitNoServers(t, base, 15*time.Second)
			pgtest.WaitNoServers(t, base, 15*time.Second)
			if sig != syscall.SIGKILL {
				if code := exitCode(err); code != 130 {
					t.Errorf("dbrig exited %d on %s, want 130:\n%s", code, sig, strings.Join(log, "\n"))
				}
				assertNoInstanceDirs(t, base)
				return
			}
			if left, _ := filepath.Glob(filepath.Join(base, "dbrig-*")); len(left) != 3 {
				t.Errorf("a killed dbrig left %v, want its three instance directories", left)
			}
			// The resume starts servers of both engines again, and each
			// engine's start removes what a dead dbrig left.
			cmd, stdout, lines := startDbrig(t, base, "run", "--resume", dir)
			for line := range lines {
				log = append(log, line)
			}
			if err := cmd.Wait(); err != nil {
				t.Fatalf("resume: %v\n%s\n%s", err, stdout, strings.Join(log, "\n"))
			}
			mariatest.WaitNoServers(t, base, 15*time.Second)
			pgtest.WaitNoServers(t, base, 15*time.Second)
			assertNoInstanceDirs(t, base)
			results, err := study.ReadResults(dir)
			if err != nil {
				t.Fatal(err)
			}
			measured := map[string]bool{}
			for _, r := range results {
				if r.Measured() {
					measured[r.Key] = true
				}
			}
			if len(measured) != 8 {
				t.Errorf("after the resume %d of 8 points are measured", len(measured))
			}
		})
	}
}

// TestServerFailureIsPrintedOnce: a server that refuses to start (a
// setting only the running server can judge) fails the point with the
// end of its log, printed once; the message says how to keep the log,
// and with --keep where it is.
func TestServerFailureIsPrintedOnce(t *testing.T) {
	t.Parallel()
	mariatest.Engine(t)
	spec := strings.Replace(mixedSpec, `innodb_buffer_pool_size = "32M" }`, `innodb_buffer_pool_size = "32M", default_storage_engine = "NoSuchEngine" }`, 1)
	spec = strings.Replace(spec, "count = 2", "count = 1", 1) // one server fails, so one log
	file := filepath.Join(t.TempDir(), "failing.toml")
	if err := os.WriteFile(file, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, keep := range []bool{false, true} {
		base := mariatest.BaseDir(t)
		args := []string{"run", file, "--out", filepath.Join(t.TempDir(), "run")}
		if keep {
			args = append(args, "--keep")
		}
		cmd, stdout, lines := startDbrig(t, base, args...)
		var stderr []string
		for line := range lines {
			stderr = append(stderr, line)
		}
		err := cmd.Wait()
		all := strings.Join(stderr, "\n") + "\n" + stdout.String()
		if code := exitCode(err); code != 1 {
			t.Errorf("--keep %v: exit %d, want 1:\n%s", keep, code, all)
		}
		if n := strings.Count(all, "Unknown/unsupported storage engine: NoSuchEngine"); n != 1 {
			t.Errorf("--keep %v: the server's error is printed %d times, want once:\n%s", keep, n, all)
		}
		if strings.Contains(all, "level=ERROR") {
			t.Errorf("--keep %v: a raw log line:\n%s", keep, all)
		}
		mariatest.WaitNoServers(t, base, 15*time.Second)
		pgtest.WaitNoServers(t, base, 15*time.Second)
		if !keep {
			if !strings.Contains(all, "--keep keeps the instances' directories and server logs") {
				t.Errorf("the failure does not say how to keep the server log:\n%s", all)
			}
			assertNoInstanceDirs(t, base)
			continue
		}
		kept, _ := filepath.Glob(filepath.Join(base, "dbrig-mariadb-side-1-*"))
		if len(kept) != 1 || !strings.Contains(all, "(the instance directory "+kept[0]+" is kept)") {
			t.Errorf("--keep: kept %v; the message does not name it:\n%s", kept, all)
		} else if log, err := os.ReadFile(filepath.Join(kept[0], "server.log")); err != nil || !bytes.Contains(log, []byte("NoSuchEngine")) {
			t.Errorf("--keep: the kept server log: %v", err)
		}
	}
}
