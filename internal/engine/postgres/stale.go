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
)

// RemoveStale removes instance directories left in baseDir by a dbrig that
// was killed (SIGKILL, a crash): directories named dbrig-pg-* whose server
// no longer runs. The kernel has already stopped the servers themselves (see
// engine.Start); this removes what they left on disk. A directory without a
// postmaster.pid is only removed when it is older than an hour, since a
// concurrent dbrig may be running initdb in it.
func RemoveStale(baseDir string) (removed []string) {
	if baseDir == "" {
		baseDir = os.TempDir()
	}
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
		pid, ok := postmasterPID(filepath.Join(dir, "data", "postmaster.pid"))
		switch {
		case ok && processAlive(pid):
			continue
		case !ok && time.Since(st.ModTime()) < time.Hour:
			continue
		}
		if os.RemoveAll(dir) == nil {
			removed = append(removed, dir)
		}
	}
	return removed
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

func processAlive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && err != syscall.EPERM {
		return false
	}
	// A zombie (dead, not yet reaped by whoever inherited it) is dead, and
	// a recycled pid that is not a postgres process does not count.
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true // cannot tell: keep the directory
	}
	s := string(stat)
	open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || closing < open || closing+2 >= len(s) {
		return true
	}
	comm, state := s[open+1:closing], s[closing+2]
	return state != 'Z' && state != 'X' && strings.HasPrefix(comm, "postgres")
}
