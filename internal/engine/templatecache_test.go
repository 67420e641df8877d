package engine

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// testTree is a small data directory: a file with a zero tail, a
// subdirectory and a file in it.
func testTree(t *testing.T) *DirImage {
	t.Helper()
	src := t.TempDir()
	if err := os.WriteFile(filepath.Join(src, "PG_VERSION"), []byte("15\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(src, "base"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "base", "seg"), append([]byte("head"), make([]byte, 1<<20)...), 0o640); err != nil {
		t.Fatal(err)
	}
	img, err := ReadDirImage(src, uint32(os.Getuid()))
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// testKey is a key whose one program is a file of the test's, which a
// test may remove to make the key's template stale.
func testKey(t *testing.T, engine string) TemplateKey {
	t.Helper()
	prog := filepath.Join(t.TempDir(), "initdb")
	if err := os.WriteFile(prog, []byte(engine), 0o700); err != nil {
		t.Fatal(err)
	}
	return TemplateKey{Engine: engine, Programs: []string{prog}, Version: "15.1", Args: []string{"--no-sync"}, UID: 1, GID: 1}
}

func openCache(t *testing.T, dir string) *TemplateCache {
	t.Helper()
	c, err := OpenTemplateCache(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// counting is a make that counts its calls.
func counting(img *DirImage, n *atomic.Int32) func(context.Context) (*DirImage, error) {
	return func(context.Context) (*DirImage, error) { n.Add(1); return img, nil }
}

// TestTemplateCacheKeepsATemplateAcrossOpens: a template made through one
// opening of the cache directory (one process) is read, whole, through
// another, without a second make; the directory is made 0700.
func TestTemplateCacheKeepsATemplateAcrossOpens(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "cache")
	img, key := testTree(t), testKey(t, "postgres")
	var made atomic.Int32
	for range 2 {
		got, err := openCache(t, dir).Get(context.Background(), key, counting(img, &made))
		if err != nil {
			t.Fatal(err)
		}
		if !sameImage(got, img) {
			t.Errorf("the template read back differs from the one made")
		}
	}
	if made.Load() != 1 {
		t.Errorf("made %d times, want once", made.Load())
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("cache directory: %v %v, want mode 0700", st, err)
	}
}

func sameImage(a, b *DirImage) bool {
	if len(a.entries) != len(b.entries) {
		return false
	}
	for i, e := range a.entries {
		f := b.entries[i]
		if e.rel != f.rel || e.mode != f.mode || e.size != f.size || !bytes.Equal(e.data, f.data) {
			return false
		}
	}
	return true
}

// TestTemplateCacheMakesOnceForConcurrentProcesses: openings that ask for
// one template at once run one make; the others wait and read it.
func TestTemplateCacheMakesOnceForConcurrentProcesses(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "cache")
	img, key := testTree(t), testKey(t, "mariadb")
	var made atomic.Int32
	var wg sync.WaitGroup
	for range 4 {
		c := openCache(t, dir) // a file description of its own: flock tells them apart
		wg.Go(func() {
			if _, err := c.Get(context.Background(), key, counting(img, &made)); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if made.Load() != 1 {
		t.Errorf("made %d times, want once", made.Load())
	}
}

// TestUnsafeCacheDirIsRefused: a cache directory another account could
// write into, or a link to one, is not used.
func TestUnsafeCacheDirIsRefused(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name  string
		setup func(t *testing.T, dir string)
		root  bool // needs root to make
	}{
		{"a link to a directory", func(t *testing.T, dir string) { mustDo(t, os.Symlink(t.TempDir(), dir)) }, false},
		{"group-writable", func(t *testing.T, dir string) { mustDo(t, os.Mkdir(dir, 0o700), os.Chmod(dir, 0o770)) }, false},
		{"world-writable", func(t *testing.T, dir string) { mustDo(t, os.Mkdir(dir, 0o700), os.Chmod(dir, 0o1777)) }, false},
		{"a file", func(t *testing.T, dir string) { mustDo(t, os.WriteFile(dir, nil, 0o600)) }, false},
		{"another uid's", func(t *testing.T, dir string) { mustDo(t, os.Mkdir(dir, 0o700), os.Chown(dir, 65534, 65534)) }, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.root && os.Geteuid() != 0 {
				t.Skip("giving a directory to another uid needs root")
			}
			dir := filepath.Join(t.TempDir(), "cache")
			tt.setup(t, dir)
			if c, err := OpenTemplateCache(dir); err == nil {
				c.Close()
				t.Errorf("OpenTemplateCache(%s) took it", tt.name)
			}
		})
	}
}

// TestCacheDirSwappedForALinkIsNotFollowed: a cache directory whose name
// is swapped for a link (to another directory of dbrig's) right after it
// is opened is still the one used: a template goes into the directory
// opened, nothing into the link's target. Not parallel: it sets a hook of
// the package.
func TestCacheDirSwappedForALinkIsNotFollowed(t *testing.T) {
	parent, elsewhere := t.TempDir(), t.TempDir()
	dir, moved := filepath.Join(parent, "cache"), filepath.Join(parent, "moved")
	mustDo(t, os.Mkdir(dir, 0o700))
	var once sync.Once
	testHookCacheDirOpened = func() { once.Do(func() { mustDo(t, os.Rename(dir, moved), os.Symlink(elsewhere, dir)) }) }
	defer func() { testHookCacheDirOpened = nil }()
	c := openCache(t, dir)
	var n atomic.Int32
	if _, err := c.Get(context.Background(), testKey(t, "postgres"), counting(testTree(t), &n)); err != nil {
		t.Fatal(err)
	}
	if names, _ := filepath.Glob(filepath.Join(moved, TemplatesSubdir, "postgres-*.tmpl")); len(names) != 1 {
		t.Errorf("templates in the directory opened: %v, want one", names)
	}
	if entries, _ := os.ReadDir(elsewhere); len(entries) != 0 {
		t.Errorf("%d entries written through the link swapped in", len(entries))
	}
}

// TestLockHeldTooLongIsPassedBy: a process holding a template's lock
// past the wait (a stopped maker, a hung installer) holds no start up for
// longer: the start makes the template without the lock and keeps it.
func TestLockHeldTooLongIsPassedBy(t *testing.T) {
	t.Parallel()
	dir, key, img := filepath.Join(t.TempDir(), "cache"), testKey(t, "postgres"), testTree(t)
	c := openCache(t, dir)
	c.lockWait = 100 * time.Millisecond
	rec, err := key.record()
	mustDo(t, err)
	held, err := os.OpenFile(filepath.Join(c.Dir(), rec.fileName()+".lock"), os.O_CREATE|os.O_RDWR, 0o600)
	mustDo(t, err)
	defer held.Close()
	mustDo(t, unix.Flock(int(held.Fd()), unix.LOCK_EX))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var made atomic.Int32
	got, err := c.Get(ctx, key, counting(img, &made))
	if err != nil || made.Load() != 1 || !sameImage(got, img) {
		t.Fatalf("with the lock held elsewhere: made %d times (want 1), err %v", made.Load(), err)
	}
	onlyTemplate(t, c.Dir())
}

func mustDo(t *testing.T, errs ...error) {
	t.Helper()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

// TestDamagedTemplateIsMadeAgain: a template file cut short, without its
// end, or with entries no installer makes is not copied: it is made again
// and replaced; a killed maker's partial file is removed.
func TestDamagedTemplateIsMadeAgain(t *testing.T) {
	t.Parallel()
	img := testTree(t)
	for _, tt := range []struct {
		name   string
		damage func(whole []byte) []byte
		why    string // the reader's own refusal of it ("": any)
	}{
		{"cut short", func(b []byte) []byte { return b[:len(b)/2] }, ""},
		{"a byte of a file changed", func(b []byte) []byte { return bytes.Replace(b, []byte("head"), []byte("HEAD"), 1) }, "its content sums"},
		{"without its end", func(b []byte) []byte { return withEntries(t, b, "", nil) }, ""},
		{"a link in the tree", func(b []byte) []byte {
			return withEntries(t, b, "link", &tar.Header{Name: "tree/pg_wal", Typeflag: tar.TypeSymlink, Linkname: "/etc"})
		}, "neither a directory nor a regular file"},
		{"a path out of the tree", func(b []byte) []byte { return withEntries(t, b, "file", &tar.Header{Name: "tree/../x", Mode: 0o600}) }, "not a path below the tree"},
		{"a setuid file", func(b []byte) []byte { return withEntries(t, b, "file", &tar.Header{Name: "tree/run", Mode: 0o4755}) }, "more than permission bits"},
		{"a file below no directory", func(b []byte) []byte { return withEntries(t, b, "file", &tar.Header{Name: "tree/none/x", Mode: 0o600}) }, "not below a directory"},
		{"a file twice", func(b []byte) []byte {
			return withEntries(t, b, "file", &tar.Header{Name: "tree/PG_VERSION", Mode: 0o600})
		}, "an entry twice"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir, key := filepath.Join(t.TempDir(), "cache"), testKey(t, "postgres")
			var made atomic.Int32
			if _, err := openCache(t, dir).Get(context.Background(), key, counting(img, &made)); err != nil {
				t.Fatal(err)
			}
			name := onlyTemplate(t, filepath.Join(dir, TemplatesSubdir))
			whole, err := os.ReadFile(name)
			damaged := tt.damage(whole)
			mustDo(t, err, os.WriteFile(name, damaged, 0o600))
			// Refused for its own damage, not only by the content sum a
			// rewritten file no longer matches.
			if _, _, err := readTemplateFile(bytes.NewReader(damaged), false); err == nil || !strings.Contains(err.Error(), tt.why) {
				t.Errorf("the reader's refusal: %v, want one that says %q", err, tt.why)
			}
			partial := filepath.Join(filepath.Dir(name), "."+filepath.Base(name)+".1.killed.new")
			mustDo(t, os.WriteFile(partial, whole[:100], 0o600))
			got, err := openCache(t, dir).Get(context.Background(), key, counting(img, &made))
			if err != nil || made.Load() != 2 || !sameImage(got, img) {
				t.Errorf("damaged template: made %d times (want 2), err %v", made.Load(), err)
			}
			if again, _ := os.ReadFile(name); !bytes.Equal(again, whole) {
				t.Errorf("the damaged template was not replaced whole")
			}
			if _, err := os.Stat(partial); err == nil {
				t.Errorf("a killed maker's partial template %s is left", partial)
			}
		})
	}
}

// withEntries rewrites a template file: its entries before "end", then
// extra (a file when kind is "file", of 3 bytes) and, unless kind is "",
// its end.
func withEntries(t *testing.T, whole []byte, kind string, extra *tar.Header) []byte {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(whole))
	var out bytes.Buffer
	tw := tar.NewWriter(&out)
	for {
		hdr, err := tr.Next()
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Name == tmplEndName {
			break
		}
		data := new(bytes.Buffer)
		_, err = data.ReadFrom(tr)
		mustDo(t, err, tw.WriteHeader(hdr))
		_, err = tw.Write(data.Bytes())
		mustDo(t, err)
	}
	if kind == "file" {
		extra.Typeflag, extra.Size = tar.TypeReg, 3
		mustDo(t, tw.WriteHeader(extra))
		_, err := tw.Write([]byte("bad"))
		mustDo(t, err)
	} else if extra != nil {
		mustDo(t, tw.WriteHeader(extra))
	}
	if kind != "" {
		mustDo(t, tw.WriteHeader(&tar.Header{Name: tmplEndName, Typeflag: tar.TypeReg, Mode: 0o600}))
	}
	mustDo(t, tw.Close())
	return out.Bytes()
}

func onlyTemplate(t *testing.T, dir string) string {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(dir, "*.tmpl"))
	if len(names) != 1 {
		t.Fatalf("templates in %s: %v, want one", dir, names)
	}
	return names[0]
}

// TestStaleTemplatesArePruned: making a template removes the engine's
// templates whose programs are gone, not those whose programs are there,
// nor another engine's, nor a file whose key cannot be read, nor a stale
// template outside dbrig's own subdirectory of the cache directory.
func TestStaleTemplatesArePruned(t *testing.T) {
	t.Parallel()
	dir, img := filepath.Join(t.TempDir(), "cache"), testTree(t)
	c := openCache(t, dir)
	keys := map[string]TemplateKey{"gone": testKey(t, "postgres"), "kept": testKey(t, "postgres"), "other engine": testKey(t, "mariadb")}
	names := map[string]string{}
	for what, key := range keys {
		if _, err := c.Get(context.Background(), key, counting(img, new(atomic.Int32))); err != nil {
			t.Fatal(err)
		}
		rec, _ := key.record()
		names[what] = filepath.Join(c.Dir(), rec.fileName())
	}
	stale, err := os.ReadFile(names["gone"])
	mustDo(t, err)
	names["unreadable"] = filepath.Join(c.Dir(), "postgres-00000000000000000000000000000000.tmpl")
	names["outside"] = filepath.Join(dir, filepath.Base(names["gone"]))
	mustDo(t, os.WriteFile(names["unreadable"], []byte("not a template"), 0o600), os.WriteFile(names["outside"], stale, 0o600))
	mustDo(t, os.Remove(keys["gone"].Programs[0]), os.Remove(keys["other engine"].Programs[0]))
	if _, err := c.Get(context.Background(), testKey(t, "postgres"), counting(img, new(atomic.Int32))); err != nil {
		t.Fatal(err)
	}
	for what, want := range map[string]bool{"gone": false, "kept": true, "other engine": true, "unreadable": true, "outside": true} {
		if _, err := os.Stat(names[what]); (err == nil) != want {
			t.Errorf("the %s template is there: %v, want %v", what, err == nil, want)
		}
	}
	if _, err := os.Stat(names["gone"] + ".lock"); err == nil {
		t.Errorf("the pruned template's lock file is left")
	}
	if leftovers, _ := filepath.Glob(filepath.Join(c.Dir(), ".*")); len(leftovers) != 0 {
		t.Errorf("left in the cache: %s", strings.Join(leftovers, " "))
	}
}
