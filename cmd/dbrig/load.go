package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dbrig/dbrig/internal/agent"
	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/idleloop"
	"github.com/dbrig/dbrig/internal/load"
	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/term"
	"github.com/dbrig/dbrig/internal/topology"
	"github.com/dbrig/dbrig/internal/workload"
	"github.com/dbrig/dbrig/studies"
)

// newLoadCmd is the parent of the loads: every workload kind with a load
// mode (workload.Kind.Load) has a subcommand that runs it against one
// server, outside a study file, through the same pipeline, run directory
// and report as a study. Adding one is a kind in workloads().
func newLoadCmd(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "load WORKLOAD",
		Short: "Run a standard workload against a server (yours, or one dbrig starts)",
		Long: `load runs a standard workload against one database server and writes a run
directory (runs/load-WORKLOAD-YYYYMMDD-HHMMSS unless --out) that 'dbrig report'
reads like a study's. With --target URI the server is yours: dbrig never
starts, stops or reconfigures it, makes one database of its own there and
removes it at the end (unless --keep). Without --target dbrig starts its own
server, as a study does, and stops it at the end.

Each workload's flags are its parameters, which a study file's [workload]
table takes with the same names (in snake case) and bounds.

Exit codes: 0 success, 1 the load failed or an --expect threshold failed,
2 bad flags, 130 interrupted.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return usageError(fmt.Errorf("name a workload: %s (see 'dbrig load --help')", strings.Join(loadNames(cmd), ", ")))
		},
	}
	for _, k := range workloads() {
		if k.Load != nil {
			cmd.AddCommand(newLoadKindCmd(a, k))
		}
	}
	return cmd
}

func loadNames(cmd *cobra.Command) []string {
	var out []string
	for _, c := range cmd.Commands() {
		out = append(out, c.Name())
	}
	return out
}

// loadFlags are the flags every load command takes, whatever its kind.
type loadFlags struct {
	target, engine string
	bins           binDirs
	out            string
	json           bool
	keep           bool
	verbose        bool
	metricsAddr    string
	fleet          fleetFlags
	samples        string
	link           loadLinkFlags
	idle           string
	predict        bool
	dashboard      dashboardFlags
	// expect are the thresholds of --expect, read by check.
	expect       []string
	expectations []*study.Expectation
}

// register adds the shared flags to a load command, the link's among them.
func (f *loadFlags) register(cmd *cobra.Command, kind string) {
	fl := cmd.Flags()
	fl.StringVar(&f.target, "target", "", "your server: `[db=]URI` (postgres://user@host:5432/db, mariadb://user@host:3306/db, host=/var/run/postgresql) or [db=]env:VAR")
	fl.StringVar(&f.engine, "engine", "postgres", "the engine of the server dbrig starts when there is no --target: postgres or mariadb")
	f.bins.register(fl, "")
	fl.BoolVar(&f.json, "json", false, "print one JSON document on stdout (the progress and per-second lines go to stderr)")
	fl.StringVar(&f.metricsAddr, "metrics-addr", "", "serve Prometheus metrics of the virtual users at http://`HOST:PORT`/metrics for the whole run (HOST empty: 127.0.0.1)")
	fl.StringVar(&f.out, "out", "", "run directory to create (default runs/load-"+kind+"-YYYYMMDD-HHMMSS)")
	fl.BoolVar(&f.keep, "keep", false, "keep the data: the server's directory, or the database on a target")
	fl.BoolVar(&f.verbose, "verbose", false, "log what dbrig does to stderr")
	f.fleet.register(cmd, true)
	fl.StringVar(&f.samples, "samples", "", "with --agents: write every measured transaction's latency in µs to `FILE`, one per line (to check a merge; costs 8 bytes per transaction on the wire)")
	_ = fl.MarkHidden("samples")
	fl.StringArrayVar(&f.expect, "expect", nil, "a threshold every point must meet, as k6 writes them: `METRIC<VALUE` (p99<50ms, tps>=2000, errors=0; repeatable); a failed one exits 1")
	f.link.register(fl)
	fl.StringVar(&f.idle, "idle", idleloop.Halt, "how this machine's CPUs idle while the load runs: `halt` (as they do) or spin (a lowest-priority busy loop pinned to each CPU keeps it from halting, so a VM's halted vCPU is not woken through the hypervisor at each round trip; the loops' CPU time is left out of the host's)")
	f.dashboard.register(fl)
	fl.BoolVar(&f.predict, "predict", false, "calibrate the load for a few seconds through loopback and rtt-2ms, then print each --link and --users point's predicted tps, response time and what dominates, without running them (docs/load.md#prediction)")
}

// check reports every shared flag that is wrong, or wrong for this kind,
// at once.
func (f *loadFlags) check(k workload.Kind, changed func(string) bool) error {
	var errs []error
	var err error
	if f.expectations, err = parseExpectFlags(f.expect, k); err != nil {
		errs = append(errs, err)
	}
	if _, _, err := f.dashboard.listenAddr(); err != nil {
		errs = append(errs, err)
	}
	if err := idleloop.CheckMode(f.idle); err != nil {
		errs = append(errs, fmt.Errorf("--idle %s: %w", f.idle, err))
	}
	if f.predict && f.dashboard.addr != "" {
		errs = append(errs, errors.New("--dashboard: goes with a run, and --predict runs none"))
	}
	if f.target != "" && changed("engine") {
		errs = append(errs, errors.New("--target and --engine both choose the server: a target's engine is its URI's"))
	}
	spreads := f.fleet.agents != "" || f.fleet.listen != ""
	if !k.Load.VirtualUsers {
		for _, name := range []string{"agents", "listen-agents", "agent-count", "metrics-addr", "samples"} {
			if changed(name) {
				errs = append(errs, fmt.Errorf("--%s: goes with a load of virtual users (%s); load %s runs none", name, strings.Join(virtualUserKinds(), ", "), k.Name))
			}
		}
		return errors.Join(errs...)
	}
	if f.fleet.agents != "" && f.target == "" && !slices.ContainsFunc(f.fleet.hosts, func(h string) bool { return strings.HasPrefix(h, "db=") }) {
		errs = append(errs, errors.New("--agents: agents on other hosts cannot reach a server on this machine's loopback: give --target URI (at an address they reach) or --host db=ssh://[user@]host (dbrig starts the server there)"))
	}
	if spreads {
		if err := f.link.checkOnAgents(); err != nil {
			errs = append(errs, err)
		}
	}
	if f.fleet.agents != "" && f.fleet.listen != "" {
		errs = append(errs, errors.New("--agents and --listen-agents: agents are started by ssh, or dial in; not both"))
	}
	if f.samples != "" && !spreads {
		errs = append(errs, errors.New("--samples: goes with --agents"))
	}
	return errors.Join(errs...)
}

func virtualUserKinds() []string {
	var out []string
	for _, k := range workloads() {
		if k.Load != nil && k.Load.VirtualUsers {
			out = append(out, "load "+k.Name)
		}
	}
	return out
}

// newLoadKindCmd makes dbrig load KIND from the kind's load mode: its
// help, the shared flags and a flag for each of its parameters.
func newLoadKindCmd(a *app, k workload.Kind) *cobra.Command {
	var f loadFlags
	var pf *paramFlags
	cmd := &cobra.Command{
		Use:     k.Name,
		Short:   k.Load.Short,
		Long:    k.Load.Long,
		Example: k.Load.Example,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			pf.args = append(pf.args, args...)
			return runLoad(cmd.Context(), a, k, &f, pf, cmd.Flags().Changed)
		},
	}
	if k.Load.Args != "" { // the arguments fill a parameter
		cmd.Args, cmd.Use = cobra.ArbitraryArgs, cmd.Use+" "+k.Load.ArgsUsage
	}
	f.register(cmd, k.Name)
	pf = addParamFlags(cmd.Flags(), k)
	for _, p := range k.Params { // the flags a load cannot go without
		if p.Default == nil && hasFlag(k, p) {
			unit, _ := pflag.UnquoteUsage(cmd.Flags().Lookup(p.FlagName()))
			cmd.Use += " --" + p.FlagName() + " " + unit
		}
	}
	return cmd
}

// loadInfo is a load as its view shows it.
type loadInfo struct {
	kind          string
	engine, title string // the server's engine, and its name for people
	target        bool
	params        workload.Params // the first point's, as planned
	sweep         []any
}

// loadView shows one kind's load: as it runs and at its end.
type loadView interface {
	// kind is the kind to run, with what the view watches wired in.
	kind(workload.Kind) workload.Kind
	// progress shows the runner's progress (nil: the bars or lines a
	// study shows).
	progress() study.Progress
	// starting is told the load once it is planned, before anything starts.
	starting(loadInfo)
	// summary is the load's end: a JSON document (--json), or text.
	summary(loadInfo, *study.Ran, error) any
	print(io.Writer, any)
}

// usersView is a view of virtual users: their metrics may be served while
// they run.
type usersView interface {
	loadView
	metrics() prometheus.Collector
}

// spreadView is a view of virtual users that may run on load agents.
type spreadView interface {
	usersView
	spread(agents []*agent.Agent)
}

// loadViews are the kinds' own views of a load; a kind without one shows
// its findings as dbrig run does.
var loadViews = map[string]func(*app, *loadFlags) loadView{
	"oltp":   newOLTPView,
	"tpch":   newTPCHView,
	"script": newScriptView,
}

func viewOf(a *app, k workload.Kind, f *loadFlags) loadView {
	if newView, ok := loadViews[k.Name]; ok {
		return newView(a, f)
	}
	return &studyView{a: a}
}

// runLoad runs one load: the flags checked, the values made a study file
// and parsed as one, then the pipeline a study runs through.
func runLoad(ctx context.Context, a *app, k workload.Kind, f *loadFlags, pf *paramFlags, changed func(string) bool) error {
	if err := f.check(k, changed); err != nil {
		return usageError(err)
	}
	if err := checkOut(f.out); err != nil {
		return err
	}
	ls, err := prepareLoad(a, k, f, pf)
	if err != nil {
		return err
	}
	if f.predict {
		plan, err := ls.spec.Plan("")
		if err != nil {
			return usageError(pf.flagErrors(err, f.link.flagError))
		}
		return predictLoad(ctx, a, ls.reg, ls.req, plan, study.Options{Targets: ls.logins, TargetEngines: ls.targetEngines, Dir: f.out, Keep: f.keep,
			Progress: cmpProgress(nil, a), Log: newLogger(a, f.verbose), Version: a.version, CommandLine: redactedArgs(a)}, f.json)
	}
	return ls.run(ctx, a, f)
}

// loadSetup is a load command's study as its flags describe it, checked and
// ready to predict or run.
type loadSetup struct {
	kind          workload.Kind
	info          loadInfo
	view          loadView
	reg           *study.Registry
	req           study.LoadRequest
	spec          *study.Spec
	logins        map[string]engine.Conn
	targetEngines map[string]string
}

// prepareLoad reads the target, the engine, the parameters and the link
// into a load study; every error is a usage error.
func prepareLoad(a *app, k workload.Kind, f *loadFlags, pf *paramFlags) (*loadSetup, error) {
	reg := newRegistry(f.bins)
	ls := &loadSetup{kind: k, info: loadInfo{kind: k.Name, engine: f.engine, target: f.target != ""}}
	var err error
	if ls.logins, ls.targetEngines, err = loadTarget(f.target, reg.Engines(), a.getenv); err != nil {
		return nil, usageError(err)
	}
	if err := socketOnAgents(f, ls.logins); err != nil {
		return nil, usageError(err)
	}
	if e, ok := ls.targetEngines["db"]; ok {
		ls.info.engine = e
	}
	eng, ok := reg.Engines().Lookup(ls.info.engine)
	if !ok {
		return nil, usageError(fmt.Errorf("--engine %s: want one of %s", f.engine, strings.Join(reg.Engines().Names(), ", ")))
	}
	ls.info.title = eng.Title()
	given, sweep, err := pf.values()
	if err != nil {
		return nil, usageError(err)
	}
	linkReq, err := f.link.request()
	if err != nil {
		return nil, usageError(err)
	}
	ls.view = viewOf(a, k, f)
	ls.reg = study.NewRegistry(reg.Engines(), withKind(workloads(), ls.view.kind(k)), studies.All()...)
	ls.req = study.LoadRequest{Kind: k, Engine: ls.info.engine, Target: ls.info.target, Params: given, Sweep: sweep, Link: linkReq, Idle: f.idle}
	if err := f.checkPredict(k, ls.req); err != nil {
		return nil, usageError(err)
	}
	if ls.spec, err = study.ParseLoad(ls.req, ls.reg); err != nil {
		return nil, usageError(pf.flagErrors(err, f.link.flagError))
	}
	return ls, nil
}

// run runs the load study with its dashboard and users' page, and reports.
func (ls *loadSetup) run(ctx context.Context, a *app, f *loadFlags) error {
	k := ls.kind
	ls.info.sweep, _ = ls.spec.Sweep[k.Load.Sweep].([]any)
	dash, err := startDashboard(a, f.dashboard)
	if err != nil {
		return err
	}
	defer dash.stop(ctx, a)
	if uv, ok := ls.view.(usersView); ok {
		stop, err := serveUsers(ctx, a, f, uv, ls.info.sweep)
		if err != nil {
			return err
		}
		defer stop()
	}
	ran, err := study.Run(ctx, ls.reg, study.Options{
		Spec: ls.spec, Targets: ls.logins, TargetEngines: ls.targetEngines, Dir: f.out, Keep: f.keep,
		Place: f.fleet.placer(a), Progress: cmpProgress(ls.view.progress(), a), Events: dash.events(), Log: newLogger(a, f.verbose),
		Version: a.version, CommandLine: redactedArgs(a),
		Starting: func(plan *study.Plan, dir string) {
			ls.info.params = plan.Combos[0].Params
			dash.starting(dir)
			ls.view.starting(ls.info)
			fmt.Fprintf(a.stderr, "dbrig: load %s on %s (%s) into %s\n", k.Name, ls.info.where(), pluralPoints(len(plan.Points())), dir)
		},
	})
	if ran == nil {
		return runError(err)
	}
	return ls.report(a, f, ran, err)
}

// report prints the summary and the --expect checks, as JSON with --json.
func (ls *loadSetup) report(a *app, f *loadFlags, ran *study.Ran, runErr error) error {
	doc := ls.view.summary(ls.info, ran, runErr)
	checks := judgeExpectations(f.expectations, ran)
	if f.json {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(withExpectations(doc, checks))
	} else {
		ls.view.print(a.stdout, doc)
		printExpectations(a.stdout, term.Style{Enabled: term.ColorEnabled(a.stdout, a.getenv)}, checks)
	}
	return expectOutcome(loadOutcome(a, ran, runErr), checks)
}

func (l loadInfo) where() string {
	if l.target {
		return "the target server"
	}
	return "a " + l.engine + " server dbrig starts"
}

func pluralPoints(n int) string {
	if n == 1 {
		return "1 point"
	}
	return fmt.Sprintf("%d points", n)
}

// withKind is the registry's kinds with one replaced by a view's.
func withKind(kinds []workload.Kind, k workload.Kind) []workload.Kind {
	out := slices.Clone(kinds)
	for i := range out {
		if out[i].Name == k.Name {
			out[i] = k
		}
	}
	return out
}

// serveUsers gives a view of virtual users its load agents (--agents,
// --listen-agents) and serves its metrics (--metrics-addr); stop closes
// both.
func serveUsers(ctx context.Context, a *app, f *loadFlags, v usersView, users []any) (stop func(), err error) {
	var stops []func()
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	if f.fleet.agents != "" || f.fleet.listen != "" {
		sv, ok := v.(spreadView)
		if !ok {
			return nil, usageError(errors.New("--agents, --listen-agents: this load's users run in this process only (load oltp's and load script's run on agents)"))
		}
		agents, err := loadAgents(ctx, a, f.fleet, users)
		if err != nil {
			return nil, err
		}
		stops = append(stops, func() { _ = agent.CloseAll(context.WithoutCancel(ctx), agents) })
		sv.spread(agents)
	}
	if f.metricsAddr != "" {
		runCtx, cancel := context.WithCancel(ctx)
		srv, err := load.ServeMetrics(runCtx, f.metricsAddr, v.metrics())
		if err != nil {
			cancel()
			stop()
			return nil, usageError(fmt.Errorf("--metrics-addr: %w", err))
		}
		fmt.Fprintf(a.stderr, "dbrig: Prometheus metrics at http://%s/metrics\n", srv.Addr())
		stops = append(stops, func() {
			cancel()
			if err := srv.Wait(); err != nil {
				fmt.Fprintf(a.stderr, "dbrig: %v\n", err)
			}
		})
	}
	return stop, nil
}

// loadOutcome turns a load's run error into the command's error, after its
// output is written.
func loadOutcome(a *app, ran *study.Ran, runErr error) error {
	switch {
	case runErr == nil:
		return nil
	case errors.Is(runErr, context.Canceled):
		fmt.Fprintf(a.stderr, "dbrig: interrupted: %d finished points are saved in %s%s\n", countOK(ran.Results), ran.Dir, cutShort(ran.Outcome))
		return runErr
	case errors.Is(runErr, study.ErrPointFailed):
		return failure(fmt.Errorf("%v (the results so far are in %s)", runErr, ran.Dir))
	}
	return failure(runErr)
}

// serverVersion is the version of the load's server, as the run recorded it.
func serverVersion(ran *study.Ran, engineName string) string {
	if ran.Run == nil {
		return ""
	}
	v := ran.Run.Environment.Servers[engineName]
	for _, t := range ran.Run.Environment.Targets {
		v = t.Version
	}
	return v
}

// studyView shows a load as dbrig run shows a study: its findings.
type studyView struct{ a *app }

func (v *studyView) kind(k workload.Kind) workload.Kind { return k }
func (v *studyView) progress() study.Progress           { return nil }
func (v *studyView) starting(loadInfo)                  {}
func (v *studyView) summary(_ loadInfo, ran *study.Ran, err error) any {
	return newRunJSON(ran, err)
}

func (v *studyView) print(w io.Writer, doc any) {
	j := doc.(runJSON)
	if j.doc != nil {
		_ = report.WriteSummary(w, j.doc, term.ColorEnabled(w, v.a.getenv))
		fmt.Fprintf(w, "\nreport: %s\n", j.HTML)
	}
}

// placer places a load's sites on the hosts of --host, if any.
func (f *fleetFlags) placer(a *app) func(context.Context, *study.Spec) (map[string]topology.Starter, func(), error) {
	return func(ctx context.Context, spec *study.Spec) (map[string]topology.Starter, func(), error) {
		sites, agents, err := placeSites(ctx, a, *f, spec)
		return sites, func() { _ = agent.CloseAll(context.WithoutCancel(ctx), agents) }, err
	}
}
