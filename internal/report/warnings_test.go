package report_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/report"
)

// TestWarningsAndInterruptedPointsAreSaid: a warning that qualifies a
// point's figures heads every rendering (the terminal summary, Markdown,
// HTML); a point an interrupt cut short is listed as such, apart from
// the failures.
func TestWarningsAndInterruptedPointsAreSaid(t *testing.T) {
	t.Parallel()
	const warning = "users=200 #1 (tps 5594): 104 of 200 users found every connection slot taken"
	const cut = "users=400 #1: interrupted after 3.3s"
	d := &report.Doc{Title: "t", Warnings: []string{warning}, Interrupted: []string{cut},
		Counts: report.Counts{Planned: 2, Combinations: 2, Runs: 1, Measured: 1, Missing: 1}}
	var sum, md, html bytes.Buffer
	if err := report.WriteSummary(&sum, d, false); err != nil {
		t.Fatal(err)
	}
	if err := report.WriteMarkdown(&md, d); err != nil {
		t.Fatal(err)
	}
	if err := report.WriteHTML(&html, d); err != nil {
		t.Fatal(err)
	}
	findings := func(s string) int { return strings.Index(s, "Findings") }
	for name, out := range map[string]string{"summary": sum.String(), "markdown": md.String(), "html": html.String()} {
		at := strings.Index(out, warning)
		if at < 0 || at > findings(out) {
			t.Errorf("%s: the warning is not said before the findings:\n%s", name, out)
		}
		if !strings.Contains(out, cut) {
			t.Errorf("%s does not list the interrupted point", name)
		}
	}
	if !strings.Contains(md.String(), "### Interrupted\n\n- "+cut) {
		t.Errorf("markdown: the interrupted point is not under its own heading:\n%s", md.String())
	}
}
