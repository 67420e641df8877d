package postgres_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine/enginetest"
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
	conf := enginetest.LinkToVictim(t, filepath.Join(inst.DataDir(), "dbrig.conf"))
	if _, err := inst.Reconfigure(ctx, map[string]string{"work_mem": "8MB"}); err != nil {
		t.Errorf("reconfigure with dbrig.conf a link: %v", err)
	}
	log := enginetest.LinkToVictim(t, inst.LogPath())
	_ = inst.Restart(ctx) // may fail: the log cannot be opened
	for _, touched := range []func() error{conf, log} {
		if err := touched(); err != nil {
			t.Error(err)
		}
	}
}
