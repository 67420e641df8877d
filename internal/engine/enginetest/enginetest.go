// Package enginetest holds what tests of every engine share: the registry
// of the engines dbrig has, as main builds it, for a workload's tests to
// open sessions through, and a base directory too deep for a socket.
package enginetest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

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
