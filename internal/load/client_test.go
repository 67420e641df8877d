package load

import (
	"context"
	"strings"
	"testing"
	"time"
)

// cpuWorkload's operations either spin on the CPU or sleep for their
// length: a client that limits its point, or one that waits for a server.
type cpuWorkload struct {
	spin bool
	op   time.Duration
}

func (w *cpuWorkload) Mix() []TxType { return []TxType{{Name: "op", Weight: 1}} }

func (w *cpuWorkload) NewWorker(context.Context, int) (Worker, error) { return w, nil }

func (w *cpuWorkload) Do(ctx context.Context, _ int) error {
	if !w.spin {
		time.Sleep(w.op)
		return nil
	}
	for end := time.Now().Add(w.op); time.Now().Before(end); {
	}
	return nil
}

func (w *cpuWorkload) Close() error { return nil }

// TestClientLimitIsSaid: a user that spins on the CPU is said to limit
// its point, with its CPU per transaction; one that sleeps (a server's
// wait) is not. Neither runs beside another test: the figures are the
// whole process's, which a parallel test's CPU would add to.
func TestClientLimitIsSaid(t *testing.T) {
	for _, tc := range []struct {
		name    string
		spin    bool
		limited bool
	}{{"spinning", true, true}, {"sleeping", false, false}} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := NewRunner(Config{Users: 1, WarmUp: 100 * time.Millisecond, Duration: 700 * time.Millisecond},
				&cpuWorkload{spin: tc.spin, op: 200 * time.Microsecond})
			if err != nil {
				t.Fatal(err)
			}
			res, err := r.Run(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if res.Client == nil {
				t.Fatal("no client load read")
			}
			metrics := map[string]float64{}
			warning := ClientMetrics(res, metrics)
			if tc.spin && res.Client.CPUShare() < clientMinCPUShare {
				// A machine this busy gave the spinning user too little of
				// a core to tell a client's limit from another process's.
				t.Skipf("the spinning user ran %.0f %% of a core (waiting %v): too busy a machine to judge", 100*res.Client.CPUShare(), res.Client.Waiting)
			}
			if said := strings.HasPrefix(warning, ClientLimitedWarning); said != tc.limited {
				t.Errorf("warning %q (busy %.0f %%, %+v), want limited %v", warning, metrics["client_busy_pct"], *res.Client, tc.limited)
			}
			if metrics["client_cpu_us_per_tx"] <= 0 || metrics["client_busy_pct"] <= 0 {
				t.Errorf("metrics %v", metrics)
			}
			if tc.spin && metrics["client_cpu_us_per_tx"] < 100 {
				t.Errorf("a user spinning 200 µs a transaction took %.1f µs of CPU per transaction", metrics["client_cpu_us_per_tx"])
			}
		})
	}
}

// TestClientLimitRule: waiting for a CPU counts as the client's demand only
// beside a real share of CPU; a sleeping client's threads, waking on a
// machine a server keeps busy, wait past the interval without limiting.
func TestClientLimitRule(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	for _, tc := range []struct {
		name         string
		cpu, waiting time.Duration
		cores        int
		threads      int // the users' threads of their own, 0 shared
		limited      bool
	}{
		{"running all the time", 950 * ms, 0, 1, 0, true},
		{"a third running, ready the rest", 330 * ms, 650 * ms, 1, 0, true},
		{"asleep on the server at load 40", 26 * ms, 891 * ms, 1, 0, false},
		{"150 users asleep on a saturated server", 20 * ms, 3 * time.Second, 2, 0, false},
		{"half idle", 500 * ms, 100 * ms, 1, 0, false},
		// dbrig load oltp --mix point-select --users 190 on 2 CPUs, each user
		// on its thread: 32 % of the CPUs, 42.8 s of waits a second.
		{"190 users on threads of their own, a saturated server", 640 * ms, 42800 * ms, 2, 190, false},
		{"the same waits on the cores' threads", 640 * ms, 42800 * ms, 2, 0, true},
		{"8 users on their threads, waiting most of their time", 600 * ms, 7 * time.Second, 2, 8, true},
	} {
		c := &ClientLoad{CPU: tc.cpu, Waiting: tc.waiting, Interval: time.Second, Cores: tc.cores, UserThreads: tc.threads}
		if got := c.Limited(); got != tc.limited {
			t.Errorf("%s: limited %v, want %v (CPU %.0f %%, busy %.0f %%)", tc.name, got, tc.limited, 100*c.CPUShare(), 100*c.BusyShare())
		}
	}
}
