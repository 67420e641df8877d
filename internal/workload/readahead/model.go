package readahead

import (
	"fmt"

	"github.com/dbrig/dbrig/internal/blockdev"
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
//
// On an emulated disk (a disk profile on the instance) the blkio throttle
// holds the server's reads to the profile's bandwidth and requests a
// second, each request charged against both and dispatched when the later
// of the two allows it:
//
//	time = max(bytes read / min(profile's bandwidth, device throughput), reads / profile's IOPS)
//
// dbrig's own plain read is not the server's and is not throttled: it
// bounds the device beneath.

// Model fits a point's time with the seed's arithmetic (Arithmetic): a
// figure Predict stored before the point ran takes precedence over it.
func Model(r workload.Result, _ []workload.Result) workload.Prediction { return Arithmetic(r) }

// Arithmetic is the seed's arithmetic on a measured point: its time from
// its bytes and the device's throughput measured right after it, and on an
// emulated disk from the profile's rates too. The study's model finding
// judges it; it reads the point's own measurements, so it is no
// prediction.
func Arithmetic(r workload.Result) workload.Prediction {
	m := r.Metrics
	if m == nil || m["device_mb_per_s"] <= 0 || m["bytes_read"] <= 0 {
		return workload.Prediction{}
	}
	if p, ok := diskProfile(r); ok {
		return throttledModel(m, p)
	}
	return workload.Prediction{
		Metrics: map[string]float64{"seconds": m["bytes_read"] / 1e6 / m["device_mb_per_s"], "mb_per_s": m["device_mb_per_s"]},
		Reason:  "a fit after the scan, no prediction: the device's rate is not known before the point (its throughput is a plain read's at the scan's read size, measured after it); a scan that leaves the device idle between its reads (the engine's CPU, one read in flight) is slower",
		Formula: fmt.Sprintf("time = bytes read / the device's throughput at that read size = %.0f MB / %.1f MB/s (a plain read of %s a read)",
			m["bytes_read"]/1e6, m["device_mb_per_s"], FormatReadSize(m["device_bytes_per_read"])),
	}
}

// diskProfile is the throttled disk profile of the instance that holds the
// table, if it has one.
func diskProfile(r workload.Result) (blockdev.Profile, bool) {
	name := r.Params.String("instance")
	for _, in := range r.Instances {
		if in.Name != name || in.DataDisk == "" {
			continue
		}
		p, err := blockdev.LookupProfile(in.DataDisk)
		return p, err == nil && !p.Unlimited()
	}
	return blockdev.Profile{}, false
}

func throttledModel(m map[string]float64, p blockdev.Profile) workload.Prediction {
	mbps := m["device_mb_per_s"]
	if p.ReadBPS > 0 {
		mbps = min(mbps, float64(p.ReadBPS)/1e6)
	}
	bytesTime := m["bytes_read"] / 1e6 / mbps
	readsTime := 0.0
	if p.ReadIOPS > 0 {
		readsTime = m["reads"] / float64(p.ReadIOPS)
	}
	bound := "bandwidth"
	if readsTime > bytesTime {
		bound = "requests"
	}
	return workload.Prediction{
		Metrics: map[string]float64{"seconds": max(bytesTime, readsTime)},
		Formula: fmt.Sprintf("time = max(bytes read / bandwidth, reads / IOPS) on %s = max(%.0f MB / %.1f MB/s, %.0f reads / %d a second): %s-bound",
			p.Name, m["bytes_read"]/1e6, mbps, m["reads"], p.ReadIOPS, bound),
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
