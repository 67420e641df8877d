package mariadb_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/enginetest"
	"github.com/dbrig/dbrig/internal/engine/mariadb"
	"github.com/dbrig/dbrig/internal/engine/mariadb/mariatest"
)

// The orphan tests run this test binary again as a child that starts an
// instance and is then killed, interrupted or panics, as dbrig might be.
const (
	helperEnv     = "DBRIG_MARIADB_HELPER"
	helperBaseEnv = "DBRIG_MARIADB_HELPER_BASE"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode == "once" {
		os.Exit(helperOnce(os.Getenv(helperBaseEnv)))
	} else if mode != "" {
		os.Exit(helperMain(mode, os.Getenv(helperBaseEnv)))
	}
	os.Exit(enginetest.RunWithTempCache(m))
}

// helperMain starts an instance, says "ready", and then waits: for SIGINT
// or SIGTERM, on which it stops the instance as dbrig does, or for a line
// on stdin, on which it panics (mode "panic").
func helperMain(mode, base string) int {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	inst, err := mariadb.New(os.Getenv("DBRIG_MARIADB_BIN")).StartInstance(ctx,
		engine.InstanceConfig{Name: "child", Settings: mariatest.FastSettings}, engine.StartOptions{BaseDir: base})
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 1
	}
	fmt.Printf("ready %d\n", inst.PID())
	if mode == "panic" {
		bufio.NewReader(os.Stdin).ReadString('\n')
		panic("the helper panics with a server running")
	}
	<-ctx.Done()
	if err := inst.Stop(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 1
	}
	return 0
}

func TestNoOrphanServers(t *testing.T) {
	mariatest.Engine(t) // skip when no server is installed
	tests := []struct {
		mode string
		end  func(c *exec.Cmd, stdin *os.File) error
		// graceful: the child stopped its instance; otherwise the kernel
		// killed the server and RemoveStale clears the directory.
		graceful bool
	}{
		{"kill", func(c *exec.Cmd, _ *os.File) error { return c.Process.Signal(syscall.SIGKILL) }, false},
		{"panic", func(_ *exec.Cmd, stdin *os.File) error { _, err := stdin.WriteString("now\n"); return err }, false},
		{"interrupt", func(c *exec.Cmd, _ *os.File) error { return c.Process.Signal(syscall.SIGINT) }, true},
		{"terminate", func(c *exec.Cmd, _ *os.File) error { return c.Process.Signal(syscall.SIGTERM) }, true},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			base := mariatest.BaseDir(t)
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), helperEnv+"="+tt.mode, helperBaseEnv+"="+base)
			stdinR, stdinW, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer stdinW.Close()
			cmd.Stdin = stdinR
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := engine.Start(cmd); err != nil { // dies with the test binary
				t.Fatal(err)
			}
			stdinR.Close()
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }() // owned by the child; collected below
			defer func() {
				_ = cmd.Process.Kill()
				<-done
			}()
			line, err := bufio.NewReader(out).ReadString('\n')
			if !strings.HasPrefix(line, "ready ") {
				<-done
				t.Fatalf("the helper did not start an instance (%q, %v): %s", line, err, stderr.String())
			}
			if n := len(mariatest.Servers(base)); n != 1 {
				t.Fatalf("%d mariadbd processes under %s, want 1", n, base)
			}
			if err := tt.end(cmd, stdinW); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				done <- err
				if tt.graceful && err != nil {
					t.Errorf("the helper did not exit cleanly: %v: %s", err, stderr.String())
				}
			case <-time.After(60 * time.Second):
				t.Fatal("the helper did not exit")
			}
			mariatest.WaitNoServers(t, base, 10*time.Second)
			// An exiting process's command line reads empty before it is
			// gone: wait for the server's pid itself too.
			pid, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "ready ")))
			mariatest.WaitExited(t, pid, 10*time.Second)
			if !tt.graceful {
				removed := mariadb.RemoveStale(base)
				if len(removed) != 1 || !strings.HasPrefix(filepath.Base(removed[0]), "dbrig-mariadb-child-") {
					t.Errorf("RemoveStale = %v, want the child's instance directory", removed)
				}
			}
			if entries, _ := os.ReadDir(base); len(entries) != 0 {
				t.Errorf("%d entries left in %s", len(entries), base)
			}
		})
	}
}

func TestRemoveStaleSparesLiveAndKeptInstances(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	e := mariatest.Engine(t)
	base, dataBase := mariatest.BaseDir(t), mariatest.BaseDir(t)
	live := mariatest.StartConfig(t, engine.InstanceConfig{Name: "live", DataDir: dataBase}, base)
	kept, err := e.StartInstance(ctx, engine.InstanceConfig{Name: "kept", Settings: mariatest.FastSettings}, engine.StartOptions{BaseDir: base, Keep: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := kept.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	// A directory whose owner and server are gone, with a data directory
	// elsewhere: what a SIGKILLed dbrig leaves.
	dead := filepath.Join(base, "dbrig-mariadb-dead-1")
	deadData := filepath.Join(dataBase, "dbrig-data-mariadb-dead-1")
	for _, d := range []string{dead, deadData} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// pid 1 is alive but is no dbrig of this start time, nor a mariadbd.
	os.WriteFile(filepath.Join(dead, "owner"), []byte("1 0\n"), 0o600)
	os.WriteFile(filepath.Join(dead, "mariadbd.pid"), []byte("1\n"), 0o600)
	os.WriteFile(filepath.Join(dead, "external"), []byte(deadData+"\n/etc\n"), 0o600)

	removed := mariadb.RemoveStale(base)
	if len(removed) != 1 || removed[0] != dead {
		t.Errorf("RemoveStale = %v, want only %s", removed, dead)
	}
	for _, gone := range []string{dead, deadData} {
		if _, err := os.Stat(gone); !os.IsNotExist(err) {
			t.Errorf("%s is still there (%v)", gone, err)
		}
	}
	for _, there := range []string{live.Dir(), live.DataDir(), kept.Dir(), "/etc"} {
		if _, err := os.Stat(there); err != nil {
			t.Errorf("RemoveStale removed %s: %v", there, err)
		}
	}
	if err := live.Exec(ctx, "", "SELECT 1"); err != nil {
		t.Errorf("the live instance: %v", err)
	}
	os.RemoveAll(kept.Dir())
}

// A start cancelled part-way (Ctrl-C while mariadb-install-db runs, or
// while the server starts up) stops what it started and removes its
// directory.
func TestCancelledStartLeavesNothing(t *testing.T) {
	e := mariatest.Engine(t)
	phases := []struct {
		name string
		// reached reports that the start is in this phase.
		reached func(base string) bool
	}{
		{"during mariadb-install-db", func(base string) bool {
			dirs, _ := filepath.Glob(filepath.Join(base, "dbrig-mariadb-*", "data"))
			return len(dirs) > 0
		}},
		{"while the server starts", func(base string) bool {
			logs, _ := filepath.Glob(filepath.Join(base, "dbrig-mariadb-*", "server.log"))
			return len(logs) > 0
		}},
	}
	for _, p := range phases {
		t.Run(p.name, func(t *testing.T) {
			base := mariatest.BaseDir(t)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			type result struct {
				inst *mariadb.Instance
				err  error
			}
			done := make(chan result, 1)
			go func() { // collected below
				inst, err := e.StartInstance(ctx, engine.InstanceConfig{Name: "cancel", Settings: mariatest.FastSettings}, engine.StartOptions{BaseDir: base})
				done <- result{inst, err}
			}()
			var r result
		wait:
			for {
				select {
				case r = <-done:
					break wait
				case <-time.After(time.Millisecond):
					if p.reached(base) {
						cancel()
						r = <-done
						break wait
					}
				}
			}
			if r.err == nil {
				// The start won the race: nothing to judge here.
				r.inst.Stop(context.Background())
				t.Skipf("the start finished before it could be cancelled %s", p.name)
			}
			if !errors.Is(r.err, context.Canceled) {
				t.Errorf("Start = %v, want an error that says it was cancelled", r.err)
			}
			mariatest.WaitNoServers(t, base, 10*time.Second)
			if entries, _ := os.ReadDir(base); len(entries) != 0 {
				t.Errorf("a cancelled start left %d entries in %s", len(entries), base)
			}
		})
	}
}
