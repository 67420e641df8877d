package blockdev

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// loopPrefix starts the name of every directory a Loop lives in, followed
// by the pid of the dbrig that made it: RemoveStale finds a dead one's.
const loopPrefix = "dbrig-loop-"

// KeptFile, in a Loop's directory, marks it kept (Keep) and says how to
// mount its backing file: RemoveStale leaves such a directory.
const KeptFile = "KEPT"

// Loop is a loop device dbrig made: a backing file in a directory of its
// own, an ext4 file system on the device, mounted in that directory.
// Close removes all of it.
type Loop struct {
	// Dir holds the backing file and the mount point.
	Dir string
	// Backing is the backing file, Dir/disk.img.
	Backing string
	// Mount is where the file system is mounted, Dir/mnt.
	Mount string
	// Device is the loop device ("/dev/loop3").
	Device Device
	// DirectIO says the device reads its backing file with O_DIRECT: the
	// read sizes the file system asks for reach the disk unchanged, and
	// the backing file's pages are not cached beneath the device's.
	DirectIO bool

	mounted  bool
	attached bool
	closed   bool
	keep     bool
}

// LoopOptions say how big a Loop is and who owns its file system's root.
type LoopOptions struct {
	Size int64
	// UID and GID own the mounted file system's root (-1: root's).
	UID, GID int
	// Sparse leaves the backing file's blocks unallocated until written,
	// with a file system of a fixed, modest number of inodes and journal:
	// a disk sized for whatever a server may write costs the space it
	// fills and a few seconds to make, not its size.
	Sparse bool
}

// sparseMkfs are mkfs.ext4's options for a sparse device: 262,144 inodes
// (a server of 100 databases has some 30,000 files) and a 64 MiB journal,
// about 130 MB written whatever the device's size.
var sparseMkfs = []string{"-N", "262144", "-J", "size=64"}

// Permitted says whether this process may make loop devices: nil, or why
// not, in words for a report.
func Permitted() error {
	if os.Geteuid() != 0 {
		return errors.New("dbrig is not running as root: making a loop device, mounting it and setting its read-ahead need root")
	}
	if _, err := os.Stat("/dev/loop-control"); err != nil {
		return fmt.Errorf("this system has no loop devices (/dev/loop-control: %v)", err)
	}
	for _, p := range []string{"losetup", "mkfs.ext4"} {
		if _, err := exec.LookPath(p); err != nil {
			return fmt.Errorf("%s is not installed (Debian: util-linux and e2fsprogs)", p)
		}
	}
	return nil
}

// NewLoop makes a loop device of o.Size bytes under base: a preallocated
// backing file (so that the device's blocks lie in order on the disk
// beneath), attached with direct I/O where the kernel allows it, an ext4
// file system initialised in full (no lazy initialisation writing in the
// background while a point measures), mounted noatime. On error it removes
// what it made.
func NewLoop(ctx context.Context, base string, o LoopOptions) (*Loop, error) {
	return newLoop(ctx, base, o, os.Getpid())
}

func newLoop(ctx context.Context, base string, o LoopOptions, pid int) (l *Loop, err error) {
	if err := Permitted(); err != nil {
		return nil, err
	}
	if o.Size < 64<<20 {
		return nil, fmt.Errorf("a loop device of %d bytes is too small (at least 64 MiB)", o.Size)
	}
	dir, err := os.MkdirTemp(base, loopPrefix+strconv.Itoa(pid)+"-")
	if err != nil {
		return nil, fmt.Errorf("make the loop device's directory: %w", err)
	}
	l = &Loop{Dir: dir, Backing: filepath.Join(dir, "disk.img"), Mount: filepath.Join(dir, "mnt")}
	defer func() {
		if err != nil {
			err = errors.Join(err, l.Close(context.WithoutCancel(ctx)))
		}
	}()
	// The server's account must reach the mount point.
	if err := os.Chmod(dir, 0o755); err != nil {
		return l, err
	}
	f, err := os.OpenFile(l.Backing, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err != nil {
		return l, err
	}
	if o.Sparse {
		err = f.Truncate(o.Size)
	} else {
		err = unix.Fallocate(int(f.Fd()), 0, 0, o.Size)
	}
	if errors.Is(err, unix.EOPNOTSUPP) {
		err = f.Truncate(o.Size) // a file system without fallocate: sparse
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return l, fmt.Errorf("make the backing file %s of %d bytes: %w", l.Backing, o.Size, err)
	}
	out, err := run(ctx, "losetup", "--find", "--show", "--direct-io=on", l.Backing)
	if err != nil {
		return l, fmt.Errorf("attach %s to a loop device: %w", l.Backing, err)
	}
	l.Device = Device{Name: filepath.Base(strings.TrimSpace(out))}
	l.attached = true
	if b, err := os.ReadFile(filepath.Join("/sys/block", l.Device.Name, "loop/dio")); err == nil {
		l.DirectIO = strings.TrimSpace(string(b)) == "1"
	}
	mkfs := []string{"-q", "-F", "-m", "0", "-E", "lazy_itable_init=0,lazy_journal_init=0,nodiscard"}
	if o.Sparse {
		mkfs = append(mkfs, sparseMkfs...)
	}
	if _, err := run(ctx, "mkfs.ext4", append(mkfs, l.Device.Path())...); err != nil {
		return l, fmt.Errorf("make a file system on %s: %w", l.Device.Path(), err)
	}
	if err := os.Mkdir(l.Mount, 0o755); err != nil {
		return l, err
	}
	if err := unix.Mount(l.Device.Path(), l.Mount, "ext4", unix.MS_NOATIME, ""); err != nil {
		return l, fmt.Errorf("mount %s on %s: %w", l.Device.Path(), l.Mount, err)
	}
	l.mounted = true
	if o.UID >= 0 || o.GID >= 0 {
		if err := os.Chown(l.Mount, o.UID, o.GID); err != nil {
			return l, err
		}
	}
	return l, nil
}

// Keep makes Close keep the backing file and its directory, with KeptFile
// saying how to mount it: what a server wrote on the device (--keep) is
// in that file system, and nowhere else.
func (l *Loop) Keep() { l.keep = true }

// Close unmounts the file system (lazily when a process still holds it
// after a few seconds: the device is then freed when it lets go), detaches
// the device and removes the directory, or keeps it (Keep). Safe to call
// more than once.
func (l *Loop) Close(ctx context.Context) error {
	if l == nil || l.closed {
		return nil
	}
	l.closed = true
	var errs []error
	if l.mounted {
		if err := unmount(l.Mount); err != nil {
			errs = append(errs, err)
		}
	}
	if l.attached {
		if _, err := run(ctx, "losetup", "--detach", l.Device.Path()); err != nil {
			errs = append(errs, fmt.Errorf("detach %s: %w", l.Device.Path(), err))
		}
	}
	switch {
	case l.Dir == "":
	case l.keep:
		if err := os.WriteFile(filepath.Join(l.Dir, KeptFile), []byte(l.keptNote()), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("keep %s: %w", l.Dir, err))
		}
	default:
		if err := os.RemoveAll(l.Dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// keptNote tells a user how to read a kept device. Mounted where the
// server had it, the paths an instance records (its data directory, its
// external file) hold again.
func (l *Loop) keptNote() string {
	return fmt.Sprintf(`dbrig kept this emulated disk (--keep): %s is its ext4 file system (sparse), with
what the server wrote on it as it stopped. To read it, as root, mount it where the server had it:

mount -o loop,noatime %s %s

and when done: umount %s; rm -r %s
`, l.Backing, l.Backing, l.Mount, l.Mount, l.Dir)
}

// unmount unmounts a file system, retrying while it is busy (a server that
// has just exited), then detaching it lazily.
func unmount(path string) error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := unix.Unmount(path, 0)
		if err == nil || errors.Is(err, unix.EINVAL) { // EINVAL: not mounted
			return nil
		}
		if !errors.Is(err, unix.EBUSY) || time.Now().After(deadline) {
			if lerr := unix.Unmount(path, unix.MNT_DETACH); lerr != nil {
				return fmt.Errorf("unmount %s: %w (lazily: %v)", path, err, lerr)
			}
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// RemoveStale removes the loop devices, mounts and directories under base
// that a dbrig killed before its Close left (their directory names a pid
// no longer running).
func RemoveStale(ctx context.Context, base string) error {
	dirs, _ := filepath.Glob(filepath.Join(base, loopPrefix+"*"))
	var errs []error
	for _, dir := range dirs {
		pid, ok := pidOf(filepath.Base(dir))
		if !ok || alive(pid) {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, KeptFile)); err == nil {
			continue // the user's, with the data a server wrote
		}
		l := &Loop{Dir: dir, Backing: filepath.Join(dir, "disk.img"), Mount: filepath.Join(dir, "mnt")}
		l.mounted = isMounted(l.Mount)
		if out, err := run(ctx, "losetup", "--associated", l.Backing, "--noheadings", "--output", "NAME"); err == nil {
			for _, dev := range strings.Fields(out) {
				if l.mounted {
					if err := unmount(l.Mount); err != nil {
						errs = append(errs, err)
					}
					l.mounted = false
				}
				if _, err := run(ctx, "losetup", "--detach", dev); err != nil {
					errs = append(errs, fmt.Errorf("detach %s: %w", dev, err))
				}
			}
		}
		if err := l.Close(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// pidOf reads the pid from a directory name "dbrig-loop-<pid>-<random>".
func pidOf(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, loopPrefix)
	if !ok {
		return 0, false
	}
	p, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(p)
	return pid, err == nil && pid > 0
}

func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

func isMounted(path string) bool {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && f[4] == path {
			return true
		}
	}
	return false
}

// MadeByThisProcess reports whether a loop device's backing file is one a
// Loop of this process made: only such a device's settings are dbrig's to
// change.
func MadeByThisProcess(d Device) bool {
	backing, ok := d.LoopBacking()
	if !ok {
		return false
	}
	return strings.HasPrefix(filepath.Base(filepath.Dir(backing)), loopPrefix+strconv.Itoa(os.Getpid())+"-")
}

func run(ctx context.Context, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(errOut.String()))
	}
	return out.String(), nil
}
