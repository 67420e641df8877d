package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/dbrig/dbrig/internal/agent"
	"github.com/dbrig/dbrig/internal/doctor"
	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/load"
	"github.com/dbrig/dbrig/internal/measure"
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/term"
	"github.com/dbrig/dbrig/internal/units"
	"github.com/dbrig/dbrig/internal/workload"
	"github.com/dbrig/dbrig/internal/workload/oltp"
	"github.com/dbrig/dbrig/studies"
)

type loadOLTPFlags struct {
	target      string
	engine      string
	users       string
	duration    time.Duration
	warmUp      time.Duration
	rampUp      time.Duration
	rate        float64
	arrival     string
	maxInFlight int
	think       time.Duration
	thinkFixed  bool
	keying      time.Duration
	mix         string
	scale       float64
	txLimit     time.Duration
	seed        int64
	json        bool
	metricsAddr string
	out         string
	keep        bool
	bins        binDirs
	verbose     bool
	fleet       fleetFlags
	samples     string
}

func newLoadOLTPCmd(a *app) *cobra.Command {
	var f loadOLTPFlags
	cmd := &cobra.Command{
		Use:   "oltp [--target URI | --engine postgres] --users N --duration D [--rate R] [--think T] [--mix NAME] [--scale S]",
		Short: "An online shop's transactions under virtual users, closed or open loop",
		Long: `load oltp makes an online shop at scale factor S (100,000 customers and 10,000
items with their stock per unit, orders with their lines, carts), then runs a
mix of transactions under N virtual users, each with its own connection and
every statement prepared. It prints a line per second and ends with each
transaction type's throughput, response-time percentiles (p50, p95, p99,
p99.9, max) and errors by class.

Mixes: shop (browse 30, search 20, view-product 35, add-to-cart 10,
place-order 5; place-order is one write transaction that takes stock from
popular items, where concurrent orders wait for each other), point-select
(one primary-key lookup per transaction: pgbench -S's work), browse-only,
orders, reporting (a sales report over every order line), or weights such as
"view-product=9,place-order=1".

Closed loop (the default): each user runs a transaction, thinks (--think,
negative-exponential unless --think-fixed), and runs the next. Open loop
(--rate R): transactions arrive R times a second whatever the server does,
and each response time runs from the transaction's intended start, so a
stalled server shows the queueing its clients would see; arrivals that could
not start are counted, never dropped silently.

The run directory (runs/load-oltp-YYYYMMDD-HHMMSS unless --out) reads like a
study's: 'dbrig report' and 'dbrig compare' read it. --users 10,20,40 sweeps
the users. With --target URI the server is yours: dbrig never starts, stops
or reconfigures it, makes one database there and removes it at the end
(unless --keep). Without --target dbrig starts its own server and stops it.

Exit codes: 0 success, 1 the load failed, 2 bad flags, 130 interrupted.`,
		Example: `  dbrig load oltp --users 16 --duration 1m                  # a PostgreSQL server dbrig starts
  dbrig load oltp --engine mariadb --users 8 --duration 30s --mix point-select
  dbrig load oltp --users 32 --rate 2000 --duration 1m       # open loop: 2,000 arrivals a second
  dbrig load oltp --target env:MY_PG_URI --users 50 --think 1s --duration 10m
  dbrig load oltp --users 8 --duration 1m --json --metrics-addr :9464 > run.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return loadOLTP(cmd.Context(), a, f, cmd.Flags().Changed("engine"))
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.target, "target", "", "your server: `URI` (postgres://user@host:5432/db, mariadb://user@host:3306/db) or env:VAR")
	fl.StringVar(&f.engine, "engine", "postgres", "the engine of the server dbrig starts when there is no --target: postgres or mariadb")
	fl.StringVar(&f.users, "users", "10", "virtual users `N`, each with its own connection (N,N,... sweeps them)")
	fl.DurationVar(&f.duration, "duration", 30*time.Second, "the measured interval `D`")
	fl.DurationVar(&f.warmUp, "warm-up", 5*time.Second, "run before the measured interval and discarded")
	fl.DurationVar(&f.rampUp, "ramp-up", 0, "start the users evenly over this time (an open loop's rate rises over it); within --warm-up")
	fl.Float64Var(&f.rate, "rate", 0, "open loop: transactions arriving per second `R` (0: closed loop)")
	fl.StringVar(&f.arrival, "arrival", "poisson", "open loop: poisson (as pgbench -R) or fixed spacing")
	fl.IntVar(&f.maxInFlight, "max-in-flight", 0, "open loop: arrivals beyond this many unfinished are counted and not started (0: users + 10 s of arrivals)")
	fl.DurationVar(&f.think, "think", 0, "closed loop: each user's pause `T` after a transaction (negative-exponential with mean T, capped at 10 T)")
	fl.BoolVar(&f.thinkFixed, "think-fixed", false, "closed loop: pause exactly --think instead")
	fl.DurationVar(&f.keying, "keying", 0, "closed loop: each user's pause before a transaction")
	fl.StringVar(&f.mix, "mix", "shop", "the transactions `NAME`: "+strings.Join(oltp.MixNames(), ", ")+", or weights such as view-product=9,place-order=1")
	fl.Float64Var(&f.scale, "scale", 1, "scale factor `S`: 100,000 customers and 10,000 items per unit")
	fl.DurationVar(&f.txLimit, "tx-limit", 30*time.Second, "count transactions slower than this (seed 001 counted those over 30 s)")
	fl.Int64Var(&f.seed, "seed", 1, "seed of every random choice")
	fl.BoolVar(&f.json, "json", false, "print one JSON document on stdout (the per-second lines go to stderr)")
	fl.StringVar(&f.metricsAddr, "metrics-addr", "", "serve Prometheus metrics at http://`HOST:PORT`/metrics for the whole run (HOST empty: 127.0.0.1)")
	fl.StringVar(&f.out, "out", "", "run directory to create (default runs/load-oltp-YYYYMMDD-HHMMSS)")
	fl.BoolVar(&f.keep, "keep", false, "keep the data: the server's directory, or the database on a target")
	fl.StringVar(&f.bins.pg, "pg-bin", "", "PostgreSQL server binaries `DIR` (default: newest found)")
	fl.StringVar(&f.bins.mariadb, "mariadb-bin", "", "MariaDB installation `DIR` (default: found on PATH)")
	fl.BoolVar(&f.verbose, "verbose", false, "log what dbrig does to stderr")
	f.fleet.register(cmd, true)
	fl.StringVar(&f.samples, "samples", "", "with --agents: write every measured transaction's latency in µs to `FILE`, one per line (to check a merge; costs 8 bytes per transaction on the wire)")
	_ = fl.MarkHidden("samples")
	return cmd
}

// parseUsers reads --users: one count, or several to sweep.
func parseUsers(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || n < 1 || n > oltp.MaxUsers {
			return nil, fmt.Errorf("--users %s: want whole numbers from 1 to %d, e.g. 10 or 10,20,40 (%s)", s, oltp.MaxUsers, oltp.MaxUsersWhy)
		}
		out = append(out, n)
	}
	return out, nil
}

// checkOLTPFlags reports every bad flag at once.
func checkOLTPFlags(f loadOLTPFlags, engineSet bool) ([]int, error) {
	var errs []error
	users, err := parseUsers(f.users)
	errs = append(errs, err)
	if _, err := oltp.ParseMix(f.mix); err != nil {
		errs = append(errs, fmt.Errorf("--%w", err))
	}
	if !(f.scale > 0) || f.scale > oltp.MaxScale || math.IsInf(f.scale, 0) {
		errs = append(errs, fmt.Errorf("--scale %v: want a number above 0 and at most %d (0.01, 1, 10 ...)", f.scale, oltp.MaxScale))
	}
	if f.duration <= 0 {
		errs = append(errs, fmt.Errorf("--duration %v: want a positive duration, e.g. 30s or 10m", f.duration))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"duration", f.duration}, {"warm-up", f.warmUp}, {"ramp-up", f.rampUp}, {"think", f.think}, {"keying", f.keying}, {"tx-limit", f.txLimit}} {
		switch {
		case d.v < 0:
			errs = append(errs, fmt.Errorf("--%s %v: must not be negative", d.name, d.v))
		case d.v > workload.MaxDuration:
			errs = append(errs, fmt.Errorf("--%s %v: at most %v (%s)", d.name, d.v, workload.MaxDuration, workload.DurationWhy))
		}
	}
	if f.rampUp > f.warmUp {
		errs = append(errs, fmt.Errorf("--ramp-up %v: longer than --warm-up %v, so the measured interval would include users still starting", f.rampUp, f.warmUp))
	}
	if f.rate < 0 || math.IsNaN(f.rate) || math.IsInf(f.rate, 0) || f.rate > oltp.MaxRate {
		errs = append(errs, fmt.Errorf("--rate %v: want transactions per second up to %d (%s), 0 for a closed loop", f.rate, oltp.MaxRate, oltp.MaxRateWhy))
	}
	if f.arrival != "poisson" && f.arrival != "fixed" {
		errs = append(errs, fmt.Errorf("--arrival %s: want poisson or fixed", f.arrival))
	}
	if f.rate > 0 && (f.think != 0 || f.keying != 0 || f.thinkFixed) {
		errs = append(errs, errors.New("--think/--keying: closed-loop settings; an open loop's pace is its --rate"))
	}
	if f.rate == 0 && f.maxInFlight != 0 {
		errs = append(errs, errors.New("--max-in-flight: an open-loop setting; give a --rate"))
	}
	if f.maxInFlight < 0 || f.maxInFlight > oltp.MaxInFlight {
		errs = append(errs, fmt.Errorf("--max-in-flight %d: want 0 to %d (%s)", f.maxInFlight, oltp.MaxInFlight, oltp.MaxInFlightWhy))
	}
	if f.target != "" && engineSet {
		errs = append(errs, errors.New("--target and --engine both choose the server: a target's engine is its URI's"))
	}
	if f.fleet.agents != "" && f.target == "" && !slices.ContainsFunc(f.fleet.hosts, func(h string) bool { return strings.HasPrefix(h, "db=") }) {
		errs = append(errs, errors.New("--agents: agents on other hosts cannot reach a server on this machine's loopback: give --target URI (at an address they reach) or --host db=ssh://[user@]host (dbrig starts the server there)"))
	}
	if f.fleet.agents != "" && f.fleet.listen != "" {
		errs = append(errs, errors.New("--agents and --listen-agents: agents are started by ssh, or dial in; not both"))
	}
	if f.samples != "" && f.fleet.agents == "" && f.fleet.listen == "" {
		errs = append(errs, errors.New("--samples: goes with --agents"))
	}
	return users, errors.Join(errs...)
}

func loadOLTP(ctx context.Context, a *app, f loadOLTPFlags, engineSet bool) error {
	users, err := checkOLTPFlags(f, engineSet)
	if err != nil {
		return usageError(err)
	}
	if err := checkOut(f.out); err != nil {
		return err
	}
	engines := newEngines(f.bins)
	eng, ok := engines.Lookup(f.engine)
	if !ok {
		return usageError(fmt.Errorf("--engine %s: want one of %s", f.engine, strings.Join(engines.Names(), ", ")))
	}
	engineName := f.engine
	if f.target != "" {
		_, kinds, err := parseTargets([]string{"db=" + f.target}, engines, a.getenv)
		if err != nil {
			return usageError(err)
		}
		engineName = kinds["db"]
		eng, _ = engines.Lookup(engineName)
	}

	// Where the per-second lines go: stdout, or stderr when stdout carries
	// the JSON document.
	lines := a.stdout
	if f.json {
		lines = a.stderr
	}
	w := &oltpWatcher{out: lines, style: term.Style{Enabled: term.ColorEnabled(lines, a.getenv)}, notes: a.stderr}
	live := w.live()
	if f.fleet.agents != "" || f.fleet.listen != "" {
		var agents []*agent.Agent
		if f.fleet.listen != "" {
			if agents, err = acceptAgents(ctx, a, f.fleet); err != nil {
				return err
			}
		} else {
			targets, err := doctor.ReadHostsFile(f.fleet.agents)
			if err != nil {
				return usageError(fmt.Errorf("--agents: %w", err))
			}
			for _, u := range users {
				if _, err := agent.Shares(load.Config{Users: u}, len(targets)); err != nil {
					return usageError(fmt.Errorf("--users %d, --agents %s: %w", u, f.fleet.agents, err))
				}
			}
			fmt.Fprintf(a.stderr, "dbrig: starting %d load agents\n", len(targets))
			if agents, err = startAgents(ctx, a, f.fleet, targets); err != nil {
				return failure(err)
			}
		}
		defer func() { _ = agent.CloseAll(context.WithoutCancel(ctx), agents) }()
		for _, ag := range agents {
			fmt.Fprintf(a.stderr, "dbrig: agent %s (%s, %d CPUs): clock offset %s, rtt %s\n", ag.Name, ag.Hello.Host, ag.Hello.CPUs,
				ag.Offset.Round(time.Microsecond), ag.RTT.Round(time.Microsecond))
		}
		live.Spread = func(ctx context.Context, cfg load.Config, login engine.Conn, p oltp.AgentParams) (*load.Result, error) {
			cfg.KeepSamples = f.samples != ""
			out, err := agent.RunLoad(ctx, agents, agent.LoadSpec{Workload: "oltp", Params: p, Login: login, Config: cfg, OnInterval: live.OnInterval})
			if out != nil {
				w.mu.Lock()
				w.agents = append(w.agents, out.Agents)
				w.mu.Unlock()
				printAgents(w.out, out.Agents)
				if f.samples != "" && out.Result != nil {
					if werr := writeSamples(f.samples, out.Samples); werr != nil {
						err = errors.Join(err, werr)
					}
				}
				return out.Result, err
			}
			return nil, err
		}
	}
	reg := study.NewRegistry(engines, []workload.Kind{oltp.KindWith(live)}, studies.All()...)

	runCtx, stopMetrics := context.WithCancel(ctx)
	defer stopMetrics()
	var metricsSrv *load.MetricsServer
	if f.metricsAddr != "" {
		metricsSrv, err = load.ServeMetrics(runCtx, f.metricsAddr, &w.metrics)
		if err != nil {
			return usageError(fmt.Errorf("--metrics-addr: %w", err))
		}
		fmt.Fprintf(a.stderr, "dbrig: Prometheus metrics at http://%s/metrics\n", metricsSrv.Addr())
	}

	spec := oltp.Standalone{Engine: engineName, Users: users, Scale: f.scale, Mix: f.mix, Duration: f.duration, WarmUp: f.warmUp,
		RampUp: f.rampUp, Rate: f.rate, Arrival: f.arrival, MaxInFlight: f.maxInFlight, Think: f.think, ThinkFixed: f.thinkFixed,
		Keying: f.keying, TxLimit: f.txLimit, Seed: f.seed, Target: f.target != ""}
	w.describe(spec, eng.Title())
	dir, out, runErr, err := runLoad(ctx, a, loadRun{name: "oltp", spec: spec.Spec(), target: f.target, engine: engineName,
		out: f.out, keep: f.keep, bins: f.bins, log: f.verbose, reg: reg, progress: &noteProgress{w: a.stderr}, fleet: &f.fleet})
	stopMetrics()
	if metricsSrv != nil {
		if err := metricsSrv.Wait(); err != nil {
			fmt.Fprintf(a.stderr, "dbrig: %v\n", err)
		}
	}
	if err != nil {
		return err
	}
	htmlPath, mdPath, _, repErr := writeReport(dir, reg)
	if repErr != nil && runErr == nil {
		return failure(fmt.Errorf("write the report: %w", repErr))
	}
	sum := w.summary(spec, dir, htmlPath, mdPath, out, runErr)
	if rd, err := study.LoadRun(dir, reg); err == nil {
		sum.Server = rd.Environment.Servers[engineName]
		for _, t := range rd.Environment.Targets {
			sum.Server = t.Version
		}
	}
	if f.json {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(sum)
	} else {
		printOLTPEnd(a.stdout, w.style, sum)
	}
	return loadOutcome(a, dir, out, runErr)
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
// failed) as lines; the per-second lines show the run itself.
type noteProgress struct{ w io.Writer }

func (p *noteProgress) Start(int, int)              {}
func (p *noteProgress) StartPoint(int, int, string) {}
func (p *noteProgress) Note(msg string)             { fmt.Fprintf(p.w, "dbrig: %s\n", msg) }
func (p *noteProgress) Update(int64, int64)         {}
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

func (w *oltpWatcher) describe(s oltp.Standalone, title string) {
	loop := "closed loop"
	switch {
	case s.Rate > 0:
		loop = fmt.Sprintf("open loop, %s arrivals at %s/s", s.Arrival, strconv.FormatFloat(s.Rate, 'f', -1, 64))
	case s.Think > 0 && s.ThinkFixed:
		loop += ", think time " + units.FormatDuration(s.Think)
	case s.Think > 0:
		loop += fmt.Sprintf(", think time negative-exponential with mean %s", units.FormatDuration(s.Think))
	default:
		loop += ", no think time"
	}
	users := make([]string, len(s.Users))
	for i, u := range s.Users {
		users[i] = strconv.Itoa(u)
	}
	fmt.Fprintf(w.notes, "dbrig: %s, mix %s, %s users, %s, scale factor %s; warm-up %s, then %s measured\n", title, s.Mix,
		strings.Join(users, ", "), loop, strconv.FormatFloat(s.Scale, 'f', -1, 64), units.FormatDuration(s.WarmUp), units.FormatDuration(s.Duration))
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

// oltpSummary is what `dbrig load oltp --json` prints.
type oltpSummary struct {
	Dir         string          `json:"dir"`
	HTML        string          `json:"report_html,omitempty"`
	Markdown    string          `json:"report_md,omitempty"`
	Engine      string          `json:"engine"`
	Server      string          `json:"server_version,omitempty"`
	Target      bool            `json:"target"`
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
	Users           int            `json:"users"`
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

func (w *oltpWatcher) summary(s oltp.Standalone, dir, html, md string, out study.Outcome, runErr error) oltpSummary {
	sum := oltpSummary{Dir: dir, HTML: html, Markdown: md, Engine: s.Engine, Target: s.Target, Mix: s.Mix, ScaleFactor: s.Scale}
	if runErr != nil {
		sum.Error = runErr.Error()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	sum.Agents = w.agents
	byUsers := map[int]*load.Result{}
	for _, r := range w.results {
		byUsers[r.Users] = r
	}
	point := func(r workload.Result) oltpPointJSON {
		u := int(r.Params.Int("users"))
		p := oltpPointJSON{Users: u, Notes: r.Notes, Warnings: r.Warnings, Error: r.Error}
		if res := byUsers[u]; res != nil {
			delete(byUsers, u)
			p.fill(res)
		}
		return p
	}
	for _, r := range out.Results {
		sum.Points = append(sum.Points, point(r))
	}
	for _, r := range out.Interrupted {
		sum.InterruptedPoints = append(sum.InterruptedPoints, point(r))
	}
	for _, u := range s.Users { // cut short before it measured anything: not in the run
		if res := byUsers[u]; res != nil {
			p := oltpPointJSON{Users: u}
			p.fill(res)
			sum.InterruptedPoints = append(sum.InterruptedPoints, p)
		}
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
