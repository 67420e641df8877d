package georeplication

import (
	"fmt"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/study"
)

// withLargerBuffer is rd with the points of more run with a 160 KB agent
// buffer, and the runs' seconds of both set when given (run order).
func withLargerBuffer(t *testing.T, rd *study.RunData, more []measured, runSeconds map[string][]float64) *study.RunData {
	t.Helper()
	larger := runData(t, more)
	for _, r := range larger.Results {
		r.Params["buffer_size"] = int64(160000)
		r.Combo += " buffer=160000"
		r.Key = fmt.Sprintf("%s #%d", r.Combo, r.Run)
		rd.Results = append(rd.Results, r)
	}
	for i := range rd.Results {
		r := &rd.Results[i]
		buffer := "40k"
		if r.Params.Int("buffer_size") == 160000 {
			buffer = "160k"
		}
		if secs, ok := runSeconds[r.Links[0].Profile+" "+buffer]; ok {
			r.Metrics = map[string]float64{"seconds": secs[r.Run-1]}
		}
	}
	rd.Summaries = study.Summarize(rd.Results, rd.Plan.Repeat)
	return rd
}

// TestAgentProfileJudgeSaysEachAnswer: a push over 77 ms with the default
// 40 KB buffer against a 160 KB one, on the 16 MiB window (the seed's
// 2008 stack), from hand-made times.
func TestAgentProfileJudgeSaysEachAnswer(t *testing.T) {
	t.Parallel()
	push := func(window string, seconds float64) measured {
		return measured{"push", "char-1k", "tukwila-blueridge", window, 1000, seconds, nil}
	}
	tests := []struct {
		name        string
		points      []measured
		larger      []measured
		runSeconds  map[string][]float64
		want        report.Verdict
		whyContains string
	}{
		{"hardly matters", []measured{push(autotuned, 2.0), push(stack, 15)}, []measured{push(autotuned, 1.9), push(stack, 14)}, nil, report.Reproduced, "hardly matters"},
		{"buffer sets the round trips", []measured{push(autotuned, 2.2), push(stack, 15)}, []measured{push(autotuned, 0.9), push(stack, 10)}, nil, report.Differs, "round trips per byte"},
		{"the 2003 stack's send buffer paces", []measured{push(autotuned, 2.2), push(stack, 10.2)}, []measured{push(autotuned, 0.9), push(stack, 10)}, nil, report.Differs, "moved the push by 1.02x only"},
		{"a slower larger buffer differs too", []measured{push(autotuned, 1.0)}, []measured{push(autotuned, 2.0)}, nil, report.Differs, "0.50x"},
		{"runs overlap", []measured{push(autotuned, 1.3)}, []measured{push(autotuned, 1.05)},
			map[string][]float64{"tukwila-blueridge+autotuned 40k": {1.0, 1.6, 1.3}, "tukwila-blueridge+autotuned 160k": {1.0, 1.05, 1.1}}, report.WithinNoise, "overlap"},
		{"only the 2003 stack's pair", []measured{push(autotuned, 2.0), push(stack, 15)}, []measured{push(stack, 10)}, nil, report.NotMeasured, ""},
		{"no larger buffer", []measured{push(autotuned, 2.0)}, nil, nil, report.NotMeasured, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := verdictOf(t, withLargerBuffer(t, runData(t, tc.points), tc.larger, tc.runSeconds), "agent-profile")
			if f.Verdict != tc.want || !strings.Contains(f.Why, tc.whyContains) {
				t.Errorf("verdict %s, want %s (why containing %q): measured %q; why %q", f.Verdict, tc.want, tc.whyContains, f.Measured, f.Why)
			}
		})
	}
}

// TestALargerBufferLeavesTheOtherFindingsAlone: the 160 KB points are the
// profile's alone; Table 2's push is still judged on the default buffer.
func TestALargerBufferLeavesTheOtherFindingsAlone(t *testing.T) {
	t.Parallel()
	push := func(window string, seconds float64) measured {
		return measured{"push", "char-1k", "tukwila-blueridge", window, 1000, seconds, nil}
	}
	rd := withLargerBuffer(t, runData(t, []measured{push(stack, 15), push(autotuned, 2)}), []measured{push(stack, 15), push(autotuned, 0.1)}, nil)
	f := verdictOf(t, rd, "push-char")
	if !strings.Contains(f.Measured, "2s with 16 MiB") {
		t.Errorf("push-char read the 160 KB point: measured %q", f.Measured)
	}
}
