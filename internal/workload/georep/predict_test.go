package georep

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/replication"
	"github.com/dbrig/dbrig/internal/workload"
)

// measuredPoint is a finished point of scenario over wan (RTT seconds) with
// a window of window bytes, rows of payload, whose link or agent carried
// volume bytes.
func measuredPoint(scenario, payload, wan string, rtt float64, window int64, rows int64, volume float64) workload.Result {
	r := plannedPoint(scenario, payload, wan, rtt, window, rows)
	r.Metrics = map[string]float64{"rows": float64(rows)}
	switch scenario {
	case "push", "push-pipelined":
		r.Metrics["sent_bytes"] = volume
	case "pull":
		r.Metrics["read_bytes"] = volume
	default:
		r.Links[0].ForwardBytes = int64(volume)
	}
	r.Metrics["batch_size"], r.Metrics["pipeline"] = plannedBatch(r.Params), plannedPipeline(r)
	// It took the model's time: nothing beyond the link's physics.
	r.Metrics["seconds"] = Model(r, nil).Metrics["seconds"]
	r.Metrics["rows_per_s"] = float64(rows) / r.Metrics["seconds"]
	return r
}

// slower is r having taken extra seconds beyond the model's time.
func slower(r workload.Result, extra float64) workload.Result {
	r.Metrics["seconds"] += extra
	r.Metrics["rows_per_s"] = r.Metrics["rows"] / r.Metrics["seconds"]
	return r
}

// plannedPoint is the point as the runner gives it to Predict: its
// parameters and its link as configured, nothing measured.
func plannedPoint(scenario, payload, wan string, rtt float64, window int64, rows int64) workload.Result {
	combo := fmt.Sprintf("scenario=%s wan=%s window=%d payload=%s", scenario, wan, window, payload)
	return workload.Result{
		Key: combo + " #1", Combo: combo, Run: 1,
		Params: workload.Params{"scenario": scenario, "payload": payload, "rows": rows, "buffer_size": int64(40000),
			"pipeline": "auto", "compression": "none", "fdw_batch": int64(100)},
		Links: []workload.LinkResult{{Profile: fmt.Sprintf("%s+w%d", wan, window), Mode: "link", RTTSeconds: rtt, RateBitsPerS: 1e9, WindowBytes: window}},
	}
}

const legacyW, autoW = 65535, 16 << 20

func TestKindPredictsBeforeThePoint(t *testing.T) {
	t.Parallel()
	if Kind().Predict == nil {
		t.Fatal("georep has no Predict: its figures are made after the point, from the volume it measured")
	}
}

// A point's prediction is Model's figure for the volume the points before
// it carried a row, times its rows, on its own link as configured.
func TestPredictTakesTheBytesARowOfTheScenarioBefore(t *testing.T) {
	t.Parallel()
	before := []workload.Result{
		measuredPoint("pull", "char-1k", "tukwila-blueridge", 0.077, legacyW, 1000, 1.2e6),
		measuredPoint("pull", "char-1k", "tukwila-dublin", 0.150, legacyW, 1000, 1.4e6),
		measuredPoint("push", "char-1k", "tukwila-dublin", 0.150, legacyW, 1000, 5e6),    // another scenario
		measuredPoint("pull", "bytea-1.1k", "tukwila-dublin", 0.150, legacyW, 1000, 9e6), // another payload
	}
	tests := []struct {
		name     string
		point    workload.Result
		perRow   float64
		wantFrom string
	}{
		{"pull: the mean of the pulls of the same rows", plannedPoint("pull", "char-1k", "tukwila-blueridge", 0.077, autoW, 20000), 1300, sameScenarioMiss},
		{"native, first of its scenario: the latest other scenario", plannedPoint("native", "char-1k", "tukwila-dublin", 0.150, autoW, 1000), 5000, otherScenarioMiss},
		{"bytea-15.5k, first of its payload: its text in hex", plannedPoint("pull", "bytea-15.5k", "tukwila-dublin", 0.150, legacyW, 100), 2 * 15504, textSizeMiss},
		// The rows compress some 40 times (each repeats its digest).
		{"a backup: never another scenario's bytes, its rows compressed", plannedPoint("init-backup", "char-1k", "tukwila-dublin", 0.150, autoW, 20000), backupBytesPerRow(t), archiveSampleMiss},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Predict(tt.point, before)
			if !strings.HasPrefix(got.Reason, tt.wantFrom) {
				t.Errorf("reason %q, want %q", got.Reason, tt.wantFrom)
			}
			// Model on the point once it has carried the predicted volume.
			done := measuredPoint(tt.point.Params.String("scenario"), tt.point.Params.String("payload"), tt.point.Links[0].Profile,
				tt.point.Links[0].RTTSeconds, tt.point.Links[0].WindowBytes, tt.point.Params.Int("rows"), tt.perRow*float64(tt.point.Params.Int("rows")))
			want := Model(done, nil).Metrics
			for _, metric := range []string{"seconds", "rows_per_s"} {
				if g, w := got.Metrics[metric], want[metric]; !(w > 0) || math.Abs(g-w)/w > 1e-9 {
					t.Errorf("%s = %v, want %v (%s)", metric, g, w, got.Formula)
				}
			}
		})
	}
}

// The pipelined writer's depth is what auto will choose on the link as
// configured: over a 64 KiB window, twice the window in 40 KB buffers plus
// one; over 16 MiB at 1 Gbit/s, the rate's bandwidth-delay product.
func TestPredictTakesThePipelineAutoWillChoose(t *testing.T) {
	t.Parallel()
	before := []workload.Result{measuredPoint("push-pipelined", "char-1k", "tukwila-dublin", 0.150, autoW, 1000, 1.1e6)}
	for _, tt := range []struct {
		window int64
		k      float64
	}{{legacyW, 5}, {autoW, math.Min(math.Ceil(2*1e9/8*0.077/40000)+1, replication.MaxPipeline)}} {
		r := plannedPoint("push-pipelined", "char-1k", "tukwila-blueridge", 0.077, tt.window, 1000)
		got := Predict(r, before)
		done := measuredPoint("push-pipelined", "char-1k", "tukwila-blueridge", 0.077, tt.window, 1000, 1.1e6)
		if done.Metrics["pipeline"] != tt.k {
			t.Errorf("window %d: %v buffers in flight, want %v", tt.window, done.Metrics["pipeline"], tt.k)
		}
		if g, w := got.Metrics["seconds"], Model(done, nil).Metrics["seconds"]; math.Abs(g-w)/w > 1e-9 {
			t.Errorf("window %d: seconds = %v, want %v with %v buffers in flight (%s)", tt.window, g, w, tt.k, got.Formula)
		}
	}
}

// What the servers and the agent spend beside the link is the median time
// beyond the model at the same scenario's nearest points before: of the
// same rows on the same link (another payload), else on the same round
// trip, else on any link; else of other rows, grown by the rows at the
// scenario's growth a row. Where the nearest have fewer than three, the
// next level's join them, but another row count's only where no point had
// the same rows.
func TestPredictTakesTheScenariosTimeBeyondThePhysicsBefore(t *testing.T) {
	t.Parallel()
	const v = 1.1e6
	const growth = (4 - (0.2+0.5)/2) / (20000 - 1000)
	before := []workload.Result{
		slower(measuredPoint("pull", "char-1k", "tukwila-blueridge", 0.077, legacyW, 1000, v), 0.2),
		slower(measuredPoint("pull", "char-1k", "tukwila-dublin", 0.150, legacyW, 1000, v), 0.5),
		slower(measuredPoint("pull", "bytea-1.1k", "tukwila-dublin", 0.150, autoW, 1000, v), 0.1),
		slower(measuredPoint("pull", "bytea-1.1k", "tukwila-dublin", 0.150, 1<<22, 1000, v), 9), // a run the machine slowed
		slower(measuredPoint("pull", "char-1k", "tukwila-dublin", 0.150, 1<<23, 20000, 20*v), 4),
		slower(measuredPoint("push", "char-1k", "tukwila-dublin", 0.150, autoW, 1000, v), 3),
	}
	for _, tt := range []struct {
		name        string
		wan         string
		rtt         float64
		window, buf int64
		rows        int64
		extra       float64
		where       string
	}{
		{"the same rows on the same link, then on the same round trip", "tukwila-dublin", 0.150, legacyW, 160000, 1000, 0.5,
			"(the same rows on the same link, then the same rows on the same round trip of the scenario)"},
		{"the same rows on the same round trip", "tukwila-dublin", 0.150, 1 << 20, 40000, 1000, 0.5,
			"(the same rows on the same round trip of the scenario)"},
		{"the same rows on other links", "rtt-23ms", 0.023, legacyW, 40000, 1000, (0.2 + 0.5) / 2,
			"(the same rows on other links of the scenario)"},
		// Each grown or shrunk by the rows' difference at the growth from
		// 1,000 rows (0.35 s) to 20,000 (4 s).
		{"other rows on the same link, then on the same round trip", "tukwila-dublin", 0.150, legacyW, 40000, 5000, ((0.5 + 4000*growth) + (4 - 15000*growth)) / 2,
			"(other rows on the same link, then other rows on the same round trip of the scenario, 192.1 µs a row more or less by its own points' growth)"},
		{"the same rows on the same round trip, alone", "tukwila-dublin", 0.150, legacyW, 40000, 20000, 4,
			"(the same rows on the same round trip of the scenario)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			point := plannedPoint("pull", "char-1k", tt.wan, tt.rtt, tt.window, tt.rows)
			point.Params["buffer_size"] = tt.buf
			point.Combo += fmt.Sprintf(" buffer=%d", tt.buf)
			got := Predict(point, before)
			want := Model(measuredPoint("pull", "char-1k", tt.wan, tt.rtt, tt.window, tt.rows, float64(tt.rows)*1100), nil).Metrics["seconds"] + tt.extra
			if g := got.Metrics["seconds"]; math.Abs(g-want)/want > 1e-9 {
				t.Errorf("seconds = %v, want %v, %v s beside the model's (%s)", g, want, tt.extra, got.Formula)
			}
			if !strings.Contains(got.Formula, tt.where) {
				t.Errorf("formula %q does not say %q", got.Formula, tt.where)
			}
		})
	}
}

// The median of two is their mean: one run the machine slowed nine times
// would make it. The farther points join the nearest two.
func TestPredictsTimeBesideOutlastsOneSlowRun(t *testing.T) {
	t.Parallel()
	const v = 1.1e6
	before := []workload.Result{
		slower(measuredPoint("pull", "char-1k", "tukwila-dublin", 0.150, legacyW, 1000, v), 0.2),
		slower(measuredPoint("pull", "bytea-1.1k", "tukwila-dublin", 0.150, legacyW, 1000, v), 9),
		slower(measuredPoint("pull", "char-1k", "tukwila-dublin", 0.150, autoW, 1000, v), 0.3),
		slower(measuredPoint("pull", "bytea-1.1k", "tukwila-dublin", 0.150, autoW, 1000, v), 0.4),
	}
	point := plannedPoint("pull", "char-1k", "tukwila-dublin", 0.150, legacyW, 1000)
	point.Params["buffer_size"] = int64(160000)
	point.Combo += " buffer=160000"
	got := Predict(point, before).Metrics["seconds"]
	want := Model(measuredPoint("pull", "char-1k", "tukwila-dublin", 0.150, legacyW, 1000, 1000*1100), nil).Metrics["seconds"] + (0.3+0.4)/2
	if math.Abs(got-want)/want > 1e-9 {
		t.Errorf("seconds = %v, want %v: the median of 0.2, 0.3, 0.4 and 9 s beside the model", got, want)
	}
}

// A scenario's first points have none of its own before: they take the
// other scenarios' time beyond the model, a row's share times their rows,
// from the nearest points as the scenario's own would be.
func TestAScenariosFirstPointTakesTheOthersTimeARow(t *testing.T) {
	t.Parallel()
	before := []workload.Result{
		slower(measuredPoint("push", "char-1k", "tukwila-blueridge", 0.077, legacyW, 1000, 1.01e6), 0.2),
		slower(measuredPoint("pull", "char-1k", "tukwila-blueridge", 0.077, legacyW, 1000, 1.02e6), 0.4),
		slower(measuredPoint("push", "bytea-1.1k", "tukwila-blueridge", 0.077, legacyW, 1000, 2.2e6), 0.6),
		slower(measuredPoint("push", "char-1k", "tukwila-dublin", 0.150, legacyW, 1000, 1.01e6), 5),
	}
	for _, tt := range []struct {
		scenario string
		rows     int64
		extra    float64
	}{
		{"native", 1000, 0.4},            // the three on the same link
		{"fdw-row", 50, 0.4 * 50 / 1000}, // the same, a row's share
	} {
		t.Run(tt.scenario, func(t *testing.T) {
			t.Parallel()
			r := plannedPoint(tt.scenario, "char-1k", "tukwila-blueridge", 0.077, legacyW, tt.rows)
			checkBeside(t, r, before, tt.extra, "of other scenarios, a row's share times the rows")
		})
	}
}

// Whatever the point and the earlier runs of its own combination measured,
// the prediction is the same: V and the time beside the link come from the
// other combinations, of its scenario or, for its first points, of others.
func TestThePointsOwnFigureNeverEntersItsPrediction(t *testing.T) {
	t.Parallel()
	history := []workload.Result{
		measuredPoint("fdw-row", "char-1k", "tukwila-dublin", 0.150, legacyW, 50, 60000),
		measuredPoint("init-snapshot", "char-1k", "tukwila-dublin", 0.150, legacyW, 1000, 1.1e6),
	}
	for _, scenario := range []string{"fdw-row", "init-snapshot", "init-backup", "native"} {
		t.Run(scenario, func(t *testing.T) {
			t.Parallel()
			var preds []float64
			for _, v := range []float64{1, 1e9} {
				r := measuredPoint(scenario, "char-1k", "tukwila-blueridge", 0.077, autoW, 50, v)
				r.Metrics["seconds"], r.Metrics["rows_per_s"] = v, v
				earlier := r
				earlier.Key, earlier.Run = r.Combo+" #0", 0
				earlier.Links = slices.Clone(r.Links)
				earlier.Links[0].ForwardBytes = int64(7 * v)
				all := append(slices.Clone(history), earlier)
				unmeasured := r
				unmeasured.Metrics = nil
				unmeasured.Links = slices.Clone(r.Links)
				unmeasured.Links[0].ForwardBytes = 0
				p := Predict(unmeasured, all)
				preds = append(preds, p.Metrics["seconds"])
				if !strings.Contains(p.Formula, "bytes a row") {
					t.Errorf("formula %q does not say where V came from", p.Formula)
				}
			}
			if preds[0] != preds[1] || !(preds[0] > 0) {
				t.Errorf("predicted %v as the point measured 1 and 1e9: its own figure entered", preds)
			}
		})
	}
}

// No link, no model: a direct connection is not the WAN's physics.
func TestPredictNeedsALink(t *testing.T) {
	t.Parallel()
	r := plannedPoint("pull", "char-1k", "direct", 0, 0, 1000)
	r.Links[0].Mode = "direct"
	if p := Predict(r, nil); len(p.Metrics) != 0 {
		t.Errorf("a direct connection got a prediction: %v", p.Metrics)
	}
}

// Of other rows, the time beside grows a row as the scenario's grew from
// its fewest rows to its most, or where it had one row count as the other
// scenarios' did: the backup's first 20,000 rows take its 1,000-row set-up
// and the snapshot's growth, both storing the rows by COPY.
func TestPredictGrowsTheTimeBesideWithTheRows(t *testing.T) {
	t.Parallel()
	before := []workload.Result{
		slower(measuredPoint("init-snapshot", "char-1k", "tukwila-blueridge", 0.077, legacyW, 1000, 1e6), 0.6),
		slower(measuredPoint("init-snapshot", "char-1k", "tukwila-dublin", 0.150, legacyW, 1000, 1e6), 1.2),
		slower(measuredPoint("init-snapshot", "char-1k", "tukwila-blueridge", 0.077, autoW, 20000, 20e6), 2.9),
		slower(measuredPoint("init-backup", "char-1k", "tukwila-blueridge", 0.077, legacyW, 1000, 25000), 0.5),
	}
	snapshotGrowth := (2.9 - (0.6+1.2)/2) / 19000
	for _, tt := range []struct {
		scenario string
		wan      string
		rtt      float64
		rows     int64
		extra    float64
		grew     string
	}{
		{"init-backup", "tukwila-blueridge", 0.077, 20000, 0.5 + 19000*snapshotGrowth, "the growth at other scenarios' points"},
		// The snapshot's own growth: 5,000 rows to Dublin take the median
		// of its three points grown or shrunk to 5,000 rows (1.2 s and
		// 0.6 s grown by 4,000 rows, 2.9 s shrunk by 15,000).
		{"init-snapshot", "tukwila-dublin", 0.150, 5000, 2.9 - 15000*(2.9-0.9)/19000, "its own points' growth"},
	} {
		t.Run(tt.scenario, func(t *testing.T) {
			t.Parallel()
			checkBeside(t, plannedPoint(tt.scenario, "char-1k", tt.wan, tt.rtt, autoW, tt.rows), before, tt.extra, tt.grew)
		})
	}
}

// checkBeside checks that r's prediction is Model's time for the volume
// Predict took, plus extra seconds beside the link, and that its formula
// says where they came from.
func checkBeside(t *testing.T, r workload.Result, before []workload.Result, extra float64, where string) {
	t.Helper()
	p := Predict(r, before)
	perRow, _, _ := bytesPerRow(r, before)
	rows, l := r.Params.Int("rows"), r.Links[0]
	done := measuredPoint(r.Params.String("scenario"), r.Params.String("payload"), l.Profile, l.RTTSeconds, l.WindowBytes, rows, perRow*float64(rows))
	want := Model(done, nil).Metrics["seconds"] + extra
	if g := p.Metrics["seconds"]; math.Abs(g-want)/want > 1e-9 {
		t.Errorf("seconds = %v, want %v, %v s beside the model's (%s)", g, want, extra, p.Formula)
	}
	if !strings.Contains(p.Formula, where) {
		t.Errorf("formula %q does not say %q", p.Formula, where)
	}
}

// backupBytesPerRow is char-1k's archive a row as the shipper compresses it.
func backupBytesPerRow(t *testing.T) float64 {
	t.Helper()
	b, err := shippedBytesPerRow(PayloadChar1K, archiveSampleRows)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// probedAt is r with the CPU one thread got just before it.
func probedAt(r workload.Result, cpu float64) workload.Result {
	r.Probe = map[string]float64{probeCPU: cpu}
	return r
}

// The time beside the link is the servers' and the agent's CPU: a point
// before that ran with half a CPU took twice what a whole one takes. Each
// side is taken at most at one CPU (one thread uses no more), and a side
// not probed (a run stored before the probe) leaves the time as it was.
func TestCPUThenOverNow(t *testing.T) {
	t.Parallel()
	point := plannedPoint("pull", "char-1k", "tukwila-dublin", 0.150, legacyW, 1000)
	tests := []struct {
		name      string
		then, now float64
		want      float64
	}{
		{"half a CPU then, a whole now", 0.5, 1, 0.5},
		{"a whole then, a quarter now", 1, 0.25, 4},
		{"more than one CPU counts as one", 1.8, 0.9, 1 / 0.9},
		{"then not probed", 0, 0.5, 1},
		{"now not probed", 0.5, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			then, now := point, point
			if tt.then > 0 {
				then = probedAt(point, tt.then)
			}
			if tt.now > 0 {
				now = probedAt(point, tt.now)
			}
			if got := cpuThenOverNow(then, now); math.Abs(got-tt.want) > 1e-12 {
				t.Errorf("cpuThenOverNow = %v, want %v", got, tt.want)
			}
		})
	}
}

// Predict carries each earlier point's time beside the link by the CPU it
// got to the CPU the point gets now, and says so; unprobed, as it was.
func TestPredictScalesTheTimeBesideByTheCPU(t *testing.T) {
	t.Parallel()
	const v = 1.1e6
	before := []workload.Result{
		probedAt(slower(measuredPoint("pull", "char-1k", "tukwila-dublin", 0.150, legacyW, 1000, v), 0.4), 0.5),
		probedAt(slower(measuredPoint("pull", "char-1k", "tukwila-blueridge", 0.077, legacyW, 1000, v), 0.2), 1),
		probedAt(slower(measuredPoint("pull", "char-1k", "tukwila-blueridge", 0.077, autoW, 1000, v), 0.6), 0.25),
	}
	physics := Model(measuredPoint("pull", "char-1k", "tukwila-dublin", 0.150, autoW, 1000, v), nil).Metrics["seconds"]
	for _, tt := range []struct {
		cpu    float64
		beside float64
	}{
		{1, 0.2},    // 0.4 × 0.5, 0.2 × 1, 0.6 × 0.25: 0.2, 0.2, 0.15
		{0.5, 0.4},  // the same, on half a CPU
		{0, 0.4},    // unprobed: the median of 0.4, 0.2, 0.6
		{1.5, 0.2},  // more than one CPU: one thread uses one
		{0.25, 0.8}, // a quarter
	} {
		point := plannedPoint("pull", "char-1k", "tukwila-dublin", 0.150, autoW, 1000)
		if tt.cpu > 0 {
			point = probedAt(point, tt.cpu)
		}
		got := Predict(point, before)
		if want := physics + tt.beside; math.Abs(got.Metrics["seconds"]-want)/want > 1e-9 {
			t.Errorf("CPU %v: seconds = %v, want %v (%s)", tt.cpu, got.Metrics["seconds"], want, got.Formula)
		}
		if scaled := strings.Contains(got.Reason, "scaled by the CPU"); scaled != (tt.cpu > 0) {
			t.Errorf("CPU %v: reason %q says scaled %v", tt.cpu, got.Reason, scaled)
		}
	}
}

// A point whose time beside comes from other rows, with no scenario before
// having measured two row counts, says that its rows' storing is not in
// it; one with a growth measured, or of the same rows, does not.
func TestPredictSaysWhenTheTimeBesideIsNotGrown(t *testing.T) {
	t.Parallel()
	thousand := []workload.Result{
		slower(measuredPoint("init-snapshot", "char-1k", "tukwila-blueridge", 0.077, legacyW, 1000, 1e6), 0.6),
		slower(measuredPoint("init-snapshot", "char-1k", "tukwila-dublin", 0.150, legacyW, 1000, 1e6), 1.2),
	}
	grown := append(slices.Clone(thousand), slower(measuredPoint("init-snapshot", "char-1k", "tukwila-blueridge", 0.077, autoW, 20000, 20e6), 2.9))
	for _, tt := range []struct {
		name   string
		before []workload.Result
		rows   int64
		says   bool
	}{
		{"other rows, no growth measured", thousand, 20000, true},
		{"other rows, its own growth", grown, 5000, false},
		{"the same rows", thousand, 1000, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := Predict(plannedPoint("init-snapshot", "char-1k", "tukwila-dublin", 0.150, autoW, tt.rows), tt.before)
			if says := strings.Contains(p.Reason, ungrownMiss); says != tt.says {
				t.Errorf("reason %q: says it is not grown %v, want %v", p.Reason, says, tt.says)
			}
		})
	}
}

// A backup's prediction says that dumping and restoring its rows is time
// beside the link (only its archive crosses), and a pull's that the
// agent's first read may find the rows at a long round trip; a
// snapshot's, whose copy crosses the link, says neither.
func TestPredictSaysWhatTheModelLeavesBeside(t *testing.T) {
	t.Parallel()
	before := []workload.Result{slower(measuredPoint("push", "char-1k", "tukwila-blueridge", 0.077, legacyW, 1000, 1e6), 0.3)}
	for scenario, want := range map[string]string{"init-backup": backupSetUpMiss, "pull": pullRaceNote, "init-snapshot": ""} {
		p := Predict(plannedPoint(scenario, "char-1k", "tukwila-dublin", 0.150, legacyW, 1000), before)
		for _, note := range []string{backupSetUpMiss, pullRaceNote} {
			if got := strings.Contains(p.Reason, note); got != (note == want) {
				t.Errorf("%s: reason %q says %q: %v, want %v", scenario, p.Reason, note, got, note == want)
			}
		}
	}
}
