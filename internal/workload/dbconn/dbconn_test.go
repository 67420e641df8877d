package dbconn

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/enginetest"
	"github.com/dbrig/dbrig/internal/engine/mariadb/mariatest"
	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
)

// TestSessionOnEachEngine runs the same statements on a real server of
// each engine: a setting holds from one statement to the next (one
// session), NULL reads as "", a decimal reads as a whole number, and an
// error names the statement.
func TestSessionOnEachEngine(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start func(t *testing.T) engine.Instance
		set   string
		read  string
	}{
		{"postgres", func(t *testing.T) engine.Instance { return pgtest.Start(t, "dbconn", nil) },
			"SET work_mem = '7MB'", "SELECT current_setting('work_mem')"},
		{"mariadb", func(t *testing.T) engine.Instance { return mariatest.Start(t, "dbconn", nil) },
			"SET @w = '7MB'", "SELECT @w"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inst := tc.start(t)
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			if err := inst.CreateDatabase(ctx, "dbrig_dbconn"); err != nil {
				t.Fatal(err)
			}
			login, _ := inst.UnixLogin("dbrig_dbconn")
			c, err := Open(ctx, enginetest.Registry(), login)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(ctx)
			if c.Engine() != tc.name || c.Dialect().Placeholder == nil {
				t.Errorf("engine %q, dialect %+v", c.Engine(), c.Dialect())
			}
			if err := c.Exec(ctx, tc.set, "CREATE TABLE t (a int, b varchar(10))", "INSERT INTO t VALUES (1, 'x'), (2, NULL)"); err != nil {
				t.Fatal(err)
			}
			if v, err := c.Value(ctx, tc.read); err != nil || v != "7MB" {
				t.Errorf("the session's setting = %q, %v; want 7MB", v, err)
			}
			rows, err := c.Rows(ctx, "SELECT a, b FROM t ORDER BY a")
			if err != nil || len(rows) != 2 || rows[0][1] != "x" || rows[1][1] != "" {
				t.Errorf("rows = %q, %v", rows, err)
			}
			if n, err := c.Int(ctx, "SELECT avg(a) * 2 FROM t"); err != nil || n != 3 {
				t.Errorf("Int = %d, %v; want 3", n, err)
			}
			if d, rows, err := c.Time(ctx, "SELECT count(*) FROM t"); err != nil || d <= 0 || rows[0][0] != "2" {
				t.Errorf("Time = %v, %q, %v", d, rows, err)
			}
			var seen []string
			if err := c.Each(ctx, "SELECT a, b FROM t ORDER BY a", func(r []string) error { seen = append(seen, r[0]+"|"+r[1]); return nil }); err != nil || strings.Join(seen, ",") != "1|x,2|" {
				t.Errorf("Each saw %q, %v", seen, err)
			}
			stop := errors.New("enough")
			if err := c.Each(ctx, "SELECT a FROM t ORDER BY a", func([]string) error { return stop }); err != stop {
				t.Errorf("an error from the callback: %v", err)
			}
			if n, err := c.Int(ctx, "SELECT count(*) FROM t"); err != nil || n != 2 {
				t.Errorf("the session after a stopped Each: %d, %v", n, err)
			}
			if _, err := c.Value(ctx, "SELECT a FROM t"); err == nil || !strings.Contains(err.Error(), "2 rows, want one") {
				t.Errorf("Value of two rows: %v", err)
			}
			if err := c.Exec(ctx, "SELECT nothing FROM nowhere\nWHERE 1 = 1"); err == nil || !strings.Contains(err.Error(), "SELECT nothing FROM nowhere ...") {
				t.Errorf("an error does not name its statement: %v", err)
			}
		})
	}
}
