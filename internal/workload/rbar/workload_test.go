package rbar

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/mariadb/mariatest"
	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
	"github.com/dbrig/dbrig/internal/idleloop"
	"github.com/dbrig/dbrig/internal/workload"
	"github.com/dbrig/dbrig/internal/workload/workloadtest"
)

// mariadbStudySettings are rbar-latency's [instance.settings.mariadb].
var mariadbStudySettings = map[string]string{
	"innodb_buffer_pool_size": "128M",
	"max_heap_table_size":     "1G",
	"tmp_memory_table_size":   "1G",
}

// rbarTestDB is the tests' database on each instance.
const rbarTestDB = "dbrig_rbar_test"

func runPoint(t *testing.T, env *workload.Env, p workload.Params) (workload.Measurement, error) {
	t.Helper()
	full := workload.Params{"row_bytes": int64(8000), "row_by_row": "select", "client_cost": "0s", "instance": "db"}
	for k, v := range p {
		full[k] = v
	}
	w, err := newWorkload(full)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	return w.Run(ctx, env)
}

// TestExperimentsOnEachEngine runs every experiment on a real PostgreSQL and
// a real MariaDB, over the unix socket and TCP, and checks what each
// measured: the rows the server counted or sent, the wire bytes, one
// recorded round trip per measured row.
func TestExperimentsOnEachEngine(t *testing.T) {
	engines := []struct {
		name  string
		start func(t *testing.T) engine.Instance
		// streamed bytes per row of ints (1 to 4 digits) and of 8,000
		// characters, within the protocol's framing
		intRow, wideRow [2]float64
	}{
		{"postgres", func(t *testing.T) engine.Instance { return pgtest.Start(t, "db", nil) },
			[2]float64{12, 15}, [2]float64{8011, 8011}},
		{"mariadb", func(t *testing.T) engine.Instance { return mariatest.Start(t, "db", mariadbStudySettings) },
			// packet header (4), length (1 or 3), the value
			[2]float64{6, 9}, [2]float64{8007, 8008}},
	}
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			inst := e.start(t)
			if err := (&rbar{instance: "db"}).Prepare(t.Context(), workloadtest.Env(rbarTestDB, inst)); err != nil {
				t.Fatalf("prepare: %v", err)
			}
			for _, unix := range []bool{true, false} {
				env := workloadtest.TCPEnv(rbarTestDB, inst)
				if unix {
					env = workloadtest.Env(rbarTestDB, inst)
				}
				transport := map[bool]string{true: "unix", false: "tcp"}[unix]
				tests := []struct {
					name string
					p    workload.Params
					// wire bytes per row, when the experiment streams
					perRow [2]float64
				}{
					{"server-loop", workload.Params{"experiment": "server-loop", "rows": int64(1_234_567), "probe_spin": true}, [2]float64{}},
					// Without probe_spin, no probe with the idle loops.
					{"server-loop unspun", workload.Params{"experiment": "server-loop", "rows": int64(1_000)}, [2]float64{}},
					{"server-cursor", workload.Params{"experiment": "server-cursor", "rows": int64(20_000)}, [2]float64{}},
					{"client-stream", workload.Params{"experiment": "client-stream", "rows": int64(50_000)}, e.intRow},
					{"cursor-messages", workload.Params{"experiment": "cursor-messages", "rows": int64(3_000)}, [2]float64{10, 200}},
					{"wide-rows", workload.Params{"experiment": "wide-rows", "rows": int64(300)}, e.wideRow},
					// 2,500 rows cross the 1,000-row table's end twice.
					{"row-by-row fetch", workload.Params{"experiment": "client-row-by-row", "row_by_row": "fetch", "rows": int64(2_500)}, [2]float64{}},
					{"row-by-row select", workload.Params{"experiment": "client-row-by-row", "row_by_row": "select", "rows": int64(2_500)}, [2]float64{}},
				}
				for _, tt := range tests {
					t.Run(transport+"/"+tt.name, func(t *testing.T) {
						m, err := runPoint(t, env, tt.p)
						if err != nil {
							t.Fatal(err)
						}
						checkExperiment(t, m, tt.p, tt.perRow, e.intRow, e.wideRow)
					})
				}
			}
		})
	}
}

// checkExperiment checks what one experiment's point measured: the rows
// and a time, a stream's wire bytes per row (perRow, when it streams), the
// client's CPU per row where it reads the rows, a server-side point's
// probe and samples, and a row-by-row point's round trips.
func checkExperiment(t *testing.T, m workload.Measurement, p workload.Params, perRow, intRow, wideRow [2]float64) {
	t.Helper()
	rows := float64(p.Int("rows"))
	if m.Metrics["rows"] != rows || !(m.Metrics["seconds"] > 0) || !(m.Metrics["us_per_row"] > 0) {
		t.Errorf("metrics %v: want rows = %v and a positive time", m.Metrics, rows)
	}
	if perRow[1] > 0 {
		per := m.Metrics["wire_bytes"] / rows
		// A result's description and closing status add a few hundred
		// bytes at most.
		if per < perRow[0] || per > perRow[1]+1000/rows {
			t.Errorf("%.1f wire bytes per row, want %v to %v", per, perRow[0], perRow[1])
		}
		if want := m.Metrics["wire_bytes"] * 8 / m.Metrics["seconds"]; m.Metrics["throughput_bps"] != want {
			t.Errorf("throughput %v, want %v", m.Metrics["throughput_bps"], want)
		}
	}
	switch p.String("experiment") {
	case "client-stream", "cursor-messages", "wide-rows":
		// The client's thread's CPU on each row, which a capped client's
		// prediction reads: within the row's time, since it is one thread.
		if cpu := m.Metrics[ClientCPUMetric]; !(cpu > 0) || cpu > m.Metrics["us_per_row"]*1.05 {
			t.Errorf("%s = %v µs, want the client's CPU, within the row's %v µs", ClientCPUMetric, cpu, m.Metrics["us_per_row"])
		}
	case "server-loop", "server-cursor":
		checkServerSide(t, m, p, intRow, wideRow)
	case "client-row-by-row":
		h := m.Histograms["row"]
		if h == nil || h.Count() != int64(rows)-1 {
			t.Errorf("histogram of round trips: %v, want %v samples", h, rows-1)
		} else if mean := m.Metrics["row_mean_us"]; !(mean > 0) {
			t.Errorf("row_mean_us = %v", mean)
		}
	}
}

// checkServerSide checks a server-side point: no client CPU per row (its
// client receives no row), its path's round trip (which predicts the
// row-by-row points after it), and a server-loop's samples and spin probe.
func checkServerSide(t *testing.T, m workload.Measurement, p workload.Params, intRow, wideRow [2]float64) {
	t.Helper()
	if cpu, ok := m.Metrics[ClientCPUMetric]; ok {
		t.Errorf("%s = %v µs over rows the client never received", ClientCPUMetric, cpu)
	}
	if probe, ok := m.Metrics[ProbeMetric]; !ok || !(probe > 0) {
		t.Errorf("%s = %v (%v): want the path's round trip, probed after the statement", ProbeMetric, probe, ok)
	}
	if p.String("experiment") == "server-loop" {
		checkSamples(t, m, intRow, wideRow)
		checkSpinProbe(t, m, p.Bool("probe_spin"))
	}
}

// TestRowByRowStopsWhenCancelled: a cancelled run ends at once, with the
// context's error, on each engine.
func TestRowByRowStopsWhenCancelled(t *testing.T) {
	for _, name := range []string{"postgres", "mariadb"} {
		t.Run(name, func(t *testing.T) {
			var inst engine.Instance
			if name == "postgres" {
				inst = pgtest.Start(t, "db", nil)
			} else {
				inst = mariatest.Start(t, "db", nil)
			}
			env := workloadtest.Env(rbarTestDB, inst)
			if err := (&rbar{instance: "db"}).Prepare(t.Context(), env); err != nil {
				t.Fatal(err)
			}
			for _, mode := range []string{"fetch", "select"} {
				w, _ := newWorkload(workload.Params{"experiment": "client-row-by-row", "rows": int64(1_000_000_000), "row_by_row": mode,
					"row_bytes": int64(8000), "client_cost": "0s", "instance": "db"})
				ctx, cancel := context.WithCancel(t.Context())
				started := make(chan struct{})
				var once bool
				env.Progress = func(done, _ int64) {
					if !once {
						once = true
						close(started)
					}
				}
				errc := make(chan error, 1)
				go func() { _, err := w.Run(ctx, env); errc <- err }()
				<-started
				cancel()
				select {
				case err := <-errc:
					if !errors.Is(err, context.Canceled) {
						t.Errorf("%s: cancelled run returned %v, want context.Canceled", mode, err)
					}
				case <-time.After(30 * time.Second):
					t.Fatalf("%s: the run did not stop 30 s after its context was cancelled", mode)
				}
			}
		})
	}
}

// checkSamples checks a server-loop point's samples of the other
// experiments on its path: a time per row for each and, for a stream, its
// wire bytes per row.
func checkSamples(t *testing.T, m workload.Measurement, intRow, wideRow [2]float64) {
	t.Helper()
	perRow := map[string][2]float64{"client-stream": intRow, "wide-rows": wideRow, "cursor-messages": {10, 200}}
	for exp := range SampleRows {
		if us := m.Metrics[SampleMetric(exp, "us_per_row")]; !(us > 0) {
			t.Errorf("%s = %v: want the sample's time per row", SampleMetric(exp, "us_per_row"), us)
		}
		if want, ok := perRow[exp]; ok {
			if b := m.Metrics[SampleMetric(exp, "bytes_per_row")]; b < want[0] || b > want[1]+1 {
				t.Errorf("%s = %v, want %v to %v", SampleMetric(exp, "bytes_per_row"), b, want[0], want[1])
			}
		}
	}
}

// checkSpinProbe checks a server-loop point's probe with the idle loops:
// where asked (probe_spin), a round trip where this machine lets dbrig
// make the loops' cgroup and none where it does not (the spin points are
// then skipped); none where not asked.
func checkSpinProbe(t *testing.T, m workload.Measurement, asked bool) {
	t.Helper()
	if !asked {
		if spin, ok := m.Metrics[ProbeSpinMetric]; ok {
			t.Errorf("%s = %v without probe_spin: want none (the loops' start and stop only where spin points read it)", ProbeSpinMetric, spin)
		}
		return
	}
	loops, err := idleloop.Start([]int{0})
	if err == nil {
		_, err = loops.Stop()
	}
	spin, ok := m.Metrics[ProbeSpinMetric]
	switch {
	case errors.As(err, new(engine.NoCgroupError)):
		if ok {
			t.Errorf("%s = %v where no loops can start (%v): want none", ProbeSpinMetric, spin, err)
		}
	case err != nil:
		t.Fatal(err)
	case !(spin > 0):
		t.Errorf("%s = %v (%v): want the path's round trip with the loops", ProbeSpinMetric, spin, ok)
	}
}
