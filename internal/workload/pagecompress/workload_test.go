package pagecompress

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/mariadb/mariatest"
	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
	"github.com/dbrig/dbrig/internal/workload"
	"github.com/dbrig/dbrig/internal/workload/workloadtest"
)

func newTestWorkload(t *testing.T, rows, period int64, order string) *pagecompress {
	t.Helper()
	w, err := newWorkload(workload.Params{"rows": rows, "period": period, "order": order, "instance": "db"})
	if err != nil {
		t.Fatal(err)
	}
	return w.(*pagecompress)
}

// TestOrdersOnEachEngine makes the table in both orders on a real server
// of each engine and measures its pages: clustered on cid a page holds many
// distinct fillers, clustered on filler one or two; every row is on a
// page; each codec compresses; on MariaDB the engine's own ratio is at
// most a page over a file system block.
func TestOrdersOnEachEngine(t *testing.T) {
	const rows = 8_000
	for _, tc := range []struct {
		name  string
		start func(t *testing.T) engine.Instance
	}{
		{"postgres", func(t *testing.T) engine.Instance {
			return pgtest.Start(t, "pagecompress", map[string]string{"wal_level": "minimal", "max_wal_senders": "0"})
		}},
		{"mariadb", func(t *testing.T) engine.Instance { return mariatest.Start(t, "pagecompress", nil) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inst := tc.start(t)
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			env := workloadtest.Env("dbrig_page_compression", inst)
			if err := newTestWorkload(t, rows, 80, ByCID).Prepare(ctx, env); err != nil {
				t.Fatal(err)
			}
			got := map[string]map[string]float64{}
			for _, order := range []string{ByCID, ByFiller} {
				m, err := newTestWorkload(t, rows, 80, order).Run(ctx, env)
				if err != nil {
					t.Fatalf("%s: %v", order, err)
				}
				x := m.Metrics
				got[order] = x
				if x["pages"] < 1 || x["rows_per_page"]*x["pages"] < rows*0.999 || x["zstd_ratio"] <= 1 || x["s2_ratio"] <= 1 || x["deflate_ratio"] <= 1 {
					t.Errorf("%s: %v", order, x)
				}
				if tc.name == "mariadb" {
					if x["engine_ratio"] <= 1 || x["engine_ratio"] > x["page_bytes"]/x["fs_block_bytes"]+0.01 || x["ratio"] != x["engine_ratio"] {
						t.Errorf("%s: the engine's ratio %v with pages of %v in blocks of %v", order, x["engine_ratio"], x["page_bytes"], x["fs_block_bytes"])
					}
				} else if x["ratio"] != x["zstd_ratio"] {
					t.Errorf("%s: PostgreSQL's measure is zstd's", order)
				}
				var pages float64
				for _, n := range m.Series["pages_by_distinct"] {
					pages += n
				}
				if pages != x["pages"] {
					t.Errorf("%s: %v pages by distinct values, %v pages", order, pages, x["pages"])
				}
			}
			// The seed's expression gives 73 distinct strings for period 80
			// (1 and 10 both give "1000000", and so on to 7 and 70).
			if got[ByCID]["distinct_values"] != 73 || got[ByFiller]["distinct_values"] != 73 {
				t.Errorf("distinct fillers: %v and %v, want 73", got[ByCID]["distinct_values"], got[ByFiller]["distinct_values"])
			}
			if d := got[ByCID]["distinct_per_page"]; d < got[ByCID]["rows_per_page"]/2 {
				t.Errorf("clustered on cid %v distinct values on a page of %v rows", d, got[ByCID]["rows_per_page"])
			}
			if d := got[ByFiller]["distinct_per_page"]; d > 2.5 { // 100 rows a value: a page may straddle two
				t.Errorf("clustered on filler %v distinct values a page", d)
			}
			if _, err := newTestWorkload(t, rows+1, 80, ByCID).Run(ctx, env); err == nil || !strings.Contains(err.Error(), "the table 8001") {
				t.Errorf("a table of another size: %v", err)
			}
		})
	}
}

// TestOnDisk counts a sparse file's pages that hold data and its blocks.
func TestOnDisk(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sparse")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	const page = 64 << 10
	data := make([]byte, 4096)
	for i := range data {
		data[i] = 1
	}
	for _, off := range []int64{0, 3 * page, 3*page + 8192, 7 * page} {
		if _, err := f.WriteAt(data, off); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Truncate(10 * page); err != nil {
		t.Fatal(err)
	}
	f.Close()
	pages, alloc, err := onDisk(path, page)
	if err != nil {
		t.Fatal(err)
	}
	if pages != 3 {
		t.Errorf("%d pages hold data, want 3 (pages 0, 3 and 7)", pages)
	}
	if alloc < 4*4096 || alloc > 3*page {
		t.Errorf("%d bytes allocated for four 4 KiB writes", alloc)
	}
}

func TestInnoDBLeavesRefusesAFileWithoutThem(t *testing.T) {
	path := filepath.Join(t.TempDir(), "empty.ibd")
	if err := os.WriteFile(path, make([]byte, 4*16384), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := newCodecs(6)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	if _, err := innodbLeaves(path, 16384, 42, c); err == nil || !strings.Contains(err.Error(), "no leaf page of index 42") {
		t.Errorf("a file without leaves: %v", err)
	}
}
