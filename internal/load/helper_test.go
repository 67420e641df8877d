package load

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// timedWorkload is a workload whose operations take a time the test chooses,
// on the clock of a testing/synctest bubble, so every figure a run produces
// can be computed by hand and compared exactly.
type timedWorkload struct {
	mix []TxType
	// service returns how long the n-th operation (from 0) of user id takes
	// and what it returns.
	service func(id, n, tx int) (time.Duration, error)
	// openErr, if set, fails NewWorker for that user.
	openErr func(id int) error

	opened, closed atomic.Int64
	mu             sync.Mutex
	closedIDs      map[int]int
}

var (
	_ Workload = (*timedWorkload)(nil)
	_ Worker   = (*timedWorker)(nil)
)

func fixedService(d time.Duration) func(id, n, tx int) (time.Duration, error) {
	return func(int, int, int) (time.Duration, error) { return d, nil }
}

func (w *timedWorkload) Mix() []TxType {
	if w.mix == nil {
		return []TxType{{Name: "op", Weight: 1}}
	}
	return w.mix
}

func (w *timedWorkload) NewWorker(ctx context.Context, id int) (Worker, error) {
	if w.openErr != nil {
		if err := w.openErr(id); err != nil {
			return nil, err
		}
	}
	w.opened.Add(1)
	return &timedWorker{wl: w, id: id, timer: time.NewTimer(time.Hour)}, nil
}

type timedWorker struct {
	wl    *timedWorkload
	id, n int
	timer *time.Timer
}

func (w *timedWorker) Do(ctx context.Context, tx int) error {
	d, err := w.wl.service(w.id, w.n, tx)
	w.n++
	w.timer.Reset(d)
	select {
	case <-w.timer.C:
		return err
	case <-ctx.Done():
		w.timer.Stop()
		return ctx.Err()
	}
}

func (w *timedWorker) Close() error {
	w.timer.Stop()
	w.wl.closed.Add(1)
	w.wl.mu.Lock()
	defer w.wl.mu.Unlock()
	if w.wl.closedIDs == nil {
		w.wl.closedIDs = map[int]int{}
	}
	w.wl.closedIDs[w.id]++
	return nil
}

// checkClosed fails unless every opened worker was closed exactly once.
func (w *timedWorkload) checkClosed(t *testing.T) {
	t.Helper()
	if o, c := w.opened.Load(), w.closed.Load(); o != c {
		t.Errorf("opened %d workers, closed %d", o, c)
	}
	for id, n := range w.closedIDs {
		if n != 1 {
			t.Errorf("worker %d closed %d times", id, n)
		}
	}
}

// run runs cfg against wl and fails the test on a configuration error.
func run(t *testing.T, cfg Config, wl Workload) (*Result, error) {
	t.Helper()
	r := newFakeClockRunner(t, cfg, wl)
	return r.Run(t.Context())
}

// newFakeClockRunner makes a runner whose arrival process waits on Go timers,
// the only ones testing/synctest's fake clock drives.
func newFakeClockRunner(t testing.TB, cfg Config, wl Workload) *Runner {
	t.Helper()
	r, err := NewRunner(cfg, wl)
	if err != nil {
		t.Fatal(err)
	}
	r.newWaiter = func(r *Runner, _ context.Context) movableWaiter {
		w, _ := newTimerWaiter(r)
		return w
	}
	r.newUserWaiter = func(r *Runner, _ context.Context) waiter {
		w, _ := newTimerWaiter(r)
		return w
	}
	return r
}

// mustRun is run for runs that must succeed.
func mustRun(t *testing.T, cfg Config, wl Workload) *Result {
	t.Helper()
	res, err := run(t, cfg, wl)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// openModes are the two ways an open loop's arrivals reach its workers:
// claimed ahead by a free worker, or handed to one by the dispatcher at
// their time. Both must give the same figures.
var openModes = []struct {
	name    string
	handOff bool
}{{"claimed", false}, {"handed-off", true}}

// mustRunOpen is mustRun in one of openModes.
func mustRunOpen(t *testing.T, cfg Config, wl Workload, handOff bool) *Result {
	t.Helper()
	r := newFakeClockRunner(t, cfg, wl)
	r.handOff = handOff
	res, err := r.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// near reports whether got is within rel (a fraction) of want: the
// histograms' resolution is 0.1 %.
func near(got, want time.Duration, rel float64) bool {
	return math.Abs(float64(got-want)) <= rel*float64(want)
}
