package tpch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/measure"
	"github.com/dbrig/dbrig/internal/topology"
	"github.com/dbrig/dbrig/internal/workload"
)

// MaxDegree is the largest parallel degree the workload accepts:
// PostgreSQL's own limit of max_parallel_workers_per_gather. It is not
// capped at this machine's CPUs: a study written for a 16-core server runs
// here too, and says what the CPUs allowed.
const MaxDegree = 1024

// MaxScale is TPC-H's largest scale factor (100,000: 100 TB of data).
const MaxScale = 100_000

// Kind registers the workload.
func Kind() workload.Kind {
	return workload.Kind{
		Name: "tpch",
		Doc:  "the 22 TPC-H queries as a power test at a parallel degree (seed 002)",
		Params: []workload.ParamSpec{
			{Name: "scale_factor", Type: workload.FloatParam, Doc: "TPC-H scale factor (1 = 1 GB of data; fractions such as 0.01 work)",
				MaxFloat: MaxScale, Why: "TPC-H's largest scale factor, 100 TB of data",
				Flag: workload.FlagSpec{Name: "scale", Help: "TPC-H scale factor `SF` (1 = 1 GB; 0.01 for seconds)",
					Want: fmt.Sprintf("want the TPC-H scale factor, a number above 0 (e.g. 0.01, 1, 10) and at most %d, TPC-H's largest", MaxScale)}},
			{Name: "degree", Type: workload.IntParam, AllowZero: true, Default: int64(0),
				Doc: "parallel workers per query beside the leader (PostgreSQL's max_parallel_workers_per_gather; 0 = serial, the seed's MAXDOP 1)",
				Max: MaxDegree, Why: "PostgreSQL's own most for max_parallel_workers_per_gather",
				Flag: workload.FlagSpec{Help: "parallel degree(s) `N[,N...]`: max_parallel_workers_per_gather, 0 = serial"}},
			{Name: "streams", Type: workload.IntParam, Default: int64(10),
				Doc: "times the stream of queries runs in a point: the first is dropped, then each query's fastest and slowest, and the rest averaged (the seed ran 10)",
				Max: 1000, Why: "as many as a combination's runs: the seed ran 10",
				Flag: workload.FlagSpec{Name: "runs", Help: "times the stream runs at each degree (the first is dropped; with 4 or more, each query's fastest and slowest too)"}},
			{Name: "queries", Type: workload.StringParam, Default: "all", Doc: `the queries of the stream: "all", or e.g. "1,3,6" or "1-5,14"`,
				Check: func(v any) error { _, err := ParseSelection(fmt.Sprint(v)); return err }},
			{Name: "instance", Type: workload.InstanceParam, Default: "db", Doc: "the instance that holds the data"},
		},
		Load:       loadMode(),
		New:        newWorkload,
		PrepareKey: prepareKey,
		Model:      Model,
		Predict:    Predict,
		Probe:      Probe,
		Metrics:    metricSpecs(),
	}
}

func prepareKey(p workload.Params) string {
	return fmt.Sprintf("tpch-v1 sf=%s queries=%s instance=%s", FormatScale(p.Float("scale_factor")), p.String("queries"), p.String("instance"))
}

func metricSpecs() []workload.MetricSpec {
	ms := []workload.MetricSpec{
		{Name: "total_s", Unit: workload.Seconds, Better: workload.Lower, Headline: true,
			Doc: "the stream's time: the sum of each query's kept mean (the seed's total)"},
		{Name: "degree", Unit: workload.Count, Doc: "max_parallel_workers_per_gather of the point's sessions"},
		{Name: "processes", Unit: workload.Count, Doc: "processes that may work on one query: the workers and the leader when it participates"},
		{Name: "host_cpus", Unit: workload.Count, Doc: "CPUs online on the client's host (the server's, unless it is a target elsewhere)"},
		{Name: "other_cpus", Unit: workload.Count, Better: workload.Lower,
			Doc: "CPUs' worth of work other processes did on the host while the streams ran (busy CPU time less the server's and dbrig's own, per second): what a parallel degree could not use"},
		{Name: "streams_kept", Unit: workload.Count, Doc: "streams each query's mean is taken over, after the seed's rule"},
	}
	for n := 1; n <= NumQueries; n++ {
		ms = append(ms,
			workload.MetricSpec{Name: MetricName(n), Unit: workload.Milliseconds, Better: workload.Lower,
				Doc: fmt.Sprintf("Q%d's time: the mean of its streams after the first stream and its fastest and slowest are dropped", n)},
			workload.MetricSpec{Name: WorkersName(n), Unit: workload.Count,
				Doc: fmt.Sprintf("parallel workers Q%d's plan asks for at this degree (EXPLAIN's Workers Planned)", n)})
	}
	return ms
}

// WorkersName is the metric of the parallel workers a query's plan asks
// for: q01_workers ... q22_workers.
func WorkersName(n int) string { return fmt.Sprintf("q%02d_workers", n) }

type tpch struct {
	sf       float64
	degree   int
	streams  int
	selected []int
	instance string
	// queriesFor overrides the embedded queries (tests break one on purpose).
	queriesFor func(engineName string, sf float64, selected []int) ([]Query, error)
}

var _ workload.Workload = (*tpch)(nil)

func newWorkload(p workload.Params) (workload.Workload, error) {
	w := &tpch{
		sf:         p.Float("scale_factor"),
		degree:     int(p.Int("degree")),
		streams:    int(p.Int("streams")),
		instance:   p.String("instance"),
		queriesFor: Queries,
	}
	var err error
	if w.selected, err = ParseSelection(p.String("queries")); err != nil {
		return nil, err
	}
	return w, nil
}

// answersTable holds the serial run's answers that Prepare records beside
// the data, so that every point (in dbrig's process or a client process)
// checks its answers against them.
const answersTable = "dbrig_tpch_answers"

// Prepare makes the database, streams every table from the generator into
// it, adds keys and indexes, analyzes, and records each query's answer from
// a serial run, checked against the golden answers where the scale factor
// has them.
func (w *tpch) Prepare(ctx context.Context, env *workload.Env) error {
	inst := env.Instance(w.instance)
	if inst == nil {
		return fmt.Errorf("no instance %q", w.instance)
	}
	if err := skipDegree(inst.Engine(), w.degree); err != nil {
		return err
	}
	program, err := FindGenerator(ctx)
	if err != nil {
		return err
	}
	queries, err := w.queriesFor(inst.Engine(), w.sf, w.selected)
	if err != nil {
		return err
	}
	if err := inst.CreateDatabase(ctx, env.Database); err != nil {
		return err
	}
	login, ok := inst.UnixLogin(env.Database)
	if !ok {
		login = inst.Login(env.Database)
	}
	s, err := openSession(ctx, env.Engines, login)
	if err != nil {
		return err
	}
	defer s.close(ctx)
	tables, err := schemaSQL(inst.Engine(), "")
	if err != nil {
		return err
	}
	if err := s.exec(ctx, tables...); err != nil {
		return fmt.Errorf("create the TPC-H tables: %w", err)
	}
	if err := loadTables(ctx, env, login, program, w.sf); err != nil {
		return err
	}
	keys, err := schemaSQL(inst.Engine(), "keys")
	if err != nil {
		return err
	}
	if err := s.exec(ctx, keys...); err != nil {
		return fmt.Errorf("keys and indexes of the TPC-H tables: %w", err)
	}
	return w.recordAnswers(ctx, s, queries)
}

// loaders is how many tables load at once: above oneGeneratorMaxScale the
// generator spends about a second starting for each table, whatever its
// size, which a few loads at once hide.
const loaders = 4

// loadTables streams every table from the generator into the database,
// a few at a time, each over a session of its own. The first error stops
// the others.
func loadTables(ctx context.Context, env *workload.Env, login engine.Conn, program string, sf float64) error {
	rows, release, err := tableRows(ctx, program, sf)
	if err != nil {
		return err
	}
	defer release()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	var mu sync.Mutex
	done := 0
	slots := make(chan struct{}, loaders)
	for _, t := range Tables {
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			start := time.Now()
			n, err := loadTable(ctx, env.Engines, login, rows, sf, t)
			if err != nil {
				cancel(err)
				return
			}
			env.Log.Info("loaded", "table", t, "rows", n, "seconds", time.Since(start).Seconds())
			mu.Lock()
			done++
			if env.Progress != nil {
				env.Progress(int64(done), int64(len(Tables)))
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	return context.Cause(ctx)
}

// loadTable streams one table from the generator into the database.
func loadTable(ctx context.Context, engines *engine.Registry, login engine.Conn, source tableSource, sf float64, table string) (int64, error) {
	s, err := openSession(ctx, engines, login)
	if err != nil {
		return 0, err
	}
	defer s.close(ctx)
	rows, err := source(ctx, table)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	n, err := s.load(ctx, table, rows)
	if err != nil {
		return 0, fmt.Errorf("load table %s at scale factor %s: %w", table, FormatScale(sf), err)
	}
	if n == 0 {
		return 0, fmt.Errorf("load table %s at scale factor %s: the generator made no rows", table, FormatScale(sf))
	}
	return n, nil
}

// recordAnswers runs every query once serially, checks each answer against
// the golden answers at this scale factor (when there are some) and stores
// them for the points to check theirs against.
func (w *tpch) recordAnswers(ctx context.Context, s *session, queries []Query) error {
	if err := s.serial(ctx); err != nil {
		return err
	}
	if err := s.exec(ctx, "CREATE TABLE "+answersTable+" (q int PRIMARY KEY, nrows bigint NOT NULL, hash varchar(16) NOT NULL)"); err != nil {
		return err
	}
	want, haveGolden := golden(w.sf)
	var problems []string
	for _, q := range queries {
		got, err := s.query(ctx, q.SQL)
		if err != nil {
			return fmt.Errorf("%s (serial reference run): %w", q.Name(), err)
		}
		if g, ok := want[q.Name()]; haveGolden && ok && g != got {
			problems = append(problems, fmt.Sprintf("%s returned %s; the golden answer at scale factor %s is %s", q.Name(), got, FormatScale(w.sf), g))
		}
		if err := s.exec(ctx, fmt.Sprintf("INSERT INTO %s VALUES (%d, %d, '%s')", answersTable, q.N, got.Rows, got.Checksum)); err != nil {
			return err
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("wrong answers: %s", strings.Join(problems, "; "))
	}
	return nil
}

// skipDegree says when a point cannot run on an engine: MariaDB has no
// parallel query, so it runs the serial degree only.
func skipDegree(engineName string, degree int) error {
	if engineName == "mariadb" && degree > 0 {
		return &topology.Unreachable{Reason: fmt.Sprintf("MariaDB has no parallel query: it runs each query on one thread, degree 0 (the seed's MAXDOP 1) only, not degree %d", degree)}
	}
	return nil
}

// Run measures one point: the stream of queries run `streams` times at the
// point's degree, each answer checked against the serial reference.
func (w *tpch) Run(ctx context.Context, env *workload.Env) (workload.Measurement, error) {
	ep, err := env.Conn(env.ClientSite, w.instance, env.Database)
	if err != nil {
		return workload.Measurement{}, err
	}
	if err := skipDegree(ep.Conn.Engine, w.degree); err != nil {
		return workload.Measurement{}, err
	}
	queries, err := w.queriesFor(ep.Conn.Engine, w.sf, w.selected)
	if err != nil {
		return workload.Measurement{}, err
	}
	s, err := openSession(ctx, env.Engines, ep.Conn)
	if err != nil {
		return workload.Measurement{}, err
	}
	defer s.close(ctx)
	m := workload.Measurement{Metrics: map[string]float64{}, Series: map[string][]float64{}}
	processes, notes := 1, []string(nil)
	if s.dialect.ParallelQuery {
		processes, notes, err = w.settle(ctx, s)
	}
	if err != nil {
		return m, err
	}
	m.Notes = append(m.Notes, notes...)
	reference, err := readAnswers(ctx, s)
	if err != nil {
		return m, err
	}
	if err := recordPlannedWorkers(ctx, s, queries, m.Metrics); err != nil {
		return m, err
	}
	serverPID := w.serverPID(env)
	before := sampleCPU(serverPID)
	times, totals, err := w.runStreams(ctx, env, s, queries, reference)
	if err != nil {
		return m, err
	}
	if other, ok := otherCPUs(before, sampleCPU(serverPID)); ok {
		m.Metrics["other_cpus"] = other
	}
	w.summarize(m, queries, times, totals)
	m.Metrics["processes"] = float64(processes)
	return m, nil
}

// recordPlannedWorkers puts into metrics the workers each query's plan
// asks for at the session's degree.
func recordPlannedWorkers(ctx context.Context, s *session, queries []Query, metrics map[string]float64) error {
	for _, q := range queries {
		n, err := s.plannedWorkers(ctx, q.SQL)
		if err != nil {
			return fmt.Errorf("EXPLAIN %s: %w", q.Name(), err)
		}
		metrics[WorkersName(q.N)] = float64(n)
	}
	return nil
}

// serverPID is the process of the server the point runs on when dbrig
// started it, else 0: a target's server is not ours to sample.
func (w *tpch) serverPID(env *workload.Env) int {
	if env.Instance != nil {
		if inst := env.Instance(w.instance); inst != nil && inst.Owned() {
			return inst.PID()
		}
	}
	return 0
}

// runStreams runs the queries `streams` times, checking every answer, and
// returns each query's time in every stream (ms) and each stream's total
// (s).
func (w *tpch) runStreams(ctx context.Context, env *workload.Env, s *session, queries []Query, reference map[int]Answer) (times [][]float64, totals []float64, err error) {
	times = make([][]float64, len(queries)) // per query, per stream (ms)
	done, total := int64(0), int64(w.streams*len(queries))
	for stream := 1; stream <= w.streams; stream++ {
		var sum float64
		for i, q := range queries {
			ms, err := w.timeQuery(ctx, s, q, stream, reference)
			if err != nil {
				return nil, nil, err
			}
			times[i] = append(times[i], ms)
			sum += ms
			done++
			if env.Progress != nil {
				env.Progress(done, total)
			}
		}
		totals = append(totals, sum/1000)
	}
	return times, totals, nil
}

// timeQuery runs q once and returns its time (ms) once its answer is found
// to be the serial reference's.
func (w *tpch) timeQuery(ctx context.Context, s *session, q Query, stream int, reference map[int]Answer) (float64, error) {
	start := time.Now()
	got, err := s.query(ctx, q.SQL)
	ms := float64(time.Since(start).Nanoseconds()) / 1e6
	if err != nil {
		return 0, fmt.Errorf("%s, stream %d, degree %d: %w", q.Name(), stream, w.degree, err)
	}
	if want, ok := reference[q.N]; !ok {
		return 0, fmt.Errorf("%s has no serial reference answer (the data was prepared for other queries)", q.Name())
	} else if got != want {
		return 0, fmt.Errorf("%s at degree %d returned %s; the serial run returned %s: the parallel plan's answer differs", q.Name(), w.degree, got, want)
	}
	return ms, nil
}

// summarize puts each query's mean time, the streams' totals and the
// point's settings into m.
func (w *tpch) summarize(m workload.Measurement, queries []Query, times [][]float64, totals []float64) {
	var total_s float64
	kept := 0
	for i, q := range queries {
		// The seed's rule inside one point: the first stream is dropped,
		// then each query's fastest and slowest stream, and the rest are
		// averaged.
		var mean float64
		mean, kept = measure.TrimmedMean(times[i], true, true)
		m.Metrics[MetricName(q.N)] = mean
		m.Series[MetricName(q.N)] = times[i]
		total_s += mean / 1000
	}
	m.Metrics["total_s"] = total_s
	m.Series["total_s"] = totals
	m.Metrics["degree"] = float64(w.degree)
	m.Metrics["streams_kept"] = float64(kept)
	if cpus := onlineCPUs(); cpus > 0 {
		m.Metrics["host_cpus"] = float64(cpus)
	}
}

// settle makes the session run at the point's degree. A study sets the
// degree as server settings (max_parallel_workers_per_gather and the pool
// it draws from); where the server runs with other values (a target) the
// session sets its own and says so. It returns how many processes may work
// on one query.
func (w *tpch) settle(ctx context.Context, s *session) (int, []string, error) {
	var notes []string
	get := func(name string) (int, error) {
		v, err := s.setting(ctx, name)
		if err != nil {
			return 0, fmt.Errorf("read %s: %w", name, err)
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			return 0, fmt.Errorf("read %s: %q is not a number", name, v)
		}
		return n, nil
	}
	perGather, err := get("max_parallel_workers_per_gather")
	if err != nil {
		return 0, nil, err
	}
	if perGather != w.degree {
		if err := s.exec(ctx, fmt.Sprintf("SET max_parallel_workers_per_gather = %d", w.degree)); err != nil {
			return 0, nil, err
		}
		notes = append(notes, fmt.Sprintf("the server runs with max_parallel_workers_per_gather = %d; dbrig's session set %d", perGather, w.degree))
	}
	pool, err := get("max_parallel_workers")
	if err != nil {
		return 0, nil, err
	}
	if pool < w.degree {
		if err := s.exec(ctx, fmt.Sprintf("SET max_parallel_workers = %d", w.degree)); err != nil {
			return 0, nil, err
		}
		notes = append(notes, fmt.Sprintf("the server runs with max_parallel_workers = %d; dbrig's session set %d", pool, w.degree))
	}
	if procs, err := get("max_worker_processes"); err != nil {
		return 0, nil, err
	} else if procs < w.degree {
		notes = append(notes, fmt.Sprintf("the server's max_worker_processes = %d (set at its start) allows fewer workers than degree %d", procs, w.degree))
	}
	leader, err := s.setting(ctx, "parallel_leader_participation")
	if err != nil {
		return 0, nil, err
	}
	processes := w.degree + 1
	if leader == "off" && w.degree > 0 {
		processes = w.degree
	}
	return processes, notes, nil
}

func readAnswers(ctx context.Context, s *session) (map[int]Answer, error) {
	rows, err := s.values(ctx, "SELECT q, nrows, hash FROM "+answersTable)
	if err != nil {
		return nil, fmt.Errorf("read the serial reference answers: %w", err)
	}
	out := map[int]Answer{}
	for _, r := range rows {
		q, err1 := strconv.Atoi(r[0])
		n, err2 := strconv.Atoi(r[1])
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("read the serial reference answers: %w", err)
		}
		out[q] = Answer{Rows: n, Checksum: r[2]}
	}
	return out, nil
}

// onlineCPUs counts the host's online CPUs (not this process's affinity: a
// client process may be pinned to one CPU while the server has them all).
func onlineCPUs() int {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return 0
	}
	cpus, err := engine.ParseCPUList(strings.TrimSpace(string(b)))
	if err != nil {
		return 0
	}
	return len(cpus)
}
