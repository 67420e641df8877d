package engine

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// The kernel sends a child its parent-death signal when the *thread* that
// forked it exits, not when the process does. Go may retire threads, so
// servers are forked from one goroutine locked to a thread that lives as long
// as the process: if dbrig is killed (SIGKILL, OOM), the kernel still stops
// every server it started. Graceful stops on every other exit path are the
// job of each Instance's Stop; this is the backstop.
type spawnRequest struct {
	cmd  *exec.Cmd
	done chan error
}

var (
	spawnOnce sync.Once
	spawnCh   chan spawnRequest
)

func spawner() {
	runtime.LockOSThread() // never unlocked: the thread must outlive every child
	for req := range spawnCh {
		req.done <- req.cmd.Start()
	}
}

// Start starts cmd in a process group of its own (so a Ctrl-C at the
// terminal reaches dbrig, which stops servers in order, rather than the
// servers directly) with SIGKILL as its parent-death signal.
func Start(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		spawnCh = make(chan spawnRequest)
		go spawner()
	})
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	done := make(chan error, 1)
	spawnCh <- spawnRequest{cmd: cmd, done: done}
	return <-done
}
