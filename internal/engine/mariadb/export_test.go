package mariadb

import (
	"context"
	"os"

	"github.com/dbrig/dbrig/internal/engine"
)

// MarkByTable makes a target mark its databases with a table, as on a
// server without database comments (MySQL), so that way is tested on
// MariaDB too.
func (t *Target) MarkByTable() { t.markByTable = true }

// PoisonTemplate makes this process's template for e's binaries and no
// install-time settings (made now if need be) hold poison's changes, and
// returns what puts the template back: a test that calls it must run alone
// (not in parallel), since every Start of the process copies the template.
func PoisonTemplate(ctx context.Context, e *Engine, poison func(*engine.DirImage)) (restore func(), err error) {
	bin, err := e.FindBinaries(ctx)
	if err != nil {
		return nil, err
	}
	user, err := engine.FindServerUser()
	if err != nil {
		return nil, err
	}
	clean, err := templateFor(ctx, bin, user, nil, os.TempDir())
	if err != nil {
		return nil, err
	}
	key := templateKeyOf(bin, user, nil)
	poisoned := clean.Clone()
	poison(poisoned)
	templates.Set(key, poisoned)
	return func() { templates.Set(key, clean) }, nil
}

// TemplateContains reports whether any template of this process holds b.
func TemplateContains(b []byte) bool {
	found := false
	templates.Each(func(_ templateKey, image *engine.DirImage) {
		found = found || image.Contains(b)
	})
	return found
}
