package script

import (
	"context"
	"fmt"
	"math"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
	"github.com/dbrig/dbrig/internal/link"
	"github.com/dbrig/dbrig/internal/predict"
	"github.com/dbrig/dbrig/internal/workload"
	"github.com/dbrig/dbrig/internal/workload/workloadtest"
)

// throughLink runs the workload with params set against db on inst,
// reached through an emulated link of cfg, and returns its measurement
// and what the link saw.
func throughLink(t *testing.T, inst engine.Instance, db string, cfg link.Config, set workload.Params) (workload.Measurement, link.Stats) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	login := inst.Login(db)
	p, err := link.Listen(ctx, "127.0.0.1:0", login.Addr(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	host, port, _ := net.SplitHostPort(p.Addr())
	login.Host = host
	if login.Port, err = strconv.Atoi(port); err != nil {
		t.Fatal(err)
	}
	w, err := KindWith(nil).New(testParams(t, set))
	if err != nil {
		t.Fatal(err)
	}
	env := workloadtest.Env(db, inst)
	env.Conn = func(from, instance, db string) (workload.Endpoint, error) {
		return workload.Endpoint{Conn: login.WithDatabase(db), Transport: "tcp"}, nil
	}
	m, err := w.Run(ctx, env)
	if err != nil {
		t.Fatalf("run through %s: %v", cfg, err)
	}
	return m, p.Stats()
}

// TestPredictionOfTPCBLike calibrates pgbench's tpcb-like (prepared) on a
// link with no delay and, three times, on one of 2 ms (the turn overhead
// and the link's own lateness, with their spread), predicts its
// throughput at RTT 1, 5 and 20 ms under 1 and 4 users, each prediction
// made before its point runs, then runs each point through a real link
// and holds the measured tps within 5 % of the prediction. The link's
// lateness is the calibration's: a point whose link was later or earlier
// than calibrated by more than the bound the calibration's spread leaves
// of the tolerance (latenessBound) did not get the path the model was
// given, and a point at a number of users whose calibration runs' waits
// spread by more than the tolerance ran on a machine too noisy for it;
// only such points go unjudged, saying so with the figures. A point the
// calibration alone leaves unjudged (its runs' spread, or on a busy
// machine a turn overhead over half the suite's tolerance) is not run:
// nothing it measured could be judged.
func TestPredictionOfTPCBLike(t *testing.T) {
	if testing.Short() {
		t.Skip("runs up to 16 points of 5 s through a link")
	}
	t.Parallel()
	// In the suite the prediction must hold within what a busy 2-core
	// machine's wake-ups leave of it; make accept-predict holds it to the
	// 5 % the model is meant for (predict.Tolerance).
	tolerance := suiteTolerance
	if os.Getenv("DBRIG_PREDICT_ACCEPT") != "" {
		tolerance = predict.Tolerance
	}
	inst := pgtest.Start(t, "predict", nil)
	const db = "dbrig_script_predict"
	runWorkload(t, inst, db, true, workload.Params{"init": true, "scale": int64(predictScale), "duration": "100ms"})
	one, _ := throughLink(t, inst, db, link.Config{}, tpcbPoint(1))
	cal, ok := predict.FromMetrics(one.Metrics, 0)
	if !ok {
		t.Fatal("the calibration reports no round trips")
	}
	four, _ := throughLink(t, inst, db, link.Config{}, tpcbPoint(4))
	cal.Capacity, cal.CapacityUsers = four.Metrics["tps"], 4
	// The turn overhead at each number of users, as predict.Point takes it.
	delayed := map[int]delayedCalibration{}
	for _, users := range []int{1, 4} {
		delayed[users] = calibrateDelayed(t, inst, db, cal, tpcbPoint(users))
	}
	var table strings.Builder
	fmt.Fprintf(&table, "calibration (no delay): %.2f round trips, %.0f B out, %.0f B in, server %v, client %v a transaction; %.0f tps at 4 users\n",
		cal.RoundTrips, cal.BytesOut, cal.BytesIn, cal.Server, cal.Client, cal.Capacity)
	for _, users := range []int{1, 4} {
		d := delayed[users]
		fmt.Fprintf(&table, "through %v at %d users, %d runs: waits spread %.1f %%; %v a round trip beyond the RTT (spread %v), the link %v late (spread %v)\n",
			calibrationRTT, users, calibrationRuns, 100*d.waitSpread, d.cal.TurnOverhead.Round(time.Microsecond), d.overheadSpread.Round(time.Microsecond),
			d.lateness.Round(time.Microsecond), d.lateSpread.Round(time.Microsecond))
	}
	points := predictTPCBPoints(t, inst, db, delayed, tolerance, &table)
	drifted := closingDrift(t, inst, db, delayed, points, tolerance, &table)
	t.Logf("tpcb-like -M prepared, scale %d, through the link:\n%s", predictScale, table.String())
	var late []string
	for _, p := range points {
		switch {
		case drifted[p.users] != "":
			late = append(late, fmt.Sprintf("%s (%s)", p.name, drifted[p.users]))
		case p.unjudged != "":
			late = append(late, fmt.Sprintf("%s (%s)", p.name, p.unjudged))
		case p.differs != "":
			t.Errorf("%s: %s", p.name, p.differs)
		}
	}
	if len(late) > 0 {
		t.Skipf("not checked, the calibration's runs spread by more than the tolerance, the machine changed between the calibration and the points, or the link's lateness departed from the calibrated one by more than the bound, so the model was not given those points' path: %s", strings.Join(late, ", "))
	}
}

// tpcbHotRows are the rows of tpcb-like at predictScale that a
// transaction holds locked across round trips: its branch (one of 10)
// from its UPDATE, the 5th round trip of 7, to COMMIT, and its teller (one
// of 100) from the 4th.
var tpcbHotRows = []struct{ rows, holdTrips float64 }{{1 * predictScale, 2}, {10 * predictScale, 3}}

// rowLockWait is what a transaction waits, beyond the calibration through
// calibrationRTT (whose turn overhead already holds that path's waits),
// for the rows tpcbHotRows says it locks: another of the users holds a
// given row for hold / response of its time, over rows rows, and one found
// held is waited for half its hold on average. Beside the check, not in
// it: a candidate term measured before it is claimed.
func rowLockWait(cal predict.Calibration, cfg link.Config, users int) time.Duration {
	wait := func(cfg link.Config) float64 {
		response := predict.Closed(cal, cfg, users, 0).Response.Seconds()
		perTrip := (cfg.EffectiveRTT() + cal.TurnOverhead).Seconds()
		w := 0.0
		for _, h := range tpcbHotRows {
			hold := h.holdTrips * perTrip
			w += float64(users-1) / h.rows * hold / response * hold / 2
		}
		return w
	}
	return time.Duration((wait(cfg) - wait(link.Config{RTT: calibrationRTT})) * float64(time.Second))
}

// unjudged says why a point predicted as e, whose link was lateness late,
// cannot be held to tolerance; "" when it can.
func (d delayedCalibration) unjudged(e predict.Estimate, lateness time.Duration, tolerance float64) string {
	if why := d.unjudgedBeforeRun(e, tolerance); why != "" {
		return why
	}
	departure, bound := lateness-d.lateness, d.latenessBound(e, tolerance)
	if max(departure, -departure) > bound {
		return fmt.Sprintf("%v late, calibrated %v, bound ±%v", lateness.Round(time.Microsecond), d.lateness.Round(time.Microsecond), max(bound, 0).Round(time.Microsecond))
	}
	return ""
}

// unjudgedBeforeRun is the part of unjudged that the calibration alone
// decides: a point it leaves unjudged need not run, whatever it would
// measure, which on a busy machine spares most of the test's points.
func (d delayedCalibration) unjudgedBeforeRun(e predict.Estimate, tolerance float64) string {
	overheadShare := d.cal.RoundTrips * float64(d.cal.TurnOverhead) / float64(e.Response)
	switch {
	case d.waitSpread > tolerance:
		return fmt.Sprintf("the calibration's runs at its users spread by %.1f %%", 100*d.waitSpread)
	case tolerance > predict.Tolerance && overheadShare > tolerance/2:
		// The suite's looser tolerance is for a busy machine, whose turn
		// overhead (its wake-ups, not the link) swings by more than three
		// calibration runs show: where that overhead is over half the
		// tolerance of the response, a swing alone can cross it (929 µs a
		// round trip calibrated at load 4, 43 % of the 1 ms x 1 user
		// response, which then missed by +56 % in a calmer moment).
		return fmt.Sprintf("the machine's turn overhead, %v a round trip, is %.0f %% of the predicted response", d.cal.TurnOverhead.Round(time.Microsecond), 100*overheadShare)
	}
	return ""
}

func tpcbPoint(users int) workload.Params {
	return workload.Params{"script": "tpcb-like", "protocol": Prepared, "users": int64(users), "warm_up": "1s", "duration": "4s"}
}

// pointVerdict is one predicted point's judgement: why it missed beyond
// the tolerance, or why it cannot be judged ("" for neither); ran says
// whether it ran, which a point the calibration leaves unjudged does not.
type pointVerdict struct {
	users             int
	name              string
	differs, unjudged string
	ran               bool
}

// predictTPCBPoints predicts, then runs, each point that the calibration
// leaves judgeable, writes its line of the table and returns each point's
// verdict: a miss beyond tolerance, or why it cannot be judged (the
// calibration's, before it runs, or a link that departed from the
// calibrated lateness beyond the bound).
func predictTPCBPoints(t *testing.T, inst engine.Instance, db string, delayed map[int]delayedCalibration, tolerance float64, table *strings.Builder) (points []pointVerdict) {
	t.Helper()
	fmt.Fprintf(table, "%-5s %5s %9s %9s %7s %-8s %13s %9s %13s %s\n", "rtt", "users", "predicted", "measured", "error", "dominant", "link lateness", "bound", "with row locks", "error at the delivered RTT")
	for _, rtt := range []time.Duration{time.Millisecond, 5 * time.Millisecond, 20 * time.Millisecond} {
		for _, users := range []int{1, 4} {
			cfg, d := link.Config{RTT: rtt}, delayed[users]
			e := predict.Closed(d.cal, cfg, users, 0) // made before the point runs
			p := pointVerdict{users: users, name: fmt.Sprintf("%v x %d users", rtt, users), unjudged: d.unjudgedBeforeRun(e, tolerance)}
			if p.unjudged != "" {
				fmt.Fprintf(table, "%-5s %5d %9.1f %9s not run: %s\n", rtt, users, e.TPS, "-", p.unjudged)
			} else {
				p = runPredictedPoint(t, inst, db, d, e, cfg, users, tolerance, table)
			}
			points = append(points, p)
		}
	}
	return points
}

// runPredictedPoint runs one point predicted as e, writes its line of the
// table and returns its verdict.
func runPredictedPoint(t *testing.T, inst engine.Instance, db string, d delayedCalibration, e predict.Estimate, cfg link.Config, users int, tolerance float64, table *strings.Builder) pointVerdict {
	t.Helper()
	rtt := cfg.RTT
	bound := d.latenessBound(e, tolerance)
	m, st := throughLink(t, inst, db, cfg, tpcbPoint(users))
	c := predict.Compare(e.TPS, m.Metrics["tps"])
	lateness := (st.Forward.MeanLateness + st.Reverse.MeanLateness) / 2
	// Beside the check, not in it: the prediction at the RTT the
	// link delivered, the calibrated lateness taken out of the turn
	// overhead, says how much of an error is the emulation's.
	atDelivered := d.cal
	atDelivered.TurnOverhead = max(d.cal.TurnOverhead-2*d.lateness, 0)
	delivered := predict.Closed(atDelivered, link.Config{RTT: rtt + 2*lateness}, users, 0)
	locked := float64(users) / (e.Response + rowLockWait(d.cal, cfg, users)).Seconds()
	fmt.Fprintf(table, "%-5s %5d %9.1f %9.1f %+6.1f%% %-8s %13v %9v %+12.1f%% %+6.1f%%\n", rtt, users, e.TPS, m.Metrics["tps"], 100*c.Error, e.Dominant,
		lateness.Round(time.Microsecond), bound.Round(time.Microsecond), 100*predict.Compare(locked, m.Metrics["tps"]).Error,
		100*predict.Compare(delivered.TPS, m.Metrics["tps"]).Error)
	p := pointVerdict{users: users, name: fmt.Sprintf("%v x %d users", rtt, users), unjudged: d.unjudged(e, lateness, tolerance), ran: true}
	if math.Abs(c.Error) > tolerance {
		p.differs = fmt.Sprintf("%s, beyond %.0f %%", c, 100*tolerance)
	}
	return p
}

// closingDrift runs the calibration point once more, after the points,
// at each number of users some point ran at, and says for each whose
// wait a transaction moved from the calibration's mean by more than the
// tolerance that the machine changed while the points ran (a busy
// machine that calmed down made the calibration slow and the points
// fast, 171 tps predicted against 325 measured at 1 ms x 4 users at load
// 10): their predictions were made for another machine than the one that
// ran them. Where no point ran there is nothing for a drift to unjudge.
func closingDrift(t *testing.T, inst engine.Instance, db string, delayed map[int]delayedCalibration, points []pointVerdict, tolerance float64, table *strings.Builder) map[int]string {
	t.Helper()
	drifted := map[int]string{}
	for _, users := range []int{1, 4} {
		if !slices.ContainsFunc(points, func(p pointVerdict) bool { return p.ran && p.users == users }) {
			continue
		}
		d := delayed[users]
		m, _ := throughLink(t, inst, db, link.Config{RTT: calibrationRTT}, tpcbPoint(users))
		wait := time.Duration(m.Metrics["wait_ms_per_tx"] * float64(time.Millisecond))
		drift := float64(wait-d.meanWait) / float64(d.meanWait)
		fmt.Fprintf(table, "through %v at %d users after the points: %v a transaction's wait, %+.1f %% from the calibration's %v\n",
			calibrationRTT, users, wait.Round(time.Microsecond), 100*drift, d.meanWait.Round(time.Microsecond))
		if math.Abs(drift) > tolerance {
			drifted[users] = fmt.Sprintf("the calibration point's wait moved %+.1f %% while the points ran", 100*drift)
		}
	}
	return drifted
}

// calibrationRuns is how often each delayed calibration point runs: their
// spread is what the calibration knows of this machine's noise.
const calibrationRuns = 3

// delayedCalibration is the turn overhead and the link's lateness measured
// through calibrationRTT at one number of users, over calibrationRuns runs.
type delayedCalibration struct {
	cal predict.Calibration // with the runs' mean turn overhead
	// lateness is the runs' mean link lateness (both directions' means
	// averaged): the turn overhead holds it twice a round trip, so the
	// prediction assumes every point's link is that late.
	lateness time.Duration
	// overheadSpread is the largest less the smallest turn overhead of the
	// runs, lateSpread the same of their lateness.
	overheadSpread, lateSpread time.Duration
	// meanWait is the runs' mean wait a transaction.
	meanWait time.Duration
	// waitSpread is the largest less the smallest of the runs' waits a
	// transaction, over their mean: beyond the tolerance the machine moves
	// the same point by more than the model is held to.
	waitSpread float64
}

// calibrateDelayed runs the point through calibrationRTT calibrationRuns
// times and takes the mean turn overhead over cal.
func calibrateDelayed(t *testing.T, inst engine.Instance, db string, cal predict.Calibration, set workload.Params) delayedCalibration {
	t.Helper()
	cfg := link.Config{RTT: calibrationRTT}
	var overheads, lates, waits []time.Duration
	for range calibrationRuns {
		m, st := throughLink(t, inst, db, cfg, set)
		wait := time.Duration(m.Metrics["wait_ms_per_tx"] * float64(time.Millisecond))
		waits = append(waits, wait)
		overheads = append(overheads, cal.WithDelayed(wait, cfg).TurnOverhead)
		lates = append(lates, (st.Forward.MeanLateness+st.Reverse.MeanLateness)/2)
	}
	d := delayedCalibration{cal: cal, lateness: meanDuration(lates),
		overheadSpread: slices.Max(overheads) - slices.Min(overheads), lateSpread: slices.Max(lates) - slices.Min(lates),
		meanWait: meanDuration(waits), waitSpread: float64(slices.Max(waits)-slices.Min(waits)) / float64(meanDuration(waits))}
	d.cal.TurnOverhead = meanDuration(overheads)
	return d
}

func meanDuration(ds []time.Duration) time.Duration {
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}

// latenessBound is how far a point's link lateness may depart from the
// calibrated one for its prediction to be held to tolerance: a departure
// of d in each direction moves each of the point's round trips by 2d, and
// the calibration's own spread of the turn overhead is already an
// uncertainty of each round trip, so the point is judged while
// round trips × (2d + spread) stays within tolerance × the predicted
// response. Beyond it the link, not the model, could make the miss.
func (d delayedCalibration) latenessBound(e predict.Estimate, tolerance float64) time.Duration {
	perTrip := time.Duration(tolerance * float64(e.Response) / d.cal.RoundTrips)
	return (perTrip - d.overheadSpread) / 2
}

// suiteTolerance is the error the suite allows a prediction: on this
// 2-core machine at load average 30 the worst point was 31 % off (1 ms, one
// user, where each round trip's wake-ups weigh most).
const suiteTolerance = 0.5

// calibrationRTT is the delay of the calibration's delayed point, none
// of the predicted ones.
const calibrationRTT = 2 * time.Millisecond

// predictScale keeps the branches' rows apart: at 4 users two transactions
// seldom update the same branch, whose row lock the model does not see.
const predictScale = 10

// pipelinedTPCB is tpcb-like with its statements in one pipeline.
const pipelinedTPCB = `\set aid random(1, 100000 * :scale)
\set bid random(1, 1 * :scale)
\set tid random(1, 10 * :scale)
\set delta random(-5000, 5000)
\startpipeline
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;
UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
END;
\endpipeline
`

// TestPipelinedTPCBLikeTakesOneOrTwoRoundTrips runs tpcb-like in a
// pipeline through a link of 5 ms: the connection counts 1 or 2 turns a
// transaction where the plain script takes 7, and the model, given that
// count, charges the link 1 or 2 RTTs.
func TestPipelinedTPCBLikeTakesOneOrTwoRoundTrips(t *testing.T) {
	t.Parallel()
	inst, db := sharedServer.Database(t) // it counts round trips, which no other test's load on the server changes
	runWorkload(t, inst, db, true, workload.Params{"init": true, "duration": "100ms"})
	file := writeFile(t, t.TempDir(), "tpcb-pipelined.sql", pipelinedTPCB)
	cfg := link.Config{RTT: 5 * time.Millisecond}
	m, _ := throughLink(t, inst, db, cfg, workload.Params{"script": file, "protocol": Prepared, "users": int64(1), "duration": "1s"})
	trips := m.Metrics["round_trips_per_tx"]
	if trips < 1 || trips > 2 || m.Metrics["errors"] != 0 {
		t.Fatalf("pipelined tpcb-like: %.2f round trips a transaction, %v errors; want 1 to 2, none", trips, m.Metrics["errors"])
	}
	t.Logf("pipelined tpcb-like through %s: %.2f round trips a transaction", cfg, trips)
	cal, _ := predict.FromMetrics(m.Metrics, cfg.RTT)
	if e := predict.Closed(cal, cfg, 1, 0); e.Parts.Latency < cfg.RTT || e.Parts.Latency > 2*cfg.RTT {
		t.Errorf("the model charges the link %v for %.2f round trips of %v", e.Parts.Latency, trips, cfg.RTT)
	}
}

// TestPredictionJudgesAPointOnASteadyCalibration: the acceptance test
// judges a point when the calibration's runs agree and the point's link
// was as late as calibrated, give or take what the tolerance leaves of
// the calibration's spread, however late that is (the rule before it
// skipped every point whose link was more than 50 µs late, 5 of 6 on a
// quiet machine); it leaves a point unjudged, saying why, when the
// calibration's runs spread beyond the tolerance or the link departed
// beyond the bound.
func TestPredictionJudgesAPointOnASteadyCalibration(t *testing.T) {
	t.Parallel()
	cal := predict.Calibration{RoundTrips: 7, Server: 1300 * time.Microsecond, TurnOverhead: 173 * time.Microsecond}
	steady := delayedCalibration{cal: cal, lateness: 110 * time.Microsecond, overheadSpread: 20 * time.Microsecond, waitSpread: 0.01}
	noisy := steady
	noisy.waitSpread = 0.126
	for _, tc := range []struct {
		name     string
		d        delayedCalibration
		rtt      time.Duration
		lateness time.Duration
		want     string // a part of the reason; "" when judged
	}{
		{"20 ms, the link 185 µs late against 110 µs calibrated", steady, 20 * time.Millisecond, 185 * time.Microsecond, ""},
		{"5 ms, the link 137 µs late", steady, 5 * time.Millisecond, 137 * time.Microsecond, ""},
		{"1 ms, the link 95 µs late", steady, time.Millisecond, 95 * time.Microsecond, ""},
		{"1 ms, the link 40 µs late: 70 µs early moves 7 round trips by 10 %", steady, time.Millisecond, 40 * time.Microsecond, "40µs late, calibrated 110µs, bound ±24µs"},
		{"1 ms, the link 563 µs late", steady, time.Millisecond, 563 * time.Microsecond, "563µs late, calibrated 110µs, bound ±"},
		{"a calibration whose runs spread by 12.6 %", noisy, 20 * time.Millisecond, 110 * time.Microsecond, "spread by 12.6 %"},
	} {
		e := predict.Closed(tc.d.cal, link.Config{RTT: tc.rtt}, 4, 0)
		got := tc.d.unjudged(e, tc.lateness, predict.Tolerance)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: unjudged %q, want %q", tc.name, got, tc.want)
		}
	}
	// In the suite, on a busy machine: a turn overhead of 929 µs a round
	// trip leaves 1 ms x 1 user unjudged and 20 ms judged; a quiet
	// machine's 137 µs leaves both judged.
	busy := steady
	busy.cal.TurnOverhead, busy.lateness, busy.overheadSpread = 929*time.Microsecond, 260*time.Microsecond, 544*time.Microsecond
	quiet := steady
	quiet.cal.TurnOverhead = 137 * time.Microsecond
	for _, tc := range []struct {
		name string
		d    delayedCalibration
		rtt  time.Duration
		want string
	}{
		{"busy, 1 ms", busy, time.Millisecond, "turn overhead, 929µs a round trip"},
		{"busy, 20 ms", busy, 20 * time.Millisecond, ""},
		{"quiet, 1 ms", quiet, time.Millisecond, ""},
		{"quiet, 20 ms", quiet, 20 * time.Millisecond, ""},
	} {
		e := predict.Closed(tc.d.cal, link.Config{RTT: tc.rtt}, 1, 0)
		got := tc.d.unjudged(e, tc.d.lateness, suiteTolerance)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("suite, %s: unjudged %q, want %q", tc.name, got, tc.want)
		}
	}
}
