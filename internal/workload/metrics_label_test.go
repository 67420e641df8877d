package workload

import "testing"

func TestMetricLabelSaysNoUnitTwice(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]string{
		"p99_ms": "p99", "time_ms": "time", "seconds": "time", "us_per_row": "time per row",
		"throughput_bps": "throughput", "wire_bytes": "wire", "row_mean_us": "row_mean", "total_s": "total",
		"tps": "tps", "mb_per_s": "mb_per_s", "rows_per_s": "rows_per_s", "errors": "errors", "_ms": "_ms",
	} {
		if got := MetricLabel(name); got != want {
			t.Errorf("MetricLabel(%q) = %q, want %q", name, got, want)
		}
	}
}
