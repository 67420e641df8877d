package postgres

import (
	"bytes"
	"context"

	"github.com/dbrig/dbrig/internal/engine"
)

// WriteConf rewrites the instance's dbrig.conf with these settings, past
// Start's and Reconfigure's checks, so a test can give the writer a value
// no study may (any name, any quotes) and read back what the server made
// of it after a Restart.
func (i *Instance) WriteConf(settings map[string]string) error { return i.writeConf(settings) }

// PoisonTemplate makes this process's template for bin (made now if need
// be) hold poison's changes, and returns what puts the template back: a
// test that calls it must run alone (not in parallel), since every Start
// of the process copies the template.
func PoisonTemplate(ctx context.Context, bin Binaries, poison func(*engine.DirImage)) (restore func(), err error) {
	user, err := engine.FindServerUser()
	if err != nil {
		return nil, err
	}
	t, err := templateFor(ctx, bin, user)
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

// TemplateContains reports whether this process's template for bin, or
// initdb's postgresql.conf it keeps, holds b; false when there is none.
func TemplateContains(bin Binaries, b []byte) bool {
	templates.Lock()
	defer templates.Unlock()
	for key, t := range templates.m {
		if key.binDir != bin.Dir {
			continue
		}
		t.lock <- struct{}{}
		found := t.image != nil && (t.image.Contains(b) || bytes.Contains(t.conf, b))
		<-t.lock
		if found {
			return true
		}
	}
	return false
}
