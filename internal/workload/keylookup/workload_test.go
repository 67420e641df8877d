package keylookup

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/mariadb/mariatest"
	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
	"github.com/dbrig/dbrig/internal/workload"
	"github.com/dbrig/dbrig/internal/workload/dbconn"
	"github.com/dbrig/dbrig/internal/workload/workloadtest"
)

func newTestWorkload(t *testing.T, rows int64, path string) *keylookup {
	t.Helper()
	w, err := newWorkload(workload.Params{"rows": rows, "path": path, "executions": int64(3), "instance": "db"})
	if err != nil {
		t.Fatal(err)
	}
	return w.(*keylookup)
}

// TestPathsOnEachEngine prepares a small table on a real server of each
// engine and measures both paths: every page cached, the scan touching the
// table's pages, the lookups the model's count (one heap page a lookup on
// PostgreSQL, the clustered index's height on MariaDB), and the plan
// checked: without the index on j the lookup path refuses to measure.
func TestPathsOnEachEngine(t *testing.T) {
	const rows = 4000
	for _, tc := range []struct {
		name     string
		start    func(t *testing.T) engine.Instance
		depth    float64
		perRowLo float64
	}{
		{"postgres", func(t *testing.T) engine.Instance {
			return pgtest.Start(t, "keylookup", map[string]string{"shared_buffers": "128MB", "wal_level": "minimal", "max_wal_senders": "0"})
		}, 1, 1},
		{"mariadb", func(t *testing.T) engine.Instance {
			return mariatest.Start(t, "keylookup", map[string]string{"innodb_buffer_pool_size": "128M"})
		}, 2, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inst := tc.start(t)
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			env := workloadtest.Env("dbrig_key_lookup", inst)
			if err := newTestWorkload(t, rows, Scan).Prepare(ctx, env); err != nil {
				t.Fatal(err)
			}
			got := map[string]workload.Measurement{}
			for _, path := range []string{Scan, Lookup} {
				m, err := newTestWorkload(t, rows, path).Run(ctx, env)
				if err != nil {
					t.Fatalf("%s: %v", path, err)
				}
				got[path] = m
				if m.Metrics["physical_reads"] != 0 || len(m.Notes) != 0 {
					t.Errorf("%s: %v pages read from outside the cache (%q)", path, m.Metrics["physical_reads"], m.Notes)
				}
				if sample, ok := m.Metrics["lookup_sample_us_per_row"]; (path == Lookup) == ok || ok && sample <= 0 {
					t.Errorf("%s: the index's first twentieth's lookups took %v µs a row (timed: %v; only the other path's points time them)", path, sample, ok)
				}
				if m.Metrics["time_ms"] <= 0 || len(m.Series["time_ms"]) != 3 {
					t.Errorf("%s: time %v, executions %v", path, m.Metrics["time_ms"], m.Series["time_ms"])
				}
				if d := m.Metrics["lookup_depth"]; d < tc.depth || (tc.name == "postgres" && d != tc.depth) {
					t.Errorf("%s: one lookup touched %v pages, want %v (PostgreSQL) or at least %v (MariaDB)", path, d, tc.depth, tc.depth)
				}
			}
			scan, lookup := got[Scan].Metrics, got[Lookup].Metrics
			if d := scan["pages"] - scan["table_pages"]; d < 0 || d > 3 {
				t.Errorf("the scan touched %v pages, the table has %v", scan["pages"], scan["table_pages"])
			}
			model := PredictPages(Lookup, lookup["rows"], lookup["table_pages"], lookup["index_pages"], lookup["lookup_depth"])
			// MariaDB's count is the server-wide Innodb_buffer_pool_read_requests,
			// which InnoDB's own background work (purge, statistics) adds to
			// while the query runs: 12,362 pages against 12,001 once in make
			// test. Fewer pages than the model stays an error.
			upper := 0.02
			if tc.name == "mariadb" {
				upper = 0.05
			}
			if off := (lookup["pages"] - model) / model; off < -0.02 || off > upper {
				t.Errorf("the lookups touched %v pages, the model says %v", lookup["pages"], model)
			}
			if lookup["pages_per_row"] < tc.perRowLo {
				t.Errorf("the lookups touched %v pages a row", lookup["pages_per_row"])
			}
			if tc.name == "mariadb" && (lookup["handler_read_next"] != rows || scan["handler_read_rnd_next"] < rows) {
				t.Errorf("handler counters: lookups read %v index entries, the scan %v rows", lookup["handler_read_next"], scan["handler_read_rnd_next"])
			}

			// Left to itself, the engine scans the table for a condition
			// every row meets: the plan check refuses to time that as the
			// lookup path.
			login, _ := inst.UnixLogin(env.Database)
			c, err := dbconn.Open(ctx, env.Engines, login)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(ctx)
			if err := checkPlan(ctx, c, Lookup, "SELECT max(dt) FROM test WHERE j >= 0"); err == nil || !strings.Contains(err.Error(), "does not read the table the way the seed's did") {
				t.Errorf("an unforced plan for the lookup path: %v", err)
			}
			if err := settle(ctx, c, Lookup); err != nil {
				t.Fatal(err)
			}
			if err := checkPlan(ctx, c, Scan, query(tc.name, Lookup)); err == nil {
				t.Errorf("the forced lookup plan passed as a scan")
			}
			if _, err := newTestWorkload(t, rows+1, Scan).Run(ctx, env); err == nil || !strings.Contains(err.Error(), "the point wants 4001") {
				t.Errorf("a table of another size: %v", err)
			}
		})
	}
}
