package oltp

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/dbrig/dbrig/internal/agent"
	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/mariadb"
	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/link"
	"github.com/dbrig/dbrig/internal/load"
	"github.com/dbrig/dbrig/internal/workload"
)

// Live lets a command watch a run as it goes: `dbrig load oltp` prints each
// second and serves the run's metrics to Prometheus. Every field may be nil.
type Live struct {
	// Runner receives the point's load runner before it runs (register its
	// Metrics with Prometheus).
	Runner func(*load.Runner)
	// OnInterval receives each second as it ends (see load.Config).
	OnInterval func(load.Interval)
	// Result receives the run's whole result, also an interrupted run's.
	Result func(*load.Result)
	// Note receives what the workload says before the run (the login it
	// uses, the data it found).
	Note func(string)
	// Spread, when set, runs the point's load on load agents instead of in
	// this process (`dbrig load oltp --agents`): it gets the whole load,
	// the users' path from the agents (the login, and the link each agent
	// runs in front of its users) and what an agent needs to make its
	// share (AgentWorkload), and returns the agents' merged outcome.
	Spread func(ctx context.Context, cfg load.Config, path agent.Path, p AgentParams) (*agent.LoadOutcome, error)
}

// Kind registers the workload.
func Kind() workload.Kind { return KindWith(nil) }

// KindWith registers the workload with a live view of its runs.
func KindWith(live *Live) workload.Kind {
	return workload.Kind{
		Name:        "oltp",
		Doc:         "an online shop's transactions under virtual users, closed or open loop (seeds 001 and 002)",
		Params:      params(),
		CheckParams: load.CheckParams,
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
			return fmt.Sprintf("oltp-v%d sf=%s instance=%s", dataVersion, formatScale(p.Float("scale_factor")), p.String("instance"))
		},
		Metrics: metricSpecs(),
		Model:   Model,
		Predict: Predict,
		Probe:   Probe,
	}
}

// params are the shop's own parameters and the load layer's.
func params() []workload.ParamSpec {
	own := []workload.ParamSpec{
		{Name: "mix", Type: workload.StringParam, Default: "shop",
			Doc:   "the transactions: shop, point-select, browse-only, orders, reporting, or weights such as \"view-product=9,place-order=1\"",
			Check: func(v any) error { _, err := ParseMix(fmt.Sprint(v)); return err },
			Flag:  workload.FlagSpec{Help: "the transactions `NAME`: " + strings.Join(MixNames(), ", ") + ", or weights such as view-product=9,place-order=1"}},
		{Name: "scale_factor", Type: workload.FloatParam, Default: 1.0,
			Doc:      "data size: 100,000 customers and 10,000 items per unit (as pgbench's scale)",
			MaxFloat: MaxScale, Why: "a billion customers",
			Flag: workload.FlagSpec{Name: "scale", Help: "scale factor `S`: 100,000 customers and 10,000 items per unit"}},
		{Name: "instance", Type: workload.StringParam, Default: "db", Doc: "the instance that holds the shop"},
	}
	return append(own, load.Params()...)
}

type oltp struct {
	mix      Mix
	mixName  string
	sf       float64
	cfg      load.Config
	instance string
	live     *Live
}

var _ workload.Workload = (*oltp)(nil)

func newWorkload(p workload.Params) (*oltp, error) {
	mix, err := ParseMix(p.String("mix"))
	if err != nil {
		return nil, err
	}
	return &oltp{mix: mix, mixName: p.String("mix"), sf: p.Float("scale_factor"), cfg: load.ConfigOf(p), instance: p.String("instance")}, nil
}

// Prepare makes the database, the tables and their data at the scale
// factor, and on a PostgreSQL server dbrig runs, the login the users take.
func (w *oltp) Prepare(ctx context.Context, env *workload.Env) error {
	inst := env.Instance(w.instance)
	if inst == nil {
		return fmt.Errorf("no instance %q", w.instance)
	}
	if _, err := dialectOf(inst.Engine()); err != nil {
		return err
	}
	if err := inst.CreateDatabase(ctx, env.Database); err != nil {
		return err
	}
	login, ok := inst.UnixLogin(env.Database)
	if !ok {
		login = inst.Login(env.Database)
	}
	a, err := openAdmin(ctx, login)
	if err != nil {
		return err
	}
	defer a.close()
	start := time.Now()
	if err := createSchema(ctx, a, inst.Engine(), w.sf, env.Progress); err != nil {
		return err
	}
	sizes := SizesAt(w.sf)
	env.Log.Info("oltp data loaded", "scale_factor", w.sf, "customers", sizes.Customers, "items", sizes.Items, "seconds", time.Since(start).Seconds())
	if inst.Owned() && inst.Engine() == postgres.Name && login.Schema == "" {
		if err := makeLoadRole(ctx, a, login.Password()); err != nil {
			return fmt.Errorf("make the users' login %s: %w", LoadRole, err)
		}
	}
	return nil
}

// Run measures one point: the mix under the point's users, closed or open
// loop, on the point's link.
func (w *oltp) Run(ctx context.Context, env *workload.Env) (workload.Measurement, error) {
	ep, err := env.Conn(env.ClientSite, w.instance, env.Database)
	if err != nil {
		return workload.Measurement{}, err
	}
	login, notes, err := w.usersLogin(ctx, ep.Conn)
	if err != nil {
		return workload.Measurement{}, err
	}
	for _, n := range notes {
		w.note(n)
	}
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
	lw := &loadWorkload{mix: w.mix, sizes: SizesAt(w.sf), login: login, seed: cfg.Seed}
	res, carried, err := w.runLoad(ctx, cfg, lw, ep)
	if res != nil && w.live != nil && w.live.Result != nil {
		w.live.Result(res)
	}
	if res == nil || err != nil && !res.Interrupted {
		return workload.Measurement{}, err
	}
	// An interrupted run's figures go back with its error: the runner
	// keeps them labelled as interrupted, never as a result.
	m := measurement(res, w.mix)
	m.Notes = append(notes, m.Notes...)
	m.Links = carried
	if n := lw.lazy.Load(); n > 0 {
		m.Metrics["users_without_slot"] = float64(n)
		m.Warnings = append(m.Warnings, fmt.Sprintf("%d of %d users found every connection slot taken (the server's max_connections) when the run started and connected later, or never: the figures are those of fewer users than asked for, and their failed attempts count as connection errors", n, cfg.Users))
	}
	return m, err
}

// runLoad runs the point's load here, or on load agents when the command
// spreads it over them; carried is what the agents' links carried.
func (w *oltp) runLoad(ctx context.Context, cfg load.Config, lw *loadWorkload, ep workload.Endpoint) (_ *load.Result, carried map[string]link.Stats, _ error) {
	if w.live != nil && w.live.Spread != nil {
		path, err := agent.PathOf(lw.login, ep)
		if err != nil {
			return nil, nil, err
		}
		out, err := w.live.Spread(ctx, cfg, path, AgentParams{Mix: w.mixName, Scale: w.sf})
		if out == nil {
			return nil, nil, err
		}
		return out.Result, out.Carried(path), err
	}
	r, err := load.NewRunner(cfg, lw)
	if err != nil {
		return nil, nil, err
	}
	if w.live != nil && w.live.Runner != nil {
		w.live.Runner(r)
	}
	res, err := r.Run(ctx)
	return res, nil, err
}

func (w *oltp) note(s string) {
	if w.live != nil && w.live.Note != nil {
		w.live.Note(s)
	}
}

// usersLogin checks the data the point needs and chooses the users'
// login: on PostgreSQL, the workload's own login without superuser rights
// when Prepare made one, so the reserved slots stay free for monitoring.
func (w *oltp) usersLogin(ctx context.Context, login engine.Conn) (engine.Conn, []string, error) {
	a, err := openAdmin(ctx, login)
	if err != nil {
		return login, nil, err
	}
	defer a.close()
	have, err := dataScale(ctx, a)
	if err != nil {
		return login, nil, err
	}
	if have != formatScale(w.sf) {
		return login, nil, fmt.Errorf("the database holds the shop at scale factor %s, not %s: prepare it again", have, formatScale(w.sf))
	}
	var notes []string
	switch login.Engine {
	case postgres.Name:
		n, err := a.queryInt(ctx, "SELECT count(*) FROM pg_roles WHERE rolname = '"+LoadRole+"'")
		if err != nil {
			return login, nil, err
		}
		super, err := isSuperuser(ctx, a)
		if err != nil {
			return login, nil, err
		}
		switch {
		case n > 0 && super:
			login.User = LoadRole
		case super:
			notes = append(notes, fmt.Sprintf("the users connect as %s, a superuser: they may take the connection slots PostgreSQL reserves for superusers, which monitoring needs when the users take every other slot", login.User))
		}
	case mariadb.Name:
	}
	return login, notes, nil
}

// loadWorkload is the workload as the load layer sees it: a connection per
// user, with every statement prepared.
type loadWorkload struct {
	mix   Mix
	sizes Sizes
	login engine.Conn
	seed  uint64
	// lazy counts users that could not connect at the start because the
	// server had no connection slot left.
	lazy atomic.Int64
}

func (l *loadWorkload) Mix() []load.TxType { return l.mix.TxTypes() }

func (l *loadWorkload) open(ctx context.Context) (session, error) {
	if l.login.Engine == mariadb.Name {
		return openMaria(ctx, l.login)
	}
	return openPostgres(ctx, l.login)
}

// NewWorker connects one user. A server with no connection slot left does
// not fail the run: the user tries again in its transactions, each failed
// attempt counted as a connection error, as an application would meet it.
func (l *loadWorkload) NewWorker(ctx context.Context, id int) (load.Worker, error) {
	w := &worker{l: l, types: l.mix.types(), shop: newShopper(l.sizes, l.seed, id)}
	s, err := l.open(ctx)
	switch {
	case err == nil:
		w.s = s
	case tooManyConnections(err):
		l.lazy.Add(1)
		w.retryAt = time.Now().Add(reconnectBackoff)
	default:
		return nil, err
	}
	return w, nil
}

// reconnectBackoff is how long a user waits before it connects again after
// a failed attempt, as a connection pool would.
const reconnectBackoff = 100 * time.Millisecond

type worker struct {
	l       *loadWorkload
	types   []txType
	shop    *shopper
	s       session
	retryAt time.Time
}

func (w *worker) Do(ctx context.Context, tx int) error {
	if w.s == nil {
		if err := w.reconnect(ctx); err != nil {
			return err
		}
	}
	err := w.shop.run(ctx, w.s, w.types[tx])
	if err != nil && load.ClassifyError(err) == load.ConnectionLost {
		_ = w.s.close()
		w.s = nil
		w.retryAt = time.Now().Add(reconnectBackoff)
	}
	return err
}

// reconnect connects again, no sooner than the backoff allows.
func (w *worker) reconnect(ctx context.Context) error {
	if wait := time.Until(w.retryAt); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
	s, err := w.l.open(ctx)
	if err != nil {
		w.retryAt = time.Now().Add(reconnectBackoff)
		return err
	}
	w.s = s
	return nil
}

func (w *worker) Close() error {
	if w.s == nil {
		return nil
	}
	return w.s.close()
}
