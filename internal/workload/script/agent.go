package script

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/dbrig/dbrig/internal/agent"
	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/mariadb"
	"github.com/dbrig/dbrig/internal/link"
	"github.com/dbrig/dbrig/internal/load"
	"github.com/dbrig/dbrig/internal/measure"
	"github.com/dbrig/dbrig/internal/workload"
)

// AgentParams are what a load agent needs to run its share of the
// scripts' load: the scripts' texts as the run read them (an agent's host
// never reads a file of its own), the -D variables, the protocol, the
// tries and :scale. The users, rate and seed are the share's, in its load
// configuration.
type AgentParams struct {
	Scripts  []Source `json:"scripts"`
	Defines  []Define `json:"defines,omitempty"`
	Protocol string   `json:"protocol"`
	MaxTries int      `json:"max_tries"`
	Scale    int      `json:"scale"`
}

// AgentWorkload makes one agent's share of the scripts' load: the same
// program as in dbrig's own process, read for the login's engine, its
// clients seeded from the agent's own seed. Its per-script and
// per-statement figures go back beside the result (agent.Extra).
func AgentWorkload(params json.RawMessage, login engine.Conn, seed uint64, users int) (load.Workload, error) {
	var p AgentParams
	if err := json.Unmarshal(params, &p); err != nil {
		return nil, fmt.Errorf("script: the agent's parameters: %w", err)
	}
	if p.MaxTries < 0 || p.MaxTries > MaxTries || p.Scale < 1 || p.Scale > MaxScale {
		return nil, fmt.Errorf("script: max_tries %d or scale %d out of range", p.MaxTries, p.Scale)
	}
	prog, err := Parse(p.Scripts, Options{Protocol: p.Protocol, MariaDB: login.Engine == mariadb.Name, Defines: p.Defines})
	if err != nil {
		return nil, fmt.Errorf("script: %w", err)
	}
	if err := prog.CheckEngine(login.Engine); err != nil {
		return nil, fmt.Errorf("script: %w", err)
	}
	return &agentWorkload{loadWorkload: &loadWorkload{prog: prog, login: login, scale: p.Scale, seed: seed, users: max(users, 1),
		maxTries: p.MaxTries, clock: &window{}}}, nil
}

// agentWorkload is a share run on an agent: its measured interval is set
// at the common start, and its clients' figures sent with the result.
type agentWorkload struct{ *loadWorkload }

var _ agent.Reporter = (*agentWorkload)(nil)

// Measuring is set before any user runs, so the clients read it unlocked.
func (a *agentWorkload) Measuring(from, to time.Time) { a.clock.from, a.clock.to = from, to }

func (a *agentWorkload) Extra() *agent.Extra { return a.stats().extra() }

// spread runs the point's load on load agents (the command's Spread) and
// returns the merged result with every agent's clients' figures summed,
// and what the agents' links carried.
func (w *scriptWorkload) spread(ctx context.Context, cfg load.Config, lw *loadWorkload, ep workload.Endpoint, read workload.ReadFile) (*load.Result, *clientStats, map[string]link.Stats, error) {
	sources, err := ParseFiles(w.params.String("script"), read)
	if err != nil {
		return nil, nil, nil, err
	}
	defines, err := ParseDefines(w.params.String("define"))
	if err != nil {
		return nil, nil, nil, err
	}
	path, err := agent.PathOf(lw.login, ep)
	if err != nil {
		return nil, nil, nil, err
	}
	p := AgentParams{Scripts: sources, Defines: defines, Protocol: lw.prog.Protocol, MaxTries: lw.maxTries, Scale: lw.scale}
	out, err := w.live.Spread(ctx, cfg, path, p)
	if out == nil {
		return nil, statsOf(lw.prog, nil), nil, err
	}
	return out.Result, statsOf(lw.prog, out.Extra), out.Carried(path), err
}

// The names of a client's figures in an agent.Extra: script i's, and its
// command j's.
func scriptKey(i int, name string) string { return fmt.Sprintf("script.%d.%s", i, name) }
func commandKey(i, j int, name string) string {
	return fmt.Sprintf("script.%d.command.%d.%s", i, j, name)
}

// extra is the figures as an agent sends them.
func (st *clientStats) extra() *agent.Extra {
	e := &agent.Extra{Counters: map[string]int64{}, Histograms: map[string]*measure.Histogram{}}
	for i := range st.scripts {
		s := &st.scripts[i]
		for name, v := range s.counters() {
			e.Counters[scriptKey(i, name)] = *v
		}
		for j, c := range s.commands {
			e.Counters[commandKey(i, j, "failures")] = c.failures
			e.Counters[commandKey(i, j, "retries")] = c.retries
			if c.latency != nil {
				e.Histograms[commandKey(i, j, "latency")] = c.latency
			}
		}
	}
	return e
}

// statsOf reads the agents' merged figures back into a program's
// (nothing when the agents sent none, as an interrupted run's).
func statsOf(prog *Program, e *agent.Extra) *clientStats {
	st := newClientStats(prog)
	if e == nil {
		return st
	}
	for i := range st.scripts {
		s := &st.scripts[i]
		for name, v := range s.counters() {
			*v = e.Counters[scriptKey(i, name)]
		}
		for j := range s.commands {
			c := &s.commands[j]
			c.failures, c.retries = e.Counters[commandKey(i, j, "failures")], e.Counters[commandKey(i, j, "retries")]
			if h := e.Histograms[commandKey(i, j, "latency")]; c.latency != nil && h != nil {
				c.latency.Merge(h)
			}
		}
	}
	return st
}

// counters are a script's sums by name, durations in nanoseconds.
func (s *scriptStats) counters() map[string]*int64 {
	return map[string]*int64{"ok": &s.ok, "retried": &s.retried, "retries": &s.retries, "trips": &s.trips,
		"bytes_out": &s.bytesOut, "bytes_in": &s.bytesIn,
		"wait_ns": (*int64)(&s.wait), "sleep_ns": (*int64)(&s.sleep), "total_ns": (*int64)(&s.total)}
}
