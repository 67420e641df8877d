package main

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/measure"
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/workload"
)

// diagnoseRun makes a run directory with one point whose transactions took
// the given times.
func diagnoseRun(t *testing.T, key string, times map[time.Duration]int) string {
	t.Helper()
	dir := emptyRun(t, "diagnose")
	h := measure.NewHistogram()
	for d, n := range times {
		for i := range n {
			h.Record(d + time.Duration(i%3000)*time.Microsecond)
		}
	}
	w, err := study.OpenResults(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Write(workload.Result{Study: "rbar-latency", Key: key + " #1", Combo: key, Run: 1,
		Metrics: map[string]float64{"users": 16}, Histograms: map[string]*measure.Histogram{"latency": h}}); err != nil {
		t.Fatal(err)
	}
	return dir
}

func diagnoseCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(t.Context(), append([]string{"diagnose"}, args...), &app{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }, version: "test"})
	return code, out.String(), errb.String()
}

// TestDiagnoseExitCodes: 0 for a clean run, 1 for a run with the
// signature (naming the point and its share), 2 for what is not a run.
func TestDiagnoseExitCodes(t *testing.T) {
	t.Parallel()
	clean := diagnoseRun(t, "net=lan-1g", map[time.Duration]int{time.Millisecond: 10_000})
	stalled := diagnoseRun(t, "net=lan-1g+duplex-mismatch", map[time.Duration]int{time.Millisecond: 10_000, 201 * time.Millisecond: 300, 401 * time.Millisecond: 20})

	code, out, errOut := diagnoseCmd(t, clean)
	if code != 0 || !strings.Contains(out, "No retransmission-stall signature in any point.") || errOut != "" {
		t.Errorf("clean run: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, errOut = diagnoseCmd(t, stalled)
	if code != 1 || !strings.Contains(out, "net=lan-1g+duplex-mismatch #1\n      320 of 10,320 transactions stalled (3.1 %)") || errOut != "" {
		t.Errorf("stalled run: exit %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = diagnoseCmd(t, stalled, "--json")
	var d struct {
		Found  int
		Points []struct {
			Point    string
			HitShare float64 `json:"hit_share"`
		}
	}
	if err := json.Unmarshal([]byte(out), &d); code != 1 || err != nil || d.Found != 1 || d.Points[0].Point != "net=lan-1g+duplex-mismatch #1" || d.Points[0].HitShare < 0.03 {
		t.Errorf("--json: exit %d, %v\n%s", code, err, out)
	}
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{filepath.Join(t.TempDir(), "nothing")}, "no such directory"},
		{[]string{t.TempDir()}, "is not a dbrig run directory: it has no results.jsonl"},
		{[]string{emptyRun(t, "empty")}, "no finished point yet"},
		{nil, "accepts 1 arg(s)"},
	} {
		code, out, errOut := diagnoseCmd(t, tc.args...)
		if code != 2 || !strings.Contains(errOut, tc.says) || out != "" {
			t.Errorf("diagnose %v: exit %d, stdout %q, stderr %q; want 2 saying %q", tc.args, code, out, errOut, tc.says)
		}
	}
}
