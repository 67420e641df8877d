package postgres

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/dbrig/dbrig/internal/engine"
)

// A server with dynamic_shared_memory_type = posix (the default) keeps its
// dynamic shared memory in /dev/shm: a control segment, made when the
// postmaster starts, that lists every other segment. PostgreSQL removes them
// at a clean shutdown, or at the next start in the same data directory; a
// postmaster killed with SIGKILL (a dbrig killed, its servers killed with
// it by the kernel, or a server that would not stop) leaves them, and a
// removed instance has no next start. So dbrig records the control
// segment's name in the instance directory once the server is ready, and
// once the server is dead removes what the control segment lists and then
// the control segment, as PostgreSQL's own cleanup at its next start
// (dsm_cleanup_using_control_segment) would.
const (
	dsmRecordFile = "dsm-control"
	shmDir        = "/dev/shm"
	dsmPrefix     = "PostgreSQL."
	// PostgreSQL 15's dsm_control_header: magic, nitems, maxitems, then
	// the items at an 8-byte boundary, each 40 bytes on a 64-bit machine
	// (handle, refcnt, first_page, npages, a pointer, pinned).
	dsmControlMagic = 0x9a503d32
	dsmItemsOffset  = 16
	dsmItemSize     = 40
)

// recordDSM writes the name of the control segment the postmaster at pid
// has mapped into the instance directory, a directory of the server's
// account (user); a server with no segment in /dev/shm (another
// dynamic_shared_memory_type) records nothing.
func recordDSM(dir string, pid int, user engine.ServerUser) error {
	name, err := controlSegmentOf(pid)
	if err != nil || name == "" {
		_ = os.Remove(filepath.Join(dir, dsmRecordFile))
		return err
	}
	return engine.WriteServerFile(dir, dsmRecordFile, []byte(name+"\n"), user)
}

// controlSegmentOf finds, among the /dev/shm segments the process maps,
// the one that starts with a control segment's header.
func controlSegmentOf(pid int) (string, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/maps", pid))
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		_, path, ok := strings.Cut(sc.Text(), " "+shmDir+"/"+dsmPrefix)
		if !ok {
			continue
		}
		name := dsmPrefix + strings.TrimSuffix(path, " (deleted)")
		if _, ok := dsmHandle(name); !ok {
			continue
		}
		if hdr, err := readControl(filepath.Join(shmDir, name), -1); err == nil && hdr != nil {
			return name, nil
		}
	}
	return "", sc.Err()
}

// dsmHandle parses a segment's name, PostgreSQL.<handle>.
func dsmHandle(name string) (uint32, bool) {
	digits, ok := strings.CutPrefix(name, dsmPrefix)
	if !ok {
		return 0, false
	}
	h, err := strconv.ParseUint(digits, 10, 32)
	return uint32(h), err == nil
}

// removeDSM removes the segments the instance directory's record names,
// when they belong to uid; call it only once the server is dead. A record
// that names nothing left is removed with no error.
func removeDSM(dir string, uid uint32) error {
	record := filepath.Join(dir, dsmRecordFile)
	b, err := engine.ReadServerFile(record)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	name := strings.TrimSpace(string(b))
	if _, ok := dsmHandle(name); !ok {
		return fmt.Errorf("%s: %q is no dynamic shared memory segment's name", record, name)
	}
	control := filepath.Join(shmDir, name)
	handles, err := readControl(control, int64(uid))
	if err != nil {
		return fmt.Errorf("the server's dynamic shared memory: %w", err)
	}
	var errs []error
	for _, h := range handles {
		if err := removeSegment(filepath.Join(shmDir, dsmPrefix+strconv.FormatUint(uint64(h), 10)), uid); err != nil {
			errs = append(errs, err)
		}
	}
	if handles != nil {
		errs = append(errs, removeSegment(control, uid))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("the server's dynamic shared memory: %w", err)
	}
	return os.Remove(record)
}

// readControl reads a control segment and returns the handles of the
// segments it lists in use, or nil when the file is gone. The file must be
// a regular file of the owner uid (any owner when uid is negative) and
// carry the control segment's magic number.
func readControl(path string, uid int64) ([]uint32, error) {
	// Not blocking: /dev/shm is anyone's, and a pipe of that name must
	// not hold the stop.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := ownedRegular(st, path, uid); err != nil {
		return nil, err
	}
	var hdr [dsmItemsOffset]byte
	if _, err := io.ReadFull(f, hdr[:]); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	le := binary.LittleEndian
	magic, n, max := le.Uint32(hdr[0:]), le.Uint32(hdr[4:]), le.Uint32(hdr[8:])
	if magic != dsmControlMagic || n > max || max > 1<<20 {
		return nil, fmt.Errorf("%s is no dynamic shared memory control segment", path)
	}
	items := make([]byte, int(n)*dsmItemSize)
	if _, err := io.ReadFull(f, items); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	handles := []uint32{}
	for k := 0; k < int(n); k++ {
		item := items[k*dsmItemSize:]
		handle, refcnt := le.Uint32(item[0:]), le.Uint32(item[4:])
		// A free slot, or a segment in the main shared memory (an odd
		// handle), which has no file of its own.
		if refcnt == 0 || handle&1 == 1 {
			continue
		}
		handles = append(handles, handle)
	}
	return handles, nil
}

// ownedRegular checks that st, path's own (not a link's target), is a
// regular file of the owner uid (any owner when uid is negative).
func ownedRegular(st os.FileInfo, path string, uid int64) error {
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !st.Mode().IsRegular() || !ok {
		return fmt.Errorf("%s is not a regular file", path)
	}
	if uid >= 0 && int64(sys.Uid) != uid {
		return fmt.Errorf("%s belongs to uid %d, not the server's %d: left alone", path, sys.Uid, uid)
	}
	return nil
}

// removeSegment removes one segment if it is a regular file of uid; one
// already gone is no error.
func removeSegment(path string, uid uint32) error {
	st, err := os.Lstat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := ownedRegular(st, path, int64(uid)); err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}
