package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dbrig/dbrig/internal/agent"
	"github.com/dbrig/dbrig/internal/load"
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/term"
	"github.com/dbrig/dbrig/internal/units"
	"github.com/dbrig/dbrig/internal/workload"
	"github.com/dbrig/dbrig/internal/workload/script"
)

// scriptView shows pgbench's scripts under load as oltp's view shows the
// shop (a line per second, each point's table), then each point's end as
// pgbench prints it: per script and per statement (-r), failures by class
// and retries as pgbench 15 counts them.
type scriptView struct {
	a *app
	f *loadFlags
	w *oltpWatcher
	// live is what the workload tells the view as it runs.
	live *script.Live

	mu sync.Mutex
	// reports are each point's scripts, in the order the points ran, with
	// the users of the point.
	reports   []scriptReportAt
	lastUsers int
}

type scriptReportAt struct {
	users int
	rep   script.Report
}

func newScriptView(a *app, f *loadFlags) loadView {
	lines := a.stdout
	if f.json {
		lines = a.stderr
	}
	v := &scriptView{a: a, f: f, w: &oltpWatcher{out: lines, style: term.Style{Enabled: term.ColorEnabled(lines, a.getenv)}, notes: a.stderr}}
	shop := v.w.live()
	v.live = &script.Live{Runner: shop.Runner, OnInterval: shop.OnInterval, Note: shop.Note,
		Result: func(res *load.Result) {
			v.mu.Lock()
			v.lastUsers = res.Users
			v.mu.Unlock()
			shop.Result(res)
		},
		Scripts: func(rep script.Report) {
			v.mu.Lock()
			v.reports = append(v.reports, scriptReportAt{users: v.lastUsers, rep: rep})
			v.mu.Unlock()
			v.w.mu.Lock()
			defer v.w.mu.Unlock()
			_ = rep.WriteText(v.w.out)
		},
	}
	return v
}

func (v *scriptView) kind(workload.Kind) workload.Kind { return script.KindWith(v.live) }
func (v *scriptView) progress() study.Progress         { return &noteProgress{w: v.a.stderr} }
func (v *scriptView) metrics() prometheus.Collector    { return &v.w.metrics }

// spread runs each point's users on the agents instead of in this
// process; the agents' scripts' figures come back merged.
func (v *scriptView) spread(agents []*agent.Agent) {
	v.live.Spread = func(ctx context.Context, cfg load.Config, path agent.Path, p script.AgentParams) (*agent.LoadOutcome, error) {
		return v.w.runOnAgents(ctx, agents, v.f.samples, agent.LoadSpec{Workload: "script", Params: p, Login: path.Login, Link: path.Link, Config: cfg, OnInterval: cfg.OnInterval})
	}
}

func (v *scriptView) starting(l loadInfo) {
	p := l.params
	users := make([]string, len(l.sweep))
	for i, u := range l.sweep {
		users[i] = fmt.Sprint(u)
	}
	loop := "closed loop"
	if rate := p.Float("rate"); rate > 0 {
		loop = fmt.Sprintf("open loop at %s/s", strconv.FormatFloat(rate, 'f', -1, 64))
	}
	fmt.Fprintf(v.a.stderr, "dbrig: %s, scripts %s, protocol %s, %s users, %s; warm-up %s, then %s measured\n", l.title, p.String("script"),
		p.String("protocol"), strings.Join(users, ", "), loop, units.FormatDuration(p.Duration("warm_up")), units.FormatDuration(p.Duration("duration")))
}

// scriptSummary is what `dbrig load script --json` prints: oltp's document
// with the scripts' own figures in each point (docs/load.md).
type scriptSummary struct {
	loadRunJSON
	Scripts  string            `json:"scripts"`
	Protocol string            `json:"protocol"`
	MaxTries int64             `json:"max_tries"`
	Points   []scriptPointJSON `json:"points"`
	// Agents are each point's agents, when the load was spread over them.
	Agents            [][]agent.AgentReport `json:"agents,omitempty"`
	InterruptedPoints []scriptPointJSON     `json:"interrupted_points,omitempty"`
	Error             string                `json:"error,omitempty"`
}

type scriptPointJSON struct {
	oltpPointJSON
	// Failed, Retried and Retries are over every script, as pgbench's
	// totals.
	Failed  int64        `json:"failed"`
	Retried int64        `json:"retried"`
	Retries int64        `json:"retries"`
	Scripts []scriptJSON `json:"scripts,omitempty"`
	// Predicted is the point's prediction, made before it ran (docs/load.md#prediction).
	Predicted *pointModel `json:"predicted,omitempty"`
}

type scriptJSON struct {
	Name       string             `json:"name"`
	Weight     int                `json:"weight"`
	Ops        int64              `json:"transactions"`
	TPS        float64            `json:"tps"`
	Failed     load.ErrorCounts   `json:"failed"`
	Retried    int64              `json:"retried"`
	Retries    int64              `json:"retries"`
	LatencyMs  map[string]float64 `json:"latency_ms,omitempty"`
	Statements []statementJSON    `json:"statements"`
}

type statementJSON struct {
	Line      int                `json:"line"`
	Text      string             `json:"text"`
	Count     int64              `json:"count"`
	LatencyMs map[string]float64 `json:"latency_ms,omitempty"`
	Failures  int64              `json:"failures"`
	Retries   int64              `json:"retries"`
}

func (v *scriptView) summary(l loadInfo, ran *study.Ran, runErr error) any {
	shop := v.w.summary(l, ran, runErr)
	sum := scriptSummary{loadRunJSON: shop.loadRunJSON, Scripts: l.params.String("script"), Protocol: l.params.String("protocol"), MaxTries: l.params.Int("max_tries"), Error: shop.Error, Agents: shop.Agents}
	sum.Server = serverVersion(ran, l.engine)
	v.mu.Lock()
	defer v.mu.Unlock()
	reports := v.reports
	// A point's scripts are the first report left of its users: the
	// points of one number of users ran in the order the run lists them.
	withScripts := func(p oltpPointJSON) scriptPointJSON {
		sp := scriptPointJSON{oltpPointJSON: p, Predicted: modelOf(ran, p.Users, p.Link)}
		for i, r := range reports {
			if r.users == p.Users {
				sp.fill(r.rep)
				reports = append(reports[:i:i], reports[i+1:]...)
				break
			}
		}
		return sp
	}
	for _, p := range shop.Points {
		sum.Points = append(sum.Points, withScripts(p))
	}
	for _, p := range shop.InterruptedPoints {
		sum.InterruptedPoints = append(sum.InterruptedPoints, withScripts(p))
	}
	return sum
}

func (p *scriptPointJSON) fill(rep script.Report) {
	for _, s := range rep.Scripts {
		j := scriptJSON{Name: s.Name, Weight: s.Weight, Ops: s.Ops, TPS: s.TPS, Failed: s.Failed, Retried: s.Retried, Retries: s.Retries,
			LatencyMs: latencyJSON(s.Latency)}
		for _, c := range s.Commands {
			st := statementJSON{Line: c.Line, Text: c.Text, LatencyMs: latencyJSON(c.Latency), Failures: c.Failures, Retries: c.Retries}
			if c.Latency != nil {
				st.Count = c.Latency.Count()
			}
			j.Statements = append(j.Statements, st)
		}
		p.Failed += s.Failed.Total()
		p.Retried += s.Retried
		p.Retries += s.Retries
		p.Scripts = append(p.Scripts, j)
	}
}

// print ends the output as pgbench ends its: the totals of each point,
// then what qualifies its figures and the report's path.
func (v *scriptView) print(w io.Writer, doc any) {
	sum := doc.(scriptSummary)
	for _, p := range sum.Points {
		head := fmt.Sprintf("%d users", p.Users)
		if p.Link != "" {
			head += ", link " + p.Link
		}
		fmt.Fprintf(w, "%s: %d transactions, tps = %.1f, %d failed (%s), %d retried, %d retries", head, p.transactions(), p.TPS,
			p.Failed, p.failedText(), p.Retried, p.Retries)
		if o := p.Overall; o != nil && o.LatencyMs != nil {
			fmt.Fprintf(w, "; latency average %.3f ms, p50 %.3f, p99 %.3f, max %.3f", o.LatencyMs["mean"], o.LatencyMs["p50"], o.LatencyMs["p99"], o.LatencyMs["max"])
		}
		if m := p.Predicted; m != nil {
			fmt.Fprintf(w, "; predicted before it ran: tps = %.1f, error %+.1f %%", m.TPS, m.ErrorPct)
		}
		fmt.Fprintln(w)
	}
	shop := oltpSummary{loadRunJSON: sum.loadRunJSON, Points: make([]oltpPointJSON, len(sum.Points))}
	for i, p := range sum.Points {
		shop.Points[i] = p.oltpPointJSON
	}
	printOLTPEnd(w, v.w.style, shop)
}

func (p scriptPointJSON) transactions() int64 {
	if p.Overall == nil {
		return 0
	}
	return p.Overall.Ops
}

// failedText is the failures by class, pgbench's serialization and
// deadlock among them.
func (p scriptPointJSON) failedText() string {
	if p.Overall == nil || p.Overall.Errors.Total() == 0 {
		return "none"
	}
	return p.Overall.Errors.String()
}
