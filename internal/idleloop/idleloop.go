// Package idleloop keeps this machine's CPUs from halting while they idle:
// one busy loop pinned to each CPU at the lowest priority, so that it runs
// only when nothing else wants that CPU. On a virtual machine that halts
// an idle vCPU at once (cpuidle's haltpoll driver with guest_halt_poll_ns
// 0, which dbrig doctor names as cpu.idle), every wake-up of a halted vCPU
// is a VM exit through the hypervisor: a client that waits for the
// network pays it on each round trip. With the loops the vCPUs never halt,
// so a run can measure what the halts cost, without dbrig changing a
// kernel setting: the loops are its own processes, started and stopped by
// it.
//
// The lowest priority takes two things: SCHED_IDLE, and a cgroup of
// dbrig's own at cpu.idle 1. SCHED_IDLE alone is idle only among the
// processes of its own cgroup or session (the kernel's autogroup puts each
// session in a group of its own): the loops then took their session's
// whole share of the CPUs, and a row-by-row client of the same session
// over loopback went from 0.11-0.16 ms a row to 0.7-2.1 ms with other
// sessions busy beside it (load 9). In an idle cgroup the kernel runs them
// only on time no other group wants.
//
// Each loop is a shell's `while :; do :; done`, which forks nothing and
// needs no dbrig binary (a test or a client process starts loops as
// easily as dbrig does). It is started through engine.StartWith, so it is
// in a process group of its own with SIGKILL as its parent-death signal:
// no loop outlives dbrig, SIGKILL of dbrig included (the next dbrig
// removes the empty cgroup, engine.RemoveStaleCgroups). Their CPU time is
// left out of the host's busy time (procstat.ExcludeFromHost).
package idleloop

import (
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/procstat"
)

// Modes of a point's idle CPUs, as a study file's client.idle and dbrig
// load's --idle write them.
const (
	Halt = "halt" // the machine as it is
	Spin = "spin" // a loop on each CPU keeps it from halting
)

// CheckMode refuses a mode that is neither Halt nor Spin.
func CheckMode(mode string) error {
	if mode != Halt && mode != Spin {
		return fmt.Errorf("want %q (the machine's CPUs idle as they do) or %q (a lowest-priority busy loop on each CPU keeps it from halting), got %q", Halt, Spin, mode)
	}
	return nil
}

// started counts the Loops this process started, to name their cgroups.
var started atomic.Int64

// Loops are running busy loops, one per CPU.
type Loops struct {
	cpus   []int
	cgroup *engine.Cgroup
	cmds   []*exec.Cmd
	reaped func(float64)
	mu     sync.Mutex
	each   []float64 // each loop's CPU seconds, once stopped
	done   bool
}

// Start starts a loop on each of cpus (none: each CPU this process may run
// on). The caller stops them with Stop, on every exit path.
func Start(cpus []int) (*Loops, error) {
	if len(cpus) == 0 {
		var err error
		if cpus, err = AllowedCPUs(); err != nil {
			return nil, err
		}
	}
	// Named apart from other Loops of this process (tests start several).
	cg, err := engine.NewCgroup(fmt.Sprintf("dbrig-idleloop-%d", started.Add(1)), engine.Limits{Idle: true})
	if err != nil {
		return nil, fmt.Errorf("the idle loops need a cpu cgroup of dbrig's own at cpu.idle 1, so that they take only CPU time no other process wants: %w", err)
	}
	l := &Loops{cpus: slices.Clone(cpus), cgroup: cg}
	l.reaped = procstat.ExcludeFromHost(l.liveCPUSeconds)
	for _, cpu := range l.cpus {
		if err := l.startOne(cpu); err != nil {
			_, _ = l.Stop()
			return nil, err
		}
	}
	return l, nil
}

func (l *Loops) startOne(cpu int) error {
	cmd := exec.Command("/bin/sh", "-c", "while :; do :; done")
	if err := engine.StartWith(cmd, engine.ProcessOptions{CPUs: []int{cpu}, Cgroup: l.cgroup}); err != nil {
		return fmt.Errorf("start the idle loop on CPU %d: %w", cpu, err)
	}
	l.mu.Lock()
	l.cmds = append(l.cmds, cmd)
	l.mu.Unlock()
	attr := unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_IDLE}
	if err := unix.SchedSetAttr(cmd.Process.Pid, &attr, 0); err != nil {
		return fmt.Errorf("put the idle loop on CPU %d at the lowest priority (SCHED_IDLE): %w", cpu, err)
	}
	return nil
}

// CPUs are the CPUs the loops run on.
func (l *Loops) CPUs() []int { return slices.Clone(l.cpus) }

// CPUSeconds is the loops' CPU time so far: what they took of the CPUs
// that nothing else wanted, to subtract from a host's busy time.
func (l *Loops) CPUSeconds() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return stopped(l.each)
	}
	return l.sumLocked()
}

// stopped is the stopped loops' CPU time in all.
func stopped(each []float64) float64 {
	var sum float64
	for _, s := range each {
		sum += s
	}
	return sum
}

func (l *Loops) sumLocked() float64 {
	var sum float64
	for _, c := range l.cmds {
		sum += processCPU(c.Process.Pid)
	}
	return sum
}

// Each is each loop's CPU seconds, in the order of CPUs, once stopped.
func (l *Loops) Each() []float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.each)
}

// liveCPUSeconds is what the running loops took: once reaped, their time
// is the reaped total procstat holds.
func (l *Loops) liveCPUSeconds() float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return 0
	}
	return l.sumLocked()
}

// Stop kills the loops, waits for them and returns their CPU time in all.
// A second Stop returns the same.
func (l *Loops) Stop() (cpuSeconds float64, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done {
		return stopped(l.each), nil
	}
	var errs []error
	for _, c := range l.cmds {
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		if werr := c.Wait(); werr != nil && !killed(werr) {
			errs = append(errs, fmt.Errorf("the idle loop %d: %w", c.Process.Pid, werr))
		}
		var spent float64
		if ps := c.ProcessState; ps != nil {
			spent = (ps.UserTime() + ps.SystemTime()).Seconds()
		}
		l.each = append(l.each, spent)
	}
	l.done = true
	total := stopped(l.each)
	l.reaped(total)
	if err := l.cgroup.Remove(); err != nil {
		errs = append(errs, err)
	}
	return total, errors.Join(errs...)
}

func killed(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

// processCPU is a running process's own CPU seconds (0 once it is gone).
func processCPU(pid int) float64 {
	t, err := procstat.ProcessCPU(pid)
	if err != nil {
		return 0
	}
	return t
}

// AllowedCPUs are the CPUs this process may run on, in order.
func AllowedCPUs() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("read the CPU affinity: %w", err)
	}
	var out []int
	for cpu := 0; cpu < len(set)*64 && len(out) < set.Count(); cpu++ {
		if set.IsSet(cpu) {
			out = append(out, cpu)
		}
	}
	return out, nil
}

// FormatCPUs writes a CPU list as a range ("0-3") or a comma list.
func FormatCPUs(cpus []int) string {
	contiguous := len(cpus) > 1
	for i := 1; i < len(cpus); i++ {
		contiguous = contiguous && cpus[i] == cpus[i-1]+1
	}
	if contiguous {
		return strconv.Itoa(cpus[0]) + "-" + strconv.Itoa(cpus[len(cpus)-1])
	}
	parts := make([]string, len(cpus))
	for i, c := range cpus {
		parts[i] = strconv.Itoa(c)
	}
	return strings.Join(parts, ",")
}
