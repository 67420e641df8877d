package load

import (
	"context"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/spareproc"
)

func TestReserveProcs(t *testing.T) {
	cpus := runtime.NumCPU()
	prev := runtime.GOMAXPROCS(0)
	most := max(maxDedicatedUsers, 4*cpus)
	for _, tc := range []struct {
		name      string
		env       string
		users     int
		pause     bool
		handOff   bool
		link      bool // an emulated link holds a spare P
		want      int
		dedicated bool
	}{
		{"a P a user, alone in the process", "", 4 * cpus, false, false, false, max(prev, 4*cpus), true},
		{"a user per CPU, alone", "", cpus, false, false, false, max(prev, cpus), true},
		{"one user keeps the default Ps", "", 1, false, false, false, prev, true},
		{"a link in the process keeps a spare P a CPU", "", 4 * cpus, false, false, true, max(prev, 5*cpus), true},
		{"an open loop that hands its arrivals over has spare Ps", "", 4 * cpus, false, true, false, max(prev, 5*cpus), true},
		{"users who pause have spare Ps for their timers", "", 4 * cpus, true, false, false, max(prev, 5*cpus), true},
		{"the most users with threads of their own", "", most, false, false, false, max(prev, most), true},
		{"the most, beside a link", "", most, false, false, true, max(prev, most+cpus), true},
		{"more users keep the default", "", most + 1, false, false, true, prev, false},
		{"the user's GOMAXPROCS is kept", "3", 8, false, false, false, prev, false},
		{"more users who pause keep the default", "", 4*cpus + 1, true, false, false, prev, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOMAXPROCS", tc.env)
			if tc.link {
				release := spareproc.Hold()
				defer release()
			} else if spareproc.Held() {
				t.Skip("a spare P is held by something else in this process")
			}
			dedicated, restore := reserveProcs(tc.users, tc.pause, tc.handOff)
			got := runtime.GOMAXPROCS(0)
			restore()
			if got != tc.want || dedicated != tc.dedicated {
				t.Errorf("%d users: GOMAXPROCS %d during the run, threads of their own %v; want %d, %v", tc.users, got, dedicated, tc.want, tc.dedicated)
			}
			if after := runtime.GOMAXPROCS(0); after != prev {
				t.Errorf("GOMAXPROCS %d after the run, want %d back", after, prev)
			}
		})
	}
}

func TestUserThreadsAreThoseOfUsersOnThreadsOfTheirOwn(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cfg       Config
		dedicated bool
		claims    bool
		want      int
	}{
		{"closed, a thread each", Config{Users: 8}, true, false, 8},
		{"closed, shared", Config{Users: 8}, false, false, 0},
		{"open, claimed on threads of their own", Config{Users: 4, Rate: 2000}, true, true, 4},
		{"open, handed off", Config{Users: 4, Rate: 2000}, true, false, 0},
		{"open, claimed on shared threads", Config{Users: 300, Rate: 2000}, false, true, 0},
	} {
		r := &Runner{cfg: tc.cfg, dedicated: tc.dedicated}
		if tc.claims {
			r.arrivals = newArrivals(tc.cfg.withDefaults())
		}
		if got := r.userThreads(); got != tc.want {
			t.Errorf("%s: %d user threads, want %d", tc.name, got, tc.want)
		}
	}
}

// procsWorkload records the most Ps the runtime had while its operations
// ran.
type procsWorkload struct{ most atomic.Int64 }

func (w *procsWorkload) Mix() []TxType { return []TxType{{Name: "op", Weight: 1}} }
func (w *procsWorkload) NewWorker(context.Context, int) (Worker, error) {
	return procsWorker{w}, nil
}

type procsWorker struct{ wl *procsWorkload }

func (w procsWorker) Do(context.Context, int) error {
	n := int64(runtime.GOMAXPROCS(0))
	for {
		m := w.wl.most.Load()
		if n <= m || w.wl.most.CompareAndSwap(m, n) {
			return nil
		}
	}
}
func (procsWorker) Close() error { return nil }

// A run keeps spare Ps only where something waits for one: users who pause,
// an open loop that hands its arrivals over, a link in the process; users
// who claim their arrivals ahead and closed-loop users alone get a P each.
// Not parallel: GOMAXPROCS is the process's.
func TestRunsKeepSparePsOnlyWhereSomethingNeedsOne(t *testing.T) {
	if os.Getenv("GOMAXPROCS") != "" {
		t.Skip("GOMAXPROCS is set: runs keep it")
	}
	if spareproc.Held() {
		t.Skip("a spare P is held by something else in this process")
	}
	cpus, prev := runtime.NumCPU(), runtime.GOMAXPROCS(0)
	users := 2 * cpus
	for _, tc := range []struct {
		name    string
		cfg     Config
		handOff bool
		link    bool
		spare   bool
	}{
		{"closed loop alone", Config{Users: users, Ops: int64(8 * users)}, false, false, false},
		{"closed loop beside a link", Config{Users: users, Ops: int64(8 * users)}, false, true, true},
		{"closed loop that thinks", Config{Users: users, Ops: int64(2 * users), Think: Think{Mean: time.Millisecond}}, false, false, true},
		{"open loop that claims ahead", Config{Users: users, Rate: 2000, Ops: 40}, false, false, false},
		{"open loop that hands over", Config{Users: users, Rate: 2000, Ops: 40}, true, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.link {
				release := spareproc.Hold()
				defer release()
			}
			wl := &procsWorkload{}
			r, err := NewRunner(tc.cfg, wl)
			if err != nil {
				t.Fatal(err)
			}
			r.handOff = tc.handOff
			if _, err := r.Run(t.Context()); err != nil {
				t.Fatal(err)
			}
			want := max(prev, users)
			if tc.spare {
				want = max(prev, users+cpus)
			}
			if got := int(wl.most.Load()); got != want {
				t.Errorf("GOMAXPROCS %d while the users ran, want %d", got, want)
			}
		})
	}
}
