package tenants

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/dbrig/dbrig/internal/workload"
)

// DefaultThink is the seed's think time between one connection's
// transactions.
const DefaultThink = 18 * time.Millisecond

// Kind registers the workload.
func Kind() workload.Kind {
	var prepared atomic.Int64
	return workload.Kind{
		Name: "tenants",
		Doc:  "many small databases per instance, one connection each, server-side functions (seed 003)",
		Params: []workload.ParamSpec{
			{Name: "databases", Type: workload.IntParam,
				Doc: "tenant databases in all, spread evenly over the instances of the set (each with one connection)",
				Max: 9999, Why: "a tenant database's name carries 4 digits, and each holds a connection through the run"},
			{Name: "functions", Type: workload.IntParam, Default: int64(200),
				Doc: "server-side functions (PostgreSQL) or stored procedures (MariaDB) per database, at least 6; the transactions call them",
				Min: int64(len(families)), MinWhy: "one for each kind of transaction",
				Max: 9999, Why: "made in every database: fifty times the seed's 200"},
			{Name: "size", Type: workload.SizeParam, Default: int64(30_000_000),
				Doc: "seeded ledger data per database (tables and indexes; the seed's databases were 30 MB)",
				Max: 10 << 30, Why: "in every database: 10 GiB is over 300 times the seed's 30 MB"},
			{Name: "think", Type: workload.DurationParam, Default: DefaultThink.String(),
				Doc:         "each connection's pause after a transaction (the seed's 18 ms)",
				MaxDuration: workload.MaxDuration, Why: workload.DurationWhy},
			{Name: "warm_up", Type: workload.DurationParam, Default: "10s", Doc: "run, then left out of the results",
				MaxDuration: workload.MaxDuration, Why: workload.DurationWhy},
			{Name: "duration", Type: workload.DurationParam, Default: "60s", Doc: "the measured interval",
				MaxDuration: workload.MaxDuration, Why: workload.DurationWhy, Check: workload.PositiveDuration},
			{Name: "set", Type: workload.StringParam, Default: "db",
				Doc: "the [[instance]] whose instances hold the databases (every member of a set made with count)"},
			{Name: "parallel", Type: workload.IntParam, Default: int64(4),
				Doc: "databases created at once while preparing",
				Max: 256, Why: "each is a session of its own: beyond the server's CPUs more only queue"},
			{Name: "prime", Type: workload.BoolParam, Default: true,
				Doc: "each connection calls every function twice before the clock starts, so every backend holds every plan, as after hours of service; the first pass (compiling) and the second are timed apart"},
		},
		New: newWorkload,
		// Prepare runs before every point: a set that shrank (count = 2
		// after count = 4) leaves its first instances running with their
		// share of the databases of the larger set, which no key made of
		// the parameters would tell. When every instance holds its share
		// already, Prepare costs one query per instance.
		PrepareKey: func(p workload.Params) string { return fmt.Sprintf("%s #%d", prepareKey(p), prepared.Add(1)) },
		Metrics:    Metrics,
		Model:      Model,
		Predict:    Predict,
	}
}

func prepareKey(p workload.Params) string {
	return fmt.Sprintf("tenants-v1 databases=%d functions=%d size=%d set=%s", p.Int("databases"), p.Int("functions"), p.Int("size"), p.String("set"))
}

type tenants struct {
	databases int
	functions int
	size      int64
	think     time.Duration
	warmUp    time.Duration
	duration  time.Duration
	set       string
	parallel  int
	prime     bool
}

var _ workload.Workload = (*tenants)(nil)

func newWorkload(p workload.Params) (workload.Workload, error) {
	w := &tenants{
		databases: int(p.Int("databases")),
		functions: int(p.Int("functions")),
		size:      p.Int("size"),
		think:     p.Duration("think"),
		warmUp:    p.Duration("warm_up"),
		duration:  p.Duration("duration"),
		set:       p.String("set"),
		parallel:  int(p.Int("parallel")),
		prime:     p.Bool("prime"),
	}
	return w, nil
}

// members are the instances of the set that hold the databases.
func (w *tenants) members(env *workload.Env) ([]string, error) {
	var names []string
	if env.Set != nil {
		names = env.Set(w.set)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("set = %q names no [[instance]] of this study", w.set)
	}
	if w.databases < len(names) {
		return nil, fmt.Errorf("databases = %d over %d instances: every instance needs at least one", w.databases, len(names))
	}
	return names, nil
}

// Run measures one point: a connection per database, each calling the
// database's functions with think time between, for the warm-up and the
// measured interval; see run.go.
func (w *tenants) Run(ctx context.Context, env *workload.Env) (workload.Measurement, error) {
	return w.run(ctx, env)
}
