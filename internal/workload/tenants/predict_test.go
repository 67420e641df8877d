package tenants

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/measure"
	"github.com/dbrig/dbrig/internal/workload"
)

// measured is a point of n databases on one PostgreSQL instance with the
// settings given, its figures as the workload records them.
func measured(key string, n int, settings map[string]string, m map[string]float64) workload.Result {
	m["databases"], m["think_ms"], m["host_cpus"] = float64(n), 18, 2
	return workload.Result{Key: key, Combo: key, Params: params(n, map[string]any{"think": "18ms"}), Metrics: m,
		Instances: []engine.InstanceConfig{{Name: "db-1", Engine: "postgres", Settings: settings}}}
}

// ledger is a point that ran the mix, each read taking reads and each
// write writes (ms), in its families' shares: its response is their mean,
// its TPM the closed loop's N × 60 / (18 ms + lag + response), and its
// servers' and client's CPUs its TPM times its CPU per transaction.
func ledger(key string, n int, settings map[string]string, reads, writes, lag, cpuMS, client float64) workload.Result {
	response := (1-writeShare())*reads + writeShare()*writes
	tpm := float64(n) * 60000 / (18 + lag + response)
	busy := tpm / 60 * cpuMS / 1000
	r := measured(key, n, settings, map[string]float64{"tpm": tpm, "response_ms": response, "think_lag_ms": lag,
		"cpu_ms_per_tx": cpuMS, "server_cpus": busy - client, "client_cpus": client,
		"commit_waits_flush": boolMetric(settings["synchronous_commit"] != "0")})
	r.Histograms = map[string]*measure.Histogram{}
	for _, f := range families {
		h, d := measure.NewHistogram(), reads
		if f.write {
			d = writes
		}
		for range f.weight {
			h.Record(time.Duration(d * float64(time.Millisecond)))
		}
		r.Histograms["response/"+f.name] = h
	}
	return r
}

// planned is a point as the runner hands it to Predict: nothing measured.
func planned(n int, settings map[string]string) workload.Result {
	r := measured("planned", n, settings, map[string]float64{})
	r.Metrics = nil
	return r
}

var (
	flushOn  = map[string]string{"synchronous_commit": "1"}
	flushOff = map[string]string{"synchronous_commit": "0"}
	// light ran below the knee: 50 × 60 / (18 + 0.15 + 0.85 ms) =
	// 157,895 TPM, keeping 0.8 + 0.2 = 1.0 of the 2 CPUs busy (U = 0.5)
	// at 0.38 ms a transaction; a write took 1 ms more than a read.
	light = ledger("light", 50, flushOn, 0.5, 1.5, 0.15, 0.38, 0.2)
	// busy is 100 databases near the knee: 100 × 60 / (18 + 0.95 + 3.05
	// ms) = 272,727 TPM, 1.5 CPUs busy (U = 0.75) at 0.33 ms.
	busy = ledger("busy", 100, flushOn, 2, 5, 0.95, 0.33, 0.25)
	// busySmall is busy on smaller buffers.
	busySmall = ledger("busy small", 100, map[string]string{"synchronous_commit": "1", "shared_buffers": "16384kB"}, 2, 5, 0.95, 0.33, 0.25)
	// async committed without waiting: a write took 0.4 ms more than a
	// read, its own work; 287,908 TPM, 1.49 CPUs busy (U = 0.744).
	async = ledger("async", 100, flushOff, 1.8, 2.2, 0.9, 0.31, 0.25)
)

func TestPredictIsTheClosedLoopWithTheCPUsQueue(t *testing.T) {
	for _, tc := range []struct {
		name      string
		r         workload.Result
		before    []workload.Result
		tpm, resp float64
		formula   string
	}{
		// light's response and lateness without the queue, (0.15 + 0.5 +
		// 0.35 × 1.0) × (1 − 0.5) = 0.5 ms, stretched by 1 / (1 − U) where
		// 100 × 60 / (18 ms + 0.5 ms / (1 − U)) transactions a minute at
		// 0.38 ms keep U of 2 CPUs busy: U = 0.870, 274,696 TPM, R = 0.85
		// × 0.5 / 0.130 = 3.266 ms. (The lowest response, 0.85 ms, as R
		// was the model before.)
		{"the knee from fewer databases", planned(100, flushOn), []workload.Result{light}, 274696, 3.2660, "U = 0.87"},
		// A point like one before it is predicted as that one measured.
		{"like the point before", planned(100, flushOn), []workload.Result{light, busy}, 272727, 3.05, "U = 0.75"},
		// Commits that do not wait, none before: busy's reads and lateness
		// alone, (0.95 + 2.0) × 0.25 = 0.7375 ms: U = 0.775, 281,927 TPM,
		// R = 2.0 × 0.25 / 0.225 = 2.225 ms.
		{"commits that wait for no disk", planned(100, flushOff), []workload.Result{light, busy}, 281927, 2.2252, "its commits wait for no disk"},
		// Smaller buffers without waiting: busySmall (as near as async,
		// and later) gives the reads, lateness and D; async what a write
		// adds where commits do not wait, 0.4 × (1 − 0.744) = 0.1025 ms:
		// (0.2375 + 0.5 + 0.35 × 0.1025) ms / (1 − U), U = 0.772, 280,565
		// TPM, R = (0.5 + 0.0359) / 0.228 = 2.346 ms.
		{"what a write adds where commits do not wait", planned(100, map[string]string{"synchronous_commit": "0", "shared_buffers": "16384kB"}),
			[]workload.Result{async, busySmall}, 280565, 2.3457, "(async)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := Predict(tc.r, tc.before)
			n := float64(tc.r.Params.Int("databases"))
			if math.Abs(p.Metrics["tpm"]/tc.tpm-1) > 0.002 || math.Abs(p.Metrics["tpm_per_db"]*n/p.Metrics["tpm"]-1) > 1e-9 {
				t.Errorf("tpm %v, want %.0f", p.Metrics, tc.tpm)
			}
			if math.Abs(p.Metrics["response_ms"]/tc.resp-1) > 0.002 {
				t.Errorf("response %.4f ms, want %.4f", p.Metrics["response_ms"], tc.resp)
			}
			if !strings.Contains(p.Formula, tc.formula) {
				t.Errorf("formula %q does not say %q", p.Formula, tc.formula)
			}
		})
	}
}

func TestFlushWaits(t *testing.T) {
	// readBack is a point whose server said whether its commits wait and
	// whose WAL directory was found on tmpfs, its settings saying wait.
	readBack := func(waits, tmpfs float64) workload.Result {
		r := planned(10, flushOn)
		r.Metrics = map[string]float64{"commit_waits_flush": waits, "wal_tmpfs": tmpfs}
		return r
	}
	// apart is a planned point whose log goes to a directory this host
	// does not have, and ranOnTmpfs an earlier point that found it on
	// tmpfs where it ran.
	apart := planned(10, flushOn)
	apart.Instances = []engine.InstanceConfig{{Name: "db-1", Engine: "postgres", WALDir: "/nonexistent/dbrig-wal"}}
	ranOnTmpfs := apart
	ranOnTmpfs.Metrics = map[string]float64{"wal_tmpfs": 1}
	ranOnDisk := apart
	ranOnDisk.Metrics = map[string]float64{"wal_tmpfs": 0}
	otherDir := ranOnTmpfs
	otherDir.Instances = []engine.InstanceConfig{{Name: "db-1", Engine: "postgres", WALDir: "/nonexistent/other"}}
	for _, tc := range []struct {
		name     string
		r        workload.Result
		measured bool
		before   []workload.Result
		want     bool
	}{
		{"synchronous_commit on", planned(10, flushOn), false, nil, true},
		{"the log's directory on tmpfs where an earlier point ran", apart, false, []workload.Result{ranOnDisk, ranOnTmpfs}, false},
		{"the latest point found it on a disk", apart, false, []workload.Result{ranOnTmpfs, ranOnDisk}, true},
		{"another directory's record", apart, false, []workload.Result{otherDir}, true},
		{"synchronous_commit 0", planned(10, flushOff), false, nil, false},
		{"synchronous_commit off", planned(10, map[string]string{"synchronous_commit": "off"}), false, nil, false},
		{"synchronous_commit local", planned(10, map[string]string{"synchronous_commit": "local"}), false, nil, true},
		{"innodb_flush_log_at_trx_commit 1", planned(10, map[string]string{"innodb_flush_log_at_trx_commit": "1"}), false, nil, true},
		{"innodb_flush_log_at_trx_commit 2", planned(10, map[string]string{"innodb_flush_log_at_trx_commit": "2"}), false, nil, false},
		{"read back: waits", readBack(1, 0), true, nil, true},
		{"read back: does not wait", readBack(0, 0), true, nil, false},
		{"read back: the WAL on tmpfs", readBack(1, 1), true, nil, false},
		{"the settings where not read back", readBack(0, 1), false, nil, true},
	} {
		if got := flushWaits(tc.r, tc.measured, tc.before); got != tc.want {
			t.Errorf("%s: flushWaits %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestPredictNeedsAPointOfItsEngineBefore(t *testing.T) {
	maria := light
	maria.Instances = []engine.InstanceConfig{{Name: "db-1", Engine: "mariadb"}}
	for name, before := range map[string][]workload.Result{"first": nil, "another engine's": {maria}} {
		p := Predict(planned(50, flushOn), before)
		if p.Metrics != nil || !strings.Contains(p.Reason, "first point on its engine") {
			t.Errorf("%s point before: %v, reason %q", name, p.Metrics, p.Reason)
		}
	}
	// A point on another setup says which respect its CPU per transaction
	// was not measured on.
	if p := Predict(planned(100, flushOff), []workload.Result{light, busy}); !strings.Contains(p.Reason, `setting synchronous_commit "0", not "1"`) {
		t.Errorf("reason %q does not name the setting that differs", p.Reason)
	}
}

func TestThePointsOwnFigureNeverEntersItsPrediction(t *testing.T) {
	predict := Kind().Predict
	if predict == nil {
		t.Fatal("the kind predicts nothing before a point runs")
	}
	var preds []workload.Prediction
	for _, v := range []float64{1, 1e3} {
		// The point's own figures, and an earlier run of its combination
		// that measured the same, set apart by v.
		own := measured("own", 100, flushOn, map[string]float64{"tpm": 1000 * v, "response_ms": v, "think_lag_ms": v,
			"cpu_ms_per_tx": v, "server_cpus": v, "client_cpus": v})
		preds = append(preds, predict(own, []workload.Result{light, busy}))
	}
	if preds[0].Formula != preds[1].Formula || preds[0].Metrics["tpm"] != preds[1].Metrics["tpm"] || !(preds[0].Metrics["tpm"] > 0) {
		t.Errorf("predicted %v and %v as the point measured 1 and 1000: its own figure entered", preds[0].Metrics, preds[1].Metrics)
	}
}

func TestNearestPrefersTheNearerValue(t *testing.T) {
	buffers := func(v string) map[string]string {
		return map[string]string{"synchronous_commit": "1", "shared_buffers": v}
	}
	base := ledger("128MB", 100, buffers("131072kB"), 2, 5, 1, 0.33, 0.25)
	small := ledger("16MB", 100, buffers("16384kB"), 2, 9, 1, 0.4, 0.25)
	quarter := ledger("32MB", 100, buffers("32768kB"), 2, 7, 1, 0.35, 0.25)
	fewer := ledger("128MB at 50", 50, buffers("131072kB"), 1, 2, 0.5, 0.4, 0.2)
	for _, tc := range []struct {
		name   string
		r      workload.Result
		before []workload.Result
		want   string
	}{
		// 2 GB is 16 times 128 MB and 128 times 16 MB: the later 16 MB
		// point differs in as many respects, by more.
		{"a larger value", planned(100, buffers("2097152kB")), []workload.Result{base, small}, "128MB"},
		{"a smaller value", planned(100, buffers("8192kB")), []workload.Result{small, base}, "16MB"},
		// As far both ways (twice and half): the latest.
		{"as far both ways", planned(100, buffers("65536kB")), []workload.Result{base, quarter}, "32MB"},
		// The databases come before the values.
		{"the databases first", planned(100, buffers("2097152kB")), []workload.Result{fewer, small}, "16MB"},
	} {
		if got := nearest(tc.r, tc.before); got.Key != tc.want {
			t.Errorf("%s: nearest %s, want %s", tc.name, got.Key, tc.want)
		}
	}
}

func TestNumberOf(t *testing.T) {
	for _, tc := range []struct {
		v    string
		x    float64
		unit string
		ok   bool
	}{
		{"131072kB", 131072, "kB", true},
		{"2000000000", 2e9, "", true},
		{"0.5", 0.5, "", true},
		{"replica", 0, "replica", false},
		{"", 0, "", false},
	} {
		x, unit, ok := numberOf(tc.v)
		if ok != tc.ok || ok && (x != tc.x || unit != tc.unit) {
			t.Errorf("numberOf(%q) = %v %q %v, want %v %q %v", tc.v, x, unit, ok, tc.x, tc.unit, tc.ok)
		}
	}
}
