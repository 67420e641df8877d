package readahead

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/workload"
)

// scanOn is a hand-made cold scan of 25,000 rows, run n of its setting, on
// an engine's instance whose data lies on disk; seconds 0 leaves it
// unmeasured (a point about to run). It reads the whole table in reads of
// readBytes, a page each of pageBytes.
func scanOn(eng, disk, setting string, run int, seconds, readBytes float64) workload.Result {
	combo := "engine=" + eng + " read_ahead=" + setting
	r := workload.Result{Combo: combo, Key: fmt.Sprintf("%s #%d", combo, run), Run: run,
		Params:    workload.Params{"rows": int64(25_000), "read_ahead": setting, "device_size": int64(0), "instance": "db"},
		Instances: []engine.InstanceConfig{{Name: "db", Engine: eng, DataDisk: disk}},
	}
	if seconds > 0 {
		bytes := map[string]float64{"postgres": 204.8e6, "mariadb": 136.56e6}[eng]
		r.Metrics = map[string]float64{"seconds": seconds, "bytes_read": bytes, "reads": bytes / readBytes,
			"pages_read": bytes / float64(pageBytes[eng]), "mb_per_s": bytes / 1e6 / seconds}
	}
	return r
}

// TestPredictBeforeTheScan: on san-2009 (200 MB/s, 5,000 requests a
// second) a scan's time is the throttle's bound on its bytes and reads,
// plus the time a page took beyond it on the setting's earlier scans of the
// same table; never from the point itself, another engine's table, or a
// disk whose rate is known only once the point has run.
func TestPredictBeforeTheScan(t *testing.T) {
	t.Parallel()
	if Kind().Predict == nil {
		t.Fatal("the kind predicts nothing before a point: the runner stores no prediction")
	}
	const san = "san-2009"
	pgDefault := scanOn("postgres", san, Default, 1, 1.1, 1.2e6)
	// Page reads the disk beneath served slower than the SAN: 12.4 s and
	// 10 s against the bound's 5 s, 0.296 and 0.2 ms a page beyond it.
	pgMin1, pgMin2 := scanOn("postgres", san, Minimal, 1, 12.4, 8192), scanOn("postgres", san, Minimal, 2, 10, 8192)
	pgMin3Done := scanOn("postgres", san, Minimal, 3, 100, 8192)
	mariaMin := scanOn("mariadb", san, Minimal, 1, 30, 16384)
	for _, tc := range []struct {
		name      string
		point     workload.Result
		before    []workload.Result
		seconds   float64 // 0: no prediction
		formula   string
		reasonHas string
	}{
		{"no emulated disk", scanOn("postgres", "", Minimal, 2, 0, 0), []workload.Result{pgMin1}, 0, "", "no prediction: the device's rate is not known before the point"},
		{"an unthrottled disk", scanOn("postgres", "nvme", Minimal, 2, 0, 0), nil, 0, "", "no prediction: the device's rate is not known before the point"},
		{"the table's first scan: bandwidth-bound", scanOn("postgres", san, Default, 1, 0, 0), []workload.Result{mariaMin}, 1.024,
			"max(205 MB / 200 MB/s, 1562 reads / 5000 a second): bandwidth-bound (the table's bytes from its rows", "bound alone"},
		{"a setting's first scan: requests-bound", scanOn("postgres", san, Minimal, 1, 0, 0), []workload.Result{pgDefault}, 5,
			"25000 reads / 5000 a second): requests-bound (the table's bytes as the scan before read them, in reads of 8.0 KiB", "bound alone"},
		{"InnoDB's first scan: a page a request", scanOn("mariadb", san, Default, 1, 0, 0), []workload.Result{pgDefault, pgMin1}, 25_000 * 5461.0 / 16384 / 5000,
			"requests-bound", "bound alone"},
		{"the time a page took beyond the bound before", scanOn("postgres", san, Minimal, 3, 0, 0), []workload.Result{pgDefault, pgMin1, pgMin2, mariaMin}, 5 + (7.4+5)/2,
			"+ 25000 pages × +248 µs a page off the device (the median of 2 earlier scan(s)", "the earlier scans' at this setting"},
		{"never the point itself", scanOn("postgres", san, Minimal, 3, 0, 0), []workload.Result{pgDefault, pgMin1, pgMin2, pgMin3Done}, 5 + (7.4+5)/2,
			"the median of 2 earlier scan(s)", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := Predict(tc.point, tc.before)
			if tc.seconds == 0 {
				if len(p.Metrics) != 0 || !strings.HasPrefix(p.Reason, tc.reasonHas) {
					t.Errorf("got %v, %q; want no figure and %q", p.Metrics, p.Reason, tc.reasonHas)
				}
				return
			}
			if got := p.Metrics["seconds"]; math.Abs(got-tc.seconds) > 1e-9 {
				t.Errorf("seconds = %v, want %v (%s)", got, tc.seconds, p.Formula)
			}
			if !strings.Contains(p.Formula, tc.formula) || !strings.Contains(p.Reason, tc.reasonHas) {
				t.Errorf("formula %q, reason %q: want %q and %q", p.Formula, p.Reason, tc.formula, tc.reasonHas)
			}
			if p.Metrics["mb_per_s"] <= 0 {
				t.Errorf("no MB/s: %v", p.Metrics)
			}
		})
	}
}

// withDevice gives a hand-made scan the reads in flight it measured and
// the CPU one process got just before it (0: not probed).
func withDevice(r workload.Result, queueDepth, cpu float64) workload.Result {
	if r.Metrics != nil {
		r.Metrics["queue_depth"] = queueDepth
	}
	if cpu > 0 {
		r.Probe = map[string]float64{probeCPU: cpu}
	}
	return r
}

// TestPredictTheDiskBeneathAndTheCPU: a scan that waits for each read
// spends its time on the device (at least the SAN's bound; longer where
// the earlier scans found the disk beneath slower) and off it, a page at
// a time, in a CPU the machine's other work shares: the off-device time
// of the earlier scans scales by the CPU one process got then over now;
// a scan that beat the SAN's bound spent no time off it to scale.
func TestPredictTheDiskBeneathAndTheCPU(t *testing.T) {
	t.Parallel()
	const san = "san-2009" // 25,000 reads of 8 KiB: 5 s at 5,000 a second
	next := func(cpu float64) workload.Result {
		return withDevice(scanOn("postgres", san, Minimal, 2, 0, 0), 0, cpu)
	}
	for _, tc := range []struct {
		name    string
		point   workload.Result
		before  workload.Result
		seconds float64
		formula string
	}{
		// Busy 9 s of 10 (0.36 ms a read, the SAN allows 0.2): the disk
		// beneath took 9 s; the rest, 1 s, took half a CPU then.
		{"the disk beneath is slower than the SAN", next(1), withDevice(scanOn("postgres", san, Minimal, 1, 10, 8192), 0.9, 0.5), 9 + 1*0.5,
			"the disk beneath is slower: 25000 reads × 0.36 ms a read"},
		// Busy 3.6 s of 12: the SAN's 5 s bound, 7 s off the device with a
		// quarter of a CPU, half a CPU now.
		{"the CPU one process gets", next(0.5), withDevice(scanOn("postgres", san, Minimal, 1, 12, 8192), 0.3, 0.25), 5 + 7*0.5,
			"× 0.50 (one process got 0.25 CPU then, 0.50 now)"},
		{"no probe before the earlier scan: as it ran", next(0.5), withDevice(scanOn("postgres", san, Minimal, 1, 12, 8192), 0.3, 0), 12,
			"+ 25000 pages × +280 µs a page off the device"},
		// 0.9 s with read-ahead, under the SAN's 1.024 s bound: 4.96 µs a
		// page faster than the throttle's bound, a burst, not CPU time; a
		// busier CPU now does not make it faster still.
		{"beating the bound is not CPU time", withDevice(scanOn("postgres", san, Default, 2, 0, 0), 0, 0.1),
			withDevice(scanOn("postgres", san, Default, 1, 0.9, 1.2e6), 0.5, 0.5), 0.9,
			"+ 25000 pages × -4.96 µs a page off the device"},
	} {
		p := Predict(tc.point, []workload.Result{tc.before})
		if got := p.Metrics["seconds"]; math.Abs(got-tc.seconds) > 1e-9 || !strings.Contains(p.Formula, tc.formula) {
			t.Errorf("%s: %v s (%s); want %v s and %q", tc.name, got, p.Formula, tc.seconds, tc.formula)
		}
	}
}
