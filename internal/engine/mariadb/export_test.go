package mariadb

import (
	"context"

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
	t, err := templateFor(ctx, bin, user, nil)
	if err != nil {
		return nil, err
	}
	t.lock <- struct{}{}
	clean := t.image
	t.image = clean.Clone()
	poison(t.image)
	<-t.lock
	return func() {
		t.lock <- struct{}{}
		t.image = clean
		<-t.lock
	}, nil
}

// TemplateContains reports whether any template of this process holds b.
func TemplateContains(b []byte) bool {
	templates.Lock()
	defer templates.Unlock()
	for _, t := range templates.m {
		t.lock <- struct{}{}
		found := t.image != nil && t.image.Contains(b)
		<-t.lock
		if found {
			return true
		}
	}
	return false
}
