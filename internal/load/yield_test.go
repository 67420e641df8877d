package load

import (
	"context"
	"errors"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// syscallWorkload's operations wait in a blocking system call, as a user's
// read of its server does, and cancel the run once every user has done
// enough of them.
type syscallWorkload struct {
	wait   time.Duration
	each   int64 // operations every user does before the run is cancelled
	cancel context.CancelFunc
	done   []atomic.Int64
	left   atomic.Int64 // users still short of each
}

func (w *syscallWorkload) Mix() []TxType { return []TxType{{Name: "op", Weight: 1}} }

func (w *syscallWorkload) NewWorker(_ context.Context, id int) (Worker, error) {
	return &syscallWorker{wl: w, id: id}, nil
}

type syscallWorker struct {
	wl *syscallWorkload
	id int
}

func (w *syscallWorker) Do(context.Context, int) error {
	ts := unix.NsecToTimespec(w.wl.wait.Nanoseconds())
	for {
		err := unix.Nanosleep(&ts, &ts)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
	if w.wl.done[w.id].Add(1) == w.wl.each && w.wl.left.Add(-1) == 0 {
		w.wl.cancel()
	}
	return nil
}

func (*syscallWorker) Close() error { return nil }

// A run of users with threads of their own, each waiting in system calls
// long enough to yield several times (Runner.yield lets the thread go and
// locks again), still ends when cancelled, leaves no goroutine behind, and
// puts GOMAXPROCS back. Whether a user locks its thread again after a
// yield is not observable from here (it passes without the LockOSThread):
// that it pays is measured, futex calls a transaction under perf stat
// (docs/load.md). Not parallel: GOMAXPROCS is the process's.
func TestUsersWithThreadsOfTheirOwnYieldAndStop(t *testing.T) {
	if os.Getenv("GOMAXPROCS") != "" {
		t.Skip("GOMAXPROCS is set, so the users share the runtime's threads (reserveProcs)")
	}
	procs, goroutines := runtime.GOMAXPROCS(0), runtime.NumGoroutine()
	const users = 2
	// 160 waits of at least 100 µs are at least 16 ms of a user's time:
	// three yields or more each.
	wl := &syscallWorkload{wait: 100 * time.Microsecond, each: 160, done: make([]atomic.Int64, users)}
	wl.left.Store(users)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	wl.cancel = cancel
	r, err := NewRunner(Config{Users: users, Duration: time.Hour}, wl)
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(ctx)
	if !r.dedicated {
		t.Fatalf("%d users on %d CPUs did not get threads of their own", users, runtime.NumCPU())
	}
	if !errors.Is(err, context.Canceled) || res == nil || !res.Interrupted {
		t.Fatalf("Run = %v, %v; want the partial result and context.Canceled", res, err)
	}
	for id := range users {
		if n := wl.done[id].Load(); n < wl.each {
			t.Errorf("user %d did %d operations before the run ended, want at least %d", id, n, wl.each)
		}
	}
	if got := runtime.GOMAXPROCS(0); got != procs {
		t.Errorf("GOMAXPROCS %d after the run, want %d back", got, procs)
	}
	// The goroutine that closes the users' channel may still be returning.
	for range 1000 {
		if runtime.NumGoroutine() <= goroutines {
			break
		}
		time.Sleep(time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > goroutines {
		buf := make([]byte, 1<<16)
		t.Errorf("%d goroutines after the run, %d before:\n%s", n, goroutines, buf[:runtime.Stack(buf, true)])
	}
}
