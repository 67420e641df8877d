package readahead

import (
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/report"
)

func TestReport(t *testing.T) {
	rd := runData(t, map[string][]scan{"postgres": seedLike, "mariadb": seedLike}, "")
	d := &report.Doc{}
	Report(rd, d)
	if len(d.Sections) != 1 || len(d.Charts) != 1 {
		t.Fatalf("report %+v", d)
	}
	rows := d.Sections[0].Tables[0].Rows
	if len(rows) != 6 || !strings.HasPrefix(rows[0][0], "seed") || rows[2][0] != "PostgreSQL" || rows[5][0] != "MariaDB" {
		t.Errorf("rows %q", rows)
	}
	if len(d.Charts[0].XCategories) != 4 || len(d.Charts[0].Series[1].Points) != 4 {
		t.Errorf("chart %+v", d.Charts[0])
	}
}
