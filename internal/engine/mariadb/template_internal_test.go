package mariadb

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/engine"
)

// TestEveryRedoLogGoesToTheWALDir: every redo log file of a template goes
// to wal_dir, not only ib_logfile0: before 10.5 InnoDB keeps two or more.
func TestEveryRedoLogGoesToTheWALDir(t *testing.T) {
	t.Parallel()
	src, out := t.TempDir(), t.TempDir()
	for _, name := range []string{"ibdata1", "ib_logfile0", "ib_logfile1"} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(name), 0o660); err != nil {
			t.Fatal(err)
		}
	}
	template, err := engine.ReadDirImage(src, uint32(os.Getuid()))
	if err != nil {
		t.Fatal(err)
	}
	i := &Instance{dataDir: filepath.Join(out, "data"), walDir: filepath.Join(out, "wal")}
	if err := os.Mkdir(i.walDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := i.writeDataDir(template); err != nil {
		t.Fatal(err)
	}
	for name, dir := range map[string]string{"ibdata1": i.dataDir, "ib_logfile0": i.walDir, "ib_logfile1": i.walDir} {
		if got, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(got) != name {
			t.Errorf("%s in %s: %q (%v)", name, dir, got, err)
		}
	}
	if names, _ := os.ReadDir(i.dataDir); len(names) != 1 {
		t.Errorf("the data directory holds %d entries, want ibdata1 only", len(names))
	}
}

// TestBootstrapFailureHidesTheHash: a failed bootstrap's error keeps what
// mariadbd said but not the password's hash, should an error quote the
// statement that holds it.
func TestBootstrapFailureHidesTheHash(t *testing.T) {
	t.Parallel()
	i := &Instance{password: "not-a-real-password", dataDir: "/nonexistent/data"}
	hash := nativePasswordHash(i.password)
	said := "ERROR: 1064  You have an error in your SQL syntax; check the manual that corresponds to your MariaDB server version for the right syntax to use near '" + hash + "' at line 1\n"
	err := i.bootstrapFailed(errors.New("exit status 1"), said)
	if msg := err.Error(); strings.Contains(msg, hash) || strings.Contains(msg, hash[1:]) || !strings.Contains(msg, "ERROR: 1064") {
		t.Errorf("the error holds the hash or lost the server's error: %s", msg)
	}
}
