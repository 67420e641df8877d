package blockdev

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// FilesUnder lists the regular files under dir.
func FilesUnder(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.Type().IsRegular() {
			out = append(out, p)
		}
		return nil
	})
	return out, err
}

// Evict writes each file's dirty pages out and asks the kernel to drop its
// cached pages (POSIX_FADV_DONTNEED): the operating system's cache of
// those files alone, which any process that may read them may do, unlike
// dropping every cache of the machine. Resident says whether it worked.
func Evict(paths ...string) error {
	var errs []error
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		fd := int(f.Fd())
		if err := unix.Fsync(fd); err != nil {
			errs = append(errs, fmt.Errorf("fsync %s: %w", p, err))
		}
		if err := unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED); err != nil {
			errs = append(errs, fmt.Errorf("drop the cached pages of %s: %w", p, err))
		}
		f.Close()
	}
	return errors.Join(errs...)
}

// Resident counts the files' pages in the operating system's cache
// (mincore over a mapping of each file), and their pages in all.
func Resident(paths ...string) (resident, total int64, err error) {
	page := int64(os.Getpagesize())
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return 0, 0, err
		}
		st, err := f.Stat()
		if err != nil || st.Size() == 0 {
			f.Close()
			if err != nil {
				return 0, 0, err
			}
			continue
		}
		m, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
		f.Close()
		if err != nil {
			return 0, 0, fmt.Errorf("map %s: %w", p, err)
		}
		vec := make([]byte, (st.Size()+page-1)/page)
		err = mincore(m, vec)
		unix.Munmap(m)
		if err != nil {
			return 0, 0, fmt.Errorf("mincore %s: %w", p, err)
		}
		for _, v := range vec {
			if v&1 != 0 {
				resident++
			}
		}
		total += int64(len(vec))
	}
	return resident, total, nil
}

// DropCaches writes every dirty page out and drops the clean ones of every
// file on the machine (/proc/sys/vm/drop_caches = 1): the last resort when
// Evict left pages behind. It needs root and a writable /proc/sys.
func DropCaches() error {
	unix.Sync()
	if err := os.WriteFile("/proc/sys/vm/drop_caches", []byte("1"), 0o200); err != nil {
		return fmt.Errorf("drop the page cache: %w", err)
	}
	return nil
}

// Rate is what a sequential read moved in how long.
type Rate struct {
	Bytes   int64
	Seconds float64
}

// BytesPerSecond is the read's throughput.
func (r Rate) BytesPerSecond() float64 {
	if r.Seconds <= 0 {
		return 0
	}
	return float64(r.Bytes) / r.Seconds
}

// ReadRate reads a file from its start, chunk bytes per read call, until
// maxBytes, the file's end or maxTime. direct reads with O_DIRECT (chunk a
// multiple of 4 KiB), as a server that bypasses the cache does; otherwise
// through the operating system's cache and read-ahead, as PostgreSQL does
// (evict the file first for a cold read).
func ReadRate(ctx context.Context, path string, chunk int, direct bool, maxBytes int64, maxTime time.Duration) (Rate, error) {
	if chunk <= 0 {
		return Rate{}, fmt.Errorf("read %s in chunks of %d bytes", path, chunk)
	}
	flags := os.O_RDONLY
	if direct {
		if chunk%4096 != 0 {
			return Rate{}, fmt.Errorf("direct reads of %d bytes: want a multiple of 4096", chunk)
		}
		flags |= unix.O_DIRECT
	}
	f, err := os.OpenFile(path, flags, 0)
	if err != nil {
		return Rate{}, err
	}
	defer f.Close()
	// O_DIRECT needs a buffer aligned to the device's blocks: an anonymous
	// mapping is page-aligned.
	buf, err := unix.Mmap(-1, 0, chunk, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return Rate{}, err
	}
	defer unix.Munmap(buf)
	start := time.Now()
	var r Rate
	for r.Bytes < maxBytes {
		n, err := f.Read(buf)
		r.Bytes += int64(n)
		if errors.Is(err, io.EOF) || n == 0 {
			break
		}
		if err != nil {
			return r, fmt.Errorf("read %s: %w", path, err)
		}
		if r.Bytes%(64<<20) < int64(chunk) {
			if ctx.Err() != nil {
				return r, ctx.Err()
			}
			if time.Since(start) > maxTime {
				break
			}
		}
	}
	r.Seconds = time.Since(start).Seconds()
	return r, nil
}

// mincore fills vec with one byte per page of the mapping m, bit 0 set
// where the page is in memory (x/sys/unix has no wrapper for it).
func mincore(m, vec []byte) error {
	_, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0])))
	if errno != 0 {
		return errno
	}
	return nil
}
