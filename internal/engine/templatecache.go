package engine

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// CacheDirEnv names the directory where data-directory templates are kept
// across processes; unset, it is os.UserCacheDir()/dbrig.
const CacheDirEnv = "DBRIG_CACHE_DIR"

// TemplateKey is everything that makes a template's content: two
// processes with equal keys would make equal templates, so the second
// takes the first's.
type TemplateKey struct {
	Engine string // "postgres", "mariadb": the file's name starts with it
	// Programs are the paths of the installer and the server it runs;
	// their size and modification time go into the key when it is made,
	// so an upgrade in place makes a new template.
	Programs []string
	Version  string   // the server's version string
	Args     []string // the installer's arguments that change what it makes
	UID, GID uint32   // the server account's, which owns the copies
	// Check refuses a template that holds what its installer does not
	// make: the installer runs as the server account, which may plant a
	// file in its scratch directory before dbrig reads it. A stored
	// template it refuses is made again; a made one it refuses is an
	// error. Nil takes every template.
	Check func(*DirImage) error
}

// keyRecord is a key as stored in its template: the programs' identities
// as they were when the template was made.
type keyRecord struct {
	Engine   string
	Programs []programID
	Version  string
	Args     []string
	Zone     string // installerZone: initdb writes it into postgresql.conf
	UID, GID uint32
}

type programID struct {
	Path    string
	Size    int64
	ModTime int64 // Unix nanoseconds
}

func (k TemplateKey) record() (keyRecord, error) {
	rec := keyRecord{Engine: k.Engine, Version: k.Version, Args: k.Args, Zone: installerZone(), UID: k.UID, GID: k.GID}
	for _, p := range k.Programs {
		st, err := os.Stat(p)
		if err != nil {
			return keyRecord{}, fmt.Errorf("identify %s for its template: %w", p, err)
		}
		rec.Programs = append(rec.Programs, programID{p, st.Size(), st.ModTime().UnixNano()})
	}
	return rec, nil
}

// current reports whether every program the record names is still there
// as it was: a template whose programs are gone or changed is of no use.
func (rec keyRecord) current() bool {
	for _, p := range rec.Programs {
		st, err := os.Stat(p.Path)
		if err != nil || st.Size() != p.Size || st.ModTime().UnixNano() != p.ModTime {
			return false
		}
	}
	return true
}

// fileName is the template's file in the cache directory.
func (rec keyRecord) fileName() string {
	b, _ := json.Marshal(rec) // plain fields: cannot fail
	sum := sha256.Sum256(b)
	return rec.Engine + "-" + hex.EncodeToString(sum[:16]) + ".tmpl"
}

// TemplateCache is a directory of data-directory templates, one file each
// (templateFile), kept across processes. It is dbrig's alone: a directory,
// not a link, owned by dbrig's user and closed to group and others, so
// that no other account can put a template there for root to copy into a
// server's data directory. Every template is made whole under a name of
// its own and renamed into place, so a reader never sees half of one; a
// lock per template keeps concurrent processes from each running the
// installer, but nothing depends on it.
type TemplateCache struct {
	root *os.Root
	dir  string
	// lockWait bounds the wait for another process's lock (maxLockWait).
	lockWait time.Duration
}

// maxLockWait is the longest a start waits for another process making the
// same template (a stopped process or a hung installer holds its lock as
// long as it lives): then it makes its own, without the lock. A start
// with a deadline waits at most half of what is left of it, to have the
// rest to make the template.
const maxLockWait = 2 * time.Minute

// TemplatesSubdir is the directory dbrig makes in the cache directory
// for its templates: it prunes there only, never the cache directory
// itself, which a user may point at a directory holding other files.
const TemplatesSubdir = "templates"

// OpenTemplateCache makes dir (mode 0700) if it is missing and opens it,
// refused unless it is a directory, not a link, owned by this process's
// user and writable by no one else, then its TemplatesSubdir the same
// way, where the templates go.
func OpenTemplateCache(dir string) (*TemplateCache, error) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return nil, err
	}
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, err
	}
	top, err := openCheckedDir(unix.AT_FDCWD, dir, dir)
	if err != nil {
		return nil, err
	}
	defer unix.Close(top)
	if err := unix.Mkdirat(top, TemplatesSubdir, 0o700); err != nil && !errors.Is(err, unix.EEXIST) {
		return nil, &fs.PathError{Op: "mkdir", Path: filepath.Join(dir, TemplatesSubdir), Err: err}
	}
	sub := filepath.Join(dir, TemplatesSubdir)
	fd, err := openCheckedDir(top, TemplatesSubdir, sub)
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)
	// The os.Root is taken through the descriptor's /proc name, so that
	// no link swapped in for either name after the open is followed.
	root, err := os.OpenRoot(fmt.Sprintf("/proc/self/fd/%d", fd))
	if err != nil {
		return nil, err
	}
	return &TemplateCache{root: root, dir: sub, lockWait: maxLockWait}, nil
}

// openCheckedDir opens name below the directory dirfd, refused if its last
// element is a link, and judges what it opened (checkCacheDir); path is
// its name in errors.
func openCheckedDir(dirfd int, name, path string) (int, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ELOOP) || errors.Is(err, unix.ENOTDIR) {
		return -1, fmt.Errorf("%s is not a directory (a link?): %w", path, err)
	} else if err != nil {
		return -1, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	if testHookCacheDirOpened != nil {
		testHookCacheDirOpened()
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, err
	}
	if err := checkCacheDir(path, st); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// testHookCacheDirOpened, when set, runs right after each of the cache's
// directories is opened: a test's way to swap the name there.
var testHookCacheDirOpened func()

func checkCacheDir(dir string, st unix.Stat_t) error {
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return fmt.Errorf("%s is not a directory", dir)
	case st.Uid != uint32(os.Geteuid()):
		return fmt.Errorf("%s is owned by uid %d, not dbrig's %d", dir, st.Uid, os.Geteuid())
	case st.Mode&0o022 != 0:
		return fmt.Errorf("%s is writable by group or others (mode %o)", dir, st.Mode&0o7777)
	}
	return nil
}

// Close closes the cache directory.
func (c *TemplateCache) Close() error { return c.root.Close() }

// Dir is the cache directory's path.
func (c *TemplateCache) Dir() string { return c.dir }

// Get returns the template for key: the cache's, else one made by build
// and stored (unless ctx ends first or build fails). A stored template
// that cannot be read whole, or that key's Check refuses, is made again.
func (c *TemplateCache) Get(ctx context.Context, key TemplateKey, build func(context.Context) (*DirImage, error)) (*DirImage, error) {
	rec, err := key.record()
	if err != nil {
		return nil, err
	}
	name := rec.fileName()
	if img, err := c.readChecked(name, key); err == nil {
		return img, nil
	}
	unlock, err := c.lock(ctx, name+".lock")
	locked := err == nil
	switch {
	case locked:
		defer unlock()
	case errors.Is(err, errLockWait):
		fmt.Fprintf(os.Stderr, "dbrig: %v: making the data-directory template without it\n", err)
	default:
		return nil, err
	}
	// Another process may have made it while this one waited.
	if img, err := c.readChecked(name, key); err == nil {
		return img, nil
	}
	img, err := key.made(ctx, build)
	if err != nil {
		return nil, err
	}
	// A template not kept costs the next process an installer run, not
	// this one its start.
	if err := c.store(name, rec, img, locked); err != nil {
		fmt.Fprintf(os.Stderr, "dbrig: the data-directory template is not kept in %s: %v\n", c.dir, err)
		return img, nil
	}
	if !locked {
		return img, nil
	}
	c.pruneStale(rec.Engine, name)
	return img, nil
}

// readChecked reads the template file name and has key's Check judge it.
func (c *TemplateCache) readChecked(name string, key TemplateKey) (*DirImage, error) {
	img, _, err := c.read(name)
	if err == nil && key.Check != nil {
		if err = key.Check(img); err != nil {
			fmt.Fprintf(os.Stderr, "dbrig: the data-directory template %s is refused and made again: %v\n", filepath.Join(c.dir, name), err)
		}
	}
	return img, err
}

// made is a template build makes, refused unless key's Check takes it.
func (k TemplateKey) made(ctx context.Context, build func(context.Context) (*DirImage, error)) (*DirImage, error) {
	img, err := build(ctx)
	if err == nil && k.Check != nil {
		if err = k.Check(img); err != nil {
			err = fmt.Errorf("the installer's data directory holds what it does not make: %w", err)
		}
	}
	if err != nil {
		return nil, err
	}
	return img, nil
}

// errLockWait is lock's error when another process held the lock past
// the wait.
var errLockWait = errors.New("another process holds the template's lock")

// lock takes an exclusive flock on the file name, made if missing, and
// waits for it as long as ctx lets it, at most c.lockWait and half of
// ctx's time left (then errLockWait). The kernel drops it when the
// process dies, so a killed maker holds no one up.
func (c *TemplateCache) lock(ctx context.Context, name string) (unlock func(), err error) {
	f, err := c.root.OpenFile(name, os.O_CREATE|os.O_RDWR|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, err
	}
	wait := c.lockWait
	if deadline, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(deadline)/2)
	}
	giveUp := time.After(wait)
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { _ = f.Close() }, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", filepath.Join(c.dir, name), err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("wait for another process to make the data directory template: %w", context.Cause(ctx))
		case <-giveUp:
			f.Close()
			return nil, fmt.Errorf("%w %s after %v", errLockWait, filepath.Join(c.dir, name), wait.Round(time.Millisecond))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// store writes the template under a name of its own, syncs it and renames
// it into place, so that a process killed or a machine stopped while it
// writes leaves no half template under the template's name. It is called
// with the template's lock held, unless locked is false (the holder took
// too long): a maker killed before left only its own partial file,
// removed here when locked (not otherwise: it may be the holder's, still
// being written).
func (c *TemplateCache) store(name string, rec keyRecord, img *DirImage, locked bool) error {
	if locked {
		c.removeMatching(func(n string) bool { return strings.HasPrefix(n, "."+name+".") && strings.HasSuffix(n, ".new") })
	}
	tmp := fmt.Sprintf(".%s.%d.%s.new", name, os.Getpid(), rand.Text()[:8])
	f, err := c.root.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_WRONLY|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	werr := writeTemplateFile(f, rec, img)
	if werr == nil {
		werr = f.Sync()
	}
	werr = errors.Join(werr, f.Close())
	if werr == nil {
		werr = c.root.Rename(tmp, name)
	}
	if werr != nil {
		_ = c.root.Remove(tmp)
		return werr
	}
	if d, err := c.root.Open("."); err == nil {
		_ = d.Sync() // the rename itself
		d.Close()
	}
	return nil
}

// read reads the template file name, without following a link and
// refusing anything but a regular file of one name.
func (c *TemplateCache) read(name string) (*DirImage, keyRecord, error) {
	f, err := c.root.OpenFile(name, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, keyRecord{}, err
	}
	defer f.Close()
	if err := CheckOwnFile(f); err != nil {
		return nil, keyRecord{}, err
	}
	return readTemplateFile(f, false)
}

// pruneStale removes the templates of engine, other than keep, whose
// key it reads and whose programs are gone or changed (a server upgraded
// or removed), so that the cache holds at most one template per key still
// of use. A file whose key it cannot read is left alone: it may be no
// template of dbrig's (a later Get of its key replaces it if it is).
func (c *TemplateCache) pruneStale(engine, keep string) {
	c.removeMatching(func(n string) bool {
		if n == keep || !strings.HasPrefix(n, engine+"-") || !strings.HasSuffix(n, ".tmpl") {
			return false
		}
		f, err := c.root.OpenFile(n, os.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
		if err != nil {
			return false
		}
		defer f.Close()
		_, rec, err := readTemplateFile(f, true)
		if err != nil || rec.fileName() != n || rec.current() {
			return false
		}
		_ = c.root.Remove(n + ".lock")
		return true
	})
}

// removeMatching removes the cache directory's entries whose names match.
func (c *TemplateCache) removeMatching(match func(name string) bool) {
	d, err := c.root.Open(".")
	if err != nil {
		return
	}
	names, _ := d.Readdirnames(-1)
	d.Close()
	for _, n := range names {
		if match(n) {
			_ = c.root.Remove(n)
		}
	}
}

// The process's template cache: opened once, from CacheDirEnv or the
// user's cache directory; nil, said once on stderr, when it cannot be used.
var processCache struct {
	once  sync.Once
	cache *TemplateCache
}

// ProcessTemplateCache is the template cache every Start of the process
// uses, or nil when there is none to use (then each process makes its
// own templates). Why not is said once, on stderr: not an error, only a
// slower start.
func ProcessTemplateCache() *TemplateCache {
	processCache.once.Do(func() {
		dir := os.Getenv(CacheDirEnv)
		if dir == "" {
			base, err := os.UserCacheDir()
			if err != nil {
				fmt.Fprintf(os.Stderr, "dbrig: no data-directory template cache (%v): each process makes its own templates\n", err)
				return
			}
			dir = filepath.Join(base, "dbrig")
		}
		c, err := OpenTemplateCache(dir)
		if err != nil {
			fmt.Fprintf(os.Stderr, "dbrig: the data-directory template cache is not used (%v): each process makes its own templates\n", err)
			return
		}
		processCache.cache = c
	})
	return processCache.cache
}

// CachedTemplate returns the template for key from the process's template
// cache (ProcessTemplateCache), made by build and kept there if it holds
// none; with no cache, build's. key's Check judges either.
func CachedTemplate(ctx context.Context, key TemplateKey, build func(context.Context) (*DirImage, error)) (*DirImage, error) {
	counted := func(ctx context.Context) (*DirImage, error) {
		templatesMade.Add(1)
		return build(ctx)
	}
	if c := ProcessTemplateCache(); c != nil {
		return c.Get(ctx, key, counted)
	}
	return key.made(ctx, counted)
}

var templatesMade atomic.Int64

// TemplatesMade is how many templates this process has had an installer
// make (CachedTemplate's build): a test's way to tell a start that took the
// cache's template from one that ran the installer.
func TemplatesMade() int64 { return templatesMade.Load() }
