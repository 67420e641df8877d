package mariadb_test

import (
	"context"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine/enginetest"
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
	touched := enginetest.LinkToVictim(t, inst.LogPath())
	_ = inst.Restart(ctx) // may fail: the log cannot be opened
	if err := touched(); err != nil {
		t.Error(err)
	}
}
