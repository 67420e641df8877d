package engine_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"

	"github.com/dbrig/dbrig/internal/engine"
)

// TestDirImageRoundTrip: a tree written from its image has the same
// files, bytes (a zero tail included, written or allocated) and modes, and
// a directory named apart lies where it was sent, behind a link.
func TestDirImageRoundTrip(t *testing.T) {
	t.Parallel()
	src := filepath.Join(t.TempDir(), "src")
	files := map[string]struct {
		data []byte
		mode os.FileMode
	}{
		"PG_VERSION":          {[]byte("15\n"), 0o600},
		"global/pg_control":   {append([]byte{1, 2, 3}, make([]byte, 100000)...), 0o600},
		"pg_wal/000000010000": {append(make([]byte, 10), append([]byte{7}, make([]byte, 70000)...)...), 0o640},
		"pg_wal/empty":        {nil, 0o600},
	}
	for rel, f := range files {
		path := filepath.Join(src, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, f.data, f.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, f.mode); err != nil {
			t.Fatal(err)
		}
	}
	img, err := engine.ReadDirImage(src, uint32(os.Getuid()))
	if err != nil {
		t.Fatal(err)
	}
	for _, allocate := range []bool{false, true} {
		img.AllocateZeros = allocate
		out := t.TempDir()
		dst, wal := filepath.Join(out, "data"), filepath.Join(out, "wal")
		if err := img.Write(dst, engine.ServerUser{}, map[string]string{"pg_wal": wal}); err != nil {
			t.Fatal(err)
		}
		if link, err := os.Readlink(filepath.Join(dst, "pg_wal")); err != nil || link != wal {
			t.Errorf("pg_wal -> %q (%v), want %s", link, err, wal)
		}
		for rel, f := range files {
			path := filepath.Join(dst, rel)
			got, err := os.ReadFile(path)
			st, serr := os.Lstat(filepath.Join(wal, filepath.Base(rel)))
			if filepath.Dir(rel) != "pg_wal" {
				st, serr = os.Lstat(path)
			}
			if err != nil || serr != nil || !bytes.Equal(got, f.data) || st.Mode().Perm() != f.mode {
				t.Errorf("allocate %v: %s: %d bytes, mode %v (%v, %v), want %d bytes, mode %v", allocate, rel, len(got), st.Mode(), err, serr, len(f.data), f.mode)
			}
		}
		if st, err := os.Stat(dst); err != nil || st.Mode().Perm() != 0o700 {
			t.Errorf("the copy's root: %v (%v), want mode 0700", st.Mode(), err)
		}
	}
}

// TestDirImageIntoAnEmptyDirectory: a tree goes into an empty directory
// made beforehand (a data directory placed apart), never into one that
// holds anything, and a file left out of it is written where it is sent.
func TestDirImageIntoAnEmptyDirectory(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	for _, name := range []string{"ibdata1", "ib_logfile0"} {
		if err := os.WriteFile(filepath.Join(src, name), []byte(name), 0o660); err != nil {
			t.Fatal(err)
		}
	}
	img, err := engine.ReadDirImage(src, uint32(os.Getuid()))
	if err != nil {
		t.Fatal(err)
	}
	data, wal := t.TempDir(), t.TempDir()
	if err := img.Without("ib_logfile0").Write(data, engine.ServerUser{}, nil); err != nil {
		t.Fatal(err)
	}
	if err := img.WriteFile("ib_logfile0", filepath.Join(wal, "ib_logfile0"), engine.ServerUser{}); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]bool{
		filepath.Join(data, "ibdata1"): true, filepath.Join(data, "ib_logfile0"): false, filepath.Join(wal, "ib_logfile0"): true,
	} {
		if _, err := os.Stat(path); (err == nil) != want {
			t.Errorf("%s exists: %v, want %v", path, err == nil, want)
		}
	}
	if err := img.Write(data, engine.ServerUser{}, nil); err == nil {
		t.Errorf("Write into a directory that holds files succeeded")
	}
}

// TestDirImageGivesEveryEntryToTheServerAccount: run as root, every entry
// of a copy, the link to a directory apart and the directories themselves
// belong to the server's account.
func TestDirImageGivesEveryEntryToTheServerAccount(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("needs root to give files away")
	}
	src := t.TempDir()
	if err := os.MkdirAll(filepath.Join(src, "pg_wal", "archive_status"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{"PG_VERSION", "pg_wal/segment"} {
		if err := os.WriteFile(filepath.Join(src, rel), []byte(rel), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	img, err := engine.ReadDirImage(src, uint32(os.Getuid()))
	if err != nil {
		t.Fatal(err)
	}
	user := engine.ServerUser{Name: "nobody-of-this-test", UID: 54321, GID: 54322, Switch: true}
	out := t.TempDir()
	dst, wal := filepath.Join(out, "data"), filepath.Join(out, "wal")
	if err := img.Write(dst, user, map[string]string{"pg_wal": wal}); err != nil {
		t.Fatal(err)
	}
	for _, root := range []string{dst, wal} {
		err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return err
			}
			st, err := os.Lstat(path)
			if err != nil {
				return err
			}
			if s := st.Sys().(*syscall.Stat_t); s.Uid != user.UID || s.Gid != user.GID {
				t.Errorf("%s belongs to %d:%d, want %d:%d", path, s.Uid, s.Gid, user.UID, user.GID)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestReadDirImageRefusesAPipe: a pipe in the tree is refused at once,
// not read (which would wait for a writer for ever).
func TestReadDirImageRefusesAPipe(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(src, "pipe"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := engine.ReadDirImage(src, uint32(os.Getuid())); err == nil {
		t.Errorf("a tree holding a pipe was read")
	}
}

// TestReadDirImageRefusesAHardLinkOrAnotherOwner: a file with a second
// name (a hard link the server account made, in the tree, to a file it
// may not read, which root would copy) or owned by another uid than the
// installer's is refused.
func TestReadDirImageRefusesAHardLinkOrAnotherOwner(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		plant func(t *testing.T, src, outside string) error
	}{
		{"hard link", func(t *testing.T, src, outside string) error {
			return os.Link(outside, filepath.Join(src, "link"))
		}},
		{"another owner", func(t *testing.T, src, _ string) error {
			if os.Geteuid() != 0 {
				t.Skip("only root gives a file away")
			}
			path := filepath.Join(src, "given")
			if err := os.WriteFile(path, []byte("x"), 0o600); err != nil {
				return err
			}
			return os.Chown(path, 65534, 65534)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			src, other := t.TempDir(), t.TempDir()
			outside := filepath.Join(other, "secret")
			if err := os.WriteFile(outside, []byte("not the installer's"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(src, "PG_VERSION"), []byte("15\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := c.plant(t, src, outside); err != nil {
				t.Fatal(err)
			}
			if img, err := engine.ReadDirImage(src, uint32(os.Getuid())); err == nil {
				t.Errorf("the tree was read: %v", img.TopLevel())
			}
		})
	}
}

// TestDirImageHoldsNoZeroTail: a large file, zeros but for its first
// bytes (a fresh InnoDB redo log), costs the image those bytes, not the
// file's size, once read. Not parallel: it weighs the heap.
func TestDirImageHoldsNoZeroTail(t *testing.T) {
	src := t.TempDir()
	const size = 512 << 20
	f, err := os.Create(filepath.Join(src, "ib_logfile0"))
	if err != nil {
		t.Fatal(err)
	}
	_, werr := f.Write([]byte("redo log header"))
	if err := errors.Join(werr, f.Truncate(size), f.Close()); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	img, err := engine.ReadDirImage(src, uint32(os.Getuid()))
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if img.Size() != size {
		t.Errorf("the image's size is %d, want %d", img.Size(), size)
	}
	if held := int64(after.HeapAlloc) - int64(before.HeapAlloc); held > 32<<20 {
		t.Errorf("the image of a %d MB file of zeros holds %d MB of heap", size>>20, held>>20)
	}
	runtime.KeepAlive(img)
}
