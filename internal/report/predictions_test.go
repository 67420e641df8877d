package report

import (
	"bytes"
	"strings"
	"testing"
)

// TestPredictionsOpenEveryForm: the predictions' share and where the
// model misses most are at the top of the HTML page, the Markdown and the
// terminal summary, before the findings.
func TestPredictionsOpenEveryForm(t *testing.T) {
	t.Parallel()
	d := &Doc{Title: "t", Findings: []Finding{{Published: "p", Verdict: Reproduced}},
		Predictions: &Section{Title: "Predictions", Text: "3 of 4 headline figures modelled",
			Tables: []Table{{Columns: []string{"workload", "metric", "error", "why"}, Rows: [][]string{{"oltp", "tps", "+31.0%", "the knee is sharp in the model"}}}}}}
	var html, md, sum bytes.Buffer
	if err := WriteHTML(&html, d); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&md, d); err != nil {
		t.Fatal(err)
	}
	if err := WriteSummary(&sum, d, false); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"html": html.String(), "markdown": md.String(), "summary": sum.String()} {
		at, findings := strings.Index(out, "3 of 4 headline figures modelled"), strings.Index(out, "Findings")
		if at < 0 || findings < 0 || at > findings || !strings.Contains(out, "the knee is sharp in the model") {
			t.Errorf("%s: the predictions do not open it (at %d, findings at %d):\n%s", name, at, findings, out)
		}
	}
}
