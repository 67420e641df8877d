package study

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestProgressNumbersStepsInsteadOfGoingBack: a workload reports each
// phase from zero; the line says the next step rather than a smaller
// share of the same one.
func TestProgressNumbersStepsInsteadOfGoingBack(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	p := &LineProgress{W: &out}
	p.StartPoint(1, 2, "path=lookup")
	for _, u := range []struct{ done, total int64 }{{50, 100}, {20, 100}, {60, 100}} {
		p.last = time.Time{} // print every update
		p.Update(u.done, u.total)
	}
	got := out.String()
	for _, want := range []string{"path=lookup: 50%\n", "path=lookup: step 2: 20%\n", "path=lookup: step 2: 60%\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("progress lines %q lack %q", got, want)
		}
	}
	p.StartPoint(2, 2, "path=scan")
	p.last = time.Time{}
	p.Update(10, 100)
	if !strings.Contains(out.String(), "path=scan: 10%\n") {
		t.Errorf("a new point starts at its first step: %q", out.String())
	}
}
