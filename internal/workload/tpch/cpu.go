package tpch

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTicks is the unit of /proc's CPU times (USER_HZ, 100 on Linux).
const clockTicks = 100

// cpuSample is the host's busy CPU time, the server's and dbrig's own at
// one moment, to tell how much of the CPUs other work took during a point:
// a parallel degree can only gain what the CPUs have free.
type cpuSample struct {
	at     time.Time
	host   float64 // busy seconds of all CPUs since boot
	server float64 // the server and every process it reaped, seconds
	self   float64 // this process, seconds
	ok     bool
}

// sampleCPU reads the CPU times; serverPID 0 (a target, or a client
// process) gives no sample.
func sampleCPU(serverPID int) cpuSample {
	s := cpuSample{at: time.Now()}
	if serverPID <= 0 {
		return s
	}
	host, ok1 := hostBusy()
	server, ok2 := treeCPU(serverPID)
	self, ok3 := procCPU("self", true)
	s.host, s.server, s.self, s.ok = host, server, self, ok1 && ok2 && ok3
	return s
}

// otherCPUs is the CPUs' worth of work, on average between two samples,
// that neither the server nor dbrig did.
func otherCPUs(a, b cpuSample) (float64, bool) {
	wall := b.at.Sub(a.at).Seconds()
	if !a.ok || !b.ok || wall <= 0 {
		return 0, false
	}
	other := (b.host - a.host) - (b.server - a.server) - (b.self - a.self)
	return max(other, 0) / wall, true
}

// hostBusy is the busy time of all CPUs: /proc/stat's first line less
// idle and iowait.
func hostBusy() (float64, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 8 || f[0] != "cpu" {
		return 0, false
	}
	var busy float64
	for i, v := range f[1:] {
		if i == 3 || i == 4 || i >= 8 { // idle, iowait; guest times are in user already
			continue
		}
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, false
		}
		busy += n
	}
	return busy / clockTicks, true
}

// procCPU is a process's user and system time, with its reaped children's
// when asked (the postmaster reaps its parallel workers, so their time
// stays counted after they exit).
func procCPU(pid string, children bool) (float64, bool) {
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

// treeCPU is a server's CPU time: its main process with what it reaped,
// and its running children (backends, parallel workers).
func treeCPU(pid int) (float64, bool) {
	total, ok := procCPU(strconv.Itoa(pid), true)
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
			if t, ok := procCPU(e.Name(), false); ok {
				total += t
			}
		}
	}
	return total, true
}
