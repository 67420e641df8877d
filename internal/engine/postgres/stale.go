package postgres

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
)

// RemoveStale removes instance directories left in baseDir by a dbrig that
// was killed (SIGKILL, a crash): directories named dbrig-pg-* whose owning
// dbrig (engine.OwnerFile) and server no longer run, whatever their age,
// and the WAL directories they placed apart. The kernel has already stopped
// the servers and initdb (see engine.Start); this removes what they left
// on disk. A directory without an owner record (made by a dbrig before the
// record existed) and without a postmaster.pid is only removed when it is
// older than an hour, since its dbrig may be running initdb in it now. The
// scratch directories of CheckSettings (dbrig-pgcheck-*) and of a
// template's initdb (dbrig-pgtmpl-*) go by the same rule.
func RemoveStale(baseDir string) (removed []string) {
	if baseDir == "" {
		baseDir = os.TempDir()
	}
	removed = engine.RemoveGone(baseDir, "dbrig-pgcheck-*", "dbrig-pgtmpl-*")
	dirs, _ := filepath.Glob(filepath.Join(baseDir, "dbrig-pg-*"))
	for _, dir := range dirs {
		if strings.HasPrefix(filepath.Base(dir), "dbrig-pg-wal-") {
			// A WAL directory placed apart belongs to the instance
			// directory its owner file names: stale once that is gone.
			owner, err := os.ReadFile(filepath.Join(dir, "owner"))
			if err != nil {
				continue
			}
			if _, err := os.Stat(strings.TrimSpace(string(owner))); errors.Is(err, os.ErrNotExist) && os.RemoveAll(dir) == nil {
				removed = append(removed, dir)
			}
			continue
		}
		st, err := os.Stat(dir)
		if err != nil || !st.IsDir() {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, "keep")); err == nil {
			continue // kept with --keep: the user's to remove
		}
		ownerAlive, recorded := engine.OwnerAlive(dir)
		pid, hasPID := postmasterPID(filepath.Join(dir, "data", "postmaster.pid"))
		switch {
		case ownerAlive, hasPID && processAlive(pid):
			continue
		case !recorded && !hasPID && time.Since(st.ModTime()) < time.Hour:
			continue
		}
		removeStaleDSM(dir)
		if os.RemoveAll(dir) == nil {
			removed = append(removed, dir)
		}
	}
	return removed
}

// removeStaleDSM removes the dynamic shared memory a killed server left
// (see recordDSM), when its files belong to the data directory's owner.
func removeStaleDSM(dir string) {
	st, err := os.Lstat(filepath.Join(dir, "data"))
	if err != nil {
		return
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && st.IsDir() {
		_ = removeDSM(dir, sys.Uid)
	}
}

func postmasterPID(path string) (int, bool) {
	f, err := os.Open(path)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(sc.Text()))
	return pid, err == nil && pid > 0
}

// processAlive reports whether pid is a live postmaster: a recycled pid
// that is no postgres process does not count.
func processAlive(pid int) bool {
	comm, ok := engine.ProcessCommand(pid)
	return ok && strings.HasPrefix(comm, "postgres")
}
