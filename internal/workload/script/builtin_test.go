package script

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/load"
	"github.com/dbrig/dbrig/internal/workload"
	"github.com/dbrig/dbrig/internal/workload/dbconn"
	"github.com/dbrig/dbrig/internal/workload/workloadtest"
)

// engines give a test a database of its own on the package's shared
// server of each engine: what these tests check is the scripts' effect in
// that database, not a server's own start.
var engines = []struct {
	name     string
	database func(t *testing.T) (engine.Instance, string)
}{
	{"postgres", func(t *testing.T) (engine.Instance, string) { return sharedServer.Database(t) }},
	{"mariadb", func(t *testing.T) (engine.Instance, string) { return sharedMaria.Database(t) }},
}

// runWorkload prepares and runs the workload with params on inst and
// returns its measurement and the scripts' report.
func runWorkload(t *testing.T, inst engine.Instance, db string, prepare bool, set workload.Params) (workload.Measurement, Report, *load.Result) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	k := KindWith(nil)
	p := testParams(t, set)
	if errs := kindErrors(k, p); len(errs) > 0 {
		t.Fatalf("params: %v", errs)
	}
	w, err := k.New(p)
	if err != nil {
		t.Fatal(err)
	}
	var rep Report
	var res *load.Result
	w.(*scriptWorkload).live = &Live{Scripts: func(r Report) { rep = r }, Result: func(r *load.Result) { res = r }}
	env := workloadtest.Env(db, inst)
	if prepare {
		if err := w.Prepare(ctx, env); err != nil {
			t.Fatalf("prepare: %v", err)
		}
	}
	m, err := w.Run(ctx, env)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	return m, rep, res
}

// queryInt runs a query that returns one whole number.
func queryInt(t *testing.T, inst engine.Instance, db, q string) int64 {
	t.Helper()
	var rows [][]string
	var err error
	withConn(t, inst, db, func(c *dbconn.Conn) { rows, err = c.Rows(t.Context(), q) })
	if err != nil || len(rows) != 1 || len(rows[0]) != 1 {
		t.Fatalf("%s: %v %v", q, rows, err)
	}
	var n int64
	if _, err := fmtSscan(rows[0][0], &n); err != nil {
		t.Fatalf("%s: %q: %v", q, rows[0][0], err)
	}
	return n
}

// TestBuiltinsOnEachEngine makes pgbench's tables at scale 1 on a server
// of each engine, runs the three built-in scripts together under a few
// users with each protocol, and checks what they did: no errors, each
// script ran, the balances moved by exactly the deltas history records,
// a transaction of tpcb-like took its 7 round trips.
func TestBuiltinsOnEachEngine(t *testing.T) {
	t.Parallel()
	for _, e := range engines {
		t.Run(e.name, func(t *testing.T) {
			t.Parallel()
			inst, db := e.database(t)
			for i, protocol := range []string{Prepared, Simple} {
				set := workload.Params{"script": "tpcb-like@2,simple-update,select-only", "init": true, "users": int64(3),
					"duration": "1s", "warm_up": "200ms", "protocol": protocol}
				m, rep, _ := runWorkload(t, inst, db, i == 0, set)
				if m.Metrics["errors"] != 0 || m.Metrics["tps"] == 0 {
					t.Fatalf("%s: tps %v, errors %v: %v", protocol, m.Metrics["tps"], m.Metrics["errors"], m.Notes)
				}
				for _, s := range rep.Scripts {
					if s.Ops == 0 {
						t.Errorf("%s: %s never ran", protocol, s.Name)
					}
				}
				if got := rep.Scripts[0].RoundTrips; got != 7 {
					t.Errorf("%s: tpcb-like took %v round trips per transaction, want 7", protocol, got)
				}
				if got := rep.Scripts[2].RoundTrips; got != 1 {
					t.Errorf("%s: select-only took %v round trips per transaction, want 1", protocol, got)
				}
				for _, k := range []string{"round_trips_per_tx", "bytes_out_per_tx", "bytes_in_per_tx", "wait_ms_per_tx", "tpcb_like_tps", "tpcb_like_p99_ms",
					"tpcb_like_round_trips_per_tx", "tpcb_like_line6_mean_ms", "select_only_line2_p99_ms", "simple_update_retries"} {
					if _, ok := m.Metrics[k]; !ok {
						t.Errorf("%s: no metric %s", protocol, k)
					}
				}
				if h := m.Histograms["statement/tpcb-like:6"]; h == nil || h.Count() == 0 {
					t.Errorf("%s: no latencies of tpcb-like's line 6", protocol)
				}
				var b strings.Builder
				if err := rep.WriteText(&b); err != nil {
					t.Fatal(err)
				}
				t.Logf("%s:\n%s", protocol, b.String())
			}
			history := queryInt(t, inst, db, "SELECT sum(delta) FROM pgbench_history")
			for _, q := range []string{"SELECT sum(abalance) FROM pgbench_accounts"} {
				if got := queryInt(t, inst, db, q); got != history {
					t.Errorf("%s = %d, history's deltas %d", q, got, history)
				}
			}
		})
	}
}
