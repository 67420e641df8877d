package duplexmismatch

import (
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/workload/oltp/oltptest"
	"github.com/dbrig/dbrig/studies/loadoltp/loadoltptest"
	"github.com/dbrig/dbrig/studies/studytest"
)

// TestEveryPublishedFindingHasAJudge names the ids of the study's file
// that no judge decides.
func TestEveryPublishedFindingHasAJudge(t *testing.T) { loadoltptest.EveryFindingJudged(t, Study()) }

func TestDuplexJudges(t *testing.T) {
	seedLike := oltptest.DuplexOpts{TPSRatio: 0.3, MeanRatio: 1.6, Stalled: true, Over1s: 2, CPUMM: 0.5, ReportMM: 1.02}
	with := func(f func(o *oltptest.DuplexOpts)) oltptest.DuplexOpts { o := seedLike; f(&o); return o }
	for _, tc := range []struct {
		name string
		id   string
		o    oltptest.DuplexOpts
		want report.Verdict
		says string
	}{
		{"collapse", "collapse", seedLike, report.Reproduced, "0.30x (the seed: 800 / 5,000 = 0.16x)"},
		{"no collapse", "collapse", with(func(o *oltptest.DuplexOpts) { o.TPSRatio = 0.8 }), report.Differs, "no collapse"},
		{"mildly worse", "mean-mildly-worse", seedLike, report.Reproduced, "The mean rose 1.60x"},
		{"much worse", "mean-mildly-worse", with(func(o *oltptest.DuplexOpts) { o.MeanRatio = 5 }), report.Differs, "as bad as the throughput"},
		{"no worse", "mean-mildly-worse", with(func(o *oltptest.DuplexOpts) { o.MeanRatio = 1 }), report.Differs, "barely shows"},
		{"mildly worse at a given load", "mean-mildly-worse", with(func(o *oltptest.DuplexOpts) { o.MeanRatio, o.GivenLoad = 5, 1.4 }), report.Reproduced, "at 500/s (open loop, 32 users) (a given load)"},
		{"much worse at a given load", "mean-mildly-worse", with(func(o *oltptest.DuplexOpts) { o.MeanRatio, o.GivenLoad = 1.4, 4 }), report.Differs, "4.00x"},
		{"the open loop is no collapse", "collapse", with(func(o *oltptest.DuplexOpts) { o.GivenLoad = 1.4 }), report.Reproduced, "0.30x"},
		{"outliers", "outliers", seedLike, report.Reproduced, "and 6 took over 1 s"},
		{"none over a second", "outliers", with(func(o *oltptest.DuplexOpts) { o.Over1s = 0 }), report.Differs, "none took over 1 s"},
		{"no stalls", "outliers", with(func(o *oltptest.DuplexOpts) { o.Stalled, o.Over1s = false, 0 }), report.Differs, "shows at 0 of the 3 mismatched loads"},
		{"stalls at some loads", "outliers", with(func(o *oltptest.DuplexOpts) { o.StalledFrom = 32 }), report.Reproduced, "2 of the 3 mismatched loads"},
		{"stalls at one load", "outliers", with(func(o *oltptest.DuplexOpts) { o.StalledFrom = 128 }), report.Differs, "shows at 1 of the 3"},
		{"stalls at full duplex too", "outliers", with(func(o *oltptest.DuplexOpts) { o.CleanHit = 500 }), report.Differs, "full-duplex link shows the same"},
		{"idle server", "server-idle", seedLike, report.Reproduced, "0.31x the CPU"},
		{"busy server", "server-idle", with(func(o *oltptest.DuplexOpts) { o.CPUMM = 1.5 }), report.Differs, "more than 0.6x"},
		{"not sampled", "server-idle", with(func(o *oltptest.DuplexOpts) { o.CPUMM = -1 }), report.NotMeasured, "not sampled"},
		{"report unaffected", "reporting-unaffected", seedLike, report.Reproduced, "lost 0.0 % of their time"},
		{"report unstalled, its mean moved on a single run", "reporting-unaffected", with(func(o *oltptest.DuplexOpts) { o.ReportMM = 0.7 }), report.WithinNoise, "the machine's own noise"},
		{"report stalled", "reporting-unaffected", with(func(o *oltptest.DuplexOpts) { o.ReportMM, o.ReportLost = 1.6, 40 }), report.Differs, "lost 10.0 % of their time to retransmissions, more than 10 %"},
	} {
		t.Run(tc.id+"/"+tc.name, func(t *testing.T) {
			f := loadoltptest.Judge(t, Study(), loadoltptest.Run(t, Study(), "0s", oltptest.Duplex(tc.o)), tc.id)
			if f.Verdict != tc.want || !strings.Contains(f.Measured+" "+f.Why, tc.says) {
				t.Errorf("verdict %q, want %q with %q;\nmeasured: %s\nmodel: %s\nwhy: %s", f.Verdict, tc.want, tc.says, f.Measured, f.Model, f.Why)
			}
		})
	}
}

// TestReportingJudgedOnItsRuns: a reporting query that lost no time to
// retransmissions still differs when its mean moved beyond ±10 % and
// beyond its runs' spread, and is within noise when its runs overlap.
func TestReportingJudgedOnItsRuns(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		reportMM float64
		factors  []float64
		want     report.Verdict
		says     string
	}{
		{"unmoved", 1.02, []float64{0.99, 1.01}, report.Reproduced, "within ±10 %"},
		{"moved beyond its runs", 0.7, []float64{0.99, 1.01}, report.Differs, "beyond the runs' spread"},
		{"moved inside its runs", 1.12, []float64{0.8, 1.25}, report.WithinNoise, "runs that overlap"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := oltptest.DuplexOpts{TPSRatio: 0.3, MeanRatio: 1.6, Stalled: true, Over1s: 2, CPUMM: 0.5, ReportMM: tc.reportMM}
			rd := studytest.Scaled(loadoltptest.Run(t, Study(), "0s", oltptest.Duplex(o)), tc.factors...)
			f := loadoltptest.Judge(t, Study(), rd, "reporting-unaffected")
			if f.Verdict != tc.want || !strings.Contains(f.Why, tc.says) {
				t.Errorf("verdict %q, want %q with %q;\nmeasured: %s\nwhy: %s", f.Verdict, tc.want, tc.says, f.Measured, f.Why)
			}
		})
	}
}
