package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
	"github.com/dbrig/dbrig/internal/study"
)

// predictJSON is `dbrig load ... --predict --json` as the tests read it.
type predictJSON struct {
	Calibration string `json:"calibration_dir"`
	Points      []struct {
		Link     string  `json:"link"`
		Users    int64   `json:"users"`
		TPS      float64 `json:"tps"`
		Response float64 `json:"response_ms"`
		Dominant string  `json:"dominant"`
		Why      string  `json:"why"`
	} `json:"points"`
}

// TestLoadPredict predicts tpcb-like through 5 and 20 ms at 1 and 2 users
// from a calibration of a few seconds through a link that changes nothing
// and one of 2 ms:
// every point predicted, below what 7 round trips of the RTT allow,
// latency-bound where the round trips are most of its response, and none
// of the sweep's points run.
func TestLoadPredict(t *testing.T) {
	pgtest.Binaries(t)
	t.Parallel()
	base := pgtest.BaseDir(t)
	dir := filepath.Join(t.TempDir(), "calibration")
	code, stdout, stderr := runDbrig(t, base, nil, "load", "script", "tpcb-like", "--init", "-M", "prepared", "--link", "rtt-5ms,rtt-20ms",
		"--users", "1,2", "--predict", "--json", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	doc := decodeJSON[predictJSON](t, stdout)
	if doc.Calibration != dir || len(doc.Points) != 4 {
		t.Fatalf("calibration %q, %d points: %s", doc.Calibration, len(doc.Points), stdout)
	}
	for _, p := range doc.Points {
		rtt := map[string]time.Duration{"rtt-5ms": 5 * time.Millisecond, "rtt-20ms": 20 * time.Millisecond}[p.Link]
		most, latency := float64(p.Users)/(7*rtt.Seconds()), 7*float64(rtt.Milliseconds())
		if p.TPS <= 0 || p.TPS > most || p.Response < latency {
			t.Errorf("%s x %d users: %.1f tps (at most %.1f), %.2f ms (at least %.0f)", p.Link, p.Users, p.TPS, most, p.Response, latency)
		}
		// The latency is the largest part where it is most of the response;
		// a calibration on a busy machine can give the server more.
		if p.Response < 2*latency && p.Dominant != "latency" {
			t.Errorf("%s x %d users: %.2f ms, of which %.0f ms are round trips, yet %s dominates", p.Link, p.Users, p.Response, latency, p.Dominant)
		}
	}
	results, err := study.ReadResults(dir)
	if err != nil || len(results) != 4 {
		t.Fatalf("calibration results: %d, %v", len(results), err)
	}
	for _, r := range results {
		if p := r.Links[0].Profile; p != "loopback" && p != "rtt-2ms" {
			t.Errorf("calibration point %s ran through %s", r.Key, p)
		}
	}
	pgtest.WaitNoServers(t, base, 10*time.Second)
	assertNoInstanceDirs(t, base)
	if entries, _ := os.ReadDir(filepath.Dir(dir)); len(entries) != 1 {
		t.Errorf("--predict ran more than its calibration: %d run directories", len(entries))
	}
}

// --predict is refused before anything starts where it cannot predict.
func TestLoadPredictUsage(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"load", "script", "--predict"}, "--predict: give --link PROFILE[,PROFILE...]"},
		{[]string{"load", "tpch", "--scale", "1", "--predict", "--link", "rtt-5ms"}, "--predict: load tpch reports no round trips to predict from"},
	} {
		code, stdout, stderr := runDbrig(t, base, nil, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.says) {
			t.Errorf("dbrig %s: exit %d, stderr %q; want 2 saying %q\n%s", strings.Join(tc.args, " "), code, stderr, tc.says, stdout)
		}
	}
}

// TestLoadSweepShowsItsPredictions runs a swept load through loopback then
// 5 ms: the 5 ms point's summary carries the prediction made from the
// loopback point before it ran, beside its measured tps.
func TestLoadSweepShowsItsPredictions(t *testing.T) {
	pgtest.Binaries(t)
	t.Parallel()
	base := pgtest.BaseDir(t)
	dir := filepath.Join(t.TempDir(), "load")
	code, stdout, stderr := runDbrig(t, base, nil, "load", "script", "tpcb-like", "--init", "-M", "prepared", "--link", "loopback,rtt-5ms",
		"--users", "1", "--duration", "1s", "--warm-up", "200ms", "--json", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	doc := decodeJSON[struct {
		Points []struct {
			Link      string      `json:"link"`
			TPS       float64     `json:"tps"`
			Predicted *pointModel `json:"predicted"`
		} `json:"points"`
	}](t, stdout)
	if len(doc.Points) != 2 {
		t.Fatalf("%d points: %s", len(doc.Points), stdout)
	}
	for _, p := range doc.Points {
		switch m := p.Predicted; p.Link {
		case "loopback":
			if m != nil {
				t.Errorf("loopback, the calibration, was predicted: %+v", m)
			}
		case "rtt-5ms":
			if m == nil || m.TPS <= 0 || m.TPS > 1/(7*0.005) || !strings.Contains(m.Formula, "calibrated on link=loopback") {
				t.Errorf("rtt-5ms: %.1f tps measured, predicted %+v", p.TPS, m)
			}
		}
	}
	pgtest.WaitNoServers(t, base, 10*time.Second)
	assertNoInstanceDirs(t, base)
}
