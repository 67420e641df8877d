package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/dbrig/dbrig/internal/agent"
	"github.com/dbrig/dbrig/internal/load"
	"github.com/dbrig/dbrig/internal/measure"
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/term"
	"github.com/dbrig/dbrig/internal/units"
	"github.com/dbrig/dbrig/internal/workload"
	"github.com/dbrig/dbrig/internal/workload/oltp"
)

// oltpView shows the shop's load: a line per second, each point's tables,
// its agents, and the document --json prints.
type oltpView struct {
	a *app
	f *loadFlags
	w *oltpWatcher
	// live is what the workload tells the view as it runs.
	live *oltp.Live
}

func newOLTPView(a *app, f *loadFlags) loadView {
	// The per-second lines go to stdout, or to stderr when stdout carries
	// the JSON document.
	lines := a.stdout
	if f.json {
		lines = a.stderr
	}
	w := &oltpWatcher{out: lines, style: term.Style{Enabled: term.ColorEnabled(lines, a.getenv)}, notes: a.stderr}
	return &oltpView{a: a, f: f, w: w, live: w.live()}
}

func (v *oltpView) kind(workload.Kind) workload.Kind { return oltp.KindWith(v.live) }
func (v *oltpView) progress() study.Progress         { return &noteProgress{w: v.a.stderr} }
func (v *oltpView) metrics() prometheus.Collector    { return &v.w.metrics }
func (v *oltpView) starting(l loadInfo)              { v.w.describe(l) }

func (v *oltpView) summary(l loadInfo, ran *study.Ran, runErr error) any {
	sum := v.w.summary(l, ran, runErr)
	sum.Server = serverVersion(ran, l.engine)
	return sum
}

func (v *oltpView) print(w io.Writer, doc any) { printOLTPEnd(w, v.w.style, doc.(oltpSummary)) }

// spread runs each point's users on the agents instead of in this process.
func (v *oltpView) spread(agents []*agent.Agent) {
	v.live.Spread = func(ctx context.Context, cfg load.Config, path agent.Path, p oltp.AgentParams) (*agent.LoadOutcome, error) {
		return v.w.runOnAgents(ctx, agents, v.f.samples, agent.LoadSpec{Workload: "oltp", Params: p, Login: path.Login, Link: path.Link, Config: cfg, OnInterval: cfg.OnInterval})
	}
}

// runOnAgents runs one point's load on the agents, prints their table and
// keeps it for the summary, and writes the samples (--samples).
func (w *oltpWatcher) runOnAgents(ctx context.Context, agents []*agent.Agent, samples string, spec agent.LoadSpec) (*agent.LoadOutcome, error) {
	spec.Config.KeepSamples = samples != ""
	out, err := agent.RunLoad(ctx, agents, spec)
	if out == nil {
		return nil, err
	}
	w.mu.Lock()
	w.agents = append(w.agents, out.Agents)
	w.mu.Unlock()
	printAgents(w.out, out.Agents)
	if samples != "" && out.Result != nil {
		if werr := writeSamples(samples, out.Samples); werr != nil {
			err = errors.Join(err, werr)
		}
	}
	return out, err
}

// printOLTPEnd ends the output for people: what qualifies a point's
// figures, again and beside its tps, and the report's path.
func printOLTPEnd(w io.Writer, style term.Style, sum oltpSummary) {
	for _, p := range sum.Points {
		for _, warning := range p.Warnings {
			fmt.Fprintln(w, style.Red(fmt.Sprintf("WARNING: %d users, %.1f tps: %s", p.Users, p.TPS, warning)))
		}
	}
	if sum.HTML != "" {
		fmt.Fprintf(w, "\nreport: %s\n", sum.HTML)
	}
}

// noteProgress prints the runner's notes (preparing data, a point that
// failed, which point starts) as lines; the per-second lines show the run
// itself.
type noteProgress struct{ w io.Writer }

func (p *noteProgress) Start(int, int) {}
func (p *noteProgress) StartPoint(n, total int, key string) {
	if total > 1 { // which point the lines below are, when there are several (users and links)
		fmt.Fprintf(p.w, "dbrig: point %d/%d: %s\n", n, total, key)
	}
}
func (p *noteProgress) Note(msg string)     { fmt.Fprintf(p.w, "dbrig: %s\n", msg) }
func (p *noteProgress) Update(int64, int64) {}
func (p *noteProgress) EndPoint(line string) {
	if strings.Contains(line, "FAILED") || strings.Contains(line, "skipped") || strings.Contains(line, "WARNING") || strings.Contains(line, "interrupted") {
		fmt.Fprintf(p.w, "dbrig: %s\n", line)
	}
}
func (p *noteProgress) Close() {}

// oltpWatcher prints the run as it goes and keeps each point's result.
type oltpWatcher struct {
	out     io.Writer
	notes   io.Writer
	style   term.Style
	metrics swappableCollector
	mu      sync.Mutex
	results []*load.Result
	agents  [][]agent.AgentReport // per point run on agents
}

func (w *oltpWatcher) live() *oltp.Live {
	return &oltp.Live{
		Runner: func(r *load.Runner) { w.metrics.set(r.Metrics()) },
		OnInterval: func(iv load.Interval) {
			if iv.Length < time.Second/10 && iv.Overall.Ops == 0 && iv.Overall.Errors.Total() == 0 {
				return // the sliver between the last tick and the stop
			}
			w.mu.Lock()
			defer w.mu.Unlock()
			line := iv.String()
			switch {
			case iv.NotStarted > 0 || iv.Overall.Errors.Total() > 0:
				line = w.style.Red(line)
			case iv.Phase != load.Measured:
				line = w.style.Dim(line)
			}
			fmt.Fprintln(w.out, line)
		},
		Result: func(res *load.Result) {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.results = append(w.results, res)
			fmt.Fprintln(w.out)
			head := fmt.Sprintf("%d users", res.Users)
			if res.Mode == "open" {
				head += fmt.Sprintf(", open loop at %s/s", strconv.FormatFloat(res.Rate, 'f', -1, 64))
			}
			fmt.Fprintln(w.out, w.style.Bold(fmt.Sprintf("%s, measured %s:", head, units.FormatDuration(res.Measured))))
			_ = res.WriteText(w.out)
			fmt.Fprintln(w.out)
		},
		Note: func(s string) { fmt.Fprintf(w.notes, "dbrig: note: %s\n", s) },
	}
}

func (w *oltpWatcher) describe(l loadInfo) {
	p := l.params
	loop := "closed loop"
	think := p.Duration("think")
	switch {
	case p.Float("rate") > 0:
		loop = fmt.Sprintf("open loop, %s arrivals at %s/s", p.String("arrival"), strconv.FormatFloat(p.Float("rate"), 'f', -1, 64))
	case think > 0 && p.String("think_distribution") == "fixed":
		loop += ", think time " + units.FormatDuration(think)
	case think > 0:
		loop += fmt.Sprintf(", think time negative-exponential with mean %s", units.FormatDuration(think))
	default:
		loop += ", no think time"
	}
	users := make([]string, len(l.sweep))
	for i, u := range l.sweep {
		users[i] = fmt.Sprint(u)
	}
	fmt.Fprintf(w.notes, "dbrig: %s, mix %s, %s users, %s, scale factor %s; warm-up %s, then %s measured\n", l.title, p.String("mix"),
		strings.Join(users, ", "), loop, strconv.FormatFloat(p.Float("scale_factor"), 'f', -1, 64), units.FormatDuration(p.Duration("warm_up")), units.FormatDuration(p.Duration("duration")))
}

// swappableCollector serves the metrics of the point running now, and of
// the last one between points, for the whole run.
type swappableCollector struct {
	mu sync.Mutex
	c  prometheus.Collector
}

func (s *swappableCollector) set(c prometheus.Collector) {
	s.mu.Lock()
	s.c = c
	s.mu.Unlock()
}

// Describe describes nothing: the collector is unchecked, since its metrics
// arrive with the first point.
func (s *swappableCollector) Describe(chan<- *prometheus.Desc) {}

func (s *swappableCollector) Collect(ch chan<- prometheus.Metric) {
	s.mu.Lock()
	c := s.c
	s.mu.Unlock()
	if c != nil {
		c.Collect(ch)
	}
}

// loadRunJSON is the head of a load's --json document: where its run
// directory and reports are, and the server it ran on.
type loadRunJSON struct {
	Dir      string `json:"dir"`
	HTML     string `json:"report_html,omitempty"`
	Markdown string `json:"report_md,omitempty"`
	Engine   string `json:"engine"`
	Server   string `json:"server_version,omitempty"`
	Target   bool   `json:"target"`
}

func newLoadRunJSON(l loadInfo, ran *study.Ran) loadRunJSON {
	return loadRunJSON{Dir: ran.Dir, HTML: ran.HTML, Markdown: ran.Markdown, Engine: l.engine, Target: l.target}
}

// oltpSummary is what `dbrig load oltp --json` prints.
type oltpSummary struct {
	loadRunJSON
	Mix         string          `json:"mix"`
	ScaleFactor float64         `json:"scale_factor"`
	Points      []oltpPointJSON `json:"points"`
	// InterruptedPoints are the points an interrupt cut short, with what
	// they measured before the stop: no result.
	InterruptedPoints []oltpPointJSON `json:"interrupted_points,omitempty"`
	Error             string          `json:"error,omitempty"`
	// Agents are each point's agents, when the load was spread over them.
	Agents [][]agent.AgentReport `json:"agents,omitempty"`
}

type oltpPointJSON struct {
	Users int `json:"users"`
	// Link is the point's link profile, when --link swept several.
	Link            string         `json:"link,omitempty"`
	Mode            string         `json:"mode"`
	Rate            float64        `json:"rate,omitempty"`
	Arrival         string         `json:"arrival,omitempty"`
	ThinkMs         float64        `json:"think_ms,omitempty"`
	MeasuredS       float64        `json:"measured_s"`
	TPS             float64        `json:"tps"`
	Types           []oltpTypeJSON `json:"types,omitempty"`
	Overall         *oltpTypeJSON  `json:"overall,omitempty"`
	Late            int64          `json:"late"`
	StartLagP99Ms   float64        `json:"start_lag_p99_ms,omitempty"`
	NotStarted      int64          `json:"not_started"`
	NotStartedAtEnd int64          `json:"not_started_at_end"`
	AfterEnd        int64          `json:"finished_after_end"`
	CancelledAtStop int64          `json:"cancelled_at_stop"`
	Interrupted     bool           `json:"interrupted,omitempty"`
	Notes           []string       `json:"notes,omitempty"`
	Warnings        []string       `json:"warnings,omitempty"`
	Error           string         `json:"error,omitempty"`
	// Series is the point's seconds, warm-up and stop included.
	Series []oltpSecondJSON `json:"series,omitempty"`
}

type oltpTypeJSON struct {
	Name      string             `json:"name"`
	Weight    int                `json:"weight,omitempty"`
	Ops       int64              `json:"ops"`
	TPS       float64            `json:"tps"`
	Errors    load.ErrorCounts   `json:"errors"`
	OverLimit int64              `json:"over_limit"`
	LatencyMs map[string]float64 `json:"latency_ms"`
	ServiceMs map[string]float64 `json:"service_ms,omitempty"`
}

type oltpSecondJSON struct {
	EndS   float64          `json:"end_s"`
	Phase  string           `json:"phase"`
	Users  int              `json:"users"`
	TPS    float64          `json:"tps"`
	P50Ms  float64          `json:"p50_ms"`
	P99Ms  float64          `json:"p99_ms"`
	MaxMs  float64          `json:"max_ms"`
	Errors load.ErrorCounts `json:"errors"`
	Late   int64            `json:"late,omitempty"`
	NotSt  int64            `json:"not_started,omitempty"`
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// latencyJSON is a distribution's mean, percentiles and maximum in ms.
func latencyJSON(h *measure.Histogram) map[string]float64 {
	if h == nil || h.Count() == 0 {
		return nil
	}
	return map[string]float64{"mean": msOf(h.Mean()), "p50": msOf(h.Quantile(0.5)), "p95": msOf(h.Quantile(0.95)),
		"p99": msOf(h.Quantile(0.99)), "p99.9": msOf(h.Quantile(0.999)), "max": msOf(h.Max())}
}

func typeJSON(t load.TypeResult) oltpTypeJSON {
	return oltpTypeJSON{Name: t.Name, Weight: t.Weight, Ops: t.Ops, TPS: t.TPS, Errors: t.Errors, OverLimit: t.OverLimit,
		LatencyMs: latencyJSON(t.Latency), ServiceMs: latencyJSON(t.Service)}
}

func (w *oltpWatcher) summary(l loadInfo, ran *study.Ran, runErr error) oltpSummary {
	out := ran.Outcome
	sum := oltpSummary{loadRunJSON: newLoadRunJSON(l, ran), Mix: l.params.String("mix"), ScaleFactor: l.params.Float("scale_factor")}
	if runErr != nil {
		sum.Error = runErr.Error()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	sum.Agents = w.agents
	// The points of one number of users (several links) ran in the order
	// the run lists them.
	byUsers := map[int][]*load.Result{}
	for _, r := range w.results {
		byUsers[r.Users] = append(byUsers[r.Users], r)
	}
	point := func(r workload.Result) oltpPointJSON {
		u := int(r.Params.Int("users"))
		link, _ := r.Values["link"].(string)
		p := oltpPointJSON{Users: u, Link: link, Notes: r.Notes, Warnings: r.Warnings, Error: r.Error}
		if res := byUsers[u]; len(res) > 0 {
			byUsers[u] = res[1:]
			p.fill(res[0])
		}
		return p
	}
	for _, r := range out.Results {
		sum.Points = append(sum.Points, point(r))
	}
	for _, r := range out.Interrupted {
		sum.InterruptedPoints = append(sum.InterruptedPoints, point(r))
	}
	for _, users := range l.sweep { // cut short before it measured anything: not in the run
		u, _ := workload.IntOf(users)
		for _, res := range byUsers[int(u)] {
			p := oltpPointJSON{Users: int(u)}
			p.fill(res)
			sum.InterruptedPoints = append(sum.InterruptedPoints, p)
		}
		delete(byUsers, int(u))
	}
	return sum
}

func (p *oltpPointJSON) fill(res *load.Result) {
	p.Mode, p.Rate, p.Arrival, p.ThinkMs = res.Mode, res.Rate, res.Arrival, msOf(res.Think.Mean)
	p.MeasuredS, p.TPS = res.Measured.Seconds(), res.Overall.TPS
	for _, t := range res.Types {
		p.Types = append(p.Types, typeJSON(t))
	}
	o := typeJSON(res.Overall)
	p.Overall = &o
	p.Late, p.NotStarted, p.NotStartedAtEnd = res.Late, res.NotStarted, res.NotStartedAtEnd
	if res.StartLag.Count() > 0 {
		p.StartLagP99Ms = msOf(res.StartLag.Quantile(0.99))
	}
	p.AfterEnd, p.CancelledAtStop, p.Interrupted = res.AfterEnd.Count(), res.CancelledAtStop, res.Interrupted
	for _, iv := range res.Series {
		p.Series = append(p.Series, oltpSecondJSON{EndS: (iv.Start + iv.Length).Seconds(), Phase: iv.Phase.String(), Users: iv.Users,
			TPS: iv.Overall.TPS(iv.Length), P50Ms: msOf(iv.Overall.P50), P99Ms: msOf(iv.Overall.P99), MaxMs: msOf(iv.Overall.Max),
			Errors: iv.Overall.Errors, Late: iv.Late, NotSt: iv.NotStarted})
	}
}

// writeSamples writes latencies in µs, one per line.
func writeSamples(path string, samples []int64) error {
	b := make([]byte, 0, len(samples)*8)
	for _, v := range samples {
		b = strconv.AppendInt(b, v, 10)
		b = append(b, '\n')
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("--samples: %w", err)
	}
	return nil
}
