package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/dbrig/dbrig/internal/agent"
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/term"
	"github.com/dbrig/dbrig/internal/topology"
	"github.com/dbrig/dbrig/internal/workload"
	"github.com/dbrig/dbrig/internal/workload/tpch"
)

// newLoadCmd is the parent of the standard loads: each subcommand runs one
// workload against one server, outside a study file, through the same
// runner, run directory and report as a study.
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

Exit codes: 0 success, 1 the load failed, 2 bad flags, 130 interrupted.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return usageError(fmt.Errorf("name a workload: %s (see 'dbrig load --help')", strings.Join(loadNames(cmd), ", ")))
		},
	}
	// The registry of loads.
	for _, newSub := range []func(*app) *cobra.Command{
		newLoadOLTPCmd,
		newLoadTPCHCmd,
	} {
		cmd.AddCommand(newSub(a))
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

// loadRun is one load, written as a study of one instance named "db".
type loadRun struct {
	name   string // the workload: the run directory is runs/load-NAME-<time>
	spec   []byte // the study file
	target string // the user's server (a URI or env:VAR), or ""
	engine string // the engine dbrig starts when there is no target
	out    string
	keep   bool
	bins   binDirs
	log    bool
	// reg, when set, is the registry to run with (a workload's kind with a
	// live view of the run); progress, when set, replaces the bars.
	reg      *study.Registry
	progress study.Progress
	// fleet, when set, places sites on hosts (--host).
	fleet *fleetFlags
}

// runLoad runs a load like a study: the same checks, runner, results and
// report. It returns the run's directory, its outcome and results.
func runLoad(ctx context.Context, a *app, l loadRun) (dir string, out study.Outcome, runErr error, err error) {
	reg := l.reg
	if reg == nil {
		reg = newRegistry(l.bins)
	}
	logins, engines, err := parseTargets(nonEmpty("db=", l.target), reg.Engines(), a.getenv)
	if err != nil {
		return "", out, nil, usageError(err)
	}
	opts := study.PlanOptions{Targets: engines}
	spec, err := study.Parse("load-"+l.name+".toml", l.spec, reg)
	if err != nil {
		return "", out, nil, usageError(err)
	}
	var sites map[string]topology.Starter
	if l.fleet != nil {
		var siteAgents []*agent.Agent
		sites, siteAgents, err = placeSites(ctx, a, *l.fleet, spec)
		if err != nil {
			return "", out, nil, err
		}
		defer func() { _ = agent.CloseAll(context.WithoutCancel(ctx), siteAgents) }()
	}
	plan, err := spec.PlanWith("", opts)
	if err != nil {
		return "", out, nil, usageError(err)
	}
	if err := study.CheckBeforeStart(ctx, plan, reg.Engines()); err != nil {
		var es study.SpecErrors
		if errors.As(err, &es) {
			return "", out, nil, usageError(err)
		}
		return "", out, nil, failure(err)
	}
	dir = l.out
	if dir == "" {
		dir = filepath.Join("runs", fmt.Sprintf("load-%s-%s", l.name, time.Now().Format("20060102-150405")))
	}
	var progress study.Progress = &study.LineProgress{W: a.stderr}
	if l.progress != nil {
		progress = l.progress
	} else if term.IsTerminal(a.stderr) && a.getenv("TERM") != "dumb" {
		progress = &study.BarProgress{W: a.stderr}
	}
	level := slog.LevelWarn
	if l.log {
		level = slog.LevelInfo
	}
	where := "a " + l.engine + " server dbrig starts"
	if l.target != "" {
		where = "the target server"
	}
	points := fmt.Sprintf("%d points", len(plan.Points()))
	if len(plan.Points()) == 1 {
		points = "1 point"
	}
	fmt.Fprintf(a.stderr, "dbrig: load %s on %s (%s) into %s\n", l.name, where, points, dir)
	r := &study.Runner{
		Plan: plan, Registry: reg, Dir: dir, Targets: logins, Keep: l.keep,
		Progress: progress, Log: slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: level})),
		Version: a.version, CommandLine: redactedArgs(a), Sites: sites,
	}
	out, runErr = r.Run(ctx)
	return dir, out, runErr, nil
}

func nonEmpty(prefix, v string) []string {
	if v == "" {
		return nil
	}
	return []string{prefix + v}
}

// loadOutcome turns a load's run error into the command's error, after its
// output is written.
func loadOutcome(a *app, dir string, out study.Outcome, runErr error) error {
	switch {
	case runErr == nil:
		return nil
	case errors.Is(runErr, context.Canceled):
		fmt.Fprintf(a.stderr, "dbrig: interrupted: %d finished points are saved in %s%s\n", countOK(out.Results), dir, cutShort(out))
		return runErr
	case errors.Is(runErr, study.ErrPointFailed):
		return failure(fmt.Errorf("%v (the results so far are in %s)", runErr, dir))
	}
	return failure(runErr)
}

type loadTPCHFlags struct {
	target  string
	engine  string
	scale   float64
	degree  string
	runs    int
	queries string
	json    bool
	out     string
	keep    bool
	bins    binDirs
	verbose bool
}

func newLoadTPCHCmd(a *app) *cobra.Command {
	var f loadTPCHFlags
	cmd := &cobra.Command{
		Use:   "tpch --scale SF [--target URI | --engine postgres] [--degree N[,N...]] [--runs N]",
		Short: "A TPC-H power test: the 22 queries, each answer checked",
		Long: `load tpch loads TPC-H data at scale factor SF (tpchgen-cli's, streamed into
COPY), adds the keys and indexes, analyzes, records each query's answer from a
serial run (checked against the answers dbrig ships for the scale factors it
has them for), then runs the stream of 22 queries --runs times at each
--degree: the first stream is dropped, then each query's fastest and slowest,
and the rest averaged (seed 002's rule). Every answer of every stream must
match the serial run's, or the load fails.

--degree is PostgreSQL's max_parallel_workers_per_gather (0 = serial); give a
list (0,2,4) to compare degrees: the report then has each query's speedup and
Amdahl serial fraction. On a server dbrig starts the degree is a server
setting; on a target, dbrig's session sets it. MariaDB has no parallel query:
it runs degree 0 only.

Needs tpchgen-cli (scripts/install-deps installs it; DBRIG_TPCHGEN names it).`,
		Example: `  dbrig load tpch --scale 0.1                        # a server dbrig starts, serial
  dbrig load tpch --scale 1 --degree 0,2 --runs 4     # serial and two workers, with speedups
  dbrig load tpch --scale 1 --target env:MY_PG_URI    # your server; no password on the command line
  dbrig load tpch --scale 0.01 --json                 # a summary for machines on stdout`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return loadTPCH(cmd.Context(), a, f, cmd.Flags().Changed("engine"))
		},
	}
	fl := cmd.Flags()
	fl.Float64Var(&f.scale, "scale", 0, "TPC-H scale factor `SF` (1 = 1 GB; 0.01 for seconds)")
	fl.StringVar(&f.target, "target", "", "your server: `URI` (postgres://user@host:5432/db, host=/var/run/postgresql) or env:VAR")
	fl.StringVar(&f.engine, "engine", "postgres", "the engine of the server dbrig starts when there is no --target")
	fl.StringVar(&f.degree, "degree", "0", "parallel degree(s) `N[,N...]`: max_parallel_workers_per_gather, 0 = serial")
	fl.IntVar(&f.runs, "runs", 4, "times the stream runs at each degree (the first is dropped; with 4 or more, each query's fastest and slowest too)")
	fl.StringVar(&f.queries, "queries", "all", `the queries: "all", or e.g. "1,3,6" or "1-5,14"`)
	fl.BoolVar(&f.json, "json", false, "print a JSON summary on stdout (progress goes to stderr)")
	fl.StringVar(&f.out, "out", "", "run directory to create (default runs/load-tpch-YYYYMMDD-HHMMSS)")
	fl.BoolVar(&f.keep, "keep", false, "keep the data: the server's directory, or the database on a target")
	fl.StringVar(&f.bins.pg, "pg-bin", "", "PostgreSQL server binaries `DIR` (default: newest found)")
	fl.BoolVar(&f.verbose, "verbose", false, "log what dbrig does to stderr")
	return cmd
}

func parseDegrees(s string) ([]int, error) {
	var out []int
	for _, part := range strings.Split(s, ",") {
		d, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || d < 0 || d > tpch.MaxDegree {
			return nil, fmt.Errorf("--degree %s: want whole numbers from 0 to %d, e.g. 0 or 0,2,4", s, tpch.MaxDegree)
		}
		for _, o := range out {
			if o == d {
				return nil, fmt.Errorf("--degree %s: %d is given twice", s, d)
			}
		}
		out = append(out, d)
	}
	return out, nil
}

func loadTPCH(ctx context.Context, a *app, f loadTPCHFlags, engineSet bool) error {
	if !(f.scale > 0) || math.IsInf(f.scale, 0) || f.scale > tpch.MaxScale {
		return usageError(fmt.Errorf("--scale: want the TPC-H scale factor, a number above 0 (e.g. 0.01, 1, 10) and at most %d, TPC-H's largest", tpch.MaxScale))
	}
	if f.runs < 1 || f.runs > study.MaxRuns {
		return usageError(fmt.Errorf("--runs %d: want 1 to %d", f.runs, study.MaxRuns))
	}
	degrees, err := parseDegrees(f.degree)
	if err != nil {
		return usageError(err)
	}
	if _, err := tpch.ParseSelection(f.queries); err != nil {
		return usageError(fmt.Errorf("--%w", err))
	}
	if f.target != "" && engineSet {
		return usageError(errors.New("--target and --engine both choose the server: a target's engine is its URI's"))
	}
	if err := checkOut(f.out); err != nil {
		return err
	}
	reg := newRegistry(f.bins)
	eng, ok := reg.Engines().Lookup(f.engine)
	if !ok {
		return usageError(fmt.Errorf("--engine %s: want one of %s", f.engine, strings.Join(reg.Engines().Names(), ", ")))
	}
	engineName := f.engine
	if f.target != "" {
		_, kinds, err := parseTargets([]string{"db=" + f.target}, reg.Engines(), a.getenv)
		if err != nil {
			return usageError(err)
		}
		engineName = kinds["db"]
		eng, _ = reg.Engines().Lookup(engineName)
	}
	pt := tpch.PowerTest{Engine: engineName, Scale: f.scale, Degrees: degrees, Streams: f.runs, Queries: f.queries, Target: f.target != ""}
	dir, out, runErr, err := runLoad(ctx, a, loadRun{name: "tpch", spec: pt.Spec(), target: f.target, engine: engineName,
		out: f.out, keep: f.keep, bins: f.bins, log: f.verbose})
	if err != nil {
		return err
	}
	htmlPath, mdPath, _, repErr := writeReport(dir, reg)
	if repErr != nil && runErr == nil {
		return failure(fmt.Errorf("write the report: %w", repErr))
	}
	sum := summarizeTPCH(pt, dir, htmlPath, mdPath, out.Results, runErr)
	sum.title = eng.Title()
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
		printTPCH(a.stdout, sum)
	}
	return loadOutcome(a, dir, out, runErr)
}

// tpchSummary is what `dbrig load tpch` prints, and with --json its shape.
type tpchSummary struct {
	Dir         string          `json:"dir"`
	HTML        string          `json:"report_html,omitempty"`
	Markdown    string          `json:"report_md,omitempty"`
	Engine      string          `json:"engine"`
	Server      string          `json:"server_version,omitempty"`
	ScaleFactor float64         `json:"scale_factor"`
	Streams     int             `json:"streams"`
	Rule        string          `json:"rule"`
	Points      []tpchPointJSON `json:"points"`
	Error       string          `json:"error,omitempty"`
	queries     []int           // the selected queries, in order
	title       string          // the engine's name for people
}

type tpchPointJSON struct {
	Degree  int                `json:"degree"`
	TotalS  float64            `json:"total_s,omitempty"`
	Speedup float64            `json:"speedup,omitempty"` // against degree 0
	Queries map[string]float64 `json:"query_ms,omitempty"`
	Workers map[string]float64 `json:"workers_planned,omitempty"`
	Notes   []string           `json:"notes,omitempty"`
	Skipped string             `json:"skipped,omitempty"`
	Error   string             `json:"error,omitempty"`
}

func summarizeTPCH(pt tpch.PowerTest, dir, html, md string, results []workload.Result, runErr error) tpchSummary {
	s := tpchSummary{Dir: dir, HTML: html, Markdown: md, Engine: pt.Engine, ScaleFactor: pt.Scale, Streams: pt.Streams,
		Rule: "each query's time is the mean of its streams after the first stream and its fastest and slowest are dropped (seed 002's rule)"}
	s.queries, _ = tpch.ParseSelection(pt.Queries)
	if runErr != nil {
		s.Error = runErr.Error()
	}
	serialTotal := 0.0
	for _, r := range results {
		p := tpchPointJSON{Degree: int(r.Params.Int("degree")), Notes: r.Notes, Skipped: r.Skipped, Error: r.Error}
		if r.Measured() {
			p.TotalS = r.Metrics["total_s"]
			p.Queries, p.Workers = map[string]float64{}, map[string]float64{}
			for _, q := range s.queries {
				p.Queries[fmt.Sprintf("Q%d", q)] = r.Metrics[fmt.Sprintf("q%02d_ms", q)]
				p.Workers[fmt.Sprintf("Q%d", q)] = r.Metrics[fmt.Sprintf("q%02d_workers", q)]
			}
			if p.Degree == 0 {
				serialTotal = p.TotalS
			}
		}
		s.Points = append(s.Points, p)
	}
	for i, p := range s.Points {
		if serialTotal > 0 && p.TotalS > 0 {
			s.Points[i].Speedup = serialTotal / p.TotalS
		}
	}
	return s
}

// printTPCH prints each query's time at each degree, and the total.
func printTPCH(w io.Writer, s tpchSummary) {
	server := s.title
	if s.Server != "" {
		server += " " + s.Server
	}
	fmt.Fprintf(w, "TPC-H power test, %s, scale factor %s, %d streams per degree: %s.\n\n", server, tpch.FormatScale(s.ScaleFactor), s.Streams, s.Rule)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := "query\t"
	for _, p := range s.Points {
		header += fmt.Sprintf("degree %d (ms)\t", p.Degree)
	}
	fmt.Fprintln(tw, header)
	for _, q := range s.queries {
		line := fmt.Sprintf("Q%d\t", q)
		for _, p := range s.Points {
			if v, ok := p.Queries[fmt.Sprintf("Q%d", q)]; ok {
				line += fmt.Sprintf("%.1f\t", v)
			} else {
				line += "-\t"
			}
		}
		fmt.Fprintln(tw, line)
	}
	total := "total (s)\t"
	speed := "speedup\t"
	for _, p := range s.Points {
		if p.TotalS > 0 {
			total += fmt.Sprintf("%.2f\t", p.TotalS)
		} else {
			total += "-\t"
		}
		if p.Speedup > 0 {
			speed += fmt.Sprintf("%.2fx\t", p.Speedup)
		} else {
			speed += "-\t"
		}
	}
	fmt.Fprintln(tw, total)
	if len(s.Points) > 1 {
		fmt.Fprintln(tw, speed)
	}
	tw.Flush()
	for _, p := range s.Points {
		for _, n := range p.Notes {
			fmt.Fprintf(w, "degree %d: %s\n", p.Degree, n)
		}
		if p.Skipped != "" {
			fmt.Fprintf(w, "degree %d skipped: %s\n", p.Degree, p.Skipped)
		}
		if p.Error != "" {
			fmt.Fprintf(w, "degree %d FAILED: %s\n", p.Degree, p.Error)
		}
	}
	if s.HTML != "" {
		fmt.Fprintf(w, "\nreport: %s\n", s.HTML)
	}
}
