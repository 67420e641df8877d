package widetable

import (
	"context"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/enginetest"
	"github.com/dbrig/dbrig/internal/engine/mariadb/mariatest"
	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
	"github.com/dbrig/dbrig/internal/workload/dbconn"
)

func TestJAlternatesAsTheSeeds(t *testing.T) {
	for _, tc := range []struct{ i, rows, want int64 }{
		{1, 2_000_000, 1_999_999}, {2, 2_000_000, 2}, {3, 2_000_000, 1_999_997}, {2_000_000, 2_000_000, 2_000_000}, {5, 10, 5},
	} {
		if got := JOf(tc.i, tc.rows); got != tc.want {
			t.Errorf("JOf(%d, %d) = %d, want %d", tc.i, tc.rows, got, tc.want)
		}
	}
}

// TestTableOnEachEngine makes the table on a real server of each engine:
// its rows as the seed's (j alternating, 5,000-byte filler, increasing
// times), one row per PostgreSQL page and three per InnoDB page, the heap
// in i order, and progress reported to the last row.
func TestTableOnEachEngine(t *testing.T) {
	const rows = 3000
	for _, tc := range []struct {
		name        string
		start       func(t *testing.T) engine.Instance
		rowsPerPage float64
		pageBytes   int64
		fillerLen   string
	}{
		{"postgres", func(t *testing.T) engine.Instance {
			return pgtest.Start(t, "widetable", map[string]string{"wal_level": "minimal", "max_wal_senders": "0"})
		}, 1, 8192, "SELECT octet_length(filler) FROM test WHERE i = 7"},
		{"mariadb", func(t *testing.T) engine.Instance { return mariatest.Start(t, "widetable", nil) },
			3, 16384, "SELECT length(filler) FROM test WHERE i = 7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inst := tc.start(t)
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			if err := inst.CreateDatabase(ctx, "dbrig_widetable"); err != nil {
				t.Fatal(err)
			}
			login, _ := inst.UnixLogin("dbrig_widetable")
			c, err := dbconn.Open(ctx, enginetest.Registry(), login)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(ctx)
			var last int64
			if err := Create(ctx, c, Options{Rows: rows, Progress: func(done, total int64) { last = done }}); err != nil {
				t.Fatal(err)
			}
			if last != rows {
				t.Errorf("progress ended at %d, want %d", last, rows)
			}
			l, err := ReadLayout(ctx, c)
			if err != nil {
				t.Fatal(err)
			}
			if l.Rows != rows || l.PageBytes != tc.pageBytes || l.RowsPerPage() < tc.rowsPerPage*0.9 || l.RowsPerPage() > tc.rowsPerPage*1.1 || l.IndexPages <= 0 {
				t.Errorf("layout %+v (%.2f rows a page), want %d rows, %.0f a page of %d bytes", l, l.RowsPerPage(), rows, tc.rowsPerPage, tc.pageBytes)
			}
			if l.TableBytes() != l.TablePages*l.PageBytes {
				t.Errorf("table bytes %d", l.TableBytes())
			}
			for q, want := range map[string]string{
				"SELECT j FROM test WHERE i = 7":     "2993",
				"SELECT j FROM test WHERE i = 8":     "8",
				"SELECT count(DISTINCT j) FROM test": "3000",
				tc.fillerLen:                         "5000",
				"SELECT count(*) FROM test a JOIN test b ON b.i = a.i + 1 WHERE b.dt <= a.dt": "0",
			} {
				if v, err := c.Value(ctx, q); err != nil || v != want {
					t.Errorf("%s = %q, %v; want %s", q, v, err, want)
				}
			}
			if tc.name == "postgres" {
				// Clustered on i: the heap holds the rows in i order, and
				// so does a table loaded without CLUSTER.
				if err := c.Exec(ctx, "CREATE SCHEMA plain", "SET search_path = plain"); err != nil {
					t.Fatal(err)
				}
				if err := Create(ctx, c, Options{Rows: rows, NoCluster: true}); err != nil {
					t.Fatal(err)
				}
				for _, schema := range []string{"public", "plain"} {
					if v, err := c.Value(ctx, "SELECT count(*) FROM "+schema+".test WHERE (ctid::text::point)[0]::bigint <> i - 1"); err != nil || v != "0" {
						t.Errorf("%s: rows out of i order in the heap: %q, %v", schema, v, err)
					}
				}
				if v, err := c.Value(ctx, "SELECT count(*) FROM pg_indexes WHERE schemaname = 'plain'"); err != nil || v != "1" {
					t.Errorf("without CLUSTER, %q indexes (%v), want the one on j", v, err)
				}
			}
		})
	}
}
