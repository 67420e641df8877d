package engine

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// DirImage is a directory tree held in memory: its directories and regular
// files, each with its mode and contents. An engine makes a server's data
// directory once with its installer (initdb, mariadb-install-db), reads it
// into an image, removes it, and writes the image into each instance's
// directory: a copy costs a fraction of the installer's CPU, and a template
// in memory can be neither changed by another process nor left behind by a
// killed one.
type DirImage struct {
	entries []imageEntry // parents before children, in the order WalkDir visits them
	// AllocateZeros says how a file's zero tail is written: allocated
	// (fallocate, as InnoDB makes its redo log) when true, else written as
	// zeros (as initdb fills a WAL segment), so that a copy's files are laid
	// out on disk as the installer's were.
	AllocateZeros bool
}

type imageEntry struct {
	rel  string // slash-separated, relative to the image's root
	mode fs.FileMode
	// data is the file's bytes up to its last non-zero one (a fresh redo
	// log or WAL segment is mostly zeros, not worth memory); size is the
	// file's.
	data []byte
	size int64
}

// ReadDirImage reads the tree under root. Anything but a directory or a
// regular file (a symbolic link, a socket) is refused: an installer's fresh
// data directory holds none, and a copy must not point outside itself.
func ReadDirImage(root string) (*DirImage, error) {
	img := &DirImage{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, path)
		if err != nil || rel == "." {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		e := imageEntry{rel: filepath.ToSlash(rel), mode: info.Mode()}
		switch {
		case d.IsDir():
		case info.Mode().IsRegular():
			if e.data, err = os.ReadFile(path); err != nil {
				return err
			}
			e.size = int64(len(e.data))
			e.data = e.data[:len(bytes.TrimRight(e.data, "\x00"))]
		default:
			return fmt.Errorf("%s is neither a directory nor a regular file", path)
		}
		img.entries = append(img.entries, e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the tree %s: %w", root, err)
	}
	return img, nil
}

// Size is the bytes of the image's files.
func (img *DirImage) Size() int64 {
	var n int64
	for _, e := range img.entries {
		n += e.size
	}
	return n
}

// Write makes dst, which must not exist or be empty, with mode 0700, and
// writes the image under it with each entry's mode, every path given to
// user. A
// top-level directory named in apart goes to the directory apart names
// instead (which must not exist either, its parent must), with a symbolic
// link to it in its place, as initdb --waldir places the WAL.
func (img *DirImage) Write(dst string, user ServerUser, apart map[string]string) error {
	err := img.mkdir(dst, 0o700, user)
	if errors.Is(err, fs.ErrExist) {
		if names, rerr := os.ReadDir(dst); rerr != nil || len(names) > 0 {
			return fmt.Errorf("write a tree into %s: %w, not empty", dst, err)
		}
		err = finishEntry(dst, 0o700, user)
	}
	if err != nil {
		return err
	}
	for top, target := range apart {
		if err := os.Symlink(target, filepath.Join(dst, top)); err != nil {
			return err
		}
		if err := chownLink(filepath.Join(dst, top), user); err != nil {
			return err
		}
	}
	for _, e := range img.entries {
		path := filepath.Join(dst, filepath.FromSlash(e.rel))
		top, rest, _ := strings.Cut(e.rel, "/")
		if target, ok := apart[top]; ok {
			path = filepath.Join(target, filepath.FromSlash(rest))
		}
		if err := img.writeEntry(path, e, user); err != nil {
			return err
		}
	}
	return nil
}

func (img *DirImage) writeEntry(path string, e imageEntry, user ServerUser) error {
	if e.mode.IsDir() {
		return img.mkdir(path, e.mode.Perm(), user)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, e.mode.Perm())
	if err != nil {
		return err
	}
	_, werr := f.Write(e.data)
	if werr == nil && int64(len(e.data)) < e.size {
		werr = img.zeroTail(f, int64(len(e.data)), e.size)
	}
	if err := f.Close(); werr == nil {
		werr = err
	}
	if werr != nil {
		return fmt.Errorf("write %s: %w", path, werr)
	}
	return finishEntry(path, e.mode.Perm(), user)
}

// zeroBlock is what a zero tail is written from.
var zeroBlock = make([]byte, 1<<16)

func (img *DirImage) zeroTail(f *os.File, from, size int64) error {
	if img.AllocateZeros {
		err := unix.Fallocate(int(f.Fd()), 0, 0, size)
		if !errors.Is(err, unix.EOPNOTSUPP) {
			return err
		}
	}
	for n := from; n < size; {
		chunk := min(size-n, int64(len(zeroBlock)))
		if _, err := f.Write(zeroBlock[:chunk]); err != nil {
			return err
		}
		n += chunk
	}
	return nil
}

func (img *DirImage) mkdir(path string, perm fs.FileMode, user ServerUser) error {
	if err := os.Mkdir(path, perm); err != nil {
		return err
	}
	return finishEntry(path, perm, user)
}

// finishEntry sets the mode the umask narrowed and gives the path to the
// server's account.
func finishEntry(path string, perm fs.FileMode, user ServerUser) error {
	if err := os.Chmod(path, perm); err != nil {
		return err
	}
	return user.Chown(path)
}

func chownLink(path string, user ServerUser) error {
	if !user.Switch {
		return nil
	}
	return os.Lchown(path, int(user.UID), int(user.GID))
}

// Clone is a copy of the image whose entries SetFile may change without
// changing img's (the files' bytes are shared, never written).
func (img *DirImage) Clone() *DirImage {
	return &DirImage{entries: slices.Clone(img.entries), AllocateZeros: img.AllocateZeros}
}

// Without is a copy of the image less the entries at these paths.
func (img *DirImage) Without(rels ...string) *DirImage {
	out := img.Clone()
	out.entries = slices.DeleteFunc(out.entries, func(e imageEntry) bool { return slices.Contains(rels, e.rel) })
	return out
}

// WriteFile writes the image's regular file rel at path, which must not
// exist, with its mode, given to user.
func (img *DirImage) WriteFile(rel, path string, user ServerUser) error {
	for _, e := range img.entries {
		if e.rel == rel && e.mode.IsRegular() {
			return img.writeEntry(path, e, user)
		}
	}
	return fmt.Errorf("the tree holds no file %s", rel)
}

// SetFile replaces or adds a regular file of the image, below an existing
// directory; for tests that write into a template what must not reach a
// server.
func (img *DirImage) SetFile(rel string, data []byte) {
	for i := range img.entries {
		if img.entries[i].rel == rel {
			img.entries[i].data, img.entries[i].size = data, int64(len(data))
			return
		}
	}
	img.entries = append(img.entries, imageEntry{rel: rel, mode: 0o600, data: data, size: int64(len(data))})
}

// Contains reports whether any file of the image holds b.
func (img *DirImage) Contains(b []byte) bool {
	for _, e := range img.entries {
		if bytes.Contains(e.data, b) {
			return true
		}
	}
	return false
}
