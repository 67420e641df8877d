package keylookup

import (
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/report"
)

// TestReport sets the seed's row beside each engine's.
func TestReport(t *testing.T) {
	rd := runData(t, seedLike)
	d := &report.Doc{}
	Report(rd, d)
	if len(d.Sections) != 1 || len(d.Sections[0].Tables) != 1 || len(d.Charts) != 1 {
		t.Fatalf("report: %+v", d)
	}
	rows := d.Sections[0].Tables[0].Rows
	if len(rows) != 2 || !strings.HasPrefix(rows[0][0], "seed") || rows[0][4] != "2,008,931" || rows[1][0] != "MariaDB" || rows[1][6] != "4.00x" {
		t.Errorf("table rows %q", rows)
	}
	if got := d.Charts[0].XCategories; len(got) != 2 || got[0] != "seed" {
		t.Errorf("chart categories %q", got)
	}
}
