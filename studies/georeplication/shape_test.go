package georeplication

import (
	"math"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/workload"
)

// stopAndWait is a push's series at 10 ms: set-up statements, then a 40 KB
// buffer every 8 intervals (a 77 ms round trip) with the reply's few bytes
// between, then the verification.
func stopAndWait(buffers int) []int64 {
	s := []int64{231, 0, 0, 55, 0, 109, 0, 0}
	for range buffers {
		s = append(s, 40000, 0, 0, 0, 28, 0, 0, 0)
	}
	return append(s, 0, 0, 147, 0, 5)
}

// streamed is a pull's series: set-up, then 100 KB in every interval.
func streamed(intervals int) []int64 {
	s := []int64{456, 0, 110, 0}
	for range intervals {
		s = append(s, 100000)
	}
	return append(s, 0, 88, 0, 5)
}

// withSeries gives the runs of a scenario on a window the link series
// series[run-1] (at 10 ms), as the link records them.
func withSeries(rd *study.RunData, scenario, window string, series ...[]int64) *study.RunData {
	for i := range rd.Results {
		r := &rd.Results[i]
		if r.Params.String("scenario") != scenario || !strings.HasSuffix(r.Links[0].Profile, "+"+window) {
			continue
		}
		links := append([]workload.LinkResult(nil), r.Links...)
		links[0].SeriesSeconds = 0.01
		links[0].ForwardSeries = series[(r.Run-1)%len(series)]
		r.Links = links
	}
	rd.Summaries = study.Summarize(rd.Results, rd.Plan.Repeat)
	return rd
}

func TestShapeOfTrimsTheSetUpAndSeparatesPushFromPull(t *testing.T) {
	t.Parallel()
	push, _ := shapeOf(workload.LinkResult{SeriesSeconds: 0.01, ForwardSeries: stopAndWait(25)})
	if !push.bursty() || push.idleShare < 0.85 || math.Abs(push.cv-math.Sqrt(7)) > 0.1 {
		t.Errorf("stop and wait: %s, want bursty, 7 of 8 intervals idle, CV √7", push)
	}
	pull, _ := shapeOf(workload.LinkResult{SeriesSeconds: 0.01, ReverseSeries: streamed(10)})
	if !pull.smooth() || pull.intervals != 10 || pull.idleShare != 0 || pull.cv != 0 {
		t.Errorf("stream: %s, want smooth over its own 10 intervals", pull)
	}
	one, _ := shapeOf(workload.LinkResult{SeriesSeconds: 0.01, ReverseSeries: streamed(1)})
	if !one.smooth() || one.intervals != 1 {
		t.Errorf("one flight: %s, want smooth over one interval", one)
	}
	if _, ok := shapeOf(workload.LinkResult{Profile: "x"}); ok {
		t.Error("a link with no series has a shape")
	}
}

// TestFigureJudgesSayEachAnswer: Figure 6 (push bursty) and Figure 7 (pull
// smooth) on the 16 MiB window over 77 ms, from hand-made series.
func TestFigureJudgesSayEachAnswer(t *testing.T) {
	t.Parallel()
	points := func(scenario string) []measured {
		return []measured{{scenario, "char-1k", "tukwila-blueridge", autotuned, 1000, 2, nil},
			{scenario, "char-1k", "tukwila-blueridge", legacy, 1000, 2, nil}}
	}
	// A push whose writer pipelines its buffers spreads them over the round
	// trip: every interval carries some of them.
	pipelined := streamed(30)
	// A pull held by a slow writer: the reader waits for a free buffer.
	held := stopAndWait(10)
	tests := []struct {
		name, id, scenario string
		series             [][]int64
		want               report.Verdict
	}{
		{"push bursty", "figure-6", "push", [][]int64{stopAndWait(25)}, report.Reproduced},
		{"push smooth", "figure-6", "push", [][]int64{pipelined}, report.Differs},
		{"push runs disagree", "figure-6", "push", [][]int64{stopAndWait(25), pipelined, stopAndWait(25)}, report.WithinNoise},
		{"push without series", "figure-6", "push", nil, report.NotMeasured},
		{"pull smooth", "figure-7", "pull", [][]int64{streamed(20)}, report.Reproduced},
		{"pull in one flight", "figure-7", "pull", [][]int64{streamed(1)}, report.Reproduced},
		{"pull bursty", "figure-7", "pull", [][]int64{held}, report.Differs},
		{"pull runs disagree", "figure-7", "pull", [][]int64{held, streamed(20), streamed(20)}, report.WithinNoise},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rd := runData(t, points(tc.scenario))
			if tc.series != nil {
				rd = withSeries(rd, tc.scenario, autotuned, tc.series...)
			}
			f := verdictOf(t, rd, tc.id)
			if f.Verdict != tc.want {
				t.Errorf("verdict %s, want %s: measured %q; why %q", f.Verdict, tc.want, f.Measured, f.Why)
			}
		})
	}
}

// TestFigure7NamesTheWindowThatMadePullBursty: the legacy window's pull is
// reported beside the expanded window's, and blamed only when it was bursty.
func TestFigure7NamesTheWindowThatMadePullBursty(t *testing.T) {
	t.Parallel()
	pts := []measured{{"pull", "char-1k", "tukwila-blueridge", autotuned, 1000, 2, nil},
		{"pull", "char-1k", "tukwila-blueridge", legacy, 1000, 10, nil}}
	rd := withSeries(withSeries(runData(t, pts), "pull", autotuned, streamed(20)), "pull", legacy, stopAndWait(100))
	f := verdictOf(t, rd, "figure-7")
	if f.Verdict != report.Reproduced || !strings.Contains(f.Measured, "with a 64 KiB window") || !strings.Contains(f.Why, "64 KiB per round trip") {
		t.Errorf("verdict %s: measured %q; why %q", f.Verdict, f.Measured, f.Why)
	}
}
