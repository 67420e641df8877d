package load

import (
	"runtime"
	"testing"
)

func TestReserveProcs(t *testing.T) {
	cpus := runtime.NumCPU()
	prev := runtime.GOMAXPROCS(0)
	for _, tc := range []struct {
		name      string
		env       string
		users     int
		pause     bool
		want      int
		dedicated bool
	}{
		{"a user per CPU leaves a P idle for each", "", cpus, false, max(prev, 2*cpus), true},
		{"one user", "", 1, false, max(prev, 1+cpus), true},
		{"four users a CPU have a thread each", "", 4 * cpus, false, max(prev, 5*cpus), true},
		{"the most users with threads of their own", "", max(maxDedicatedUsers, 4*cpus), false, max(prev, max(maxDedicatedUsers, 4*cpus)+cpus), true},
		{"more users keep the default", "", max(maxDedicatedUsers, 4*cpus) + 1, false, prev, false},
		{"the user's GOMAXPROCS is kept", "3", 1, false, prev, false},
		{"four users a CPU who pause have a thread each", "", 4 * cpus, true, max(prev, 5*cpus), true},
		{"more users who pause keep the default", "", 4*cpus + 1, true, prev, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOMAXPROCS", tc.env)
			dedicated, restore := reserveProcs(tc.users, tc.pause)
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
