package rbar

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/dbrig/dbrig/internal/engine/mariadb"
	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/measure"
	"github.com/dbrig/dbrig/internal/procstat"
	"github.com/dbrig/dbrig/internal/workload"
)

// Experiments, in the seed's order.
var Experiments = []string{"server-loop", "server-cursor", "client-stream", "cursor-messages", "client-row-by-row", "wide-rows"}

// objects is the size of the table cross-joined with itself three times:
// 1,000^3 = 10^9 rows, the seed's largest count.
const objects = 1000

// Kind registers the workload.
func Kind() workload.Kind {
	return workload.Kind{
		Name: "rbar",
		Doc:  "row-by-row vs set-based vs streaming work across a link (seed 004)",
		Params: []workload.ParamSpec{
			{Name: "experiment", Type: workload.StringParam, Choices: Experiments, Doc: "which experiment runs"},
			{Name: "rows", Type: workload.IntParam, Doc: "rows processed (at most 10^9)",
				Max: objects * objects * objects, Why: "the rows come from 1,000 objects cross-joined three times, the seed's largest count"},
			{Name: "row_bytes", Type: workload.SizeParam, Default: int64(8000), Doc: "bytes per row of the wide-rows experiment",
				Max: MaxRowBytes, Why: "MariaDB's REPEAT returns NULL for a value longer than its max_allowed_packet, 16 MiB by default"},
			{Name: "row_by_row", Type: workload.StringParam, Default: "fetch", Choices: []string{"fetch", "select"},
				Doc: "client-row-by-row: the next row of a position the server keeps (PostgreSQL FETCH NEXT, MariaDB HANDLER READ NEXT), or a prepared SELECT of one parameter per row"},
			{Name: "client_cost", Type: workload.DurationParam, Default: "0s",
				Doc:         "CPU time the client spends on each row it receives (a slower client's dead time)",
				MaxDuration: time.Second, Why: "the CPU a client spends on one row: the seed's slow client spent 25 µs more"},
			{Name: "instance", Type: workload.InstanceParam, Default: "db", Doc: "the instance the client talks to"},
			{Name: "probe_spin", Type: workload.BoolParam, Default: false,
				Doc: "server-loop only: probe the path's round trip a second time with a busy loop on each CPU (" + ProbeSpinMetric + "), which the client-row-by-row points at idle = \"spin\" on the same path pay; set it where those points run, since the loops' start and stop cost each point 10 ms to seconds"},
		},
		New:         newWorkload,
		CheckParams: checkParams,
		Metrics:     Metrics,
		Model:       Model,
		Predict:     Predict,
		PrepareKey:  func(workload.Params) string { return "rbar-v1" },
	}
}

// MaxRowBytes is the widest row of the wide-rows experiment: MariaDB's
// default max_allowed_packet, past which its REPEAT returns NULL.
const MaxRowBytes = 16 << 20

// checkParams refuses at parse what a point would fail on once its servers
// ran: the row-by-row client's first row warms up and is not measured.
func checkParams(p workload.Params) []workload.ParamError {
	var errs []workload.ParamError
	if p.String("experiment") == "client-row-by-row" && p.Int("rows") < 2 {
		errs = append(errs, workload.ParamError{Param: "rows", Err: fmt.Errorf("rows = %d: client-row-by-row needs at least 2 rows (the first one warms up)", p.Int("rows"))})
	}
	if p.Bool("probe_spin") && p.String("experiment") != "server-loop" {
		errs = append(errs, workload.ParamError{Param: "probe_spin", Err: fmt.Errorf("probe_spin = true on %s: only a server-loop point probes with the idle loops (it runs first on every path)", p.String("experiment"))})
	}
	return errs
}

// Metrics are what the experiments measure.
var Metrics = append([]workload.MetricSpec{
	{Name: "us_per_row", Unit: workload.Microseconds, Better: workload.Lower, Headline: true, Doc: "time per row: the run's time over its rows"},
	{Name: "throughput_bps", Unit: workload.BitsPerSecond, Better: workload.Higher, Headline: true, Doc: "protocol bytes streamed to the client per second"},
	{Name: "seconds", Unit: workload.Seconds, Better: workload.Lower, Doc: "the measured time of the run"},
	{Name: "rows_per_s", Unit: workload.PerSecond, Better: workload.Higher, Doc: "rows the client received per second"},
	{Name: "wire_bytes", Unit: workload.Bytes, Doc: "protocol bytes of the rows"},
	{Name: "rows", Unit: workload.Count, Doc: "rows processed"},
	{Name: "row_mean_us", Unit: workload.Microseconds, Better: workload.Lower, Doc: "round trip per row, mean (the percentiles come from the merged histogram \"row\")"},
	{Name: ProbeMetric, Unit: workload.Microseconds, Better: workload.Lower, Doc: "a trivial statement's round trip on the point's path, timed before a server-side experiment's statement: what the path costs a round trip, which predicts the row-by-row points that run after it"},
	{Name: ClientCPUMetric, Unit: workload.Microseconds, Better: workload.Lower, Doc: "the streams' (client-stream, wide-rows, cursor-messages): the CPU time the client's thread spent on each row while the statement ran (its reads, the driver's decoding, client_cost): what a client capped below a whole core (cpu_speed) must still spend"},
	{Name: ProbeSpinMetric, Unit: workload.Microseconds, Better: workload.Lower, Doc: "the same round trip with a lowest-priority busy loop on each CPU (client.idle = spin), timed after " + ProbeMetric + " on a server-loop point: predicts the row-by-row points whose CPUs spin"},
}, sampleMetrics()...)

// ProbeMetric is the server-side experiments' probe of their path's round
// trip (see probeRoundTrips), and ProbeSpinMetric a server-loop point's
// same probe with a busy loop on each CPU (see probeSpinning).
const (
	ProbeMetric     = "probe_rt_us"
	ProbeSpinMetric = "probe_spin_rt_us"
)

// ClientCPUMetric is the client's CPU time per row of a timed statement
// (see clientClock).
const ClientCPUMetric = "client_cpu_us_per_row"

// clientClock times a statement by the wall clock and by the CPU time of
// the client's thread, which Run locks to the goroutine: the client's
// reads, the driver's decoding and client_cost all run there, where the
// process's time would count the emulated link's relay too when the
// client runs in dbrig's own process.
type clientClock struct {
	start time.Time
	cpu   time.Duration
}

func startClientClock() clientClock {
	return clientClock{start: time.Now(), cpu: threadCPU()}
}

// stop returns the wall time and the thread's CPU time since the start.
func (c clientClock) stop() (elapsed, cpu time.Duration) {
	return time.Since(c.start), threadCPU() - c.cpu
}

// threadCPU is the calling thread's CPU time (0 where the clock cannot be
// read, which leaves the figure out rather than wrong: see withClientCPU).
func threadCPU() time.Duration {
	cpu, err := procstat.ThreadCPU()
	if err != nil {
		return 0
	}
	return cpu
}

// withClientCPU adds the client's CPU time per row to a stream's
// measurement; a server-side point's client waits for rows it never
// receives, so its CPU over them would mean nothing.
func withClientCPU(m workload.Measurement, cpu time.Duration, rows int64) workload.Measurement {
	if m.Metrics != nil && cpu > 0 && rows > 0 {
		m.Metrics[ClientCPUMetric] = cpu.Seconds() * 1e6 / float64(rows)
	}
	return m
}

// A probe warms up for probeWarmUp, then makes at most probeTrips timed
// round trips and stops once it has spent probeBudget: a tenth of a second
// on a fast path, where a row-by-row point makes seconds of them and
// another process's burst of CPU moves a shorter sample by tens of
// percent; one round trip across a WAN.
const (
	probeWarmUp = 10 * time.Millisecond
	probeTrips  = 500
	probeBudget = 100 * time.Millisecond
)

// probeRoundTrips times round trips of one row each on a server-side
// point's fresh session, before its statement, and returns their mean as
// ProbeMetric. The relay of an emulated link costs each round trip the
// wake-up of the processes on either side, which depends on where they
// run, and a delay hides part of it (the link stamps an arrival in the
// kernel, before its reader wakes); neither is known before the study
// runs, and row-by-row work pays it on every row. Before the statement,
// as a row-by-row point starts its rows: for 200 to 400 ms after a
// statement's hundreds of milliseconds on a CPU, the scheduler keeps
// waking the client on the other, halted, vCPU (unix socket, load average
// 8: 127, 59 and 43 µs a round trip in the first 100 ms against 33, 30
// and 18 without the statement; 65 against the row-by-row point's 34 µs
// in the quiet quick run of 2026-11-27, probed after the statement).
func probeRoundTrips(trip func() error) (map[string]float64, error) {
	for start := time.Now(); time.Since(start) < probeWarmUp; {
		if err := trip(); err != nil {
			return nil, fmt.Errorf("probe round trip: %w", err)
		}
	}
	start := time.Now()
	n := 0
	for n < probeTrips && (n == 0 || time.Since(start) < probeBudget) {
		if err := trip(); err != nil {
			return nil, fmt.Errorf("probe round trip: %w", err)
		}
		n++
	}
	return map[string]float64{ProbeMetric: time.Since(start).Seconds() * 1e6 / float64(n)}, nil
}

type rbar struct {
	experiment string
	rows       int64
	rowBytes   int64
	rowByRow   string
	clientCost time.Duration
	instance   string
	// probeSpin asks a server-loop point for the probe with the idle
	// loops (probe_spin).
	probeSpin bool
	// transport is the point's path to the server, as Env.Conn gave it:
	// "unix", "tcp" (direct loopback) or "link".
	transport string
}

var _ workload.Workload = (*rbar)(nil)

func newWorkload(p workload.Params) (workload.Workload, error) {
	w := &rbar{
		experiment: p.String("experiment"),
		rows:       p.Int("rows"),
		rowBytes:   p.Int("row_bytes"),
		rowByRow:   p.String("row_by_row"),
		clientCost: p.Duration("client_cost"),
		instance:   p.String("instance"),
		probeSpin:  p.Bool("probe_spin"),
	}
	return w, nil
}

// Prepare creates the database, the table of objects and the cursor loops
// in the dialect of the instance's engine.
func (w *rbar) Prepare(ctx context.Context, env *workload.Env) error {
	inst := env.Instance(w.instance)
	if inst == nil {
		return fmt.Errorf("no instance %q", w.instance)
	}
	var stmts []string
	switch inst.Engine() {
	case postgres.Name:
		stmts = postgresSchema()
	case mariadb.Name:
		stmts = mariadbSchema()
	default:
		return fmt.Errorf("instance %q runs %s: the rbar workload speaks PostgreSQL's and MariaDB's dialects only", w.instance, inst.Engine())
	}
	if err := inst.CreateDatabase(ctx, env.Database); err != nil {
		return err
	}
	return inst.Exec(ctx, env.Database, stmts...)
}

// crossJoin is the seed's row source: a nested loop over a table of 1,000
// objects joined with itself three times (cut at N rows by each engine's
// own means).
const crossJoin = `SELECT a.id FROM rbar_objects a, rbar_objects b, rbar_objects c`

// Run measures one point in the dialect of the engine the point reaches.
func (w *rbar) Run(ctx context.Context, env *workload.Env) (workload.Measurement, error) {
	ep, err := env.Conn(env.ClientSite, w.instance, env.Database)
	if err != nil {
		return workload.Measurement{}, err
	}
	w.transport = ep.Transport
	// The client's CPU time is its thread's (clientClock): the goroutine
	// stays on it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var m workload.Measurement
	switch ep.Conn.Engine {
	case postgres.Name:
		m, err = w.runPostgres(ctx, env, ep.Conn)
	case mariadb.Name:
		m, err = w.runMariaDB(ctx, env, ep.Conn)
	default:
		err = fmt.Errorf("the rbar workload speaks PostgreSQL's and MariaDB's dialects only, not %q", ep.Conn.Engine)
	}
	if err != nil {
		if ctx.Err() != nil {
			// A cancelled run's connection was shut down under it: what
			// the driver saw (an unexpected EOF) is not the cause.
			err = ctx.Err()
		}
		return m, fmt.Errorf("%s over %s: %w", w.experiment, ep.Conn, err)
	}
	m.Metrics["rows"] = float64(w.rows)
	return m, nil
}

// spend burns the client's per-row CPU cost, counted from t.
func (w *rbar) spend(t time.Time) {
	if w.clientCost <= 0 {
		return
	}
	for time.Since(t) < w.clientCost {
	}
}

// roundTrips calls next once per row, each call one round trip that
// returns one row, and records each round trip (with the client's own
// time on the row) in the histogram "row". The first call also plans the
// query on the server and is not measured.
func (w *rbar) roundTrips(env *workload.Env, next func() error) (workload.Measurement, error) {
	measured := w.rows - 1
	if measured < 1 {
		return workload.Measurement{}, errors.New("client-row-by-row needs at least 2 rows (the first one warms up)")
	}
	if err := next(); err != nil {
		return workload.Measurement{}, err
	}
	rt := measure.NewHistogram()
	start := time.Now()
	prev := start
	for i := int64(0); i < measured; i++ {
		if err := next(); err != nil {
			return workload.Measurement{}, err
		}
		now := time.Now()
		w.spend(now)
		if w.clientCost > 0 {
			now = time.Now()
		}
		rt.Record(now.Sub(prev))
		prev = now
		if i&255 == 0 && env.Progress != nil {
			env.Progress(i, measured)
		}
	}
	secs := time.Since(start).Seconds()
	m := workload.Measurement{Metrics: map[string]float64{
		"seconds":     secs,
		"us_per_row":  secs * 1e6 / float64(measured),
		"rows_per_s":  float64(measured) / secs,
		"row_mean_us": float64(rt.Mean()) / 1e3,
	}}
	m.Histograms = map[string]*measure.Histogram{"row": rt}
	return m, nil
}

// serverSideMetrics are the figures of work done on the server in one
// round trip.
func (w *rbar) serverSideMetrics(elapsed time.Duration) workload.Measurement {
	return workload.Measurement{Metrics: map[string]float64{
		"seconds":    elapsed.Seconds(),
		"us_per_row": elapsed.Seconds() * 1e6 / float64(w.rows),
	}}
}

// streamMetrics are the figures of rows received in a stream.
func streamMetrics(rows, wire int64, elapsed time.Duration) workload.Measurement {
	secs := elapsed.Seconds()
	return workload.Measurement{Metrics: map[string]float64{
		"seconds":        secs,
		"us_per_row":     secs * 1e6 / float64(rows),
		"rows_per_s":     float64(rows) / secs,
		"wire_bytes":     float64(wire),
		"throughput_bps": float64(wire) * 8 / secs,
	}}
}
