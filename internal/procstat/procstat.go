// Package procstat reads what Linux's /proc says about processes and the
// host: CPU time, memory and disk I/O of a server and the processes it
// forked, and the host's busy CPU time. A workload uses it to say what a
// point cost (CPU per transaction, memory per backend, bytes read from
// disk) and how much of the machine other work took meanwhile.
//
// Everything here reads files; nothing is cached. Reading another user's
// smaps_rollup or io needs the same user or root (dbrig runs its servers
// as an account of its own, and as root reads them).
//
// It parses /proc itself rather than through prometheus/procfs, which
// would make it 49 lines shorter but slower (the benchmarks beside it, on a
// machine of about 190 processes): procfs reads each process's stat with
// fmt.Fscan over all its fields, and every line of /proc/stat, so
// TreeUsage took 2.9 ms against 2.2 and HostBusy 69 us against 24.
package procstat

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// ClockTicks is the unit of /proc's CPU times (USER_HZ, 100 on Linux).
const ClockTicks = 100

// stat is the part of /proc/PID/stat this package reads.
type stat struct {
	ppid int
	// CPU seconds: the process's own user and system time, and its reaped
	// children's.
	own, reaped float64
}

func readStat(pid string) (stat, error) {
	b, err := os.ReadFile(filepath.Join("/proc", pid, "stat"))
	if err != nil {
		return stat{}, err
	}
	// The command name is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return stat{}, fmt.Errorf("/proc/%s/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// After the name: state(0) ppid(1) ... utime(11) stime(12) cutime(13)
	// cstime(14).
	if len(f) < 15 {
		return stat{}, fmt.Errorf("/proc/%s/stat: %d fields", pid, len(f))
	}
	var n [4]float64
	for k := range n {
		v, err := strconv.ParseFloat(f[11+k], 64)
		if err != nil {
			return stat{}, fmt.Errorf("/proc/%s/stat: %w", pid, err)
		}
		n[k] = v
	}
	ppid, _ := strconv.Atoi(f[1])
	return stat{ppid: ppid, own: (n[0] + n[1]) / ClockTicks, reaped: (n[2] + n[3]) / ClockTicks}, nil
}

// Tree lists a process and every process it forked that still runs (its
// children, theirs, ...), the root first.
func Tree(root int) ([]int, error) {
	if _, err := readStat(strconv.Itoa(root)); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	children := map[int][]int{}
	for _, e := range entries {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		st, err := readStat(e.Name())
		if err != nil {
			continue // it exited meanwhile
		}
		pid, _ := strconv.Atoi(e.Name())
		children[st.ppid] = append(children[st.ppid], pid)
	}
	out := []int{root}
	for i := 0; i < len(out); i++ {
		out = append(out, children[out[i]]...)
	}
	return out, nil
}

// Usage is what a tree of processes used up to one moment.
type Usage struct {
	At        time.Time
	Processes int
	// CPU is the seconds of CPU the root, its reaped children and its live
	// descendants used.
	CPU float64
	// ReadBytes and WriteBytes are what the live processes read from and
	// wrote to storage (not the page cache), from /proc/PID/io.
	ReadBytes, WriteBytes int64
	// IOKnown is false when /proc/PID/io could not be read.
	IOKnown bool
}

// TreeUsage reads the CPU time and storage I/O of root and its
// descendants. A process that exits between two samples takes its I/O
// with it (its CPU stays counted with its parent's reaped time).
func TreeUsage(root int) (Usage, error) {
	pids, err := Tree(root)
	if err != nil {
		return Usage{}, err
	}
	u := Usage{At: time.Now(), IOKnown: true}
	for i, pid := range pids {
		st, err := readStat(strconv.Itoa(pid))
		if err != nil {
			continue
		}
		u.Processes++
		u.CPU += st.own
		if i == 0 {
			u.CPU += st.reaped
		}
		r, w, err := ProcessIO(pid)
		if err != nil {
			u.IOKnown = false
			continue
		}
		u.ReadBytes += r
		u.WriteBytes += w
	}
	return u, nil
}

// SelfCPU is this process's CPU seconds, its reaped children's included.
func SelfCPU() (float64, error) {
	st, err := readStat("self")
	if err != nil {
		return 0, err
	}
	_, loops := excludedCPU()
	return st.own + max(st.reaped-loops, 0), nil
}

// ProcessCPU is one process's CPU seconds, its reaped children's
// included: a reading of one file, where TreeUsage reads every process's.
func ProcessCPU(pid int) (float64, error) {
	st, err := readStat(strconv.Itoa(pid))
	if err != nil {
		return 0, err
	}
	return st.own + st.reaped, nil
}

// ProcessIO reads a process's bytes read from and written to storage.
func ProcessIO(pid int) (read, write int64, err error) {
	f, err := readKeyed(filepath.Join("/proc", strconv.Itoa(pid), "io"))
	if err != nil {
		return 0, 0, err
	}
	r, ok1 := f["read_bytes"]
	w, ok2 := f["write_bytes"]
	if !ok1 || !ok2 {
		return 0, 0, errors.New("/proc/PID/io lacks read_bytes or write_bytes")
	}
	return r, w, nil
}

// Memory is one process's memory, or a tree's summed.
type Memory struct {
	// RSSAnon is private anonymous memory: a backend's own heap (its
	// caches and plans), not the shared buffers.
	RSSAnon int64
	// RSSShmem is the shared memory it touched (counted again in every
	// process that touched it).
	RSSShmem int64
	// PSS is the resident memory with each shared page divided among the
	// processes that map it: summed over a server's processes it is the
	// server's memory, shared buffers counted once.
	PSS int64
}

// Add adds o to m.
func (m *Memory) Add(o Memory) {
	m.RSSAnon += o.RSSAnon
	m.RSSShmem += o.RSSShmem
	m.PSS += o.PSS
}

// ProcessMemory reads one process's memory from /proc/PID/status and
// /proc/PID/smaps_rollup (PSS is 0 where the kernel has no rollup).
func ProcessMemory(pid int) (Memory, error) {
	dir := filepath.Join("/proc", strconv.Itoa(pid))
	st, err := readKeyed(filepath.Join(dir, "status"))
	if err != nil {
		return Memory{}, err
	}
	m := Memory{RSSAnon: st["RssAnon"], RSSShmem: st["RssShmem"]}
	if roll, err := readKeyed(filepath.Join(dir, "smaps_rollup")); err == nil {
		m.PSS = roll["Pss"]
	}
	return m, nil
}

// TreeMemory sums the memory of root and its descendants, and counts them.
func TreeMemory(root int) (Memory, int, error) {
	pids, err := Tree(root)
	if err != nil {
		return Memory{}, 0, err
	}
	var total Memory
	n := 0
	for _, pid := range pids {
		m, err := ProcessMemory(pid)
		if err != nil {
			continue // it exited meanwhile
		}
		total.Add(m)
		n++
	}
	return total, n, nil
}

// readKeyed reads a "Key: value [kB]" file into bytes (kB values times
// 1024) or plain numbers.
func readKeyed(path string) (map[string]int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(v)
		if len(fields) == 0 {
			continue
		}
		n, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			continue
		}
		if len(fields) > 1 && fields[1] == "kB" {
			n *= 1024
		}
		out[k] = n
	}
	return out, sc.Err()
}

// HostBusy is the busy time of all the host's CPUs since boot, in
// seconds: /proc/stat's first line less idle and iowait, and less the
// CPU time of dbrig's own loops that keep the CPUs from halting
// (ExcludeFromHost).
func HostBusy() (float64, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := bytes.Cut(b, []byte("\n"))
	f := strings.Fields(string(line))
	if len(f) < 8 || f[0] != "cpu" {
		return 0, errors.New("/proc/stat: no cpu line")
	}
	var busy float64
	for i, v := range f[1:] {
		if i == 3 || i == 4 || i >= 8 { // idle, iowait; guest time is in user already
			continue
		}
		n, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat: %w", err)
		}
		busy += n
	}
	live, reaped := excludedCPU()
	return max(busy/ClockTicks-live-reaped, 0), nil
}

// OnlineCPUs counts the host's online CPUs (not this process's affinity).
func OnlineCPUs() int {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return 0
	}
	n := 0
	for _, part := range strings.Split(strings.TrimSpace(string(b)), ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(lo)
		z := a
		var err2 error
		if isRange {
			z, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || z < a {
			return 0
		}
		n += z - a + 1
	}
	return n
}
