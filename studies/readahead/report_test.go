package readahead

import (
	"math"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/workload"
	"github.com/dbrig/dbrig/internal/workload/readahead"
)

func TestReport(t *testing.T) {
	rd := runData(t, map[string][]scan{"postgres": seedLike, "mariadb": seedLike}, "")
	// PostgreSQL's default scan had 7 s predicted before it ran; the
	// others, on no emulated disk, nothing.
	rd.Results[0].SetModel(workload.Prediction{Metrics: map[string]float64{"seconds": 7}}, readahead.Model(rd.Results[0], nil))
	rd.Summaries = study.Summarize(rd.Results, rd.Plan.Repeat)
	d := &report.Doc{}
	Report(rd, d)
	if len(d.Sections) != 1 || len(d.Charts) != 1 {
		t.Fatalf("report %+v", d)
	}
	rows := d.Sections[0].Tables[0].Rows
	if len(rows) != 6 || !strings.HasPrefix(rows[0][0], "seed") || rows[2][0] != "PostgreSQL" || rows[5][0] != "MariaDB" {
		t.Errorf("rows %q", rows)
	}
	if got := [2]string{rows[2][9], rows[3][9]}; got != [2]string{study.FormatSeconds(7), study.FormatSeconds(math.NaN())} {
		t.Errorf("predicted: %q, want 7 s for the scan that stored it and none for the other", got)
	}
	if rows[2][8] != study.FormatSeconds(8) {
		t.Errorf("model time %q: want the seed's arithmetic, 8 s, not the prediction", rows[2][8])
	}
	if len(d.Charts[0].XCategories) != 4 || len(d.Charts[0].Series[1].Points) != 4 {
		t.Errorf("chart %+v", d.Charts[0])
	}
}
