package monitor

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// clockTicks is the unit of /proc's CPU times (USER_HZ, 100 on Linux).
const clockTicks = 100

// ProcCPU is a process's user and system time in seconds ("self" for this
// one), with its reaped children's when asked (the postmaster reaps its
// backends, so their time stays counted after they exit).
func ProcCPU(pid string, children bool) (float64, bool) {
	b, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return 0, false
	}
	// The command name is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	// Fields after the name: state(0) ppid(1) ... utime(11) stime(12)
	// cutime(13) cstime(14).
	if len(f) < 15 {
		return 0, false
	}
	last := 12
	if children {
		last = 14
	}
	var t float64
	for k := 11; k <= last; k++ {
		n, err := strconv.ParseFloat(f[k], 64)
		if err != nil {
			return 0, false
		}
		t += n
	}
	return t / clockTicks, true
}

// TreeCPU is a server's CPU time in seconds: its main process with what it
// reaped, and its running children (PostgreSQL's backends and workers;
// MariaDB's threads are in its one process).
func TreeCPU(pid int) (float64, bool) {
	total, ok := ProcCPU(strconv.Itoa(pid), true)
	if !ok {
		return 0, false
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, false
	}
	want := strconv.Itoa(pid)
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 1 && f[1] == want {
			if t, ok := ProcCPU(e.Name(), false); ok {
				total += t
			}
		}
	}
	return total, true
}
