package georep

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/gonum/stat"

	"github.com/dbrig/dbrig/internal/measure"
	"github.com/dbrig/dbrig/internal/procstat"
	"github.com/dbrig/dbrig/internal/replication"
	"github.com/dbrig/dbrig/internal/units"
	"github.com/dbrig/dbrig/internal/workload"
)

// Predict is Model before the point runs: the same physics, with the link
// as configured, the rows, batch and pipeline from the parameters, and V
// predicted from what the point's data carried before. V is the bytes a
// row took on the wire at the same scenario's points of the same payload
// on the other links (their bytes a row does not depend on the link),
// times the point's rows; a scenario's first points take another
// scenario's bytes a row for the same payload, or, with none before, the
// rows' text size, and say so.
func Predict(r workload.Result, before []workload.Result) workload.Prediction {
	if len(r.Links) == 0 || pointLink(r).Mode != "link" {
		return workload.Prediction{}
	}
	rows := float64(r.Params.Int("rows"))
	perRow, from, reason := bytesPerRow(r, before)
	in := inputs{volume: perRow * rows, rows: rows, batch: plannedBatch(r.Params), pipeline: plannedPipeline(r)}
	p := timed(r, in)
	if len(p.Metrics) == 0 {
		return p
	}
	p.Formula += fmt.Sprintf("; V = %.0f rows × %.0f bytes a row (%s)", rows, perRow, from)
	p.Reason = reason
	switch r.Params.String("scenario") {
	case "init-backup":
		p.Reason += "; " + backupSetUpMiss
	case "pull":
		p.Reason += "; " + pullRaceNote
	}
	beside, n, where, ungrown := timeBeside(r, before)
	if n == 0 {
		p.Reason += "; the servers' and the agent's own time beside the link is left out (no point before measured it)"
		return p
	}
	p.Metrics["seconds"] += beside
	p.Metrics["rows_per_s"] = rows / p.Metrics["seconds"]
	p.Formula += fmt.Sprintf("; + %.3f s, the median time beyond the model at %d point(s) before (%s)", beside, n, where)
	p.Reason += "; the time beside the link's physics (setting up, the servers applying the rows, the agent's own work, this shared machine's load) taken as at those points"
	if ungrown {
		p.Reason += "; " + ungrownMiss
	}
	if cpu := r.Probe[probeCPU]; cpu > 0 {
		p.Formula += fmt.Sprintf(", each scaled by the CPU one thread got before it over the %.2f it gets now", cpu)
		p.Reason += ", scaled by the CPU one thread got before each and before this one: the load that changes during the point is not foreseen"
	}
	return p
}

// timeBeside is the time beyond the model's (with their own V) that the
// points before took: what the servers and the agent spend beside the
// link, setting up (a slot, a snapshot, a dump), decoding, storing and
// applying the rows. It is the median over the same scenario's nearest
// points: those of the same rows on the same link (another payload or
// buffer), else on the same round trip, else on any link, else of other
// rows in the same order, each grown by the rows' difference at the
// growth a row (rowGrowth; none measured, it is taken as it was: the
// set-up does not grow with the rows). A scenario's first points take it
// from the other scenarios' nearest points instead, each as its time a
// row times the rows: every scenario stores the same rows on the same
// servers, and a set-up of theirs is not the scenario's. The median,
// because this machine's other load makes a run now and then several
// times slower; of at least minBeside points where the nearer levels have
// fewer, since the median of two is their mean, as slow as the slow one's
// half. ungrown is true where the points were of other rows and no
// growth a row was measured.
func timeBeside(r workload.Result, before []workload.Result) (seconds float64, n int, where string, ungrown bool) {
	own, others := beyondModel(r, before)
	rows := float64(r.Params.Int("rows"))
	growth, grew := rowGrowth(r.Params.String("scenario"), own, others)
	asOwn := func(b beyond) float64 { return b.seconds + growth*(rows-float64(b.rows)) }
	if seconds, n, where = nearestBeside(r, own, asOwn); n > 0 {
		where += " of the scenario"
		otherRows := !strings.HasPrefix(where, "the same rows")
		if grew != "" && otherRows {
			where += fmt.Sprintf(", %.1f µs a row more or less by %s", growth*1e6, grew)
		}
		return seconds, n, where, otherRows && grew == ""
	}
	aRowsShare := func(b beyond) float64 { return b.seconds * rows / float64(b.rows) }
	if seconds, n, where = nearestBeside(r, others, aRowsShare); n > 0 {
		return seconds, n, where + " of other scenarios, a row's share times the rows", false
	}
	return 0, 0, "", false
}

// backupSetUpMiss is why a backup's prediction misses where its rows are
// new: the model counts the archive's connection alone (a handshake
// while pg_dump starts, then the archive), and pg_dump's reading and
// pg_restore's storing of the rows are time beside. On a stored run a
// backup's time beyond that physics was the same on both links (0.03 s
// at 1,000 rows, 0.18 s at 20,000), but a snapshot's grew only 0.02 s:
// its subscriber stores the rows while the link streams them, where
// pg_restore stores them after the archive has crossed.
const backupSetUpMiss = "a backup's pg_dump and pg_restore run at their own sites and only its archive crosses the link (a handshake while pg_dump starts, then the archive), so dumping and restoring the rows is time beside the link: a backup's first points of a row count take it from other rows, grown as a snapshot's, whose subscriber stores its rows while they stream"

// pullRaceNote is why pull's time beside is taken at the same round trip:
// the agent's first read reaches the publisher half a round trip after
// it is ready; where the insert and the log reader are done by then (a
// long round trip), it finds the rows, and the notification's half round
// trip and the second read's round trip that the model counts are not
// paid (on a stored run to Dublin, 16 round trips through 64 KiB where
// the model has 16.5).
const pullRaceNote = "where the rows are stored before the agent's first read reaches the publisher (half a round trip after it is ready: a long round trip), that read finds them without the notification's half round trip and a second read's whole one: the time beside at the same round trip carries it, from other round trips it does not"

// ungrownMiss is why a point whose time beside comes from other rows, with
// no growth a row measured, misses.
const ungrownMiss = "its time beside is that of other rows, not grown to its own: no scenario before measured two row counts, so the servers' storing of the rows it has more (or fewer) is not in it"

// rowGrowth is how much the time beyond the model grew a row from the
// fewest rows to the most at a scenario's points before (the median at
// each): the servers storing and applying each row, beside a set-up that
// stays. It is the scenario's own where its points had two row counts,
// else the median of the other scenarios' that had (a snapshot's COPY and
// a backup's restore store the same rows on the same server); 0 where none
// had, and never below (fewer rows do not take longer).
func rowGrowth(scenario string, own, others []beyond) (perRow float64, from string) {
	if g, ok := growthOf(own); ok {
		return max(g, 0), "its own points' growth"
	}
	var gs []float64
	byScenario := map[string][]beyond{}
	for _, b := range others {
		byScenario[b.scenario] = append(byScenario[b.scenario], b)
	}
	for _, name := range Scenarios {
		if g, ok := growthOf(byScenario[name]); ok && name != scenario {
			gs = append(gs, g)
		}
	}
	if len(gs) == 0 {
		return 0, ""
	}
	return max(measure.Median(gs), 0), "the growth at other scenarios' points"
}

// growthOf is the time beyond the model's growth a row between the
// fewest and the most rows among points (the median at each), false
// with one row count.
func growthOf(points []beyond) (float64, bool) {
	at := map[int64][]float64{}
	for _, b := range points {
		at[b.rows] = append(at[b.rows], b.seconds)
	}
	if len(at) < 2 {
		return 0, false
	}
	counts := slices.Sorted(maps.Keys(at))
	lo, hi := counts[0], counts[len(counts)-1]
	return (measure.Median(at[hi]) - measure.Median(at[lo])) / float64(hi-lo), true
}

// probeCPU is the probe's figure: the CPU one busy thread got just before
// the point.
const probeCPU = "cpu_one_thread"

// probeSpin is how long the probe spins: long enough to see the other
// helpers' builds and tests that slow a point several times, short
// beside a point's seconds.
const probeSpin = 500 * time.Millisecond

// Probe measures the CPU one process gets just before the point: the time
// beside the link (decoding, storing and applying the rows, setting up a
// slot, a snapshot or a dump) is the servers' and the agent's CPU, which
// this shared machine's other load stretches.
func Probe(ctx context.Context, _ workload.Result, _ *workload.Env) (map[string]float64, error) {
	f, err := procstat.FreeCPU(ctx, probeSpin)
	if err != nil {
		return nil, err
	}
	return map[string]float64{probeCPU: f}, nil
}

// cpuThenOverNow is the CPU one thread got before point then over what it
// gets before point now, each at most one (a CPU's worth is all one
// thread can use): what carries then's time beside the link to now's. It
// is 1 where either was not probed (a run stored before the probe).
func cpuThenOverNow(then, now workload.Result) float64 {
	t, n := then.Probe[probeCPU], now.Probe[probeCPU]
	if !(t > 0) || !(n > 0) {
		return 1
	}
	return min(1, t) / min(1, n)
}

// minBeside is the fewest points timeBeside takes a median of while a
// farther level has more.
const minBeside = 3

// beyond is an earlier point's time beyond the model.
type beyond struct {
	scenario string
	rows     int64
	link     workload.LinkResult
	seconds  float64
}

// beyondModel is the time beyond the model at each earlier measured point
// of another combination: of r's scenario (own) and of the others, each
// scaled by the CPU one thread got before it over what it gets before r
// (cpuThenOverNow). Model runs once per point; the levels only choose
// among them.
func beyondModel(r workload.Result, before []workload.Result) (own, others []beyond) {
	for _, o := range before {
		if o.Combo == r.Combo || !o.Measured() {
			continue
		}
		t := Model(o, nil).Metrics["seconds"]
		if !(t > 0) || !(o.Metrics["seconds"] > 0) || o.Params.Int("rows") <= 0 {
			continue
		}
		b := beyond{o.Params.String("scenario"), o.Params.Int("rows"), pointLink(o), (o.Metrics["seconds"] - t) * cpuThenOverNow(o, r)}
		if o.Params.String("scenario") == r.Params.String("scenario") {
			own = append(own, b)
		} else {
			others = append(others, b)
		}
	}
	return own, others
}

// nearestBeside is the median time beyond the model at the points nearest
// r, each taken to r's rows by toRows, from the nearest level on until
// there are minBeside of them, or the levels of r's rows are done and had
// some, or no level is left.
func nearestBeside(r workload.Result, points []beyond, toRows func(beyond) float64) (seconds float64, n int, where string) {
	l, rows := pointLink(r), r.Params.Int("rows")
	sameLink := func(o workload.LinkResult) bool { return o.Profile == l.Profile }
	sameRTT := func(o workload.LinkResult) bool { return o.RTTSeconds == l.RTTSeconds && o.Profile != l.Profile }
	otherRTT := func(o workload.LinkResult) bool { return o.RTTSeconds != l.RTTSeconds }
	levels := []struct {
		sameRows bool
		near     func(workload.LinkResult) bool
		what     string
	}{
		{true, sameLink, "the same rows on the same link"},
		{true, sameRTT, "the same rows on the same round trip"},
		{true, otherRTT, "the same rows on other links"},
		{false, sameLink, "other rows on the same link"},
		{false, sameRTT, "other rows on the same round trip"},
		{false, otherRTT, "other rows on other links"},
	}
	var times []float64
	var whats []string
	for i, level := range levels {
		found := false
		for _, p := range points {
			if (p.rows == rows) != level.sameRows || !level.near(p.link) {
				continue
			}
			times, found = append(times, toRows(p)), true
		}
		if found {
			whats = append(whats, level.what)
		}
		// Rows weigh more than the link: another row count's points are
		// taken only where no point had the same rows.
		if len(times) >= minBeside || (len(times) > 0 && level.sameRows && !levels[i+1].sameRows) {
			break
		}
	}
	if len(times) == 0 {
		return 0, 0, ""
	}
	return measure.Median(times), len(times), strings.Join(whats, ", then ")
}

// Why a prediction misses, by where its V came from.
const (
	sameScenarioMiss  = "V scaled by the rows from the same scenario's earlier points on other links"
	otherScenarioMiss = "first point of its scenario and payload: V is another scenario's bytes a row for the same payload, whose encoding differs (statements, commands, WAL, COPY, a compressed archive)"
	textSizeMiss      = "first point of its payload: V is the rows' text size, without the encoding's overhead (statements, headers), which no point before measured"
	archiveSampleMiss = "first backup of its payload: V is a sample of its rows compressed here, without the archive's headers and the link's own traffic, which no point before measured"
)

// bytesPerRow is the bytes a row of r's data took on the wire, from the
// points before it, where it came from, and why the prediction may miss.
func bytesPerRow(r workload.Result, before []workload.Result) (perRow float64, from, reason string) {
	scenario, payload := r.Params.String("scenario"), r.Params.String("payload")
	var same, other []float64
	for _, o := range before {
		v, rows := Volume(o), o.Metrics["rows"]
		if o.Combo == r.Combo || !o.Measured() || v <= 0 || rows <= 0 ||
			o.Params.String("payload") != payload || o.Params.String("compression") != r.Params.String("compression") {
			continue
		}
		switch s := o.Params.String("scenario"); {
		case s == scenario:
			same = append(same, v/rows)
		case s != "init-backup" && scenario != "init-backup":
			// A backup's archive is compressed: its bytes a row say
			// nothing of the others', nor theirs of its.
			other = append(other, v/rows)
		}
	}
	switch {
	case len(same) > 0:
		return stat.Mean(same, nil), fmt.Sprintf("the mean of %d point(s) of %s before", len(same), scenario), sameScenarioMiss
	case len(other) > 0:
		return other[len(other)-1], "the latest point before of another scenario", otherScenarioMiss
	}
	p, err := ParsePayload(payload)
	if err != nil {
		return 0, "", err.Error()
	}
	if scenario == "init-backup" {
		perRow, err := shippedBytesPerRow(p, r.Params.Int("rows"))
		if err == nil {
			n := min(r.Params.Int("rows"), archiveSampleRows)
			return perRow, fmt.Sprintf("the archive of the first %d rows compressed as the shipper does", n), archiveSampleMiss
		}
		// Never a volume of nothing: the rows' text bounds what crosses.
		return textBytes(p), "the rows' text size (compressing a sample of them failed: " + err.Error() + ")", textSizeMiss
	}
	return textBytes(p), "the rows' text size", textSizeMiss
}

// textBytes is a row's payload in its text form: as stored for char, hex
// (twice the bytes) for bytea.
func textBytes(p Payload) float64 {
	if p == PayloadBytes1K || p == PayloadBytes15K {
		return 2 * float64(p.RowBytes())
	}
	return float64(p.RowBytes())
}

// plannedBatch is postgres_fdw's batch_size the scenario will use.
func plannedBatch(p workload.Params) float64 {
	switch p.String("scenario") {
	case "fdw-row":
		return 1
	case "fdw-batch":
		return float64(p.Int("fdw_batch"))
	}
	return 0
}

// plannedPipeline is the pipelined writer's depth: the number asked for,
// or what auto will size from the path, taking the path's rate as the
// link's stream rate (its rate, or its window a round trip).
func plannedPipeline(r workload.Result) float64 {
	if r.Params.String("scenario") != "push-pipelined" {
		return 0
	}
	k, err := replication.ParsePipeline(r.Params.String("pipeline"))
	if err != nil {
		return 0
	}
	if k != replication.PipelineAuto {
		return float64(k)
	}
	l := pointLink(r)
	rate := streamRate(l)
	if math.IsInf(rate, 1) {
		return replication.MaxPipeline
	}
	rtt := time.Duration(l.RTTSeconds * float64(time.Second))
	return float64(replication.PipelineDepth(rtt, units.Rate(rate), int(r.Params.Int("buffer_size"))))
}
