package engine

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// MakeScratchDir makes a 0700 directory named prefix* under parent, with
// empty 0700 directories subdirs in it, for an installer that runs as
// user: its owner is recorded first, so that the next run's RemoveStale
// removes the directory of a dbrig killed while the installer runs in it,
// then it is given to user, last (before, user could swap a name in it for
// a link and have root give away what it points to). parent should be the
// instance's base directory, which the start checks user can reach and
// cleans of a killed dbrig's leftovers: the system's temporary directory
// may be neither reachable nor roomy.
func MakeScratchDir(parent, prefix string, user ServerUser, subdirs ...string) (string, error) {
	dir, err := os.MkdirTemp(parent, prefix)
	if err != nil {
		return "", fmt.Errorf("create a scratch directory under %s: %w", parent, err)
	}
	if err := WriteOwner(dir); err != nil {
		_ = os.RemoveAll(dir)
		return "", fmt.Errorf("record the owner of %s: %w", dir, err)
	}
	for _, p := range append(subdirs, ".") {
		if err := makeAndGive(filepath.Join(dir, p), user); err != nil {
			_ = os.RemoveAll(dir)
			return "", err
		}
	}
	return dir, nil
}

func makeAndGive(dir string, user ServerUser) error {
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return user.Chown(dir)
}
