package readahead

import (
	"fmt"

	"github.com/dbrig/dbrig/internal/blockdev"
	"github.com/dbrig/dbrig/internal/measure"
	"github.com/dbrig/dbrig/internal/workload"
)

// The prediction, made before the point runs. On an emulated disk the
// device's rates are the profile's, known before anything runs; the blkio
// throttle lets each request through when the later of its two budgets
// allows, so a scan that keeps the device busy takes
//
//	bound = max(bytes / the profile's bandwidth, reads / its requests a second)
//
// and a scan takes, on top of that, what its engine spends on a page
// beyond the device (its CPU; the disk beneath when it is slower than the
// profile):
//
//	time = bound + pages × the time a page took beyond the bound
//
// calibrated on the earlier scans of the same setting (read size) on the
// same table; the setting's first scan, with none before it, is the bound
// alone. The bytes, reads and pages are the table's as an earlier scan
// read them, or the engine's layout for the table's first.

// noRate is why a point off an emulated disk gets no prediction: only a
// plain read after the point measures the device's throughput.
const noRate = "no prediction: the device's rate is not known before the point (the table's disk is not an emulated one whose profile gives it; the plain read that measures it runs after the scan)"

// Predict is the model before the point runs (see above); the fit
// (Model) remains for the figures it leaves out.
func Predict(r workload.Result, before []workload.Result) workload.Prediction {
	prof, ok := diskProfile(r)
	if !ok || (prof.ReadBPS <= 0 && prof.ReadIOPS <= 0) {
		return workload.Prediction{Reason: noRate}
	}
	table, setting := earlierScans(r, before)
	sc := expectedScan(r, table, setting)
	bound, bind := throttleBound(prof, sc.bytes, sc.reads)
	var extras []float64
	for _, o := range setting {
		b, _ := throttleBound(prof, o.Metrics["bytes_read"], o.Metrics["reads"])
		extras = append(extras, (o.Metrics["seconds"]-b)/o.Metrics["pages_read"])
	}
	secs, extra := bound, 0.0
	formula := fmt.Sprintf("time = max(bytes / bandwidth, reads / IOPS) on %s = max(%.0f MB / %g MB/s, %.0f reads / %d a second): %s-bound (%s)",
		prof.Name, sc.bytes/1e6, float64(prof.ReadBPS)/1e6, sc.reads, prof.ReadIOPS, bind, sc.from)
	reason := "the setting's first scan: the emulated disk's bound alone, before any scan measured the engine's time a page beyond it"
	if len(extras) > 0 {
		extra = measure.Median(extras)
		secs = bound + extra*sc.pages
		formula += fmt.Sprintf(" + %.0f pages × %+.3g µs a page beyond the bound (the median of %d earlier scan(s) at this setting)",
			sc.pages, 1e6*extra, len(extras))
		reason = "the time a page takes beyond the emulated disk's bound (the engine's CPU; the disk beneath when it is slower than the profile) is the earlier scans' at this setting: the machine's other work changes it from run to run"
	}
	if secs <= 0 {
		return workload.Prediction{Reason: "no prediction: the earlier scans at this setting beat the emulated disk's bound by more than the bound"}
	}
	return workload.Prediction{
		Metrics: map[string]float64{"seconds": secs, "mb_per_s": sc.bytes / 1e6 / secs},
		Formula: formula,
		Reason:  reason,
	}
}

// throttleBound is the least time the profile's throttle lets bytes in
// reads through, and which budget binds.
func throttleBound(p blockdev.Profile, bytes, reads float64) (float64, string) {
	var byBytes, byReads float64
	if p.ReadBPS > 0 {
		byBytes = bytes / float64(p.ReadBPS)
	}
	if p.ReadIOPS > 0 {
		byReads = reads / float64(p.ReadIOPS)
	}
	if byReads > byBytes {
		return byReads, "requests"
	}
	return byBytes, "bandwidth"
}

// earlierScans are the measured scans before r of its table (its engine,
// disk and parameters but the setting), and of those its setting's; never
// r itself.
func earlierScans(r workload.Result, before []workload.Result) (table, setting []workload.Result) {
	for _, o := range before {
		if o.Key == r.Key || !o.Measured() || o.Metrics["bytes_read"] <= 0 || o.Metrics["pages_read"] <= 0 || !sameTable(o, r) {
			continue
		}
		table = append(table, o)
		if o.Params.String("read_ahead") == r.Params.String("read_ahead") {
			setting = append(setting, o)
		}
	}
	return table, setting
}

func sameTable(a, b workload.Result) bool {
	ia, ib := a.Instance(), b.Instance()
	if ia.Engine != ib.Engine || ia.DataDisk != ib.DataDisk || ia.Target != ib.Target {
		return false
	}
	for _, k := range []string{"rows", "device_size", "instance"} {
		if fmt.Sprint(a.Params[k]) != fmt.Sprint(b.Params[k]) {
			return false
		}
	}
	return true
}

// scanSize is what a scan is expected to read, and from where.
type scanSize struct {
	bytes, reads, pages float64
	from                string
}

// expectedScan is what the point's scan will read: the table's bytes and
// pages as its latest earlier scan read them (every setting reads the
// whole table), the reads of its setting's latest; for the table's first
// scan, the engine's layout, and for a setting's first, its read size.
func expectedScan(r workload.Result, table, setting []workload.Result) scanSize {
	eng := r.Instance().Engine
	page := float64(pageBytes[eng])
	sc := scanSize{bytes: float64(r.Params.Int("rows") * bytesPerRow[eng]), from: "the table's bytes from its rows and the engine's layout"}
	sc.pages = sc.bytes / page
	if len(table) > 0 {
		last := table[len(table)-1].Metrics
		sc.bytes, sc.pages, sc.from = last["bytes_read"], last["pages_read"], "the table's bytes as the scan before read them"
	}
	if len(setting) > 0 {
		last := setting[len(setting)-1].Metrics
		sc.reads = sc.bytes / (last["bytes_read"] / last["reads"])
		sc.from += ", in reads of the size the setting's scan before made"
		return sc
	}
	size := firstReadSize(eng, r.Params.String("read_ahead"), page)
	sc.reads = sc.bytes / size
	sc.from += fmt.Sprintf(", in reads of %s (the setting's first scan)", FormatReadSize(size))
	return sc
}

// pageBytes is each engine's page.
var pageBytes = map[string]int64{"postgres": 8192, "mariadb": 16384}

// kernelReadAheadKB is the least read-ahead Linux gives a block device
// (VM_READAHEAD_PAGES): the loop device's own is read at Prepare and
// recorded only with the first scan.
const kernelReadAheadKB = 128

// firstReadSize is the read size a setting makes before any scan at it
// measured one: InnoDB reads a page a request, past the OS's read-ahead
// (O_DIRECT); PostgreSQL reads a page a call, which the kernel's
// read-ahead makes larger, or splits into 4 KiB pages with none.
func firstReadSize(eng, setting string, page float64) float64 {
	if eng == "mariadb" {
		return page
	}
	kb, _, err := resolve(setting, kernelReadAheadKB)
	if err != nil {
		return page
	}
	if kb == 0 {
		return 4096
	}
	return max(page, float64(kb)*1024)
}
