package readahead

import (
	"context"
	"fmt"
	"time"

	"github.com/dbrig/dbrig/internal/blockdev"
	"github.com/dbrig/dbrig/internal/measure"
	"github.com/dbrig/dbrig/internal/procstat"
	"github.com/dbrig/dbrig/internal/workload"
)

// The prediction, made before the point runs. On an emulated disk the
// device's rates are the profile's, known before anything runs; the blkio
// throttle lets each request through when the later of its two budgets
// allows, so a scan that keeps the device busy takes
//
//	bound = max(bytes / the profile's bandwidth, reads / its requests a second)
//
// The disk beneath the profile may be slower: the setting's earlier scans
// measured the device's time a read (its busy time, the reads in flight
// times the scan's time while fewer than one is, over the reads), and
// where their reads took longer than the bound allows, the disk is the
// bound:
//
//	device = max(bound, reads × the device's time a read on earlier scans)
//
// A scan that waits for each read before the next (no read-ahead: less
// than one read in flight) also spends time off the device for each page:
// the engine's CPU, and on a busy machine the wait for a CPU at each
// wake-up. That time a page is the earlier scans' beyond their device
// time, scaled by the CPU one process got then over what it gets now
// (probed for a second before each point, procstat.FreeCPU):
//
//	time = device + pages × off-device time a page × min(1, F then) / min(1, F now)
//
// where the earlier scans spent time off the device; where they beat the
// bound (a negative time off it, the throttle's burst), it stands unscaled.
// The setting's first scan, with none before it, is the bound alone. The
// bytes, reads and pages are the table's as an earlier scan read them, or
// the engine's layout for the table's first.

// noRate is why a point off an emulated disk gets no prediction: only a
// plain read after the point measures the device's throughput.
const noRate = "no prediction: the device's rate is not known before the point (the table's disk is not an emulated one whose profile gives it; the plain read that measures it runs after the scan)"

// probeCPU is the probe's figure: the CPU one busy thread got just before
// the point.
const probeCPU = "cpu_one_thread"

// Probe measures the CPU one process gets just before the point: a scan
// that waits for each read wakes once a page, and on a busy machine each
// wake-up waits for a CPU.
func Probe(ctx context.Context, _ workload.Result, _ *workload.Env) (map[string]float64, error) {
	f, err := procstat.FreeCPU(ctx, time.Second)
	if err != nil {
		return nil, err
	}
	return map[string]float64{probeCPU: f}, nil
}

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
	formula := fmt.Sprintf("time = max(bytes / bandwidth, reads / IOPS) on %s = max(%.0f MB / %g MB/s, %.0f reads / %d a second): %s-bound (%s)",
		prof.Name, sc.bytes/1e6, float64(prof.ReadBPS)/1e6, sc.reads, prof.ReadIOPS, bind, sc.from)
	if len(setting) == 0 {
		return scanPrediction(sc, bound, formula, "the setting's first scan: the emulated disk's bound alone, before any scan measured the engine's time a page beyond it")
	}
	e := earlierTimes(prof, setting)
	device := bound
	if beneath := sc.reads * e.deviceRead; beneath > bound {
		device, bind = beneath, "the disk beneath"
		formula += fmt.Sprintf("; the disk beneath is slower: %.0f reads × %.3g ms a read (the device's busy time a read on %d earlier scan(s)) = %.3g s",
			sc.reads, 1e3*e.deviceRead, len(setting), beneath)
	}
	cpuNow, scale := probed(r), 1.0
	// Only time spent off the device is CPU's to scale: a negative one is
	// the throttle letting a burst through faster than its bound (scans
	// with read-ahead), which a busier CPU does not make faster.
	if e.cpuThen > 0 && cpuNow > 0 && e.offDevice > 0 {
		scale = min(1, e.cpuThen) / min(1, cpuNow)
	}
	secs := device + sc.pages*e.offDevice*scale
	formula += fmt.Sprintf(" + %.0f pages × %+.3g µs a page off the device (the median of %d earlier scan(s) at this setting)", sc.pages, 1e6*e.offDevice, len(setting))
	if scale != 1 {
		formula += fmt.Sprintf(" × %.2f (one process got %.2f CPU then, %.2f now)", scale, e.cpuThen, cpuNow)
	}
	if secs <= 0 {
		return workload.Prediction{Reason: "no prediction: the earlier scans at this setting beat the emulated disk's bound by more than the bound"}
	}
	return scanPrediction(sc, secs, formula, "the time a page takes off the device (the engine's CPU; on a busy machine the wait for a CPU at each read) is the earlier scans' at this setting, scaled by the CPU one process got then and now: the machine's other work changes it during the scan")
}

func scanPrediction(sc scanSize, secs float64, formula, reason string) workload.Prediction {
	return workload.Prediction{
		Metrics: map[string]float64{"seconds": secs, "mb_per_s": sc.bytes / 1e6 / secs},
		Formula: formula,
		Reason:  reason,
	}
}

// probed is the CPU the point's probe found one process got, 0 unknown.
func probed(r workload.Result) float64 { return r.Probe[probeCPU] }

// earlier is what a setting's earlier scans measured of where a scan's
// time goes: the device's time a read, the time a page off the device,
// and the CPU one process got before them (0: not probed on every one).
type earlier struct {
	deviceRead, offDevice, cpuThen float64
}

// earlierTimes splits each earlier scan's time into the device's (its
// busy time: the reads in flight times its time, at most the whole time;
// at least the throttle's bound) and the rest, off the device, a page;
// the medians of each.
func earlierTimes(prof blockdev.Profile, setting []workload.Result) earlier {
	var reads, offs, cpus []float64
	probedAll := true
	for _, o := range setting {
		m := o.Metrics
		bound, _ := throttleBound(prof, m["bytes_read"], m["reads"])
		device := bound
		if q := m["queue_depth"]; q > 0 && m["reads"] > 0 {
			busy := min(q, 1) * m["seconds"]
			reads = append(reads, busy/m["reads"])
			device = max(bound, busy)
		}
		offs = append(offs, (m["seconds"]-device)/m["pages_read"])
		if c := probed(o); c > 0 {
			cpus = append(cpus, c)
		} else {
			probedAll = false
		}
	}
	e := earlier{offDevice: measure.Median(offs)}
	if len(reads) > 0 {
		e.deviceRead = measure.Median(reads)
	}
	if probedAll && len(cpus) > 0 {
		e.cpuThen = measure.Median(cpus)
	}
	return e
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
