package georep

import (
	"math"
	"testing"

	"github.com/dbrig/dbrig/internal/workload"
)

func point(scenario string, window int64, metrics map[string]float64, fwd, rev int64) workload.Result {
	return workload.Result{
		Params:  workload.Params{"scenario": scenario, "buffer_size": int64(40000)},
		Metrics: metrics,
		Links: []workload.LinkResult{{Profile: "tukwila-blueridge", Mode: "link", RTTSeconds: 0.077, RateBitsPerS: 1e9,
			WindowBytes: window, ForwardBytes: fwd, ReverseBytes: rev}},
	}
}

func TestModelFollowsTheSeedsPhysics(t *testing.T) {
	t.Parallel()
	const legacyW, autoW = 65535, 16 << 20
	mb := 1e6
	tests := []struct {
		name string
		r    workload.Result
		want float64
	}{
		// 1 MB through a 40 KB stop-and-wait writer: 25 buffers of 77 ms,
		// whatever the window (the buffer fits in either), the last
		// answer's half not timed.
		{"push, legacy window", point("push", legacyW, map[string]float64{"sent_bytes": mb}, 0, 0), 24.5*0.077 + mb*8/1e9},
		{"push, autotuned window", point("push", autoW, map[string]float64{"sent_bytes": mb}, 0, 0), 24.5*0.077 + mb*8/1e9},
		// The 2003 stack's 8 KB send buffer: each 40 KB buffer takes five.
		{"push, legacy stack", legacyStack(point("push", legacyW, map[string]float64{"sent_bytes": mb}, 0, 0)), (25*5-0.5)*0.077 + mb*8/1e9},
		// The last, partial buffer takes the round trips of its own bytes:
		// 1,013,274 bytes are 25 buffers of five and 13,274 bytes in two,
		// or 6 buffers of 160 KB in twenty and 53,274 bytes in seven.
		{"push, legacy stack, a partial last buffer", legacyStack(point("push", legacyW, map[string]float64{"sent_bytes": 1013274}, 0, 0)), 126.5*0.077 + 1013274*8/1e9},
		{"push, legacy stack, 160 KB buffers", legacyStack(withBuffer(point("push", legacyW, map[string]float64{"sent_bytes": 1013274}, 0, 0), 160000)), 126.5*0.077 + 1013274*8/1e9},
		// A buffer holds whole rows: 17 of 2,257 bytes in 40 KB, so 1,000
		// rows take 59 buffers where V / buffer is 57; 39 of 1,013 bytes,
		// so through 8 KB 25 buffers of five round trips and the last 25
		// rows' (25,332 bytes) in four.
		{"push, whole rows", point("push", autoW, map[string]float64{"sent_bytes": 2257025, "rows": 1000}, 0, 0), 58.5*0.077 + 2257025*8/1e9},
		{"push, whole rows, legacy stack", legacyStack(point("push", legacyW, map[string]float64{"sent_bytes": 1013274, "rows": 1000}, 0, 0)), 128.5*0.077 + 1013274*8/1e9},
		// Pull: the NOTIFY's one way, the read's, the first bytes' (1.5
		// RTT), then whole windows: a megabyte through 8 KiB is 122 round
		// trips and the last 576 bytes, through 64 KiB 15 and 16,975 bytes.
		{"pull, legacy stack", legacyStack(point("pull", legacyW, map[string]float64{"read_bytes": mb}, 0, 0)), 123.5*0.077 + (mb-122*8192)*8/1e9},
		{"pull, legacy window", point("pull", legacyW, map[string]float64{"read_bytes": mb}, 0, 0), 16.5*0.077 + (mb-15*legacyW)*8/1e9},
		{"pull, autotuned window", point("pull", autoW, map[string]float64{"read_bytes": mb}, 0, 0), 1.5*0.077 + mb*8/1e9},
		// The apply worker connects inside the timing: 7 RTTs to its
		// first bytes.
		{"native", point("native", autoW, map[string]float64{"rows": 1000}, 1000, 1e6), 7*0.077 + mb*8/1e9},
		{"native, legacy window", point("native", legacyW, map[string]float64{"rows": 1000}, 1000, 1e6), 22*0.077 + (mb-15*legacyW)*8/1e9},
		// 100 rows of 1 KB per batch: 100 KB, two windows of 64 KiB.
		{"fdw batches larger than the window", point("fdw-batch", legacyW, map[string]float64{"rows": 1000, "batch_size": 100}, 1e6, 1000), (10*2+4)*0.077 + mb*8/1e9},
		// Five 40 KB buffers in flight: 200 KB a round trip, under the
		// window: four round trips, the last 200 KB at the rate, and the
		// first bytes' one way (the last answer's is not timed).
		{"pipelined push", point("push-pipelined", autoW, map[string]float64{"sent_bytes": mb, "pipeline": 5}, 0, 0), 4.5*0.077 + 200000*8/1e9},
		{"pipelined push, the window below its buffers", point("push-pipelined", legacyW, map[string]float64{"sent_bytes": mb, "pipeline": 5}, 0, 0), 15.5*0.077 + (mb-15*legacyW)*8/1e9},
		// One round trip per row, plus the remote transaction's four
		// (START TRANSACTION, PREPARE, DEALLOCATE, COMMIT).
		{"fdw row by row", point("fdw-row", autoW, map[string]float64{"rows": 50, "batch_size": 1}, 60000, 1000), 54*0.077 + 60000*8/1e9},
		// The copy's connection, statements and commit (6 RTTs) beside
		// the COPY's 15 round trips of whole windows and the last one.
		{"snapshot", point("init-snapshot", legacyW, map[string]float64{"rows": 1000}, 1000, 1e6), 21*0.077 + (mb-15*legacyW)*8/1e9},
		// 20 MB at 1 Gbit/s through 16 MiB: the rate, over 77 ms; over 150
		// ms the window fills (134 ms) before its credit is back.
		{"snapshot, 16 MiB over 77 ms", point("init-snapshot", autoW, map[string]float64{"rows": 20000}, 20e6, 1000), 6*0.077 + 20e6*8/1e9},
		{"snapshot, 16 MiB over 150 ms", overRTT(point("init-snapshot", autoW, map[string]float64{"rows": 20000}, 20e6, 1000), 0.150), 6*0.150 + 0.150 + (20e6-autoW)*8/1e9},
		// Only the archive's connection crosses: its handshake, then its
		// bytes one way.
		{"backup", point("init-backup", legacyW, map[string]float64{"rows": 1000}, 25472, 2000), 1.5*0.077 + 25472*8/1e9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := Model(tt.r, nil)
			if got := p.Metrics["seconds"]; math.Abs(got-tt.want)/tt.want > 1e-9 {
				t.Errorf("seconds = %v, want %v (%s)", got, tt.want, p.Formula)
			}
		})
	}
	// No model without an emulated link.
	direct := point("push", 0, map[string]float64{"sent_bytes": mb}, 0, 0)
	direct.Links[0].Mode = "direct"
	if p := Model(direct, nil); len(p.Metrics) != 0 {
		t.Errorf("a direct connection got a model: %v", p.Metrics)
	}
}

// overRTT gives r's link a round trip of rtt seconds.
func overRTT(r workload.Result, rtt float64) workload.Result {
	r.Links[0].RTTSeconds = rtt
	return r
}

// legacyStack gives r's link the 2003 stack's 8 KB send buffer.
func legacyStack(r workload.Result) workload.Result {
	r.Links[0].SendBufferBytes = 8192
	return r
}

// withBuffer gives r's agent command buffers of size bytes.
func withBuffer(r workload.Result, size int64) workload.Result {
	r.Params["buffer_size"] = size
	return r
}

// A stream's time on the link beyond its one-way delay: at the rate, or
// whole windows a round trip apart where the window fills before its
// first credit is back.
func TestTransferHoldsWholeWindows(t *testing.T) {
	t.Parallel()
	const legacyW, autoW = 65535, 16 << 20
	link := func(rtt, rate float64) workload.LinkResult {
		return workload.LinkResult{Mode: "link", RTTSeconds: rtt, RateBitsPerS: rate}
	}
	tests := []struct {
		name     string
		v        float64
		l        workload.LinkResult
		inFlight float64
		want     float64
	}{
		{"under a window: the rate", 50000, link(0.077, 1e9), legacyW, 50000 * 8 / 1e9},
		{"no window: the rate", 1e6, link(0.077, 1e9), 0, 1e6 * 8 / 1e9},
		{"a megabyte through 64 KiB: 15 round trips and the last 16,975 bytes", 1e6, link(0.077, 1e9), legacyW, 15*0.077 + 16975*8/1e9},
		{"exactly two windows: one round trip and the second", 2 * legacyW, link(0.150, 1e9), legacyW, 0.150 + legacyW*8/1e9},
		{"no rate: the windows' round trips alone", 1e6, link(0.077, 0), legacyW, 15 * 0.077},
		{"16 MiB over 77 ms: the rate keeps it full", 20e6, link(0.077, 1e9), autoW, 20e6 * 8 / 1e9},
		{"16 MiB over 150 ms: the window waits for its credit", 20e6, link(0.150, 1e9), autoW, 0.150 + (20e6-autoW)*8/1e9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, how := transfer(tt.v, tt.l, tt.inFlight)
			if math.Abs(got-tt.want) > 1e-12 {
				t.Errorf("transfer = %v, want %v (%s)", got, tt.want, how)
			}
		})
	}
}
