package script

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/dbrig/dbrig/internal/engine/mariadb"
	"github.com/dbrig/dbrig/internal/workload"
)

// Bounds of the parameters. The virtual-user loop's are oltp's, until the
// load layer declares them once for every workload.
const (
	MaxUsers    = 100_000
	MaxUsersWhy = "each user holds a connection of its own: 1,000 users on each of 100 agents is the largest load docs/distributed.md plans"
	MaxRate     = 10_000_000
	MaxRateWhy  = "ten times the largest load docs/distributed.md plans, a million a second over 20 agents"
	// MaxInFlight bounds an open loop's queue of arrivals, which is
	// allocated whole.
	MaxInFlight    = 1 << 24
	MaxInFlightWhy = "the queue of arrivals is allocated whole, 8 bytes each: 128 MiB"
	// MaxScale is pgbench's scale at 10 billion accounts, about 1.3 TB.
	MaxScale    = 100_000
	MaxScaleWhy = "100,000 accounts per unit: 10 billion accounts, about 1.3 TB of pgbench_accounts"
	// MaxTries bounds --max-tries.
	MaxTries    = 1_000_000
	MaxTriesWhy = "a million tries of one transaction; 0 tries until the run ends"
)

func params() []workload.ParamSpec {
	week := func(p workload.ParamSpec) workload.ParamSpec {
		p.MaxDuration, p.Why = workload.MaxDuration, workload.DurationWhy
		return p
	}
	return []workload.ParamSpec{
		{Name: "files", Kind: workload.StringParam, Default: "tpcb-like",
			Doc: "the scripts, FILE[@WEIGHT] separated by commas (pgbench -f), or the built-ins tpcb-like, simple-update, select-only (pgbench -b)",
			Check: func(v any) error {
				_, err := ParseFiles(fmt.Sprint(v))
				return err
			}},
		{Name: "define", Kind: workload.StringParam, Default: "",
			Doc: "variables set before the run, NAME=VALUE separated by commas (pgbench -D); a value may hold a comma not followed by NAME=",
			Check: func(v any) error {
				_, err := ParseDefines(fmt.Sprint(v))
				return err
			}},
		{Name: "protocol", Kind: workload.StringParam, Default: Simple, Choices: []string{Simple, Extended, Prepared},
			Doc: "how statements go to the server (pgbench -M): the variables' text in the SQL, the extended protocol, or statements prepared once per connection"},
		{Name: "max_tries", Kind: workload.IntParam, Default: int64(1), AllowZero: true,
			Doc: "tries of a transaction that failed on a serialization failure or a deadlock (pgbench --max-tries); 0: until the run ends",
			Max: MaxTries, Why: MaxTriesWhy},
		{Name: "init", Kind: workload.BoolParam, Default: false,
			Doc: "make pgbench's tables at scale before the run (pgbench -i)"},
		{Name: "scale", Kind: workload.IntParam, Default: int64(1),
			Doc: "pgbench's scale: 100,000 accounts per unit, what init makes and :scale (the built-ins read it from pgbench_branches)",
			Max: MaxScale, Why: MaxScaleWhy},
		{Name: "random_seed", Kind: workload.IntParam, Default: int64(1), AllowZero: true,
			Doc: "seeds the scripts' random functions and the choice of script (pgbench --random-seed)",
			Max: math.MaxInt64, Why: "any whole number"},
		{Name: "users", Kind: workload.IntParam, Default: int64(10),
			Doc: "virtual users, each with its own connection (pgbench -c; in an open loop, the workers that serve arrivals)",
			Max: MaxUsers, Why: MaxUsersWhy},
		week(workload.ParamSpec{Name: "duration", Kind: workload.DurationParam, Default: "30s", Doc: "the measured interval (pgbench -T)", Check: workload.PositiveDuration}),
		week(workload.ParamSpec{Name: "warm_up", Kind: workload.DurationParam, Default: "5s", Doc: "run before the measured interval, and discarded"}),
		week(workload.ParamSpec{Name: "ramp_up", Kind: workload.DurationParam, Default: "0s",
			Doc: "users start evenly over this time (an open loop's rate rises over it); within warm_up"}),
		{Name: "rate", Kind: workload.FloatParam, Default: 0.0, AllowZero: true,
			Doc:      "open loop: transactions arriving per second, latency measured from each one's intended start (pgbench -R; 0: closed loop)",
			MaxFloat: MaxRate, Why: MaxRateWhy},
		{Name: "arrival", Kind: workload.StringParam, Default: "poisson", Choices: []string{"poisson", "fixed"},
			Doc: "open loop: Poisson arrivals (as pgbench -R) or evenly spaced"},
		{Name: "max_in_flight", Kind: workload.IntParam, Default: int64(0), AllowZero: true,
			Doc: "open loop: transactions arrived and not finished beyond which arrivals are counted and not started (0: users plus 10 s of arrivals)",
			Max: MaxInFlight, Why: MaxInFlightWhy},
		week(workload.ParamSpec{Name: "think", Kind: workload.DurationParam, Default: "0s", Doc: "closed loop: each user's pause after a transaction"}),
		{Name: "think_distribution", Kind: workload.StringParam, Default: "exponential", Choices: []string{"exponential", "fixed"},
			Doc: "closed loop: pauses drawn from a negative exponential with mean think, capped at 10 ×, or exactly think"},
		week(workload.ParamSpec{Name: "keying", Kind: workload.DurationParam, Default: "0s", Doc: "closed loop: each user's pause before a transaction"}),
		week(workload.ParamSpec{Name: "tx_limit", Kind: workload.DurationParam, Default: "30s",
			Doc: "transactions slower than this are counted"}),
		{Name: "instance", Kind: workload.StringParam, Default: "db", Doc: "the instance the scripts run on"},
	}
}

// checkParams refuses at parse what is wrong only beside other values:
// the scripts as the protocol and the definitions read them, and the
// loop's settings that go together.
func checkParams(p workload.Params) []workload.ParamError {
	var errs []workload.ParamError
	if _, err := programOf(p, false); err != nil {
		errs = append(errs, workload.ParamError{Param: "files", Err: err})
	}
	if n := p.Int("max_in_flight"); n != 0 && p.Float("rate") == 0 {
		errs = append(errs, workload.ParamError{Param: "max_in_flight", Err: fmt.Errorf("max_in_flight = %d: an open-loop setting; set a rate", n)})
	}
	if ramp, warm := p.Duration("ramp_up"), p.Duration("warm_up"); ramp > warm {
		errs = append(errs, workload.ParamError{Param: "ramp_up", Err: fmt.Errorf("ramp_up = %s: longer than warm_up = %s, so the measured interval would include users still starting", ramp, warm)})
	}
	return errs
}

// programOf reads the parameters' scripts for an engine.
func programOf(p workload.Params, mariaDB bool) (*Program, error) {
	sources, err := ParseFiles(p.String("files"))
	if err != nil {
		return nil, err
	}
	defines, err := ParseDefines(p.String("define"))
	if err != nil {
		return nil, err
	}
	return Parse(sources, Options{Protocol: p.String("protocol"), MariaDB: mariaDB, Defines: defines})
}

// ErrPipelineOnMariaDB is a script with \startpipeline meant for MariaDB,
// whose protocol answers each statement before it reads the next.
var ErrPipelineOnMariaDB = errors.New(`\startpipeline: MariaDB's protocol has no pipeline mode (each statement is answered before the next is read): run the script on PostgreSQL, or remove \startpipeline and \endpipeline`)

// CheckEngine refuses, before anything starts, what a program cannot do
// on an engine.
func (p *Program) CheckEngine(engineName string) error {
	if engineName != mariadb.EngineName {
		return nil
	}
	var errs []error
	for _, s := range p.Scripts {
		for _, c := range s.Commands {
			if c.Kind == StartPipeline {
				errs = append(errs, &ParseError{File: s.Name, Line: c.Line, Msg: ErrPipelineOnMariaDB.Error()})
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("on %s: %w", engineName, errors.Join(errs...))
	}
	return nil
}

// metricName makes a script's name into a metric prefix: the file's base
// name without its extension, lower case, other characters as _.
func metricName(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	if i := strings.LastIndexByte(name, '.'); i > 0 {
		name = name[:i]
	}
	b := []byte(strings.ToLower(name))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			b[i] = '_'
		}
	}
	return string(b)
}
