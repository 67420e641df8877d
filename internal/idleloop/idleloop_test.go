package idleloop

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/procstat"
)

// start starts loops, or skips where this machine has no cpu cgroup dbrig
// may make.
func start(t *testing.T, cpus []int) *Loops {
	t.Helper()
	l, err := Start(cpus)
	var none engine.NoCgroupError
	if errors.As(err, &none) {
		t.Skipf("no cpu cgroup here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestLoopsArePinnedAtTheLowestPriorityAndStopped(t *testing.T) {
	t.Parallel()
	l := start(t, nil)
	defer l.Stop()
	want, _ := AllowedCPUs()
	if got := l.CPUs(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("loops on CPUs %v, want one on each CPU this process may use, %v", got, want)
	}
	pids := l.pids()
	for i, pid := range pids {
		var set unix.CPUSet
		if err := unix.SchedGetaffinity(pid, &set); err != nil {
			t.Fatal(err)
		}
		if set.Count() != 1 || !set.IsSet(want[i]) {
			t.Errorf("loop %d may run on %d CPUs, want CPU %d alone", pid, set.Count(), want[i])
		}
		attr, err := unix.SchedGetAttr(pid, 0)
		if err != nil {
			t.Fatal(err)
		}
		if attr.Policy != unix.SCHED_IDLE {
			t.Errorf("loop %d runs at policy %d, want SCHED_IDLE (%d)", pid, attr.Policy, unix.SCHED_IDLE)
		}
		if idle := cgroupIdle(t, pid); idle != "1" {
			t.Errorf("loop %d is in a cgroup at cpu.idle %q, want 1: SCHED_IDLE alone is idle only within its own cgroup or session", pid, idle)
		}
	}
	dir := l.cgroup.Path()
	spent, err := l.Stop()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, s := range l.Each() {
		sum += s
	}
	if len(l.Each()) != len(pids) || sum != spent {
		t.Errorf("each loop's CPU time %v, in all %v: want one a loop, adding up", l.Each(), spent)
	}
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("loop %d still exists after Stop (kill 0: %v)", pid, err)
		}
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the loops' cgroup %s is left after Stop (%v)", dir, err)
	}
}

// cgroupIdle reads cpu.idle of a process's cpu cgroup (v1's cpu
// controller, or v2's one hierarchy).
func cgroupIdle(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		f := strings.SplitN(strings.TrimSpace(line), ":", 3)
		if len(f) != 3 {
			continue
		}
		var dir string
		switch {
		case slices.Contains(strings.Split(f[1], ","), "cpu"):
			dir = "/sys/fs/cgroup/" + f[1] + f[2]
		case f[0] == "0" && f[1] == "":
			if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err != nil {
				continue // v1's empty v2 line
			}
			dir = "/sys/fs/cgroup" + f[2]
		default:
			continue
		}
		v, err := os.ReadFile(dir + "/cpu.idle")
		if err == nil {
			return strings.TrimSpace(string(v))
		}
	}
	return ""
}

func TestModeIsHaltOrSpin(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{Halt, Spin} {
		if err := CheckMode(ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "poll", "Spin"} {
		if err := CheckMode(bad); err == nil {
			t.Errorf("%q was accepted", bad)
		}
	}
}

func TestFormatCPUs(t *testing.T) {
	t.Parallel()
	for want, cpus := range map[string][]int{"0": {0}, "0-3": {0, 1, 2, 3}, "0,2": {0, 2}, "": nil} {
		if got := FormatCPUs(cpus); got != want {
			t.Errorf("FormatCPUs(%v) = %q, want %q", cpus, got, want)
		}
	}
}

// The host's busy time leaves the loops out: over an interval, what the
// host did besides them and what they took cannot add up to more than the
// CPUs had. Counted in, a loop's time would be in both.
func TestHostBusyLeavesTheLoopsOut(t *testing.T) {
	l := start(t, nil)
	defer l.Stop()
	const tick = 1.0 / procstat.ClockTicks
	for attempt := 0; attempt < 10; attempt++ {
		host0, _ := procstat.HostBusy()
		loops0 := l.CPUSeconds()
		start := time.Now()
		time.Sleep(500 * time.Millisecond)
		host1, _ := procstat.HostBusy()
		loops1 := l.CPUSeconds()
		capacity := time.Since(start).Seconds() * float64(procstat.OnlineCPUs())
		host, loops := host1-host0, loops1-loops0
		if loops < 0.1 {
			continue // other processes left the loops almost nothing: try again
		}
		// Each reading rounds to a clock tick on each CPU.
		if slack := 4 * tick * float64(procstat.OnlineCPUs()); host+loops > capacity+slack {
			t.Fatalf("the host's busy %.2f s and the loops' %.2f s add up to more than the CPUs' %.2f s: the loops are counted in the host's time", host, loops, capacity)
		}
		return
	}
	t.Skip("other processes kept every CPU busy: the loops got too little CPU time to tell")
}

// A loop dies with the process that started it, even killed with SIGKILL.
func TestLoopsDieWithTheirProcess(t *testing.T) {
	t.Parallel()
	if os.Getenv("IDLELOOP_CHILD") == "1" {
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestLoopsDieWithTheirProcessChild$")
	cmd.Env = append(os.Environ(), "IDLELOOP_CHILD=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if strings.HasPrefix(line, "failed ") {
		cmd.Process.Kill()
		cmd.Wait()
		t.Skipf("the child could not start its loop: %s", line)
	}
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("the child said %q: %v", line, err)
	}
	fields := strings.Fields(strings.TrimPrefix(line, "loops "))
	var pids []int
	for _, f := range fields[1:] {
		pid, _ := strconv.Atoi(f)
		pids = append(pids, pid)
	}
	cmd.Process.Kill()
	cmd.Wait()
	// The killed child's cgroup outlives it (the next dbrig removes it:
	// engine.RemoveStaleCgroups); this test removes its own once empty.
	defer func() {
		for range 50 {
			if err := os.Remove(fields[0]); err == nil || errors.Is(err, os.ErrNotExist) {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Errorf("the killed child's cgroup %s could not be removed", fields[0])
	}()
	for _, pid := range pids {
		gone := false
		for range 500 { // the kernel delivers the parent-death signal at once; reaping by init may lag
			if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) || zombie(pid) {
				gone = true
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if !gone {
			syscall.Kill(-pid, syscall.SIGKILL)
			t.Errorf("loop %d outlived the process that started it", pid)
		}
	}
}

func TestLoopsDieWithTheirProcessChild(t *testing.T) {
	if os.Getenv("IDLELOOP_CHILD") != "1" {
		t.Skip("the child of TestLoopsDieWithTheirProcess")
	}
	l, err := Start([]int{0})
	if err != nil {
		fmt.Printf("failed %v\n", err)
		return
	}
	fmt.Printf("loops %s %s\n", l.cgroup.Path(), strings.Trim(fmt.Sprint(l.pids()), "[]"))
	time.Sleep(time.Hour) // until the parent SIGKILLs this process
}

func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(b), ')')
	return i >= 0 && len(b) > i+2 && b[i+2] == 'Z'
}

func (l *Loops) pids() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []int
	for _, c := range l.cmds {
		out = append(out, c.Process.Pid)
	}
	return out
}
