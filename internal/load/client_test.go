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
