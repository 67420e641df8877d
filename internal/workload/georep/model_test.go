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
		// 1 MB through a 40 KB stop-and-wait writer: 25 round trips of 77 ms,
		// whatever the window (the buffer fits in either).
		{"push, legacy window", point("push", legacyW, map[string]float64{"sent_bytes": mb}, 0, 0), 25*0.077 + mb*8/1e9},
		{"push, autotuned window", point("push", autoW, map[string]float64{"sent_bytes": mb}, 0, 0), 25*0.077 + mb*8/1e9},
		// The 2003 stack's 8 KB send buffer: each 40 KB buffer takes five.
		{"push, legacy stack", legacyStack(point("push", legacyW, map[string]float64{"sent_bytes": mb}, 0, 0)), 25*5*0.077 + mb*8/1e9},
		// The last, partial buffer takes the round trips of its own bytes:
		// 1,013,274 bytes are 25 buffers of five and 13,274 bytes in two,
		// or 6 buffers of 160 KB in twenty and 53,274 bytes in seven.
		{"push, legacy stack, a partial last buffer", legacyStack(point("push", legacyW, map[string]float64{"sent_bytes": 1013274}, 0, 0)), 127*0.077 + 1013274*8/1e9},
		{"push, legacy stack, 160 KB buffers", legacyStack(withBuffer(point("push", legacyW, map[string]float64{"sent_bytes": 1013274}, 0, 0), 160000)), 127*0.077 + 1013274*8/1e9},
		{"pull, legacy stack", legacyStack(point("pull", legacyW, map[string]float64{"read_bytes": mb}, 0, 0)), mb*8/(8192*8/0.077) + 0.077},
		// Pull streams: 64 KiB per RTT, or the link's rate.
		{"pull, legacy window", point("pull", legacyW, map[string]float64{"read_bytes": mb}, 0, 0), mb*8/(legacyW*8/0.077) + 0.077},
		{"pull, autotuned window", point("pull", autoW, map[string]float64{"read_bytes": mb}, 0, 0), mb*8/1e9 + 0.077},
		{"native", point("native", autoW, map[string]float64{"rows": 1000}, 1000, 1e6), mb*8/1e9 + 2*0.077},
		// 100 rows of 1 KB per batch: 100 KB, two windows of 64 KiB.
		{"fdw batches larger than the window", point("fdw-batch", legacyW, map[string]float64{"rows": 1000, "batch_size": 100}, 1e6, 1000), (10*2+3)*0.077 + mb*8/1e9},
		// Five 40 KB buffers in flight: 200 KB per RTT, under the window.
		{"pipelined push", point("push-pipelined", autoW, map[string]float64{"sent_bytes": mb, "pipeline": 5}, 0, 0), mb*8/(5*40000*8/0.077) + 0.077},
		// One round trip per row, plus the remote transaction's three.
		{"fdw row by row", point("fdw-row", autoW, map[string]float64{"rows": 50, "batch_size": 1}, 60000, 1000), 53*0.077 + 60000*8/1e9},
		{"snapshot", point("init-snapshot", legacyW, map[string]float64{"rows": 1000}, 1000, 1e6), mb*8/(legacyW*8/0.077) + 6*0.077},
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
