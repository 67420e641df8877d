// Package enginetest holds what tests of every engine share: the registry
// of the engines dbrig has, as main builds it, for a workload's tests to
// open sessions through, and a base directory too deep for a socket.
package enginetest

import (
	"bytes"
	"io/fs"
	"os"
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
