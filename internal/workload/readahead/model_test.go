package readahead

import (
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/workload"
)

func TestModelAndResolve(t *testing.T) {
	t.Parallel()
	p := Model(workload.Result{Metrics: map[string]float64{"bytes_read": 1600e6, "device_mb_per_s": 80, "device_bytes_per_read": 8 << 10}}, nil)
	if got := p.Metrics["seconds"]; got != 20 {
		t.Errorf("1,600 MB at 80 MB/s: model %v s, want 20 (%s)", got, p.Formula)
	}
	if !strings.Contains(p.Reason, "no prediction: the device's rate is not known before the point") {
		t.Errorf("off an emulated disk the fit's reason %q does not say why nothing was predicted", p.Reason)
	}
	if p := Model(workload.Result{Metrics: map[string]float64{"bytes_read": 1}}, nil); p.Metrics != nil {
		t.Errorf("a point without the device's throughput has a model: %v", p)
	}
	for _, tc := range []struct {
		in      string
		kb      int
		off, ok bool
	}{
		{Default, 2560, false, true}, {Minimal, 4, true, true}, {Off, 0, true, true}, {"128KiB", 128, false, true},
		{"1MiB", 1024, false, true}, {"1000", 0, false, false}, {"fast", 0, false, false},
	} {
		kb, off, err := resolve(tc.in, 2560)
		if (err == nil) != tc.ok || (tc.ok && (kb != tc.kb || off != tc.off)) {
			t.Errorf("resolve(%q) = %d, %v, %v", tc.in, kb, off, err)
		}
	}
	// A bad read_ahead is refused by its declaration, at parse.
	for _, p := range Kind().Params {
		if _, err := p.Normalize("fast"); p.Name == "read_ahead" && err == nil {
			t.Error("a bad read_ahead was accepted")
		}
	}
}

func TestModelOnAnEmulatedDisk(t *testing.T) {
	t.Parallel()
	r := workload.Result{Params: workload.Params{"instance": "db"},
		Instances: []engine.InstanceConfig{{Name: "db", DataDisk: "san-2009"}},
		Metrics:   map[string]float64{"bytes_read": 1600e6, "reads": 12500, "device_mb_per_s": 900, "device_bytes_per_read": 128 << 10}}
	// Large reads: 1,600 MB at the SAN's 200 MB/s is 8 s; 12,500 reads at
	// 5,000 a second 2.5 s.
	if got := Model(r, nil).Metrics["seconds"]; got != 8 {
		t.Errorf("large reads on san-2009: model %v s, want 8", got)
	}
	// Page-sized reads: 200,000 reads at 5,000 a second is 40 s.
	r.Metrics["reads"] = 200_000
	if p := Model(r, nil); p.Metrics["seconds"] != 40 || !strings.Contains(p.Formula, "requests-bound") {
		t.Errorf("8 KiB reads on san-2009: model %v s (%s), want 40, requests-bound", p.Metrics["seconds"], p.Formula)
	}
	// An unthrottled profile is the device's own model.
	r.Instances[0].DataDisk = "nvme"
	if got := Model(r, nil).Metrics["seconds"]; got != 1600.0/900 {
		t.Errorf("nvme: model %v s, want the device's 1.78", got)
	}
}
