package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// OwnerFile, in an instance directory, records the dbrig process that made
// the directory: its pid and its start time (field 22 of /proc/<pid>/stat),
// so that a recycled pid is no owner. An engine writes it before it puts
// anything else there (initdb, mariadb-install-db), and its RemoveStale
// removes the directory of an owner that no longer runs, whatever the
// directory's age.
const OwnerFile = "owner"

// WriteOwner records this process as dir's owner.
func WriteOwner(dir string) error {
	start, ok := processStart(os.Getpid())
	if !ok {
		start = "?"
	}
	return os.WriteFile(filepath.Join(dir, OwnerFile), fmt.Appendf(nil, "%d %s\n", os.Getpid(), start), 0o600)
}

// OwnerAlive reports whether the process recorded as dir's owner still
// runs; recorded is false when dir holds no record (a dbrig before the
// record existed made it, or the owner is writing it this instant).
func OwnerAlive(dir string) (alive, recorded bool) {
	b, err := os.ReadFile(filepath.Join(dir, OwnerFile))
	if err != nil {
		return false, false
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return false, false
	}
	pid, err := strconv.Atoi(f[0])
	if err != nil || pid <= 0 {
		return false, false
	}
	start, ok := processStart(pid)
	return ok && (f[1] == "?" || start == f[1]), true
}

// RemoveGone removes the directories under baseDir matching each of the
// patterns whose dbrig no longer runs (OwnerGone), and returns them: the
// scratch directories of a killed dbrig.
func RemoveGone(baseDir string, patterns ...string) (removed []string) {
	for _, pattern := range patterns {
		dirs, _ := filepath.Glob(filepath.Join(baseDir, pattern))
		for _, dir := range dirs {
			if OwnerGone(dir) && os.RemoveAll(dir) == nil {
				removed = append(removed, dir)
			}
		}
	}
	return removed
}

// OwnerGone reports whether the dbrig that made dir no longer runs: its
// recorded owner is dead, or, without a record, the directory is over an
// hour old (its dbrig may be writing the record this instant, or predate
// it). A scratch directory whose owner is gone is a killed dbrig's, and
// any later dbrig may remove it.
func OwnerGone(dir string) bool {
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() {
		return false
	}
	alive, recorded := OwnerAlive(dir)
	return !alive && (recorded || time.Since(st.ModTime()) >= time.Hour)
}

// ProcessCommand returns the command name of a live process; ok is false
// when pid is gone or a zombie (dead, not yet reaped).
func ProcessCommand(pid int) (comm string, ok bool) {
	comm, state, _, ok := procStat(pid)
	return comm, ok && state != 'Z' && state != 'X'
}

// processStart reads a live process's start time.
func processStart(pid int) (string, bool) {
	_, state, fields, ok := procStat(pid)
	if !ok || state == 'Z' || state == 'X' || len(fields) < 20 {
		return "", false
	}
	return fields[19], true // field 22 of stat, counting from the state (field 3)
}

// procStat reads /proc/<pid>/stat: the command name, the state and the
// fields from the state on.
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
