package mariadb

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
)

// RemoveStale removes instance directories left in baseDir by a dbrig that
// was killed (SIGKILL, a crash): directories named dbrig-mariadb-* whose
// owning dbrig and server no longer run, and the data and redo log
// directories they made elsewhere. The kernel has already stopped the
// servers themselves (see engine.Start); this removes what they left on
// disk. A directory kept with --keep is the user's to remove. The scratch
// directory of a template's mariadb-install-db (dbrig-mariadbtmpl-*) goes
// once its dbrig no longer runs, or, with no owner record, after an hour.
func RemoveStale(baseDir string) (removed []string) {
	if baseDir == "" {
		baseDir = os.TempDir()
	}
	removed = engine.RemoveGone(baseDir, "dbrig-mariadbtmpl-*")
	dirs, _ := filepath.Glob(filepath.Join(baseDir, "dbrig-mariadb-*"))
	for _, dir := range dirs {
		st, err := os.Stat(dir)
		if err != nil || !st.IsDir() {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, "keep")); err == nil {
			continue
		}
		alive, recorded := engine.OwnerAlive(dir)
		switch {
		case alive:
			continue
		case !recorded && time.Since(st.ModTime()) < time.Hour:
			continue // made this instant, before its owner was recorded, or by a dbrig that records none: it may be installing in it now
		}
		if pid, ok := readPID(filepath.Join(dir, "mariadbd.pid")); ok && processAlive(pid, "mariadbd") {
			continue
		}
		for _, ext := range readLines(filepath.Join(dir, "external")) {
			// Only what dbrig names so: the file is in a directory others
			// may write to.
			base := filepath.Base(ext)
			if filepath.IsAbs(ext) && (strings.HasPrefix(base, "dbrig-data-mariadb-") || strings.HasPrefix(base, "dbrig-wal-mariadb-")) {
				_ = os.RemoveAll(ext)
			}
		}
		if os.RemoveAll(dir) == nil {
			removed = append(removed, dir)
		}
	}
	return removed
}

// processAlive reports whether pid is a live process named comm.
func processAlive(pid int, comm string) bool {
	c, ok := engine.ProcessCommand(pid)
	return ok && c == comm
}

func readPID(path string) (int, bool) {
	lines := readLines(path)
	if len(lines) == 0 {
		return 0, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(lines[0]))
	return pid, err == nil && pid > 0
}

func readLines(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}
