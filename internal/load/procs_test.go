package load

import (
	"runtime"
	"testing"

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
		open      bool
		link      bool // an emulated link holds a spare P
		want      int
		dedicated bool
	}{
		{"a P a user, alone in the process", "", 4 * cpus, false, false, false, max(prev, 4*cpus), true},
		{"a user per CPU, alone", "", cpus, false, false, false, max(prev, cpus), true},
		{"one user keeps the default Ps", "", 1, false, false, false, prev, true},
		{"a link in the process keeps a spare P a CPU", "", 4 * cpus, false, false, true, max(prev, 5*cpus), true},
		{"an open loop's dispatcher has spare Ps", "", 4 * cpus, false, true, false, max(prev, 5*cpus), true},
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
			dedicated, restore := reserveProcs(tc.users, tc.pause, tc.open)
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
