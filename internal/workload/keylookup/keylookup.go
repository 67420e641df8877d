package keylookup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dbrig/dbrig/internal/measure"
	"github.com/dbrig/dbrig/internal/workload"
	"github.com/dbrig/dbrig/internal/workload/dbconn"
	"github.com/dbrig/dbrig/internal/workload/widetable"
)

// Paths a point measures.
const (
	Scan   = "scan"   // a full scan of the table
	Lookup = "lookup" // the index on j, and a lookup of each row it points to
)

// Kind registers the workload.
func Kind() workload.Kind {
	return workload.Kind{
		Name: "key-lookup",
		Doc:  "max(dt) of seed 002's wide table by a full scan or through the index on j with a lookup per row, all pages cached",
		Params: []workload.ParamSpec{
			{Name: "rows", Type: workload.IntParam, Default: int64(2_000_000),
				Doc: "rows of the table (the seed: 2,000,000, about 16 GB: one row per 8 KiB page)",
				Min: 2, MinWhy: widetable.MinRowsWhy, Max: widetable.MaxRows, Why: widetable.MaxRowsWhy},
			{Name: "path", Type: workload.StringParam, Choices: []string{Scan, Lookup},
				Doc: `"scan": SELECT max(dt) FROM test by a full scan; "lookup": the same forced through the index on j, a lookup per row`},
			{Name: "executions", Type: workload.IntParam, Default: int64(5),
				Doc: "timed executions of the query in a point, after one to warm up and one whose pages are counted; the point's time is their median",
				Max: 1000, Why: "as many as a combination's runs: a median of 5 is the seed's"},
			{Name: "instance", Type: workload.StringParam, Default: "db", Doc: "the instance that holds the table"},
		},
		New: newWorkload,
		PrepareKey: func(p workload.Params) string {
			return fmt.Sprintf("key-lookup rows=%d instance=%s", p.Int("rows"), p.String("instance"))
		},
		Model:   Model,
		Predict: Predict,
		Metrics: metricSpecs(),
	}
}

func metricSpecs() []workload.MetricSpec {
	return []workload.MetricSpec{
		{Name: "time_ms", Unit: workload.Milliseconds, Better: workload.Lower, Headline: true,
			Doc: "the query's time: the median of the timed executions, on the client's clock"},
		{Name: "pages", Unit: workload.Count, Better: workload.Lower, Headline: true,
			Doc: "pages the query touched in the cache (the seed's logical reads): PostgreSQL's EXPLAIN (ANALYZE, BUFFERS) shared hits and reads; MariaDB's Innodb_buffer_pool_read_requests"},
		{Name: "physical_reads", Unit: workload.Count, Better: workload.Lower,
			Doc: "of those, pages read from outside the server's cache (0: all pages cached, as in the seed)"},
		{Name: "pages_per_row", Unit: workload.Count, Doc: "pages touched per row of the table"},
		{Name: "rows", Unit: workload.Count, Doc: "rows of the table"},
		{Name: "table_pages", Unit: workload.Count, Doc: "pages a full scan reads: PostgreSQL's heap, InnoDB's clustered index leaves"},
		{Name: "index_pages", Unit: workload.Count, Doc: "pages of the index on j (InnoDB: its leaves)"},
		{Name: "page_bytes", Unit: workload.Bytes, Doc: "the engine's page size"},
		{Name: "lookup_depth", Unit: workload.Count,
			Doc: "pages one lookup of a row by what the index holds touches: PostgreSQL fetches a heap page by its address (a TID scan); InnoDB descends its clustered index by the primary key"},
		{Name: sampleMetric, Unit: workload.Microseconds,
			Doc: "the lookup path's time a row (µs) on the first twentieth of the index on j, timed before the point's own query at the points of the other path: what a lookup costs, for a prediction of the lookup path's first point"},
		{Name: "handler_read_next", Unit: workload.Count, Doc: "MariaDB: index entries read in order (Handler_read_next)"},
		{Name: "handler_read_rnd_next", Unit: workload.Count, Doc: "MariaDB: rows a table scan read (Handler_read_rnd_next)"},
	}
}

type keylookup struct {
	rows       int64
	path       string
	executions int
	instance   string
}

var _ workload.Workload = (*keylookup)(nil)

func newWorkload(p workload.Params) (workload.Workload, error) {
	return &keylookup{rows: p.Int("rows"), path: p.String("path"), executions: int(p.Int("executions")), instance: p.String("instance")}, nil
}

// Prepare makes the seed's table and reads every page of it and of its
// indexes into the server's cache: the seed measured with all pages cached.
func (w *keylookup) Prepare(ctx context.Context, env *workload.Env) error {
	inst := env.Instance(w.instance)
	if inst == nil {
		return fmt.Errorf("no instance %q", w.instance)
	}
	if err := inst.CreateDatabase(ctx, env.Database); err != nil {
		return err
	}
	login, ok := inst.UnixLogin(env.Database)
	if !ok {
		login = inst.Login(env.Database)
	}
	c, err := dbconn.Open(ctx, env.Engines, login)
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	start := time.Now()
	if err := widetable.Create(ctx, c, widetable.Options{Rows: w.rows, Progress: env.Progress}); err != nil {
		return err
	}
	env.Log.Info("made the seed's table", "rows", w.rows, "seconds", time.Since(start).Seconds())
	return warm(ctx, c)
}

// warm reads the table and its indexes into the cache: pg_prewarm where
// PostgreSQL has it, else (and on MariaDB) both paths' queries once.
func warm(ctx context.Context, c *dbconn.Conn) error {
	if c.Engine() == "postgres" {
		err := c.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_prewarm",
			"SELECT pg_prewarm('"+widetable.Table+"'), pg_prewarm('"+widetable.IndexJ+"'), pg_prewarm('"+widetable.IndexI+"')")
		if err == nil {
			return nil
		}
	}
	for _, path := range []string{Scan, Lookup} {
		if err := settle(ctx, c, path); err != nil {
			return err
		}
		if err := c.Exec(ctx, query(c.Engine(), path)); err != nil {
			return err
		}
	}
	return c.Exec(ctx, resetPlanner(c.Engine())...)
}

// query is the seed's SELECT max(dt) FROM test, or the same forced through
// the index on j (the seed's WITH (index(cx_test))). MariaDB reads a
// secondary index in full, with a lookup per entry, only for a condition
// on it: j >= 0 holds for every row (j is i or rows - i). PostgreSQL runs
// the same text, its planner told to use no other path (settle).
func query(engineName, path string) string {
	if path == Scan {
		return "SELECT max(dt) FROM " + widetable.Table
	}
	if engineName == "mariadb" {
		return "SELECT max(dt) FROM " + widetable.Table + " FORCE INDEX (" + widetable.IndexJ + ") WHERE j >= 0"
	}
	return "SELECT max(dt) FROM " + widetable.Table + " WHERE j >= 0"
}

// settle sets the session for a path: one process per query (the seed's
// numbers are per access path, not per core) and, on PostgreSQL, no JIT
// and, for the lookup path, no plan but the index scan.
func settle(ctx context.Context, c *dbconn.Conn, path string) error {
	if c.Engine() != "postgres" {
		return nil
	}
	stmts := []string{"SET jit = off", "SET max_parallel_workers_per_gather = 0"}
	if path == Lookup {
		stmts = append(stmts, "SET enable_seqscan = off", "SET enable_bitmapscan = off", "SET enable_indexonlyscan = off")
	}
	return c.Exec(ctx, stmts...)
}

func resetPlanner(engineName string) []string {
	if engineName != "postgres" {
		return nil
	}
	return []string{"RESET enable_seqscan", "RESET enable_bitmapscan", "RESET enable_indexonlyscan"}
}

// Run measures one path: the plan checked, one execution to warm up, one
// whose pages are counted, then the timed executions.
func (w *keylookup) Run(ctx context.Context, env *workload.Env) (workload.Measurement, error) {
	ep, err := env.Conn(env.ClientSite, w.instance, env.Database)
	if err != nil {
		return workload.Measurement{}, err
	}
	c, err := dbconn.Open(ctx, env.Engines, ep.Conn)
	if err != nil {
		return workload.Measurement{}, err
	}
	defer c.Close(ctx)
	m := workload.Measurement{Metrics: map[string]float64{}, Series: map[string][]float64{}}
	layout, err := widetable.ReadLayout(ctx, c)
	if err != nil {
		return m, err
	}
	if layout.Rows != w.rows {
		return m, fmt.Errorf("the table has %d rows, the point wants %d", layout.Rows, w.rows)
	}
	depth, err := lookupDepth(ctx, c, w.rows)
	if err != nil {
		return m, fmt.Errorf("measure one lookup: %w", err)
	}
	// Only a point of another path times the sample: the lookup path's
	// first point is predicted from the points before it, which are not
	// lookups, and the later ones from the lookups themselves.
	if w.path != Lookup {
		perRow, err := lookupSample(ctx, c, w.rows)
		if err != nil {
			return m, fmt.Errorf("time the lookups of the index's first twentieth: %w", err)
		}
		m.Metrics[sampleMetric] = perRow
	}
	if err := settle(ctx, c, w.path); err != nil {
		return m, err
	}
	q := query(c.Engine(), w.path)
	if err := checkPlan(ctx, c, w.path, q); err != nil {
		return m, err
	}
	if err := c.Exec(ctx, q); err != nil { // warm-up
		return m, err
	}
	counted, err := countPages(ctx, c, q)
	if err != nil {
		return m, fmt.Errorf("count the pages of %s: %w", q, err)
	}
	var times []float64
	for n := 0; n < w.executions; n++ {
		d, _, err := c.Time(ctx, q)
		if err != nil {
			return m, err
		}
		times = append(times, float64(d.Nanoseconds())/1e6)
		if env.Progress != nil {
			env.Progress(int64(n+1), int64(w.executions))
		}
	}
	m.Metrics["time_ms"] = measure.Median(times)
	m.Series["time_ms"] = times
	m.Metrics["pages"] = float64(counted.pages)
	m.Metrics["physical_reads"] = float64(counted.physical)
	m.Metrics["pages_per_row"] = float64(counted.pages) / float64(layout.Rows)
	m.Metrics["rows"] = float64(layout.Rows)
	m.Metrics["table_pages"] = float64(layout.TablePages)
	m.Metrics["index_pages"] = float64(layout.IndexPages)
	m.Metrics["page_bytes"] = float64(layout.PageBytes)
	m.Metrics["lookup_depth"] = float64(depth)
	for k, v := range counted.handler {
		m.Metrics[k] = float64(v)
	}
	if counted.physical > 0 {
		m.Notes = append(m.Notes, fmt.Sprintf("%d of the %d pages were read from outside the server's cache: not every page was cached, as the seed's were (give the server a cache larger than the table's %d pages of %d bytes)",
			counted.physical, counted.pages, layout.TablePages, layout.PageBytes))
	}
	return m, nil
}

// checkPlan makes sure the engine runs the path asked for: a plan that
// reads the table another way would measure something else.
func checkPlan(ctx context.Context, c *dbconn.Conn, path, q string) error {
	rows, err := c.Rows(ctx, "EXPLAIN "+q)
	if err != nil {
		return err
	}
	var plan []string
	for _, r := range rows {
		plan = append(plan, strings.Join(r, " "))
	}
	text := strings.Join(plan, "\n")
	ok := false
	switch {
	case c.Engine() == "postgres" && path == Scan:
		ok = strings.Contains(text, "Seq Scan on "+widetable.Table)
	case c.Engine() == "postgres":
		ok = strings.Contains(text, "Index Scan using "+widetable.IndexJ+" on "+widetable.Table)
	case path == Scan: // MariaDB's EXPLAIN: id, select_type, table, type, possible_keys, key, ...
		ok = len(rows) == 1 && len(rows[0]) > 5 && rows[0][3] == "ALL"
	default:
		ok = len(rows) == 1 && len(rows[0]) > 5 && rows[0][5] == widetable.IndexJ
	}
	if !ok {
		return fmt.Errorf("the %s path's plan does not read the table the way the seed's did:\n%s", path, text)
	}
	return nil
}

// counted is what one execution touched.
type counted struct {
	pages, physical int64
	handler         map[string]int64
}

// countPages runs the query once and counts the pages it touched.
func countPages(ctx context.Context, c *dbconn.Conn, q string) (counted, error) {
	if c.Engine() == "postgres" {
		hit, read, err := explainBuffers(ctx, c, q)
		return counted{pages: hit + read, physical: read}, err
	}
	before, err := mariaStatus(ctx, c)
	if err != nil {
		return counted{}, err
	}
	if err := c.Exec(ctx, q); err != nil {
		return counted{}, err
	}
	after, err := mariaStatus(ctx, c)
	if err != nil {
		return counted{}, err
	}
	d := func(k string) int64 { return after[k] - before[k] }
	return counted{
		pages:    d("innodb_buffer_pool_read_requests"),
		physical: d("innodb_buffer_pool_reads"),
		handler: map[string]int64{
			"handler_read_next": d("handler_read_next"), "handler_read_rnd_next": d("handler_read_rnd_next"),
		},
	}, nil
}

// explainBuffers runs a query under EXPLAIN (ANALYZE, BUFFERS) without
// per-node timing (which would add two clock reads per row to one path)
// and returns its shared buffer hits and reads.
func explainBuffers(ctx context.Context, c *dbconn.Conn, q string) (hit, read int64, err error) {
	out, err := c.Value(ctx, "EXPLAIN (ANALYZE, BUFFERS, TIMING OFF, FORMAT JSON) "+q)
	if err != nil {
		return 0, 0, err
	}
	var plans []struct {
		Plan struct {
			Hit  int64 `json:"Shared Hit Blocks"`
			Read int64 `json:"Shared Read Blocks"`
		} `json:"Plan"`
	}
	if err := json.Unmarshal([]byte(out), &plans); err != nil || len(plans) != 1 {
		return 0, 0, fmt.Errorf("read EXPLAIN's buffers: %v", errors.Join(err, fmt.Errorf("%d plans", len(plans))))
	}
	return plans[0].Plan.Hit, plans[0].Plan.Read, nil
}

// mariaStatus reads the counters a MariaDB execution moves: the buffer
// pool's (global: dbrig's session is the only one working) and the
// session's handler reads.
func mariaStatus(ctx context.Context, c *dbconn.Conn) (map[string]int64, error) {
	out := map[string]int64{}
	for _, q := range []string{
		"SHOW GLOBAL STATUS WHERE Variable_name IN ('Innodb_buffer_pool_read_requests', 'Innodb_buffer_pool_reads')",
		"SHOW SESSION STATUS WHERE Variable_name IN ('Handler_read_next', 'Handler_read_rnd_next', 'Handler_read_key')",
	} {
		rows, err := c.Rows(ctx, q)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			n, err := strconv.ParseInt(r[1], 10, 64)
			if err != nil {
				return nil, fmt.Errorf("status %s = %q", r[0], r[1])
			}
			out[strings.ToLower(r[0])] = n
		}
	}
	return out, nil
}

// lookupDepth measures the pages one lookup of a row touches, given what
// an index entry holds: PostgreSQL's index holds the row's address, and a
// TID scan fetches its heap page; InnoDB's secondary index holds the
// primary key, and a lookup by it descends the clustered index. The least
// of three lookups, since MariaDB's counter is the server's and a
// background thread may touch a page meanwhile.
func lookupDepth(ctx context.Context, c *dbconn.Conn, rows int64) (int64, error) {
	best := int64(-1)
	for k := int64(1); k <= 3; k++ {
		i := max(1, rows*k/4)
		var pages int64
		if c.Engine() == "postgres" {
			// The heap holds the rows in i order, one or more a page; the
			// row's address comes from the table itself.
			tid, err := c.Value(ctx, fmt.Sprintf("SELECT ctid FROM %s WHERE i = %d", widetable.Table, i))
			if err != nil {
				return 0, err
			}
			hit, read, err := explainBuffers(ctx, c, fmt.Sprintf("SELECT dt FROM %s WHERE ctid = '%s'", widetable.Table, tid))
			if err != nil {
				return 0, err
			}
			pages = hit + read
		} else {
			before, err := mariaStatus(ctx, c)
			if err != nil {
				return 0, err
			}
			if err := c.Exec(ctx, fmt.Sprintf("SELECT dt FROM %s WHERE i = %d", widetable.Table, i)); err != nil {
				return 0, err
			}
			after, err := mariaStatus(ctx, c)
			if err != nil {
				return 0, err
			}
			pages = after["innodb_buffer_pool_read_requests"] - before["innodb_buffer_pool_read_requests"]
		}
		if best < 0 || pages < best {
			best = pages
		}
	}
	return best, nil
}

// sampleShare is the share of the index on j lookupSample reads: its
// twentieth, 10,000 rows at the quick scale, whose heap pages (80 MB on
// PostgreSQL) are far more than the CPU's caches hold, as the table's are.
const sampleShare = 20

// lookupSample times the lookup path on the index's first entries (j < M,
// M the rows over sampleShare): the same plan, the same jumps between the
// table's two ends (j is i for even i, rows - i for odd), a twentieth of
// the rows. It returns the median of three timed executions, after one to
// warm up, over the rows they read, in µs, and leaves the session's
// planner as it found it.
func lookupSample(ctx context.Context, c *dbconn.Conn, rows int64) (float64, error) {
	if err := settle(ctx, c, Lookup); err != nil {
		return 0, err
	}
	m := max(2, rows/sampleShare)
	q := fmt.Sprintf("%s AND j < %d", query(c.Engine(), Lookup), m)
	if err := checkPlan(ctx, c, Lookup, q); err != nil {
		return 0, err
	}
	n, err := c.Value(ctx, strings.Replace(q, "max(dt)", "count(*)", 1))
	if err != nil {
		return 0, err
	}
	read, err := strconv.ParseInt(n, 10, 64)
	if err != nil || read <= 0 {
		return 0, fmt.Errorf("%s read %q rows", q, n)
	}
	var times []float64
	for k := 0; k < 4; k++ {
		d, _, err := c.Time(ctx, q)
		if err != nil {
			return 0, err
		}
		if k > 0 { // the first warms up
			times = append(times, float64(d.Nanoseconds())/1e3)
		}
	}
	if err := c.Exec(ctx, resetPlanner(c.Engine())...); err != nil {
		return 0, err
	}
	return measure.Median(times) / float64(read), nil
}
