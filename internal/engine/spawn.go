package engine

import (
	"fmt"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// The kernel sends a child its parent-death signal when the *thread* that
// forked it exits, not when the process does. Go may retire threads, so
// servers are forked from one goroutine locked to a thread that lives as long
// as the process: if dbrig is killed (SIGKILL, OOM), the kernel still stops
// every server it started. Graceful stops on every other exit path are the
// job of each Instance's Stop; this is the backstop.
//
// The same thread carries what a child must inherit from the moment it
// exists: a CPU affinity mask (the server and every process it forks stay
// on their CPUs) and, on cgroup v1, the cgroups capping its memory, CPU time and disks. The thread takes them
// on just before the fork and drops them just after.
type spawnRequest struct {
	cmd  *exec.Cmd
	opts ProcessOptions
	done chan error
}

var (
	spawnOnce sync.Once
	spawnCh   chan spawnRequest
)

func spawner() {
	runtime.LockOSThread() // never unlocked: the thread must outlive every child
	for req := range spawnCh {
		req.done <- spawnWith(req.cmd, req.opts)
	}
}

// ProcessOptions are what a started process inherits besides its command.
type ProcessOptions struct {
	// CPUs, when set, is the CPU affinity of the process and its children.
	CPUs []int
	// Cgroup, when set, is the cgroup the process starts in.
	Cgroup *Cgroup
}

func spawnWith(cmd *exec.Cmd, opts ProcessOptions) error {
	if len(opts.CPUs) > 0 {
		var old, set unix.CPUSet
		if err := unix.SchedGetaffinity(0, &old); err != nil {
			return fmt.Errorf("read the CPU affinity: %w", err)
		}
		for _, c := range opts.CPUs {
			set.Set(c)
		}
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			return fmt.Errorf("set the CPU affinity to %v: %w", opts.CPUs, err)
		}
		defer func() { _ = unix.SchedSetaffinity(0, &old) }()
	}
	if cg := opts.Cgroup; cg != nil && cg.v1 {
		// cgroup v1 moves single threads: this one joins, forks, leaves.
		leave, err := cg.enterV1(strconv.Itoa(unix.Gettid()))
		if err != nil {
			return err
		}
		defer leave()
	}
	return cmd.Start()
}

// Start starts cmd in a process group of its own (so a Ctrl-C at the
// terminal reaches dbrig, which stops servers in order, rather than the
// servers directly) with SIGKILL as its parent-death signal.
func Start(cmd *exec.Cmd) error { return StartWith(cmd, ProcessOptions{}) }

// StartWith is Start with a CPU affinity and a cgroup that the
// process and all its children inherit from their first instruction.
func StartWith(cmd *exec.Cmd, opts ProcessOptions) error {
	spawnOnce.Do(func() {
		spawnCh = make(chan spawnRequest)
		go spawner()
	})
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	if cg := opts.Cgroup; cg != nil && !cg.v1 {
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = cg.fd
	}
	done := make(chan error, 1)
	spawnCh <- spawnRequest{cmd: cmd, opts: opts, done: done}
	return <-done
}
