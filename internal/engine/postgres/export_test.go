package postgres

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"

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
	clean, err := templateFor(ctx, bin, user, os.TempDir())
	if err != nil {
		return nil, err
	}
	key := templateKey{bin.Dir, bin.Version, user.UID}
	poisoned := clean
	poisoned.image = clean.image.Clone()
	poison(poisoned.image)
	templates.Set(key, poisoned)
	return func() { templates.Set(key, clean) }, nil
}

// TemplateContains reports whether this process's template for bin, or
// initdb's postgresql.conf it keeps, holds b.
func TemplateContains(bin Binaries, b []byte) bool {
	found := false
	templates.Each(func(key templateKey, t template) {
		if key.binDir == bin.Dir && t.image.Contains(b) {
			found = true
		}
	})
	return found
}

// DSMSegments returns the files of the dynamic shared memory the instance
// directory's record names: the control segment first, then those it lists.
func DSMSegments(dir string) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(dir, dsmRecordFile))
	if err != nil {
		return nil, err
	}
	control := filepath.Join(shmDir, strings.TrimSpace(string(b)))
	handles, err := readControl(control, -1)
	if err != nil {
		return nil, err
	}
	files := []string{control}
	for _, h := range handles {
		files = append(files, filepath.Join(shmDir, dsmPrefix+strconv.FormatUint(uint64(h), 10)))
	}
	return files, nil
}
