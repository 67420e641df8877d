package rbar

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dbrig/dbrig/internal/blockconn"
	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/workload"
)

// postgresSchema makes the table of objects and the two cursor loops.
func postgresSchema() []string {
	return []string{
		`CREATE TABLE rbar_objects (id int PRIMARY KEY)`,
		`INSERT INTO rbar_objects SELECT g FROM generate_series(1, ` + strconv.Itoa(objects) + `) g`,
		`ANALYZE rbar_objects`,
		// The seed's empty cursor: FETCH each row into a variable, assign it.
		cursorLoop("rbar_cursor", "v := v;"),
		// The seed's cursor that returns each row as a result set of its own:
		// each row leaves the server as a message, without a round trip.
		cursorLoop("rbar_messages", "RAISE NOTICE '%', v;"),
	}
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

// runPostgres measures one point on PostgreSQL through pgx's connection.
func (w *rbar) runPostgres(ctx context.Context, env *workload.Env, login engine.Conn) (workload.Measurement, error) {
	cfg, err := postgres.ConnInfoOf(login).ConnConfig()
	if err != nil {
		return workload.Measurement{}, err
	}
	// Every point counts notices: a server-loop point samples the
	// cursor-messages experiment too (see takeSamples), without the
	// client's per-row cost.
	var notices, noticeBytes int64
	measuring := w.experiment == "cursor-messages"
	cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
		notices++
		noticeBytes += noticeWireBytes(n)
		if !measuring {
			return
		}
		w.spend(time.Now())
		if notices&4095 == 0 && env.Progress != nil {
			env.Progress(notices, w.rows)
		}
	}
	// One request at a time on one connection: a blocking socket costs
	// the client less per round trip than Go's poller (see blockconn).
	cfg.DialFunc = blockconn.Dial
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return workload.Measurement{}, fmt.Errorf("connect to %s: %w", login, err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	// MAXDOP 1: the seed's loops run on one thread.
	if _, err := conn.Exec(ctx, "SET max_parallel_workers_per_gather = 0"); err != nil {
		return workload.Measurement{}, err
	}
	pc := conn.PgConn()
	switch w.experiment {
	case "server-loop", "server-cursor":
		sql := `SELECT count(*) FROM (` + crossJoin + ` LIMIT $1) s`
		if w.experiment == "server-cursor" {
			sql = `SELECT rbar_cursor($1)`
		}
		return w.pgServerSideProbed(ctx, pc, sql, &notices, &noticeBytes)
	case "cursor-messages":
		m, cpu, err := w.pgServerSide(ctx, pc, `SELECT rbar_messages($1)`)
		if err != nil {
			return m, err
		}
		m = withClientCPU(m, cpu, w.rows) // the client read every row's notice
		if notices != w.rows {
			return m, fmt.Errorf("received %d row messages, want %d", notices, w.rows)
		}
		m.Metrics["wire_bytes"] = float64(noticeBytes)
		m.Metrics["throughput_bps"] = float64(noticeBytes) * 8 / m.Metrics["seconds"]
		m.Metrics["rows_per_s"] = float64(w.rows) / m.Metrics["seconds"]
		return m, nil
	case "client-stream", "wide-rows":
		return w.pgStream(ctx, pc, env, w.pgStreamSQL(), w.rows)
	case "client-row-by-row":
		return w.pgRowByRow(ctx, pc, env)
	}
	return workload.Measurement{}, fmt.Errorf("unknown experiment %q", w.experiment)
}

// pgServerSideProbed runs a server-side point (probedServerSide) on
// PostgreSQL; notices and noticeBytes are what the connection's handler
// counts, which the sample of cursor-messages reads.
func (w *rbar) pgServerSideProbed(ctx context.Context, pc *pgconn.PgConn, sql string, notices, noticeBytes *int64) (workload.Measurement, error) {
	return w.probedServerSide(serverSideSteps{
		probe: func(timer func(trip func() error) (map[string]float64, error)) (map[string]float64, error) {
			return w.pgProbe(ctx, pc, timer)
		},
		trip: func() error { return pc.Exec(ctx, "SELECT 1").Close() },
		sample: func(exp string, n int64) (int64, error) {
			*notices, *noticeBytes = 0, 0
			wire, err := w.pgSample(ctx, pc, exp, n)
			if exp == "cursor-messages" && err == nil {
				if *notices != n {
					return 0, fmt.Errorf("received %d row messages, want %d", *notices, n)
				}
				wire = *noticeBytes
			}
			return wire, err
		},
		statement: func() (workload.Measurement, error) {
			m, _, err := w.pgServerSide(ctx, pc, sql)
			return m, err
		},
	})
}

// pgStreamSQL is the statement of a stream of n ($1) rows: the cross
// join's ids, or rows of row_bytes characters.
func (w *rbar) pgStreamSQL() string {
	if w.experiment == "wide-rows" {
		return `SELECT x FROM generate_series(1, $1) g, (SELECT rpad('a', ` + strconv.FormatInt(w.rowBytes, 10) + `) AS x) c`
	}
	return crossJoin + " LIMIT $1"
}

// pgSample runs n rows of another experiment on the point's session, with
// none of the client's per-row cost, and returns the stream's wire bytes
// (the notices' are counted by the connection's handler).
func (w *rbar) pgSample(ctx context.Context, pc *pgconn.PgConn, exp string, n int64) (int64, error) {
	arg := [][]byte{[]byte(strconv.FormatInt(n, 10))}
	switch exp {
	case "client-stream", "wide-rows":
		sample := *w
		sample.experiment = exp
		got, wire, err := readStream(ctx, pc, sample.pgStreamSQL(), n, nil)
		if err == nil && got != n {
			err = fmt.Errorf("received %d rows, want %d", got, n)
		}
		return wire, err
	case "server-cursor":
		return 0, pc.ExecParams(ctx, `SELECT rbar_cursor($1)`, arg, nil, nil, nil).Read().Err
	case "cursor-messages":
		return 0, pc.ExecParams(ctx, `SELECT rbar_messages($1)`, arg, nil, nil, nil).Read().Err
	}
	return 0, fmt.Errorf("no sample of %q", exp)
}

// pgServerSide times one statement that processes every row on the server
// and returns one value: one round trip whatever the row count; the
// client's CPU over it, which only cursor-messages' notices give a row's
// meaning to.
func (w *rbar) pgServerSide(ctx context.Context, pc *pgconn.PgConn, sql string) (workload.Measurement, time.Duration, error) {
	if err := pc.Exec(ctx, "SELECT 1").Close(); err != nil { // warm the connection
		return workload.Measurement{}, 0, err
	}
	n := []byte(strconv.FormatInt(w.rows, 10))
	clock := startClientClock()
	res := pc.ExecParams(ctx, sql, [][]byte{n}, nil, nil, nil).Read()
	elapsed, cpu := clock.stop()
	if res.Err != nil {
		return workload.Measurement{}, 0, res.Err
	}
	if len(res.Rows) != 1 || string(res.Rows[0][0]) != string(n) {
		return workload.Measurement{}, 0, fmt.Errorf("the server counted %v rows, want %s", res.Rows, n)
	}
	return w.serverSideMetrics(elapsed), cpu, nil
}

// pgProbe probes the path with the row-by-row points' own round trip, a
// FETCH NEXT from a cursor over the cross join, so that the server's and
// the client's work on it are theirs too; probe times the trips
// (probeRoundTrips or probeSpinning).
func (w *rbar) pgProbe(ctx context.Context, pc *pgconn.PgConn, probe func(trip func() error) (map[string]float64, error)) (map[string]float64, error) {
	if err := pc.Exec(ctx, "BEGIN; DECLARE rbar_probe NO SCROLL CURSOR FOR "+crossJoin).Close(); err != nil {
		return nil, err
	}
	defer func() { _ = pc.Exec(context.WithoutCancel(ctx), "ROLLBACK").Close() }()
	return probe(func() error {
		_, err := pc.Exec(ctx, "FETCH NEXT FROM rbar_probe").ReadAll()
		return err
	})
}

// dataRowOverhead is the protocol's bytes per one-column DataRow besides
// the value: type (1), length (4), column count (2), value length (4).
const dataRowOverhead = 11

// pgStream reads one result set of rows and discards them as they arrive.
func (w *rbar) pgStream(ctx context.Context, pc *pgconn.PgConn, env *workload.Env, sql string, rows int64) (workload.Measurement, error) {
	if err := pc.Exec(ctx, "SELECT 1").Close(); err != nil {
		return workload.Measurement{}, err
	}
	clock := startClientClock()
	got, wire, err := readStream(ctx, pc, sql, rows, func(got int64) {
		w.spend(time.Now())
		if got&4095 == 0 && env.Progress != nil {
			env.Progress(got, rows)
		}
	})
	if err != nil {
		return workload.Measurement{}, err
	}
	elapsed, cpu := clock.stop()
	if got != rows {
		return workload.Measurement{}, fmt.Errorf("received %d rows, want %d", got, rows)
	}
	return withClientCPU(streamMetrics(rows, wire, elapsed), cpu, rows), nil
}

// readStream runs sql for rows ($1) and reads its rows, calling perRow
// (when set) after each: the rows received and their protocol bytes.
func readStream(ctx context.Context, pc *pgconn.PgConn, sql string, rows int64, perRow func(got int64)) (got, wire int64, err error) {
	rr := pc.ExecParams(ctx, sql, [][]byte{[]byte(strconv.FormatInt(rows, 10))}, nil, nil, nil)
	for rr.NextRow() {
		for _, v := range rr.Values() {
			wire += int64(len(v)) + dataRowOverhead
		}
		got++
		if perRow != nil {
			perRow(got)
		}
	}
	_, err = rr.Close()
	return got, wire, err
}

// pgRowByRow makes one round trip per row: FETCH NEXT from a cursor over
// the cross join, or a prepared SELECT $1.
func (w *rbar) pgRowByRow(ctx context.Context, pc *pgconn.PgConn, env *workload.Env) (workload.Measurement, error) {
	var next func() error
	switch w.rowByRow {
	case "fetch":
		if err := pc.Exec(ctx, "BEGIN; DECLARE rbar_c NO SCROLL CURSOR FOR "+crossJoin+" LIMIT "+strconv.FormatInt(w.rows, 10)).Close(); err != nil {
			return workload.Measurement{}, err
		}
		defer func() { _ = pc.Exec(context.WithoutCancel(ctx), "ROLLBACK").Close() }()
		next = func() error {
			res, err := pc.Exec(ctx, "FETCH NEXT FROM rbar_c").ReadAll()
			if err != nil {
				return err
			}
			if len(res) != 1 || len(res[0].Rows) != 1 {
				return errors.New("the cursor ran out of rows early")
			}
			return nil
		}
	case "select":
		if _, err := pc.Prepare(ctx, "rbar_select", "SELECT $1::int", nil); err != nil {
			return workload.Measurement{}, err
		}
		var i int64
		arg := [][]byte{nil}
		formats := []int16{0}
		next = func() error {
			i++
			arg[0] = strconv.AppendInt(arg[0][:0], i%objects+1, 10)
			res := pc.ExecPrepared(ctx, "rbar_select", arg, formats, formats).Read()
			if res.Err != nil {
				return res.Err
			}
			if len(res.Rows) != 1 {
				return fmt.Errorf("SELECT $1 returned %d rows", len(res.Rows))
			}
			return nil
		}
	default:
		return workload.Measurement{}, fmt.Errorf("row_by_row = %q: want fetch or select", w.rowByRow)
	}
	return w.roundTrips(env, next)
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
