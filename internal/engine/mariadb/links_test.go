package mariadb_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine/mariadb/mariatest"
)

// TestALinkAtTheServerLogIsNotFollowed: dbrig may be root and the
// instance's directory is the server account's: a link that account puts
// where the server's log goes gets dbrig to write to (or give away) no
// file but its own when the server starts again.
func TestALinkAtTheServerLogIsNotFollowed(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	inst := mariatest.Start(t, "links", nil)
	victim := filepath.Join(t.TempDir(), "log")
	if err := os.WriteFile(victim, []byte("untouched\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(inst.LogPath()); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, inst.LogPath()); err != nil {
		t.Fatal(err)
	}
	_ = inst.Restart(ctx) // may fail: the log cannot be opened
	got, err := os.ReadFile(victim)
	st, serr := os.Stat(victim)
	if err != nil || serr != nil || string(got) != "untouched\n" || st.Sys().(*syscall.Stat_t).Uid != uint32(os.Getuid()) {
		t.Errorf("the target of a link at the server's log was written or given away: %q (%v, %v)", got, err, serr)
	}
}
