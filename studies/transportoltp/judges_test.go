package transportoltp

import (
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/workload/oltp/oltptest"
	"github.com/dbrig/dbrig/studies/loadoltp/loadoltptest"
)

// TestEveryPublishedFindingHasAJudge names the ids of the study's file
// that no judge decides.
func TestEveryPublishedFindingHasAJudge(t *testing.T) { loadoltptest.EveryFindingJudged(t, Study()) }

// transports makes the shop on every transport, with the unix socket's
// peak gain × lan-1g's and infiniband's wire gain × lan-1g's.
func transports(gain, wire float64) []oltptest.Point {
	var pts []oltptest.Point
	for _, net := range []struct {
		name string
		peak float64
	}{{"unix", 5000 * gain}, {"direct", 5000 * (1 + (gain-1)*0.6)}, {"lan-1g", 5000}, {"lan-10g", 5000 * (1 + (wire-1)*0.5)}, {"infiniband", 5000 * wire}} {
		pts = append(pts, oltptest.ClosedLoop("shop", net.name, 0.5, 10, net.peak, oltptest.QuickUsers, nil)...)
	}
	return pts
}

// mixGains adds browse-only and reporting on the unix socket and lan-1g
// with the given gains of the unix socket.
func mixGains(pts []oltptest.Point, lookups, report float64) []oltptest.Point {
	pts = append(pts, oltptest.ClosedLoop("browse-only", "unix", 0.4, 10, 6000*lookups, oltptest.QuickUsers, nil)...)
	pts = append(pts, oltptest.ClosedLoop("browse-only", "lan-1g", 0.6, 10, 6000, oltptest.QuickUsers, nil)...)
	pts = append(pts, oltptest.ClosedLoop("reporting", "unix", 20, 10, 90*report, oltptest.QuickUsers, nil)...)
	pts = append(pts, oltptest.ClosedLoop("reporting", "lan-1g", 20.2, 10, 90, oltptest.QuickUsers, nil)...)
	return pts
}

// withFailures puts errors at the given users of a transport's shop.
func withFailures(pts []oltptest.Point, net string, users ...int) []oltptest.Point {
	for i := range pts {
		for _, u := range users {
			if pts[i].Net == net && pts[i].Mix == "shop" && pts[i].Users == u {
				pts[i].Errors, pts[i].Over = 12, 2
			}
		}
	}
	return pts
}

func TestTransportJudges(t *testing.T) {
	dip := func(n int) float64 { // throughput falls past 100 users
		if n > 100 {
			return 0.6
		}
		return 1
	}
	for _, tc := range []struct {
		name string
		id   string
		pts  []oltptest.Point
		want report.Verdict
		says string
	}{
		{"the seed's gain", "thin-stack-gain", transports(1.375, 1.02), report.Reproduced, "+37.5 %"},
		{"a far larger gain", "thin-stack-gain", transports(2.5, 1.02), report.Differs, "more than 2 times the seed's"},
		{"no gain", "thin-stack-gain", transports(0.98, 1.02), report.Differs, "gains nothing"},
		{"stack, not wire", "cpu-not-wire", transports(1.4, 1.05), report.Reproduced, "at most half"},
		{"the wire gains as much", "cpu-not-wire", transports(1.4, 1.35), report.Differs, "the wire's speed matters"},
		{"lookups gain more", "lookups-gain-more", mixGains(transports(1.4, 1.05), 1.5, 1.02), report.Reproduced, "at least 5 points more"},
		{"the report gains more", "lookups-gain-more", mixGains(transports(1.4, 1.05), 1.1, 1.3), report.Differs, "not 5 points more"},
		{"saturated", "peak-at-saturation", transports(1.4, 1.05), report.Reproduced, "well below the closed loop's rising line"},
		{"still rising", "peak-at-saturation", oltptest.ClosedLoop("shop", "lan-1g", 0.5, 10, 1e6, oltptest.QuickUsers, nil), report.Differs, "had not saturated"},
		{"falling", "peak-at-saturation", oltptest.ClosedLoop("shop", "lan-1g", 0.5, 10, 5000, oltptest.QuickUsers, dip), report.Differs, "fell below 90 %"},
		{"GbE clean", "ethernet-clean", transports(1.4, 1.05), report.Reproduced, "5 points, no error"},
		{"GbE failing", "ethernet-clean", withFailures(transports(1.4, 1.05), "lan-1g", 110), report.Differs, "shop at 110 users: 12 errors"},
		{"thin stack clean", "thin-stack-failures", transports(1.4, 1.05), report.Differs, "never failed"},
		{"thin stack failing above 80", "thin-stack-failures", withFailures(transports(1.4, 1.05), "unix", 110, 150), report.Reproduced, "only above 80 users"},
		{"thin stack failing at 40", "thin-stack-failures", withFailures(transports(1.4, 1.05), "unix", 40, 150), report.Differs, "80 users or fewer too"},
		{"no infiniband", "cpu-not-wire", oltptest.ClosedLoop("shop", "lan-1g", 0.5, 10, 5000, oltptest.QuickUsers, nil), report.NotMeasured, "infiniband"},
		{"no reporting", "lookups-gain-more", transports(1.4, 1.05), report.NotMeasured, "reporting"},
	} {
		t.Run(tc.id+"/"+tc.name, func(t *testing.T) {
			f := loadoltptest.Judge(t, Study(), loadoltptest.Run(t, Study(), "10ms", tc.pts), tc.id)
			if f.Verdict != tc.want || !strings.Contains(f.Measured+" "+f.Why, tc.says) {
				t.Errorf("verdict %q, want %q with %q;\nmeasured: %s\nmodel: %s\nwhy: %s", f.Verdict, tc.want, tc.says, f.Measured, f.Model, f.Why)
			}
		})
	}
}

// TestEthernetCleanSaysWhatItCannotSee: a point whose transactions end
// within its warm-up, measured interval and grace cannot show one over the
// 30 s limit; the judge says that half is not measured, and judges it
// where the points are long enough.
func TestEthernetCleanSaysWhatItCannotSee(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name           string
		warm, duration string
		says, notSays  string
	}{
		{"quick points", "2s", "10s", "that half is not measured", "no error and no transaction over"},
		{"long points", "5s", "2m", "no error and no transaction over 30s", "not measured"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rd := loadoltptest.Run(t, Study(), "10ms", transports(1.4, 1.05))
			for i := range rd.Results {
				rd.Results[i].Params["warm_up"], rd.Results[i].Params["duration"] = tc.warm, tc.duration
			}
			rd.Summaries = study.Summarize(rd.Results, rd.Plan.Repeat)
			f := loadoltptest.Judge(t, Study(), rd, "ethernet-clean")
			text := f.Measured + " " + f.Why
			if f.Verdict != report.Reproduced || !strings.Contains(text, tc.says) || strings.Contains(text, tc.notSays) {
				t.Errorf("verdict %q, want reproduced saying %q and not %q;\nmeasured: %s\nwhy: %s", f.Verdict, tc.says, tc.notSays, f.Measured, f.Why)
			}
		})
	}
}
