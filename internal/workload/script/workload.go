package script

import (
	"context"
	"fmt"
	"time"

	"github.com/dbrig/dbrig/internal/agent"
	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/mariadb"
	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/link"
	"github.com/dbrig/dbrig/internal/load"
	"github.com/dbrig/dbrig/internal/predict"
	"github.com/dbrig/dbrig/internal/workload"
)

// Live lets a command watch a run as it goes. Every field may be nil.
type Live struct {
	// Runner receives the point's load runner before it runs (register its
	// Metrics with Prometheus).
	Runner func(*load.Runner)
	// OnInterval receives each second as it ends.
	OnInterval func(load.Interval)
	// Result receives the run's whole result, also an interrupted run's.
	Result func(*load.Result)
	// Scripts receives each script's figures and its commands' (pgbench
	// -r), for a report in pgbench's words (WriteText).
	Scripts func(Report)
	// Note receives what the workload says before the run.
	Note func(string)
	// Spread, when set, runs the point's load on load agents instead of in
	// this process (`dbrig load script --agents`): it gets the whole load,
	// the users' path from the agents (the login, and the link each agent
	// runs in front of its users) and what an agent needs to make its
	// share (AgentWorkload), and returns the agents' merged outcome, their
	// Extras merged.
	Spread func(ctx context.Context, cfg load.Config, path agent.Path, p AgentParams) (*agent.LoadOutcome, error)
}

// Kind registers the workload.
func Kind() workload.Kind { return KindWith(nil) }

// KindWith registers the workload with a live view of its runs.
func KindWith(live *Live) workload.Kind {
	return workload.Kind{
		Name:        "script",
		Doc:         "pgbench-compatible scripts (FILE[@WEIGHT], or the built-ins tpcb-like, simple-update, select-only) under virtual users, on PostgreSQL or MariaDB",
		Params:      params(),
		CheckParams: load.CheckParams,
		CheckFiles:  checkFiles,
		Load:        loadMode(),
		New: func(p workload.Params) (workload.Workload, error) {
			w, err := newWorkload(p)
			if err != nil {
				return nil, err
			}
			w.live = live
			return w, nil
		},
		PrepareKey: func(p workload.Params) string {
			if !p.Bool("init") {
				return "script-v1 instance=" + p.String("instance")
			}
			return fmt.Sprintf("script-v1 pgbench-tables scale=%d instance=%s", p.Int("scale"), p.String("instance"))
		},
		Metrics: metricSpecs(),
		// A point through a link is predicted from the unimpaired points
		// before it: the round trips, bytes and times a transaction took.
		Predict: predict.ForPoint,
	}
}

type scriptWorkload struct {
	params   workload.Params
	cfg      load.Config
	init     bool
	scale    int
	seed     uint64
	maxTries int
	instance string
	live     *Live
}

var _ workload.Workload = (*scriptWorkload)(nil)

func newWorkload(p workload.Params) (*scriptWorkload, error) {
	cfg := load.ConfigOf(p)
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &scriptWorkload{params: p, cfg: cfg, init: p.Bool("init"), scale: int(p.Int("scale")), seed: cfg.Seed,
		maxTries: int(p.Int("max_tries")), instance: p.String("instance")}, nil
}

// program reads the scripts for the engine they run on, as the study
// read them.
func (w *scriptWorkload) program(engineName string, read workload.ReadFile) (*Program, error) {
	switch engineName {
	case postgres.Name, mariadb.Name:
	default:
		return nil, fmt.Errorf("scripts run on PostgreSQL and MariaDB, not %s", engineName)
	}
	prog, err := programOf(w.params, read, engineName == mariadb.Name)
	if err != nil {
		return nil, err
	}
	return prog, prog.CheckEngine(engineName)
}

// Prepare makes the database and, with init, pgbench's tables at scale.
func (w *scriptWorkload) Prepare(ctx context.Context, env *workload.Env) error {
	inst := env.Instance(w.instance)
	if inst == nil {
		return fmt.Errorf("no instance %q", w.instance)
	}
	if _, err := w.program(inst.Engine(), env.ReadFile); err != nil {
		return err
	}
	if err := inst.CreateDatabase(ctx, env.Database); err != nil {
		return err
	}
	if !w.init {
		return nil
	}
	login, ok := inst.UnixLogin(env.Database)
	if !ok {
		login = inst.Login(env.Database)
	}
	start := time.Now()
	if err := Init(ctx, login, w.scale, env.Progress); err != nil {
		return fmt.Errorf("make pgbench's tables at scale %d: %w", w.scale, err)
	}
	env.Log.Info("pgbench tables made", "scale", w.scale, "seconds", time.Since(start).Seconds())
	return nil
}

// Run measures one point: the scripts under the point's users.
func (w *scriptWorkload) Run(ctx context.Context, env *workload.Env) (workload.Measurement, error) {
	ep, err := env.Conn(env.ClientSite, w.instance, env.Database)
	if err != nil {
		return workload.Measurement{}, err
	}
	prog, err := w.program(ep.Conn.Engine, env.ReadFile)
	if err != nil {
		return workload.Measurement{}, err
	}
	scale, notes, err := w.scaleOf(ctx, ep.Conn, prog)
	if err != nil {
		return workload.Measurement{}, err
	}
	for _, n := range notes {
		w.note(n)
	}
	lw := &loadWorkload{prog: prog, login: ep.Conn, scale: scale, seed: w.seed, users: w.cfg.Users, maxTries: w.maxTries, clock: &window{}}
	res, stats, carried, err := w.runLoad(ctx, env, lw, ep)
	if res != nil && w.live != nil && w.live.Result != nil {
		w.live.Result(res)
	}
	if res == nil || err != nil && !res.Interrupted {
		return workload.Measurement{}, err
	}
	// An interrupted run's figures go back with its error: the runner
	// keeps them labelled as interrupted, never as a result.
	rep := newReport(prog, res, stats)
	if w.live != nil && w.live.Scripts != nil {
		w.live.Scripts(rep)
	}
	m := measurement(res, rep)
	m.Notes = append(notes, m.Notes...)
	m.Links = carried
	return m, err
}

// runLoad runs the point's load here, or on load agents when the command
// spreads it over them, and returns the clients' figures with the result
// and, on agents, what their links carried.
func (w *scriptWorkload) runLoad(ctx context.Context, env *workload.Env, lw *loadWorkload, ep workload.Endpoint) (*load.Result, *clientStats, map[string]link.Stats, error) {
	cfg := w.cfg
	total := cfg.WarmUp + cfg.Duration
	cfg.OnInterval = func(iv load.Interval) {
		if env.Progress != nil {
			env.Progress(int64((iv.Start+iv.Length)/time.Second), int64(total/time.Second))
		}
		if env.Second != nil {
			env.Second(iv.Second())
		}
		if w.live != nil && w.live.OnInterval != nil {
			w.live.OnInterval(iv)
		}
	}
	if w.live != nil && w.live.Spread != nil {
		return w.spread(ctx, cfg, lw, ep, env.ReadFile)
	}
	cfg.Ready = func(context.Context) error {
		lw.clock.from = time.Now().Add(cfg.WarmUp)
		lw.clock.to = lw.clock.from.Add(cfg.Duration)
		return nil
	}
	r, err := load.NewRunner(cfg, lw)
	if err != nil {
		return nil, nil, nil, err
	}
	if w.live != nil && w.live.Runner != nil {
		w.live.Runner(r)
	}
	res, err := r.Run(ctx)
	return res, lw.stats(), nil, err
}

func (w *scriptWorkload) note(s string) {
	if w.live != nil && w.live.Note != nil {
		w.live.Note(s)
	}
}

// scaleOf is :scale: the scale parameter, or for the built-ins the rows of
// pgbench_branches, as pgbench reads it.
func (w *scriptWorkload) scaleOf(ctx context.Context, login engine.Conn, prog *Program) (int, []string, error) {
	builtin := false
	for _, s := range prog.Scripts {
		builtin = builtin || s.Builtin
	}
	if !builtin {
		return w.scale, nil, nil
	}
	n, err := countBranches(ctx, login)
	if err != nil {
		return 0, nil, fmt.Errorf("the built-in scripts need pgbench's tables (set init = true): %w", err)
	}
	if n < 1 {
		return 0, nil, fmt.Errorf("pgbench_branches is empty: make pgbench's tables again (init = true)")
	}
	var notes []string
	if int(n) != w.scale {
		notes = append(notes, fmt.Sprintf("scale %d ignored: the built-in scripts use pgbench_branches' %d rows, as pgbench does", w.scale, n))
	}
	return int(n), notes, nil
}
