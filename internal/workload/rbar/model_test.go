package rbar

import (
	"math"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/workload"
)

func result(combo, exp string, l workload.LinkResult, metrics map[string]float64) workload.Result {
	rows := metrics["rows"]
	return workload.Result{
		Combo: combo, Key: combo + " #1", Run: 1, Metrics: metrics, Links: []workload.LinkResult{l},
		Params: workload.Params{"experiment": exp, "row_by_row": "fetch", "client_cost": "0s", "instance": "db", "rows": int64(rows)},
	}
}

var (
	unix   = workload.LinkResult{Profile: "unix", Mode: "unix"}
	direct = workload.LinkResult{Profile: "direct", Mode: "direct"}
	lan1g  = workload.LinkResult{Profile: "lan-1g", Mode: "link", RTTSeconds: 200e-6, RateBitsPerS: 1e9, WindowBytes: 16 << 20}
	wan77  = workload.LinkResult{Profile: "rtt-77ms", Mode: "link", RTTSeconds: 0.077, RateBitsPerS: 1e9, WindowBytes: 65535}
)

func TestModelPredictsFromTheFastestLink(t *testing.T) {
	history := []workload.Result{
		result("rbr unix", "client-row-by-row", unix, map[string]float64{"us_per_row": 5, "rows": 1000}),
		result("rbr direct", "client-row-by-row", direct, map[string]float64{"us_per_row": 20, "rows": 1000}),
		result("stream direct", "client-stream", direct, map[string]float64{"throughput_bps": 2e9, "wire_bytes": 1e8, "seconds": 0.4, "rows": 1e6}),
		result("loop direct", "server-loop", direct, map[string]float64{"seconds": 1.0, "rows": 1e7}),
		result("loop direct small", "server-loop", direct, map[string]float64{"seconds": 0.001, "rows": 10}),
	}
	tests := []struct {
		name   string
		r      workload.Result
		metric string
		want   float64
	}{
		{"row by row pays the RTT and the fitted cost", result("rbr lan", "client-row-by-row", lan1g, map[string]float64{"us_per_row": 250, "rows": 100}),
			"us_per_row", 200 + 20 + roundTripBytes*8/1e9*1e6},
		{"row by row across a WAN", result("rbr wan", "client-row-by-row", wan77, map[string]float64{"us_per_row": 77100, "rows": 10}),
			"us_per_row", 77000 + 20 + roundTripBytes*8/1e9*1e6},
		{"a stream over 1 Gbit/s is rate bound", result("stream lan", "client-stream", lan1g, map[string]float64{"wire_bytes": 1e8, "rows": 1e6}),
			"seconds", 1e8*8/1e9 + 200e-6},
		{"a stream through a 64 KiB window at 77 ms is window bound", result("stream wan", "client-stream", wan77, map[string]float64{"wire_bytes": 1e7, "rows": 1e5}),
			"seconds", 1e7*8/(65535*8/0.077) + 0.077},
		{"a server loop pays one RTT", result("loop wan", "server-loop", wan77, map[string]float64{"seconds": 1.1, "rows": 1e7}),
			"seconds", 1.0 + 0.077},
		{"the unix socket is its own reference", result("rbr unix 2", "client-row-by-row", unix, map[string]float64{"us_per_row": 6, "rows": 1000}),
			"us_per_row", 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Model(tt.r, history)
			got, ok := p.Metrics[tt.metric]
			if !ok || math.Abs(got-tt.want)/tt.want > 1e-9 {
				t.Errorf("%s = %v (%v), want %v; formula %q", tt.metric, got, ok, tt.want, p.Formula)
			}
		})
	}
	// With no other link measured, the point is never its own reference:
	// no figure, and why.
	only := result("rbr lan", "client-row-by-row", lan1g, map[string]float64{"us_per_row": 250, "rows": 100})
	if p := Model(only, []workload.Result{only}); len(p.Metrics) != 0 || p.Reason == "" {
		t.Errorf("a point alone: %v (reason %q), want no figure and why", p.Metrics, p.Reason)
	}
}

// onEngine puts a hand-made result on an instance of an engine.
func onEngine(r workload.Result, eng string) workload.Result {
	r.Instances = []engine.InstanceConfig{{Name: "db", Engine: eng}}
	return r
}

func TestModelFitsEachEngineApart(t *testing.T) {
	history := []workload.Result{
		onEngine(result("pg direct", "client-row-by-row", direct, map[string]float64{"us_per_row": 20, "rows": 1000}), "postgres"),
		onEngine(result("maria direct", "client-row-by-row", direct, map[string]float64{"us_per_row": 35, "rows": 1000}), "mariadb"),
	}
	tests := []struct {
		engine string
		want   float64
	}{
		{"postgres", 200 + 20 + roundTripBytes*8/1e9*1e6},
		{"mariadb", 200 + 35 + roundTripBytes*8/1e9*1e6},
	}
	for _, tt := range tests {
		r := onEngine(result(tt.engine+" lan", "client-row-by-row", lan1g, map[string]float64{"us_per_row": 250, "rows": 100}), tt.engine)
		p := Model(r, history)
		if got := p.Metrics["us_per_row"]; math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("%s over lan-1g: predicted %v µs/row, want %v (fitted on its own engine's direct TCP); formula %q", tt.engine, got, tt.want, p.Formula)
		}
	}
}

// atSpeed puts a hand-made result on a server capped at a cpu_speed.
func atSpeed(r workload.Result, speed float64) workload.Result {
	r.Instances = []engine.InstanceConfig{{Name: "db", Engine: "postgres", CPUSpeed: speed}}
	return r
}

// A server-side loop's time per row follows 1/speed: half a core's CPU
// time doubles it, from a reference at any speed.
func TestServerSideTimeFollowsTheServersSpeed(t *testing.T) {
	uncapped := atSpeed(result("loop unix", "server-loop", unix, map[string]float64{"seconds": 1.0, "rows": 1e7}), 0)
	tests := []struct {
		name    string
		history []workload.Result
		speed   float64
		want    float64
	}{
		{"a whole core as uncapped", []workload.Result{uncapped}, 1, 1.0},
		{"half a core doubles it", []workload.Result{uncapped}, 0.5, 2.0},
		{"a quarter from a half", []workload.Result{atSpeed(result("loop unix half", "server-loop", unix, map[string]float64{"seconds": 2.0, "rows": 1e7}), 0.5)}, 0.25, 4.0},
		{"two cores are one backend's one", []workload.Result{uncapped}, 2, 1.0},
	}
	for _, tt := range tests {
		r := atSpeed(result("loop unix at speed", "server-loop", unix, map[string]float64{"seconds": 9, "rows": 1e7}), tt.speed)
		p := Model(r, tt.history)
		if got := p.Metrics["seconds"]; math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("%s: predicted %v s at cpu_speed %g, want %v; formula %q", tt.name, got, tt.speed, tt.want, p.Formula)
		}
	}
}

// withClientSpeed caps a hand-made result's client at a cpu_speed.
func withClientSpeed(r workload.Result, speed float64) workload.Result {
	r.Client.CPUSpeed = speed
	return r
}

// The client's speed divides its per-row cost in row-by-row work and
// multiplies its consumer rate in a stream.
func TestClientSideWorkFollowsTheClientsSpeed(t *testing.T) {
	history := []workload.Result{
		result("rbr direct", "client-row-by-row", direct, map[string]float64{"us_per_row": 20, "rows": 1000}),
		result("stream direct", "client-stream", direct, map[string]float64{"throughput_bps": 2e9, "wire_bytes": 1e8, "seconds": 0.4, "rows": 1e6}),
	}
	tests := []struct {
		name   string
		r      workload.Result
		metric string
		want   float64
	}{
		{"row by row at half speed pays twice the per-row cost", withClientSpeed(result("rbr lan half", "client-row-by-row", lan1g, map[string]float64{"us_per_row": 250, "rows": 100}), 0.5),
			"us_per_row", 200 + 40 + roundTripBytes*8/1e9*1e6},
		{"a stream on the socket at half speed absorbs half the rate", withClientSpeed(result("stream direct half", "client-stream", direct, map[string]float64{"wire_bytes": 1e8, "rows": 1e6}), 0.5),
			"seconds", 1e8 * 8 / 1e9},
		{"a stream over 1 Gbit/s at half speed is still rate bound", withClientSpeed(result("stream lan half", "client-stream", lan1g, map[string]float64{"wire_bytes": 1e8, "rows": 1e6}), 0.5),
			"seconds", 1e8*8/1e9 + 200e-6},
		{"a whole core is the uncapped client", withClientSpeed(result("rbr lan whole", "client-row-by-row", lan1g, map[string]float64{"us_per_row": 250, "rows": 100}), 1),
			"us_per_row", 200 + 20 + roundTripBytes*8/1e9*1e6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Model(tt.r, history)
			if got := p.Metrics[tt.metric]; math.Abs(got-tt.want)/tt.want > 1e-9 {
				t.Errorf("%s = %v, want %v; formula %q", tt.metric, got, tt.want, p.Formula)
			}
		})
	}
}

// TestPredictBeforeThePointRuns: before the point, with no metrics of its
// own, the costs come from the fastest other link measured before it and
// a stream's bytes from the reference's bytes per row; with nothing
// measured before, no prediction and why.
func TestPredictBeforeThePointRuns(t *testing.T) {
	before := []workload.Result{
		result("rbr direct", "client-row-by-row", direct, map[string]float64{"us_per_row": 20, "rows": 1000}),
		result("stream direct", "client-stream", direct, map[string]float64{"throughput_bps": 2e9, "wire_bytes": 1e8, "seconds": 0.4, "rows": 1e6}),
	}
	rbr := result("rbr wan", "client-row-by-row", wan77, nil)
	rbr.Params["rows"] = int64(10)
	if p := Predict(rbr, before); math.Abs(p.Metrics["us_per_row"]-(77000+20+roundTripBytes*8/1e9*1e6)) > 1e-6 || p.Reason == "" {
		t.Errorf("row by row across a WAN: %v (reason %q)", p.Metrics, p.Reason)
	}
	stream := result("stream wan", "client-stream", wan77, nil)
	stream.Params["rows"] = int64(1e5)
	want := 1e7*8/(65535*8/0.077) + 0.077
	if p := Predict(stream, before); math.Abs(p.Metrics["seconds"]-want)/want > 1e-9 {
		t.Errorf("a stream of 10^5 rows at 100 bytes each through a 64 KiB window: %v s, want %v", p.Metrics["seconds"], want)
	}
	// With only the unix socket measured before, a TCP link takes its
	// per-row cost.
	unixOnly := []workload.Result{result("rbr unix", "client-row-by-row", unix, map[string]float64{"us_per_row": 5, "rows": 1000})}
	if p := Predict(rbr, unixOnly); math.Abs(p.Metrics["us_per_row"]-(77000+5+roundTripBytes*8/1e9*1e6)) > 1e-6 {
		t.Errorf("row by row across a WAN from the unix socket's cost: %v", p.Metrics)
	}
	if p := Predict(rbr, nil); len(p.Metrics) != 0 || !strings.HasPrefix(p.Reason, "no prediction") {
		t.Errorf("first point: %v (reason %q), want no prediction and why", p.Metrics, p.Reason)
	}
}
