package readahead

import (
	"fmt"

	"github.com/dbrig/dbrig/internal/workload"
)

// The model: a scan that waits for its reads takes the bytes it reads over
// the device's throughput at the size of those reads,
//
//	time = bytes read / device throughput (at that read size)
//
// the seed's own arithmetic (16,000 MB at ~200 MB/s is 80 s, at ~80 MB/s
// 200 s). The throughput is measured at each point: a plain sequential
// read of the table's file by dbrig, cold, read as the engine reads it.

// Model predicts a point's time from its bytes and its device's measured
// throughput.
func Model(r workload.Result, _ []workload.Result) workload.Prediction {
	m := r.Metrics
	if m == nil || m["device_mb_per_s"] <= 0 || m["bytes_read"] <= 0 {
		return workload.Prediction{}
	}
	return workload.Prediction{
		Metrics: map[string]float64{"seconds": m["bytes_read"] / 1e6 / m["device_mb_per_s"], "mb_per_s": m["device_mb_per_s"]},
		Reason:  "the device's throughput is a plain read's at the scan's read size, measured at the point: a scan that leaves the device idle between its reads (the engine's CPU, one read in flight) is slower",
		Formula: fmt.Sprintf("time = bytes read / the device's throughput at that read size = %.0f MB / %.1f MB/s (a plain read of %s a read)",
			m["bytes_read"]/1e6, m["device_mb_per_s"], FormatReadSize(m["device_bytes_per_read"])),
	}
}

// FormatReadSize writes a read's size in bytes as the model's formula and
// the study's report do: "8.0 KiB", "1.00 MiB".
func FormatReadSize(b float64) string {
	if b >= 1<<20 {
		return fmt.Sprintf("%.2f MiB", b/(1<<20))
	}
	return fmt.Sprintf("%.1f KiB", b/1024)
}
