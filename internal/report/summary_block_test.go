package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/mattn/go-runewidth"
)

// TestSummaryFindingPerEngineOnItsOwnLine: a finding merged over engines
// (a line per engine) keeps a line per engine on the terminal, and no line
// is wider than the layout.
func TestSummaryFindingPerEngineOnItsOwnLine(t *testing.T) {
	t.Parallel()
	d := &Doc{Title: "t", Findings: []Finding{{
		Published: "Clustered on filler, duplicates shared pages and the compressed table was about 10 times smaller.",
		Measured:  "PostgreSQL: zstd, each page on its own: 16.4x (1.2 distinct values on a page of 58 rows; S2 5.00x, deflate 8.00x)\nMariaDB: page_compressed 7.96x in 4 KiB blocks",
		Model:     "page dictionary 3.33x",
		Verdict:   Differs,
		Why:       "PostgreSQL: differs. The codec finds repeats inside each value.\nMariaDB: differs. Whole blocks.",
	}}}
	var out bytes.Buffer
	if err := WriteSummary(&out, d, false); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	starts := map[string]bool{}
	for _, l := range lines {
		if w := runewidth.StringWidth(l); w > summaryWidth {
			t.Errorf("line of %d columns, wider than %d: %q", w, summaryWidth, l)
		}
		for _, part := range []string{"PostgreSQL: zstd", "MariaDB: page_compressed", "PostgreSQL: differs", "MariaDB: differs"} {
			if strings.HasPrefix(strings.TrimLeft(strings.TrimPrefix(strings.TrimLeft(l, " "), "measured"), " "), part) ||
				strings.HasPrefix(strings.TrimLeft(strings.TrimPrefix(strings.TrimLeft(l, " "), "why"), " "), part) {
				starts[part] = true
			}
		}
	}
	if len(starts) != 4 {
		t.Errorf("each engine's part should start a line of its own, found %v in:\n%s", starts, out.String())
	}
}
