// Package rbar is the row-by-row ("RBAR") workload of seed 004: how much
// network latency, link speed and the client's own speed cost a process that
// handles rows one at a time, against set-based and streaming work.
//
// Five experiments, each over N rows of a nested-loop cross join (the
// analogue of the seed's cross join of sys.objects with MAXDOP 1):
//
//   - server-loop: count the rows on the server; one round trip in all.
//   - server-cursor: a PL/pgSQL loop FETCHes the rows one by one from a
//     cursor and assigns each to a variable; one round trip in all.
//   - client-stream: the rows stream to the client in one result set and are
//     discarded as they arrive.
//   - cursor-messages: a server-side cursor loop sends every row to the
//     client as a message of its own (RAISE NOTICE) without waiting for the
//     client: the seed's "10 million result sets", which stream.
//   - client-row-by-row: one round trip per row (FETCH NEXT from a cursor, or
//     a prepared SELECT $1 per row), so time per row = RTT + server + client.
//   - wide-rows: rows of row_bytes (8,000) characters stream to the client;
//     the link's rate and window decide.
package rbar

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/measure"
	"github.com/dbrig/dbrig/internal/study"
)

// Experiments, in the seed's order.
var Experiments = []string{"server-loop", "server-cursor", "client-stream", "cursor-messages", "client-row-by-row", "wide-rows"}

// objects is the size of the table cross-joined with itself three times:
// 1,000^3 = 10^9 rows, the seed's largest count.
const objects = 1000

// Kind registers the workload.
func Kind() study.Kind {
	return study.Kind{
		Name: "rbar",
		Doc:  "row-by-row vs set-based vs streaming work across a link (seed 004)",
		Params: []study.ParamSpec{
			{Name: "experiment", Kind: study.StringParam, Choices: Experiments, Doc: "which experiment runs"},
			{Name: "rows", Kind: study.IntParam, Doc: "rows processed (at most 10^9)"},
			{Name: "row_bytes", Kind: study.SizeParam, Default: int64(8000), Doc: "bytes per row of the wide-rows experiment"},
			{Name: "row_by_row", Kind: study.StringParam, Default: "fetch", Choices: []string{"fetch", "select"},
				Doc: "client-row-by-row: FETCH NEXT from a cursor per row, or a prepared SELECT $1 per row"},
			{Name: "client_cost", Kind: study.DurationParam, Default: "0s",
				Doc: "CPU time the client spends on each row it receives (a slower client's dead time)"},
			{Name: "instance", Kind: study.StringParam, Default: "db", Doc: "the instance the client talks to"},
		},
		New:        newWorkload,
		Metrics:    Metrics,
		Judges:     Judges(),
		Model:      Model,
		PrepareKey: func(study.Params) string { return "rbar-v1" },
		Report:     Report,
		Engines:    []string{"postgres"},
		EnginesWhy: "its experiments are written in PostgreSQL's dialect",
	}
}

// Metrics are what the experiments measure.
var Metrics = []study.MetricSpec{
	{Name: "us_per_row", Unit: study.Microseconds, Better: study.Lower, Headline: true, Doc: "time per row: the run's time over its rows"},
	{Name: "throughput_bps", Unit: study.BitsPerSecond, Better: study.Higher, Headline: true, Doc: "protocol bytes streamed to the client per second"},
	{Name: "seconds", Unit: study.Seconds, Better: study.Lower, Doc: "the measured time of the run"},
	{Name: "rows_per_s", Unit: study.PerSecond, Better: study.Higher, Doc: "rows the client received per second"},
	{Name: "wire_bytes", Unit: study.Bytes, Doc: "protocol bytes of the rows"},
	{Name: "rows", Unit: study.Count, Doc: "rows processed"},
	{Name: "row_mean_us", Unit: study.Microseconds, Better: study.Lower, Doc: "round trip per row, mean (the percentiles come from the merged histogram \"row\")"},
}

type workload struct {
	experiment string
	rows       int64
	rowBytes   int64
	rowByRow   string
	clientCost time.Duration
	instance   string
}

var _ study.Workload = (*workload)(nil)

func newWorkload(p study.Params) (study.Workload, error) {
	w := &workload{
		experiment: p.String("experiment"),
		rows:       p.Int("rows"),
		rowBytes:   p.Int("row_bytes"),
		rowByRow:   p.String("row_by_row"),
		clientCost: p.Duration("client_cost"),
		instance:   p.String("instance"),
	}
	if w.rows > objects*objects*objects {
		return nil, fmt.Errorf("rows = %d: at most %d", w.rows, objects*objects*objects)
	}
	return w, nil
}

// Prepare creates the database, the table of objects and the cursor loop.
func (w *workload) Prepare(ctx context.Context, env *study.Env) error {
	inst := env.Instance(w.instance)
	if inst == nil {
		return fmt.Errorf("no instance %q", w.instance)
	}
	if err := inst.CreateDatabase(ctx, env.Database); err != nil {
		return err
	}
	return inst.Exec(ctx, env.Database,
		`CREATE TABLE rbar_objects (id int PRIMARY KEY)`,
		`INSERT INTO rbar_objects SELECT g FROM generate_series(1, `+strconv.Itoa(objects)+`) g`,
		`ANALYZE rbar_objects`,
		// The seed's empty cursor: FETCH each row into a variable, assign it.
		cursorLoop("rbar_cursor", "v := v;"),
		// The seed's cursor that returns each row as a result set of its own:
		// each row leaves the server as a message, without a round trip.
		cursorLoop("rbar_messages", "RAISE NOTICE '%', v;"),
	)
}

// cursorLoop makes a PL/pgSQL function name(n) that FETCHes n rows of
// the cross join one at a time from a cursor and runs perRow on each.
func cursorLoop(name, perRow string) string {
	return `CREATE FUNCTION ` + name + `(n bigint) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
  c NO SCROLL CURSOR FOR ` + crossJoin + ` LIMIT n;
  v int;
  k bigint := 0;
BEGIN
  OPEN c;
  LOOP
    FETCH c INTO v;
    EXIT WHEN NOT FOUND;
    ` + perRow + `
    k := k + 1;
  END LOOP;
  CLOSE c;
  RETURN k;
END $$`
}

// crossJoin is the seed's row source: a nested loop over a table of 1,000
// objects joined with itself three times, cut at N rows.
const crossJoin = `SELECT a.id FROM rbar_objects a, rbar_objects b, rbar_objects c`

// Run measures one point.
func (w *workload) Run(ctx context.Context, env *study.Env) (study.Measurement, error) {
	ep, err := env.Conn(env.ClientSite, w.instance, env.Database)
	if err != nil {
		return study.Measurement{}, err
	}
	cfg, err := postgres.ConnInfoOf(ep.Conn).ConnConfig()
	if err != nil {
		return study.Measurement{}, err
	}
	var notices, noticeBytes int64
	if w.experiment == "cursor-messages" {
		cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
			notices++
			noticeBytes += noticeWireBytes(n)
			w.spend(time.Now())
			if notices&4095 == 0 && env.Progress != nil {
				env.Progress(notices, w.rows)
			}
		}
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return study.Measurement{}, fmt.Errorf("connect to %s: %w", ep.Conn, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	// MAXDOP 1: the seed's loops run on one thread.
	if _, err := conn.Exec(ctx, "SET max_parallel_workers_per_gather = 0"); err != nil {
		return study.Measurement{}, err
	}
	pc := conn.PgConn()
	var m study.Measurement
	switch w.experiment {
	case "server-loop":
		m, err = w.serverSide(ctx, pc, `SELECT count(*) FROM (`+crossJoin+` LIMIT $1) s`)
	case "server-cursor":
		m, err = w.serverSide(ctx, pc, `SELECT rbar_cursor($1)`)
	case "cursor-messages":
		m, err = w.serverSide(ctx, pc, `SELECT rbar_messages($1)`)
		if err == nil {
			if notices != w.rows {
				err = fmt.Errorf("received %d row messages, want %d", notices, w.rows)
			} else {
				m.Metrics["wire_bytes"] = float64(noticeBytes)
				m.Metrics["throughput_bps"] = float64(noticeBytes) * 8 / m.Metrics["seconds"]
				m.Metrics["rows_per_s"] = float64(w.rows) / m.Metrics["seconds"]
			}
		}
	case "client-stream":
		m, err = w.stream(ctx, pc, env, crossJoin+" LIMIT $1", w.rows)
	case "wide-rows":
		m, err = w.stream(ctx, pc, env, `SELECT x FROM generate_series(1, $1) g, (SELECT rpad('a', `+strconv.FormatInt(w.rowBytes, 10)+`) AS x) c`, w.rows)
	case "client-row-by-row":
		m, err = w.rowByRowRun(ctx, pc, env)
	default:
		err = fmt.Errorf("unknown experiment %q", w.experiment)
	}
	if err != nil {
		return m, fmt.Errorf("%s over %s: %w", w.experiment, ep.Conn, err)
	}
	m.Metrics["rows"] = float64(w.rows)
	return m, nil
}

// serverSide times one statement that processes every row on the server
// and returns one value: one round trip whatever the row count.
func (w *workload) serverSide(ctx context.Context, pc *pgconn.PgConn, sql string) (study.Measurement, error) {
	if err := pc.Exec(ctx, "SELECT 1").Close(); err != nil { // warm the connection
		return study.Measurement{}, err
	}
	n := []byte(strconv.FormatInt(w.rows, 10))
	start := time.Now()
	res := pc.ExecParams(ctx, sql, [][]byte{n}, nil, nil, nil).Read()
	elapsed := time.Since(start)
	if res.Err != nil {
		return study.Measurement{}, res.Err
	}
	if len(res.Rows) != 1 || string(res.Rows[0][0]) != string(n) {
		return study.Measurement{}, fmt.Errorf("the server counted %v rows, want %s", res.Rows, n)
	}
	return study.Measurement{Metrics: map[string]float64{
		"seconds":    elapsed.Seconds(),
		"us_per_row": elapsed.Seconds() * 1e6 / float64(w.rows),
	}}, nil
}

// dataRowOverhead is the protocol's bytes per one-column DataRow besides
// the value: type (1), length (4), column count (2), value length (4).
const dataRowOverhead = 11

// stream reads one result set of rows and discards them as they arrive.
func (w *workload) stream(ctx context.Context, pc *pgconn.PgConn, env *study.Env, sql string, rows int64) (study.Measurement, error) {
	if err := pc.Exec(ctx, "SELECT 1").Close(); err != nil {
		return study.Measurement{}, err
	}
	n := []byte(strconv.FormatInt(rows, 10))
	var got, wire int64
	start := time.Now()
	rr := pc.ExecParams(ctx, sql, [][]byte{n}, nil, nil, nil)
	for rr.NextRow() {
		for _, v := range rr.Values() {
			wire += int64(len(v)) + dataRowOverhead
		}
		got++
		w.spend(time.Now())
		if got&4095 == 0 && env.Progress != nil {
			env.Progress(got, rows)
		}
	}
	if _, err := rr.Close(); err != nil {
		return study.Measurement{}, err
	}
	elapsed := time.Since(start)
	if got != rows {
		return study.Measurement{}, fmt.Errorf("received %d rows, want %d", got, rows)
	}
	secs := elapsed.Seconds()
	return study.Measurement{Metrics: map[string]float64{
		"seconds":        secs,
		"us_per_row":     secs * 1e6 / float64(rows),
		"rows_per_s":     float64(rows) / secs,
		"wire_bytes":     float64(wire),
		"throughput_bps": float64(wire) * 8 / secs,
	}}, nil
}

// spend burns the client's per-row CPU cost, counted from t.
func (w *workload) spend(t time.Time) {
	if w.clientCost <= 0 {
		return
	}
	for time.Since(t) < w.clientCost {
	}
}

// rowByRowRun makes one round trip per row and records each round trip.
func (w *workload) rowByRowRun(ctx context.Context, pc *pgconn.PgConn, env *study.Env) (study.Measurement, error) {
	rt := measure.NewHistogram()
	var next func() (string, error)
	switch w.rowByRow {
	case "fetch":
		if err := pc.Exec(ctx, "BEGIN; DECLARE rbar_c NO SCROLL CURSOR FOR "+crossJoin+" LIMIT "+strconv.FormatInt(w.rows, 10)).Close(); err != nil {
			return study.Measurement{}, err
		}
		defer func() { _ = pc.Exec(context.WithoutCancel(ctx), "ROLLBACK").Close() }()
		next = func() (string, error) {
			res, err := pc.Exec(ctx, "FETCH NEXT FROM rbar_c").ReadAll()
			if err != nil {
				return "", err
			}
			if len(res) != 1 || len(res[0].Rows) != 1 {
				return "", errors.New("the cursor ran out of rows early")
			}
			return string(res[0].Rows[0][0]), nil
		}
	case "select":
		if _, err := pc.Prepare(ctx, "rbar_select", "SELECT $1::int", nil); err != nil {
			return study.Measurement{}, err
		}
		var i int64
		arg := [][]byte{nil}
		formats := []int16{0}
		next = func() (string, error) {
			i++
			arg[0] = strconv.AppendInt(arg[0][:0], i%objects+1, 10)
			res := pc.ExecPrepared(ctx, "rbar_select", arg, formats, formats).Read()
			if res.Err != nil {
				return "", res.Err
			}
			if len(res.Rows) != 1 {
				return "", fmt.Errorf("SELECT $1 returned %d rows", len(res.Rows))
			}
			return string(res.Rows[0][0]), nil
		}
	}
	if _, err := next(); err != nil { // the first round trip also plans the query: not measured
		return study.Measurement{}, err
	}
	measured := w.rows - 1
	if measured < 1 {
		return study.Measurement{}, errors.New("client-row-by-row needs at least 2 rows (the first one warms up)")
	}
	start := time.Now()
	prev := start
	for i := int64(0); i < measured; i++ {
		if _, err := next(); err != nil {
			return study.Measurement{}, err
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
	m := study.Measurement{Metrics: map[string]float64{
		"seconds":    secs,
		"us_per_row": secs * 1e6 / float64(measured),
		"rows_per_s": float64(measured) / secs,
	}}
	m.Metrics["row_mean_us"] = float64(rt.Mean()) / 1e3
	m.Histograms = map[string]*measure.Histogram{"row": rt}
	return m, nil
}

// noticeWireBytes is the size of a NoticeResponse message on the wire: type
// and length (5), each field's code, text and terminator, and the final
// terminator.
func noticeWireBytes(n *pgconn.Notice) int64 {
	size := int64(6)
	for _, f := range []string{n.Severity, n.SeverityUnlocalized, n.Code, n.Message, n.Detail, n.Hint, n.Where,
		n.SchemaName, n.TableName, n.ColumnName, n.DataTypeName, n.ConstraintName, n.File, n.Routine} {
		if f != "" {
			size += int64(len(f)) + 2
		}
	}
	if n.Line != 0 {
		size += int64(len(strconv.Itoa(int(n.Line)))) + 2
	}
	if n.Position != 0 {
		size += int64(len(strconv.Itoa(int(n.Position)))) + 2
	}
	if n.InternalPosition != 0 {
		size += int64(len(strconv.Itoa(int(n.InternalPosition)))) + 2
	}
	if n.InternalQuery != "" {
		size += int64(len(n.InternalQuery)) + 2
	}
	return size
}
