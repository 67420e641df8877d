package study

import (
	"math"
	"testing"
)

func TestRepeatability(t *testing.T) {
	t.Parallel()
	fig := func(combo, metric string, v float64) Figure {
		return Figure{Workload: "w", Combo: combo, Metric: metric, Measured: v}
	}
	nan := math.NaN()
	cases := []struct {
		name string
		runs []StudyFigures
		each []RepeatStats
		all  RepeatStats
	}{
		{
			name: "one run has no other to be held against",
			runs: []StudyFigures{{"s", []Figure{fig("a", "t", 10)}}},
			each: []RepeatStats{{0, nan, nan}},
			all:  RepeatStats{0, nan, nan},
		},
		{
			// 12 against 10: +20 %; 10 against 12: -16.7 %.
			name: "two runs: each figure against the other run's",
			runs: []StudyFigures{{"s", []Figure{fig("a", "t", 10)}}, {"s", []Figure{fig("a", "t", 12)}}},
			each: []RepeatStats{{1, 100.0 / 6, 100.0 / 6}, {1, 20, 20}},
			all:  RepeatStats{2, 100.0 / 6, 20},
		},
		{
			// 10 against the median of 10 and 40 (25): -60 %; the
			// second 10 likewise; 40 against 10: +300 %.
			name: "three runs: against the others' median, equal figures counted once each",
			runs: []StudyFigures{
				{"s", []Figure{fig("a", "t", 10)}},
				{"s", []Figure{fig("a", "t", 10)}},
				{"s", []Figure{fig("a", "t", 40)}},
			},
			each: []RepeatStats{{1, 60, 60}, {1, 60, 60}, {1, 300, 300}},
			all:  RepeatStats{3, 60, 300},
		},
		{
			name: "another scale or engine of the study is not the same figure",
			runs: []StudyFigures{
				{"s --scale quick", []Figure{fig("a", "t", 10)}},
				{"s --scale full", []Figure{fig("a", "t", 100)}},
				{"s --scale quick --engine mariadb", []Figure{fig("a", "t", 30)}},
			},
			each: []RepeatStats{{0, nan, nan}, {0, nan, nan}, {0, nan, nan}},
			all:  RepeatStats{0, nan, nan},
		},
		{
			name: "other studies, combinations and metrics are not the same figure",
			runs: []StudyFigures{
				{"s", []Figure{fig("a", "t", 10), fig("b", "t", 99)}},
				{"other", []Figure{fig("a", "t", 20)}},
				{"s", []Figure{fig("a", "u", 30), fig("a", "t", 10)}},
			},
			each: []RepeatStats{{1, 0, 0}, {0, nan, nan}, {1, 0, 0}},
			all:  RepeatStats{2, 0, 0},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			each, all := Repeatability(c.runs)
			if len(each) != len(c.each) {
				t.Fatalf("%d runs' stats, want %d", len(each), len(c.each))
			}
			for i := range each {
				if !sameStats(each[i], c.each[i]) {
					t.Errorf("run %d: %+v, want %+v", i, each[i], c.each[i])
				}
			}
			if !sameStats(all, c.all) {
				t.Errorf("all: %+v, want %+v", all, c.all)
			}
		})
	}
}

func sameStats(a, b RepeatStats) bool {
	close := func(x, y float64) bool {
		return math.IsNaN(x) && math.IsNaN(y) || math.Abs(x-y) < 1e-9
	}
	return a.Figures == b.Figures && close(a.MedianPct, b.MedianPct) && close(a.P90Pct, b.P90Pct)
}
