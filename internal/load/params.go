package load

import (
	"fmt"
	"math"
	"strconv"

	"github.com/dbrig/dbrig/internal/workload"
)

// Bounds of the virtual-user loop, which a study file's parameters and
// the flags of dbrig load KIND take alike.
const (
	MaxUsers    = 100_000
	MaxUsersWhy = "each user holds a connection of its own: 1,000 users on each of 100 agents is the largest load docs/distributed.md plans"
	MaxRate     = 10_000_000
	MaxRateWhy  = "ten times the largest load docs/distributed.md plans, a million a second over 20 agents"
	// MaxInFlight bounds an open loop's queue of arrivals, which is
	// allocated whole.
	MaxInFlight    = 1 << 24
	MaxInFlightWhy = "the queue of arrivals is allocated whole, 8 bytes each: 128 MiB"
)

// Params are the virtual-user loop's parameters, declared once for every
// workload kind that runs on this layer: a kind appends them to its own,
// builds its Config with ConfigOf and checks them with CheckParams.
func Params() []workload.ParamSpec {
	week := func(p workload.ParamSpec) workload.ParamSpec {
		p.MaxDuration, p.Why = workload.MaxDuration, workload.DurationWhy
		return p
	}
	return []workload.ParamSpec{
		{Name: "users", Type: workload.IntParam, Default: int64(10),
			Doc:  "virtual users, each with its own connection (in an open loop, the workers that serve arrivals)",
			Flag: workload.FlagSpec{Help: "virtual users `N`, each with its own connection (N,N,... sweeps them)"},
			Max:  MaxUsers, Why: MaxUsersWhy},
		week(workload.ParamSpec{Name: "duration", Type: workload.DurationParam, Default: "30s", Doc: "the measured interval", Check: workload.PositiveDuration,
			Flag: workload.FlagSpec{Help: "the measured interval `D`"}}),
		week(workload.ParamSpec{Name: "warm_up", Type: workload.DurationParam, Default: "5s", Doc: "run before the measured interval, and discarded"}),
		week(workload.ParamSpec{Name: "ramp_up", Type: workload.DurationParam, Default: "0s",
			Doc:  "users start evenly over this time (an open loop's rate rises over it); within warm_up",
			Flag: workload.FlagSpec{Help: "start the users evenly over this time (an open loop's rate rises over it); within --warm-up"}}),
		{Name: "rate", Type: workload.FloatParam, Default: 0.0, AllowZero: true,
			Doc:      "open loop: transactions arriving per second, latency measured from each one's intended start (0: closed loop)",
			MaxFloat: MaxRate, Why: MaxRateWhy,
			Flag: workload.FlagSpec{Help: "open loop: transactions arriving per second `R` (0: closed loop)",
				Want: fmt.Sprintf("want transactions per second up to %d (%s), 0 for a closed loop", MaxRate, MaxRateWhy)}},
		{Name: "arrival", Type: workload.StringParam, Default: "poisson", Choices: []string{"poisson", "fixed"},
			Doc: "open loop: Poisson arrivals (as pgbench -R) or evenly spaced"},
		{Name: "max_in_flight", Type: workload.IntParam, Default: int64(0), AllowZero: true,
			Doc: "open loop: transactions arrived and not finished beyond which arrivals are counted and not started (0: users plus 10 s of arrivals)",
			Max: MaxInFlight, Why: MaxInFlightWhy},
		week(workload.ParamSpec{Name: "think", Type: workload.DurationParam, Default: "0s", Doc: "closed loop: each user's pause after a transaction",
			Flag: workload.FlagSpec{Help: "closed loop: each user's pause `T` after a transaction (negative-exponential with mean T, capped at 10 T)"}}),
		{Name: "think_distribution", Type: workload.StringParam, Default: "exponential", Choices: []string{"exponential", "fixed"},
			Doc:  "closed loop: pauses drawn from a negative exponential with mean think, capped at 10 × (TPC-C's rule), or exactly think",
			Flag: workload.FlagSpec{Name: "think-fixed", Switch: "fixed", Help: "closed loop: pause exactly --think instead"}},
		week(workload.ParamSpec{Name: "keying", Type: workload.DurationParam, Default: "0s", Doc: "closed loop: each user's pause before a transaction"}),
		week(workload.ParamSpec{Name: "tx_limit", Type: workload.DurationParam, Default: "30s",
			Doc: "transactions slower than this are counted (seed 001 counted those over 30 s)"}),
		{Name: "seed", Type: workload.IntParam, Default: int64(1), AllowZero: true, Doc: "seeds every random choice",
			Max: math.MaxInt64, Why: "any whole number"},
	}
}

// CheckParams refuses the loop's values that are wrong only beside each
// other, at parse.
func CheckParams(p workload.Params) []workload.ParamError {
	var errs []workload.ParamError
	if n := p.Int("max_in_flight"); n != 0 && p.Float("rate") == 0 {
		errs = append(errs, workload.ParamError{Param: "max_in_flight", Err: fmt.Errorf("max_in_flight = %d: an open-loop setting; set a rate", n)})
	}
	if ramp, warm := p.Duration("ramp_up"), p.Duration("warm_up"); ramp > warm {
		errs = append(errs, workload.ParamError{Param: "ramp_up", Err: fmt.Errorf("ramp_up = %s: longer than warm_up = %s, so the measured interval would include users still starting", ramp, warm)})
	}
	if p.Float("rate") > 0 {
		// An open loop's pace is its rate: a pause it would ignore is a
		// mistake about which loop runs.
		for _, name := range []string{"think", "keying"} {
			if d := p.Duration(name); d != 0 {
				errs = append(errs, workload.ParamError{Param: name, Err: fmt.Errorf("%s = %s: think and keying are closed-loop settings; an open loop's pace is its rate", name, d)})
			}
		}
		if p.String("think_distribution") == "fixed" {
			errs = append(errs, workload.ParamError{Param: "think_distribution", Err: fmt.Errorf("think_distribution = fixed: a closed-loop setting; an open loop's pace is its rate")})
		}
	}
	return errs
}

// ConfigOf is the loop's configuration for a point's parameters, which
// Params declared and the study's parse checked.
func ConfigOf(p workload.Params) Config {
	cfg := Config{
		Users:    int(p.Int("users")),
		RampUp:   p.Duration("ramp_up"),
		WarmUp:   p.Duration("warm_up"),
		Duration: p.Duration("duration"),
		TxLimit:  p.Duration("tx_limit"),
		Seed:     uint64(p.Int("seed")),
	}
	if rate := p.Float("rate"); rate != 0 {
		cfg.Rate, cfg.Arrival, cfg.MaxInFlight = rate, Poisson, int(p.Int("max_in_flight"))
		if p.String("arrival") == "fixed" {
			cfg.Arrival = Fixed
		}
		return cfg
	}
	if think := p.Duration("think"); think != 0 {
		cfg.Think = Think{Mean: think, Exponential: p.String("think_distribution") == "exponential"}
	}
	cfg.Keying = p.Duration("keying")
	return cfg
}

// SweptUsers are a load's swept users as written, and the most of them: a
// server dbrig starts needs a connection slot for each.
func SweptUsers(sweep []any) (users []string, most int64) {
	users = make([]string, len(sweep))
	for i, u := range sweep {
		n, _ := workload.IntOf(u)
		users[i], most = strconv.FormatInt(n, 10), max(most, n)
	}
	return users, most
}
