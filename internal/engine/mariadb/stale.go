package mariadb

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// RemoveStale removes instance directories left in baseDir by a dbrig that
// was killed (SIGKILL, a crash): directories named dbrig-mariadb-* whose
// owning dbrig and server no longer run, and the data and redo log
// directories they made elsewhere. The kernel has already stopped the
// servers themselves (see engine.Start); this removes what they left on
// disk. A directory kept with --keep is the user's to remove.
func RemoveStale(baseDir string) (removed []string) {
	if baseDir == "" {
		baseDir = os.TempDir()
	}
	dirs, _ := filepath.Glob(filepath.Join(baseDir, "dbrig-mariadb-*"))
	for _, dir := range dirs {
		st, err := os.Stat(dir)
		if err != nil || !st.IsDir() {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, "keep")); err == nil {
			continue
		}
		owner, hasOwner := readOwner(dir)
		switch {
		case hasOwner && owner.alive():
			continue
		case !hasOwner && time.Since(st.ModTime()) < time.Hour:
			continue // being made this instant, before its owner was written
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

// owner is the dbrig process that made an instance: its pid and start time
// (field 22 of /proc/<pid>/stat), so that a recycled pid does not count.
type owner struct {
	pid   int
	start string
}

func writeOwner(dir string) error {
	start, ok := processStart(os.Getpid())
	if !ok {
		start = "?"
	}
	return os.WriteFile(filepath.Join(dir, "owner"), fmt.Appendf(nil, "%d %s\n", os.Getpid(), start), 0o600)
}

func readOwner(dir string) (owner, bool) {
	b, err := os.ReadFile(filepath.Join(dir, "owner"))
	if err != nil {
		return owner{}, false
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return owner{}, false
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil || pid <= 0 {
		return owner{}, false
	}
	return owner{pid: pid, start: f[1]}, true
}

func (o owner) alive() bool {
	start, ok := processStart(o.pid)
	return ok && (o.start == "?" || start == o.start)
}

// processStart reads a live (not zombie) process's start time.
func processStart(pid int) (string, bool) {
	_, state, fields, ok := procStat(pid)
	if !ok || state == 'Z' || state == 'X' || len(fields) < 20 {
		return "", false
	}
	return fields[19], true // field 22 of stat, counting from the state (field 3)
}

// procStat reads /proc/<pid>/stat: the command name, the state and the
// fields after it.
func procStat(pid int) (comm string, state byte, rest []string, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", 0, nil, false
	}
	s := string(b)
	open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || closing < open || closing+2 >= len(s) {
		return "", 0, nil, false
	}
	return s[open+1 : closing], s[closing+2], strings.Fields(s[closing+2:]), true
}

// processAlive reports whether pid is a live process named comm.
func processAlive(pid int, comm string) bool {
	c, state, _, ok := procStat(pid)
	return ok && state != 'Z' && state != 'X' && c == comm
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
