package engine

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestLimitsRefuseWhatCapsNothingOrTooLittle(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		l    Limits
		want string
	}{
		{Limits{}, "caps nothing"},
		{Limits{Memory: -1}, "memory cap"},
		{Limits{CPU: 0.001}, "at least 0.01"},
		{Limits{CPU: -0.5}, "at least 0.01"},
		{Limits{Disks: []DiskLimit{{Device: "7", ReadBPS: 1}}}, "not major:minor"},
		{Limits{Disks: []DiskLimit{{Device: "7:0", ReadBPS: -1}}}, "must not be negative"},
	} {
		err := tc.l.check()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one saying %q", tc.l, err, tc.want)
		}
	}
	if err := (Limits{CPU: 0.25}).check(); err != nil {
		t.Errorf("a quarter of a core: %v", err)
	}
}

func TestCgroupWritesAreWhatTheKernelReads(t *testing.T) {
	t.Parallel()
	l := Limits{Memory: 1 << 30, CPU: 0.25, Disks: []DiskLimit{{Device: "7:3", ReadBPS: 200e6, ReadIOPS: 5000}}}
	want := map[string][][2]string{
		"memory": {{"memory.limit_in_bytes", "1073741824"}},
		"cpu":    {{"cpu.cfs_period_us", "100000"}, {"cpu.cfs_quota_us", "25000"}},
		"blkio":  {{"blkio.throttle.read_bps_device", "7:3 200000000"}, {"blkio.throttle.read_iops_device", "7:3 5000"}},
	}
	for c, w := range want {
		if got := v1Writes(c, l); fmt.Sprint(got) != fmt.Sprint(w) {
			t.Errorf("v1 %s: %v, want %v", c, got, w)
		}
	}
	v2 := [][2]string{{"memory.max", "1073741824"}, {"cpu.max", "25000 100000"}, {"io.max", "7:3 rbps=200000000 riops=5000"}}
	if got := v2Writes(l); fmt.Sprint(got) != fmt.Sprint(v2) {
		t.Errorf("v2: %v, want %v", got, v2)
	}
}

// TestCPUCgroupCapsASpinningProcess starts a process that spins in a
// cgroup given a fifth of a core and checks it got no more than that: an
// upper bound, which a busy machine can only make easier to meet.
func TestCPUCgroupCapsASpinningProcess(t *testing.T) {
	t.Parallel()
	if _, err := CgroupSupport("cpu"); err != nil {
		t.Skip(err)
	}
	name := fmt.Sprintf("dbrig-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	cg, err := NewCgroup(name, Limits{CPU: 0.2})
	if err != nil {
		t.Fatal(err)
	}
	dir, _ := cg.dir("cpu")
	cmd := exec.Command("sh", "-c", "while :; do :; done")
	if err := StartWith(cmd, ProcessOptions{Cgroup: cg}); err != nil {
		_ = cg.Remove()
		t.Fatal(err)
	}
	start := time.Now()
	time.Sleep(1500 * time.Millisecond)
	procs, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	_ = cmd.Process.Kill()
	ws, err := cmd.Process.Wait()
	wall := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(strings.Fields(string(procs)), fmt.Sprint(cmd.Process.Pid)) {
		t.Errorf("process %d not in its cgroup %s (%q)", cmd.Process.Pid, dir, procs)
	}
	cpu := ws.UserTime() + ws.SystemTime()
	// Two fifths of a period of slack for the first and last period.
	if limit := time.Duration(0.2*float64(wall)) + 2*cfsPeriod/5; cpu > limit {
		t.Errorf("the spinning process used %v of CPU in %v; its quota allows %v", cpu, wall, limit)
	}
	if err := cg.Remove(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("cgroup %s still there after Remove (%v)", dir, err)
	}
	t.Logf("CPU %v in %v", cpu, wall)
}

// TestStaleCgroupsOfAKilledDbrigGo makes the empty cgroups a killed dbrig
// would leave (named after a process that no longer runs) beside one of
// this process and one not named by dbrig, and checks only the first goes.
func TestStaleCgroupsOfAKilledDbrigGo(t *testing.T) {
	t.Parallel()
	parent, ok := v1Parent("cpu")
	if !ok {
		t.Skip("no writable cgroup v1 cpu hierarchy")
	}
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	tag := fmt.Sprintf("%d-%d", os.Getpid(), time.Now().UnixNano())
	stale := filepath.Join(parent, fmt.Sprintf("dbrig-test-stale-%s%s%d", tag, ownerMark, gone.Process.Pid))
	live := filepath.Join(parent, fmt.Sprintf("dbrig-test-live-%s%s%d", tag, ownerMark, os.Getpid()))
	foreign := filepath.Join(parent, fmt.Sprintf("other-test-%s%s%d", tag, ownerMark, gone.Process.Pid))
	for _, d := range []string{stale, live, foreign} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = os.Remove(d) })
	}
	// A parallel test's first NewCgroup sweeps too, and may take the stale
	// cgroup before this call does: what counts is that it is gone.
	removed := RemoveStaleCgroups()
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the stale cgroup %s was not removed (removed %v, stat %v)", stale, removed, err)
	}
	for _, d := range []string{live, foreign} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s, not a killed dbrig's, was removed: %v", d, err)
		}
	}
}

// TestOwnCgroupIsTheCallingThreads moves the main thread into a cgroup, as
// the spawner does for each fork when its locked thread is the main thread,
// and reads this process's cgroup from another thread: it must name where
// the process is, not where the main thread is for the moment. (Reading
// /proc/self/cgroup, a NewCgroup beside a starting server nested its cgroup
// inside the server's, and a sweep missed a killed dbrig's cgroups.) Not
// parallel: threads the runtime clones from the main thread meanwhile would
// start in that cgroup.
func TestOwnCgroupIsTheCallingThreads(t *testing.T) {
	parent, ok := v1Parent("cpu")
	if !ok {
		t.Skip("no writable cgroup v1 cpu hierarchy")
	}
	cg, err := NewCgroup(fmt.Sprintf("dbrig-test-own-%d-%d", os.Getpid(), time.Now().UnixNano()), Limits{CPU: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := cg.Remove(); err != nil {
			t.Error(err)
		}
	}()
	dir, _ := cg.dir("cpu")
	read := make(chan string)
	go func() {
		// A thread of its own that is not the main thread: when this one is,
		// it stays locked (so no goroutine gets it) until another reads.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if unix.Gettid() != os.Getpid() {
			read <- readOwn(t, dir, parent)
			return
		}
		inner := make(chan string)
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			inner <- readOwn(t, dir, parent)
		}()
		read <- <-inner
	}()
	if got := <-read; got != parent {
		t.Errorf("this process's cpu cgroup read as %s while its main thread was in %s; the process is in %s", got, dir, parent)
	}
}

// readOwn moves the main thread into dir, reads the caller's cpu cgroup and
// moves the main thread back.
func readOwn(t *testing.T, dir, parent string) string {
	pid := fmt.Sprint(os.Getpid())
	if err := os.WriteFile(filepath.Join(dir, "tasks"), []byte(pid), 0); err != nil {
		t.Error(err)
		return parent
	}
	got, _ := v1Parent("cpu")
	if err := os.WriteFile(filepath.Join(parent, "tasks"), []byte(pid), 0); err != nil {
		t.Error(err)
	}
	return got
}

// TestEveryCgroupIsNamedForTheSweep makes a cgroup under a name without
// dbrig's prefix: it gets the prefix, so that RemoveStaleCgroups knows it
// for dbrig's once its process is gone (the idle loops' cgroup was made as
// "idleloop.pidN", which no sweep would ever remove).
func TestEveryCgroupIsNamedForTheSweep(t *testing.T) {
	t.Parallel()
	if _, err := CgroupSupport("cpu"); err != nil {
		t.Skip(err)
	}
	cg, err := NewCgroup(fmt.Sprintf("test-unprefixed-%d", time.Now().UnixNano()), Limits{Idle: true})
	if err != nil {
		t.Skip(err) // no cpu.idle on this kernel
	}
	defer func() { _ = cg.Remove() }()
	dir, _ := cg.dir("cpu")
	if pid, ok := cgroupOwner(filepath.Base(dir)); !ok || pid != os.Getpid() {
		t.Errorf("cgroup %s: owner %d, %v; want this process's %d", dir, pid, ok, os.Getpid())
	}
}
