package postgres_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
)

// TestLinksInTheDataDirectoryAreNotFollowed: dbrig may be root and the
// data directory is the server account's, whose superusers run code as it:
// a link that account puts where dbrig writes its configuration or the
// server's log gets dbrig to write to (or give away) no file but its own.
func TestLinksInTheDataDirectoryAreNotFollowed(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	inst := pgtest.Start(t, "links", nil)
	victims := t.TempDir()
	conf, log := filepath.Join(victims, "conf"), filepath.Join(victims, "log")
	for _, v := range []string{conf, log} {
		if err := os.WriteFile(v, []byte("untouched\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	link := func(path, target string) {
		t.Helper()
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, path); err != nil {
			t.Fatal(err)
		}
	}
	link(filepath.Join(inst.DataDir(), "dbrig.conf"), conf)
	if _, err := inst.Reconfigure(ctx, map[string]string{"work_mem": "8MB"}); err != nil {
		t.Errorf("reconfigure with dbrig.conf a link: %v", err)
	}
	link(inst.LogPath(), log)
	_ = inst.Restart(ctx) // may fail: the log cannot be opened
	for _, v := range []string{conf, log} {
		got, err := os.ReadFile(v)
		st, serr := os.Stat(v)
		if err != nil || serr != nil || string(got) != "untouched\n" || st.Sys().(*syscall.Stat_t).Uid != uint32(os.Getuid()) {
			t.Errorf("%s, the target of a link in the instance, was written or given away: %q (%v, %v)", filepath.Base(v), got, err, serr)
		}
	}
}
