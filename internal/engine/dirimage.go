package engine

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

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

// ReadDirImage reads the tree under root, every entry of which must be
// owner's (the server account's uid, the installer's). Anything but a
// directory or a regular file (a symbolic link, a socket, a pipe) is
// refused: an installer's fresh data directory holds none, and a copy must
// not point outside itself; so is a file with a second name (a hard link
// the account made to a file it may not read, which root would copy) or
// another owner. The tree belongs to the server's account, which may
// change it while dbrig, perhaps root, reads: every entry is opened below
// root without following a link and judged by what was opened, so that a
// name swapped for a link can neither copy a file from elsewhere into the
// template nor (a pipe) hang the read.
func ReadDirImage(root string, owner uint32) (*DirImage, error) {
	tree, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("read the tree %s: %w", root, err)
	}
	defer tree.Close()
	img := &DirImage{}
	err = fs.WalkDir(tree.FS(), ".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil || rel == "." {
			return err
		}
		e, err := readEntry(tree, rel, owner)
		if err != nil {
			return fmt.Errorf("%s: %w", filepath.Join(root, rel), err)
		}
		img.entries = append(img.entries, e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the tree %s: %w", root, err)
	}
	return img, nil
}

func readEntry(tree *os.Root, rel string, owner uint32) (imageEntry, error) {
	f, err := tree.OpenFile(rel, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return imageEntry{}, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return imageEntry{}, err
	}
	sys := info.Sys().(*syscall.Stat_t)
	e := imageEntry{rel: rel, mode: info.Mode()}
	switch {
	case sys.Uid != owner:
		return imageEntry{}, fmt.Errorf("owned by uid %d, not the installer's %d", sys.Uid, owner)
	case info.IsDir():
	case info.Mode().IsRegular() && sys.Nlink != 1:
		return imageEntry{}, fmt.Errorf("a file with %d names", sys.Nlink)
	case info.Mode().IsRegular():
		e.size = info.Size()
		if e.data, err = readUpToLastNonZero(f, e.size); err != nil {
			return imageEntry{}, err
		}
	default:
		return imageEntry{}, errors.New("neither a directory nor a regular file")
	}
	return e, nil
}

// readUpToLastNonZero reads a file's first size bytes in blocks, skipping
// holes, and keeps them up to the last non-zero one in an array of that
// length: an InnoDB redo log of 512 MB, all zeros, costs no memory, where
// reading it whole and trimming the slice kept the whole array.
func readUpToLastNonZero(f *os.File, size int64) ([]byte, error) {
	var data []byte
	block := make([]byte, 1<<16)
	for off := int64(0); off < size; {
		if next, err := unix.Seek(int(f.Fd()), off, unix.SEEK_DATA); errors.Is(err, unix.ENXIO) {
			break // a hole to the end
		} else if err == nil {
			off = next
		}
		n, err := f.ReadAt(block[:min(int64(len(block)), size-off)], off)
		if kept := len(bytes.TrimRight(block[:n], "\x00")); kept > 0 {
			data = append(data, make([]byte, off-int64(len(data)))...)
			data = append(data, block[:kept]...)
		}
		off += int64(n)
		if errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, err
		}
	}
	return bytes.Clone(data), nil
}

// Size is the bytes of the image's files.
func (img *DirImage) Size() int64 {
	var n int64
	for _, e := range img.entries {
		n += e.size
	}
	return n
}

// Write makes dst, which must not exist or be empty, and writes the image
// under it with each entry's mode, every entry given to user. A top-level
// directory named in apart goes to the directory apart names instead
// (which must not exist either, its parent must), with a symbolic link to
// it in its place, as initdb --waldir places the WAL.
//
// dbrig may be root and user the server's account, which must gain no
// say over what root writes: every entry is made below the opened
// directory without following a link (O_EXCL, os.Root) and given its mode
// and owner through its own descriptor, never by a path a link could
// send elsewhere; dst and the directories apart are given to user last,
// so that until the tree is whole user cannot enter it. Their parents
// must be dbrig's until then (the caller gives them to user after).
func (img *DirImage) Write(dst string, user ServerUser, apart map[string]string) error {
	tree, err := openEmptyDir(dst)
	if err != nil {
		return err
	}
	defer tree.Close()
	aparts := map[string]*os.Root{}
	tops := map[*os.Root]fs.FileMode{tree: 0o700}
	for top, target := range apart {
		r, err := makeApart(tree, top, target, user)
		if err != nil {
			return err
		}
		defer r.Close()
		aparts[top], tops[r] = r, 0o700
	}
	for _, e := range img.entries {
		r, rel := tree, e.rel
		top, rest, _ := strings.Cut(e.rel, "/")
		if a, ok := aparts[top]; ok {
			r, rel = a, rest
		}
		if rel == "" {
			tops[r] = e.mode.Perm()
			continue
		}
		if err := img.writeEntry(r, rel, e, user); err != nil {
			return err
		}
	}
	for r, perm := range tops {
		if r != tree {
			if err := giveDir(r, perm, user); err != nil {
				return err
			}
		}
	}
	return giveDir(tree, 0o700, user)
}

// openEmptyDir makes dir, mode 0700, or takes it if it is an empty
// directory (not a link to one).
func openEmptyDir(dir string) (*os.Root, error) {
	if err := os.Mkdir(dir, 0o700); errors.Is(err, fs.ErrExist) {
		names, rerr := os.ReadDir(dir)
		if st, lerr := os.Lstat(dir); rerr != nil || lerr != nil || !st.IsDir() || len(names) > 0 {
			return nil, fmt.Errorf("write a tree into %s: %w, not an empty directory", dir, err)
		}
	} else if err != nil {
		return nil, err
	}
	return os.OpenRoot(dir)
}

// makeApart makes target, 0700 and dbrig's until Write ends, and the link
// top to it in tree.
func makeApart(tree *os.Root, top, target string, user ServerUser) (*os.Root, error) {
	if err := os.Mkdir(target, 0o700); err != nil {
		return nil, err
	}
	r, err := os.OpenRoot(target)
	if err != nil {
		return nil, err
	}
	if err := tree.Symlink(target, top); err != nil {
		r.Close()
		return nil, err
	}
	if user.Switch {
		if err := tree.Lchown(top, int(user.UID), int(user.GID)); err != nil {
			r.Close()
			return nil, err
		}
	}
	return r, nil
}

// giveDir sets the mode of the directory r is opened at and gives it to
// user.
func giveDir(r *os.Root, perm fs.FileMode, user ServerUser) error {
	f, err := r.Open(".")
	if err != nil {
		return err
	}
	defer f.Close()
	return finishEntry(f, perm, user)
}

func (img *DirImage) writeEntry(r *os.Root, rel string, e imageEntry, user ServerUser) error {
	path := filepath.Join(r.Name(), filepath.FromSlash(rel))
	if e.mode.IsDir() {
		if err := r.Mkdir(rel, e.mode.Perm()); err != nil {
			return err
		}
		f, err := r.OpenFile(rel, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_DIRECTORY, 0)
		if err != nil {
			return err
		}
		defer f.Close()
		return finishEntry(f, e.mode.Perm(), user)
	}
	f, err := r.OpenFile(rel, os.O_CREATE|os.O_EXCL|os.O_WRONLY|unix.O_NOFOLLOW, e.mode.Perm())
	if err != nil {
		return err
	}
	_, werr := f.Write(e.data)
	if werr == nil && int64(len(e.data)) < e.size {
		werr = img.zeroTail(f, int64(len(e.data)), e.size)
	}
	if werr == nil {
		werr = finishEntry(f, e.mode.Perm(), user)
	}
	if err := f.Close(); werr == nil {
		werr = err
	}
	if werr != nil {
		return fmt.Errorf("write %s: %w", path, werr)
	}
	return nil
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

// finishEntry sets the mode the umask narrowed and gives the entry to the
// server's account, through its descriptor.
func finishEntry(f *os.File, perm fs.FileMode, user ServerUser) error {
	if err := f.Chmod(perm); err != nil {
		return err
	}
	return user.ChownFile(f)
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

// Files are the image's regular files whose paths match pattern
// (path.Match).
func (img *DirImage) Files(pattern string) []string {
	var rels []string
	for _, e := range img.entries {
		if ok, _ := path.Match(pattern, e.rel); ok && e.mode.IsRegular() {
			rels = append(rels, e.rel)
		}
	}
	return rels
}

// WriteFile writes the image's regular file rel at path, which must not
// exist, with its mode, given to user; path's directory must be dbrig's
// until the caller gives it to user.
func (img *DirImage) WriteFile(rel, path string, user ServerUser) error {
	for _, e := range img.entries {
		if e.rel == rel && e.mode.IsRegular() {
			r, err := os.OpenRoot(filepath.Dir(path))
			if err != nil {
				return err
			}
			defer r.Close()
			return img.writeEntry(r, filepath.Base(path), e, user)
		}
	}
	return fmt.Errorf("the tree holds no file %s", rel)
}

// SetFile replaces or adds a regular file of the image (of a Clone, not to
// change a shared template), below an existing directory: a copy's own
// files are written with the tree, while no other account can enter it.
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

// File is the image's regular file rel, its zero tail left out.
func (img *DirImage) File(rel string) ([]byte, bool) {
	for _, e := range img.entries {
		if e.rel == rel && e.mode.IsRegular() {
			return e.data, true
		}
	}
	return nil, false
}

// TopLevel are the names of the image's entries at its root.
func (img *DirImage) TopLevel() []string {
	var names []string
	for _, e := range img.entries {
		if !strings.Contains(e.rel, "/") {
			names = append(names, e.rel)
		}
	}
	return names
}

// Has reports whether any entry of the image, file or directory, matches
// pattern (path.Match).
func (img *DirImage) Has(pattern string) bool {
	for _, e := range img.entries {
		if ok, _ := path.Match(pattern, e.rel); ok {
			return true
		}
	}
	return false
}
