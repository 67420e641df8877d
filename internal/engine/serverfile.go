package engine

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// OpenServerLog opens (appending, made if missing) a log in a directory of
// the server's account and gives it to user. dbrig may be root: a link the
// account put at path is not followed, and a hard link (a name of some
// other file) is refused, so that root neither writes to nor gives away a
// file the account names.
func OpenServerLog(path string, user ServerUser) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0o600)
	if err != nil {
		return nil, err
	}
	if err := CheckOwnFile(f); err != nil {
		f.Close()
		return nil, err
	}
	if err := user.ChownFile(f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// ReadServerFile reads a file in a directory of the server's account (its
// log) without following a link or hanging on a pipe put in its place.
func ReadServerFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := CheckOwnFile(f); err != nil {
		return nil, err
	}
	return io.ReadAll(f)
}

// CheckOwnFile refuses an open file of the server account's directory
// that is not a regular file or has other names (a hard link to a file
// the account does not own).
func CheckOwnFile(f *os.File) error {
	info, err := f.Stat()
	if err != nil {
		return err
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	switch {
	case !info.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file", f.Name())
	case !ok || st.Nlink > 1:
		return errors.New(f.Name() + " has other names (a hard link): refused")
	}
	return nil
}

// WriteServerFile replaces the file name in dir, a directory of the
// server's account, with data, given to user. dbrig may be root: the file
// is made under a name of its own with O_EXCL and renamed over name, so
// that a link or a hard link the account put at name gets root to write
// or give away nothing but that new file.
func WriteServerFile(dir, name string, data []byte, user ServerUser) error {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer r.Close()
	tmp := fmt.Sprintf(".%s.%d.new", name, os.Getpid())
	_ = r.Remove(tmp)
	f, err := r.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return fmt.Errorf("write %s: %w", filepath.Join(dir, name), err)
	}
	_, werr := f.Write(data)
	werr = errors.Join(werr, user.ChownFile(f), f.Close())
	if werr == nil {
		werr = r.Rename(tmp, name)
	}
	if werr != nil {
		_ = r.Remove(tmp)
		return fmt.Errorf("write %s: %w", filepath.Join(dir, name), werr)
	}
	return nil
}
