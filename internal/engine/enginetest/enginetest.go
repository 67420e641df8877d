// Package enginetest holds what tests of every engine share: the registry
// of the engines dbrig has, as main builds it, for a workload's tests to
// open sessions through, and a base directory too deep for a socket.
package enginetest

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/mariadb"
	"github.com/dbrig/dbrig/internal/engine/postgres"
)

// Registry is every engine, with the binaries found as dbrig finds them.
func Registry() *engine.Registry {
	return engine.NewRegistry(postgres.New(""), mariadb.New(""))
}

// DeepDir is a directory under base whose path leaves no room for a unix
// socket's (107 bytes) below it, as an instance on an emulated disk lies
// under its loop device's mount under TMPDIR; every level is 0755, so the
// server's account reaches it when tests run as root.
func DeepDir(tb testing.TB, base string) string {
	tb.Helper()
	deep := filepath.Join(base, strings.Repeat("d", 60), strings.Repeat("e", 40))
	if err := os.MkdirAll(deep, 0o755); err != nil {
		tb.Fatal(err)
	}
	for d := deep; d != base; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			tb.Fatal(err)
		}
	}
	return deep
}

// CPUOfProcessAndChildren is the CPU time this process and every process
// it waited for (an installer, a server and what the server forked) have
// used: what starting and stopping servers costs the machine.
func CPUOfProcessAndChildren() time.Duration {
	var total time.Duration
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		if err := syscall.Getrusage(who, &ru); err == nil {
			total += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
	return total
}

// FileHolding names a regular file under dir that holds b, or "": where a
// test looks for a password that must be on no disk.
func FileHolding(tb testing.TB, dir string, b []byte) string {
	tb.Helper()
	var found string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || found != "" || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(path)
		if err == nil && bytes.Contains(data, b) {
			found = path
		}
		return err
	})
	if err != nil {
		tb.Fatalf("read %s: %v", dir, err)
	}
	return found
}

// KillWhenMade runs the test binary as a helper dbrig (env added to its
// environment, no test run: its TestMain does the work), waits until the
// one path matching pattern exists (what, the step that makes it, has
// begun), kills the helper with SIGKILL and waits for its end; it returns
// the path. It fails the test if the helper ends first or the path is not
// there in 60 s.
func KillWhenMade(tb testing.TB, env []string, pattern, what string) string {
	tb.Helper()
	cmd, out := startHelper(tb, env)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }() // owned by the child; collected below
	defer func() {
		_ = cmd.Process.Kill()
		<-done
	}()
	path := waitForChildPath(tb, pattern, what, done, out)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		tb.Fatal(err)
	}
	done <- <-done
	return path
}

func waitForChildPath(tb testing.TB, pattern, what string, done chan error, out *strings.Builder) string {
	tb.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if paths, _ := filepath.Glob(pattern); len(paths) == 1 {
			return paths[0]
		}
		select {
		case err := <-done:
			done <- err
			tb.Fatalf("the helper ended before %s (%v): %s", what, err, out.String())
		case <-time.After(time.Millisecond):
		}
	}
	tb.Fatalf("%s did not begin in 60 s", what)
	return ""
}

// LinkToVictim replaces path (a file dbrig writes in a server account's
// directory) by a link to a new file of the test's, as that account could,
// and returns what says whether dbrig wrote to or gave away that file.
func LinkToVictim(tb testing.TB, path string) (touched func() error) {
	tb.Helper()
	victim := filepath.Join(tb.TempDir(), filepath.Base(path))
	if err := os.WriteFile(victim, []byte("untouched\n"), 0o600); err != nil {
		tb.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		tb.Fatal(err)
	}
	if err := os.Symlink(victim, path); err != nil {
		tb.Fatal(err)
	}
	return func() error {
		got, err := os.ReadFile(victim)
		st, serr := os.Stat(victim)
		if err != nil || serr != nil || string(got) != "untouched\n" || st.Sys().(*syscall.Stat_t).Uid != uint32(os.Getuid()) {
			return fmt.Errorf("%s, the target of a link at %s, was written or given away: %q (%v, %v)", victim, path, got, err, serr)
		}
		return nil
	}
}

// RunHelper runs the test binary as a helper dbrig (env added to its
// environment, no test run: its TestMain does the work) to its end, and
// returns what it said on stdout and stderr.
func RunHelper(tb testing.TB, env ...string) (string, error) {
	tb.Helper()
	cmd, out := startHelper(tb, env)
	err := cmd.Wait()
	return out.String(), err
}

// startHelper starts the test binary as a helper dbrig (env added to its
// environment, no test run), its stdout and stderr into out.
func startHelper(tb testing.TB, env []string) (cmd *exec.Cmd, out *strings.Builder) {
	tb.Helper()
	cmd = exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	out = new(strings.Builder)
	cmd.Stdout, cmd.Stderr = out, out
	if err := engine.Start(cmd); err != nil { // dies with the test binary
		tb.Fatal(err)
	}
	return cmd, out
}

// PoisonTemplateFile rewrites the one template file of engineName in the
// template cache dir so that its tree holds files (relative path to
// content), replaced or added, its sum made anew (so that the file is
// judged by what it holds, not refused as damaged): what another account
// could not do to dbrig's own cache, but what a test uses to show what a
// template's file can and cannot reach a server.
func PoisonTemplateFile(tb testing.TB, dir, engineName string, files map[string]string) {
	tb.Helper()
	names, _ := filepath.Glob(filepath.Join(dir, engine.TemplatesSubdir, engineName+"-*.tmpl"))
	if len(names) != 1 {
		tb.Fatalf("%s templates in %s: %v, want one", engineName, dir, names)
	}
	err := engine.RewriteTemplateFile(names[0], func(img *engine.DirImage) {
		for rel, content := range files {
			img.SetFile(rel, []byte(content))
		}
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// RunWithTempCache runs m's tests with a template cache of their own, a
// fresh directory removed at the end, unless CacheDirEnv names one
// already (make test gives every package one): tests run without make
// then leave no template or lock in the user's cache, nor take one made
// by an earlier run.
func RunWithTempCache(m *testing.M) int {
	if os.Getenv(engine.CacheDirEnv) != "" {
		return m.Run()
	}
	dir, err := os.MkdirTemp("", "dbrig-test-cache-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "make a template cache for the tests:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	if err := os.Setenv(engine.CacheDirEnv, dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// SecondProcessTakesTheCachedTemplate checks, with startOnce (a helper
// process starting one instance of engineName with the given template
// cache, which returns how many templates its installer made and what it
// said), that the first process on a fresh cache runs the installer, the
// second runs none and copies the first's template, and the cache holds
// one template. It returns the cache for the engine's own checks.
func SecondProcessTakesTheCachedTemplate(t *testing.T, engineName, installer string, startOnce func(t *testing.T, cacheDir string) (made, said string)) string {
	t.Helper()
	cache := t.TempDir()
	for i, want := range []string{"1", "0"} {
		if made, out := startOnce(t, cache); made != want {
			t.Errorf("process %d had %s make %s templates, want %s: %s", i+1, installer, made, want, out)
		}
	}
	if names, _ := filepath.Glob(filepath.Join(cache, engine.TemplatesSubdir, engineName+"-*.tmpl")); len(names) != 1 {
		t.Errorf("templates in the cache: %v, want one", names)
	}
	return cache
}
