package predict

import (
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/workload"
)

// point is a hand-made result of the script workload.
func point(key string, users int64, files string, l workload.LinkResult, m map[string]float64) workload.Result {
	return workload.Result{Key: key, Params: workload.Params{"users": users, "files": files, "duration": "4s"},
		Links: []workload.LinkResult{l}, Metrics: m}
}

func TestForPoint(t *testing.T) {
	t.Parallel()
	unix := workload.LinkResult{Mode: "unix"}
	calm := map[string]float64{"round_trips_per_tx": 7, "bytes_out_per_tx": 700, "bytes_in_per_tx": 900,
		"wait_ms_per_tx": 0.6, "client_ms_per_tx": 0.1, "tps": 1400, "users": 1}
	busy := map[string]float64{"round_trips_per_tx": 7, "wait_ms_per_tx": 3, "client_ms_per_tx": 0.1, "tps": 2000, "users": 4}
	before := []workload.Result{
		point("one", 1, "tpcb-like", unix, calm),
		point("four", 4, "tpcb-like", unix, busy),
		point("other", 1, "select-only", unix, map[string]float64{"round_trips_per_tx": 1, "wait_ms_per_tx": 0.1, "tps": 9000, "users": 1}),
	}
	wan := workload.LinkResult{Mode: "link", RTTSeconds: 0.005}
	// 0.7 ms + 7 × 5 ms: the figures of the fewest users, the capacity of
	// the most; select-only's point is another script's.
	p := ForPoint(point("wan", 4, "tpcb-like", wan, nil), before)
	if !near(p.Metrics["tps"], 4/0.0357, 0.002) || !near(p.Metrics["mean_ms"], 35.7, 0.002) ||
		!strings.Contains(p.Formula, "latency dominates") || !strings.Contains(p.Formula, "calibrated on one") {
		t.Errorf("got %v, %q", p.Metrics, p.Formula)
	}
	if p := ForPoint(point("wan", 4, "simple-update", wan, nil), before); p.Metrics != nil {
		t.Errorf("no calibration of simple-update, yet %v", p.Metrics)
	}
	if p := ForPoint(point("unix", 4, "tpcb-like", unix, nil), before); p.Metrics != nil {
		t.Errorf("no link to predict, yet %v", p.Metrics)
	}
	// A point through 2 ms before it, at the fewest users, waited 0.1 ms a
	// round trip beyond its RTT: the prediction charges it; a repeat of
	// the point's own link is never used.
	two := workload.LinkResult{Mode: "link", RTTSeconds: 0.002}
	delayed := append(before, point("two", 1, "tpcb-like", two, map[string]float64{"round_trips_per_tx": 7, "wait_ms_per_tx": 15.3, "users": 1}),
		point("wan again", 1, "tpcb-like", wan, map[string]float64{"round_trips_per_tx": 7, "wait_ms_per_tx": 99, "users": 1}))
	p = ForPoint(point("wan", 1, "tpcb-like", wan, nil), delayed)
	if !near(p.Metrics["mean_ms"], 36.4, 0.002) || !strings.Contains(p.Formula, "calibrated on one and two") {
		t.Errorf("with a delayed point: %v, %q", p.Metrics, p.Formula)
	}
	// At 4 users, the overhead measured at 4 users: 0.5 ms a round trip.
	delayed = append(delayed, point("two at four", 4, "tpcb-like", two, map[string]float64{"round_trips_per_tx": 7, "wait_ms_per_tx": 18.1, "users": 4}))
	p = ForPoint(point("wan", 4, "tpcb-like", wan, nil), delayed)
	if !near(p.Metrics["mean_ms"], 39.2, 0.002) || !strings.Contains(p.Formula, "calibrated on one and two at four") {
		t.Errorf("4 users with a delayed point at 4: %v, %q", p.Metrics, p.Formula)
	}
	open := point("open", 4, "tpcb-like", wan, nil)
	open.Params["rate"] = 3000.0
	if p := ForPoint(open, before); p.Metrics["tps"] != 2000 || p.Metrics["mean_ms"] != 0 {
		t.Errorf("3,000 a second over a capacity of 2,000: %v", p.Metrics)
	}
}
