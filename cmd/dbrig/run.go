package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/mariadb"
	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/term"
	"github.com/dbrig/dbrig/internal/units"
	"github.com/dbrig/dbrig/internal/workload"
	"github.com/dbrig/dbrig/studies"
)

// binDirs are where the user says each engine's server programs are.
type binDirs struct{ pg, mariadb string }

// newEngines lists the engines dbrig knows.
func newEngines(dirs binDirs) *engine.Registry {
	return engine.NewRegistry(postgres.New(dirs.pg), mariadb.New(dirs.mariadb))
}

// newRegistry lists the engines and the workloads dbrig knows.
func newRegistry(dirs binDirs) *study.Registry {
	return study.NewRegistry(newEngines(dirs), workloads(), studies.All()...)
}

// workloads lists the workload kinds dbrig knows (studies.Workloads).
func workloads() []workload.Kind { return studies.Workloads() }

type runFlags struct {
	quick, full bool
	scale       string
	out         string
	resume      string
	json        bool
	keep        bool
	keepGoing   bool
	bins        binDirs
	engine      string
	targets     []string
	verbose     bool
	dashboard   dashboardFlags
}

func newRunCmd(a *app) *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run NAME|FILE",
		Short: "Run a study on real servers and write its report",
		Long: `Run a study: start its database instances and links, run every point of its
plan, append each finished point to results.jsonl (fsynced, so Ctrl-C or a crash
loses nothing finished) and write report.html and report.md.

NAME is a built-in study (see 'dbrig studies'); FILE is a study file (.toml).
The default scale is the study's default (quick for the built-in studies).

--engine puts every instance on another engine (postgres, mariadb). --target
NAME=URI replaces the study's instance NAME by a server you already run
(postgres://..., mysql://... or mariadb://...; NAME=env:VAR reads the URI from
the environment variable VAR, so no password shows in the process list; NAME=
may be left out when the study has one instance). dbrig never starts, stops or
reconfigures a target: it creates one database of its own there (dbrig_<study>,
or a schema when the login may not create databases) and removes it at the end
unless --keep. A target runs with its own server settings: where one differs
from the study's, the run records both and warns; a study that sweeps a setting
of the instance is refused (copy it with 'dbrig studies show NAME' and drop the
sweep). The emulated links still apply in front of a target.

Exit codes: 0 every point succeeded, 1 a point failed (the message names it),
2 the study file or flags are wrong (nothing was started), 130 interrupted
(resume with --resume DIR).`,
		Example: `  dbrig run rbar-latency                 # quick scale, a few minutes
  dbrig run rbar-latency --full          # the full study
  dbrig run rbar-latency --engine mariadb
  dbrig run rbar-latency --target db=env:MY_PG_URI   # your server, behind each link
  dbrig run my-study.toml --out runs/x   # a study of your own
  dbrig run --resume runs/rbar-latency-20261122-101500`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runStudy(cmd.Context(), a, args, f)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&f.quick, "quick", false, "run the quick scale (minutes)")
	fl.BoolVar(&f.full, "full", false, "run the full scale (the study's real sizes; long)")
	fl.StringVar(&f.scale, "scale", "", "run a named scale of the study (e.g. smoke)")
	fl.StringVar(&f.out, "out", "", "run directory to create (default runs/NAME-YYYYMMDD-HHMMSS)")
	fl.StringVar(&f.resume, "resume", "", "resume the run in `DIR`: run only the points it lacks")
	fl.BoolVar(&f.json, "json", false, "print a JSON summary on stdout (progress goes to stderr)")
	fl.BoolVar(&f.keep, "keep", false, "keep the instances' directories (data, logs) after the run; on an emulated disk, its image: dbrig-loop-*/disk.img in TMPDIR (or data_dir), with a KEPT file saying how to mount it")
	fl.BoolVar(&f.keepGoing, "keep-going", false, "run the remaining points after one fails")
	f.bins.register(fl, "")
	fl.StringVar(&f.engine, "engine", "", "run every instance on this `ENGINE` (postgres, mariadb)")
	fl.StringArrayVar(&f.targets, "target", nil, "replace instance NAME by your server: `[NAME=]URI` or [NAME=]env:VAR (NAME: the study's only instance when left out; repeatable)")
	fl.BoolVar(&f.verbose, "verbose", false, "log what dbrig does to stderr")
	f.dashboard.register(fl)
	return cmd
}

func runStudy(ctx context.Context, a *app, args []string, f runFlags) error {
	reg := newRegistry(f.bins)
	scale, err := pickScale(f)
	if err != nil {
		return usageError(err)
	}
	if f.engine != "" {
		if _, ok := reg.Engines().Lookup(f.engine); !ok {
			return usageError(fmt.Errorf("--engine %s: want one of %s", f.engine, strings.Join(reg.Engines().Names(), ", ")))
		}
	}
	targets, targetEngines, err := parseTargets(f.targets, reg.Engines(), a.getenv)
	if err != nil {
		return usageError(err)
	}
	if err := checkOut(f.out); err != nil {
		return err
	}
	if f.resume != "" && f.out != "" {
		return usageError(errors.New("--resume and --out both name the run directory: give one"))
	}
	name := ""
	if len(args) == 1 {
		name = args[0]
	}
	dash, err := startDashboard(a, f.dashboard)
	if err != nil {
		return err
	}
	defer dash.stop(ctx, a)
	ran, err := study.Run(ctx, reg, study.Options{
		Study: name, Resume: f.resume, Scale: scale, Engine: f.engine, Targets: targets, TargetEngines: targetEngines,
		Dir: f.out, Keep: f.keep, KeepGoing: f.keepGoing, Progress: newProgress(a), Events: dash.events(), Log: newLogger(a, f.verbose),
		Version: a.version, CommandLine: redactedArgs(a),
		Starting: func(plan *study.Plan, dir string) {
			dash.starting(dir)
			fmt.Fprintf(a.stderr, "dbrig: running %s (scale %s, %d points) into %s\n", plan.Spec.Name, orDefault(plan.Scale, "default"), len(plan.Points()), dir)
		},
	})
	if ran == nil {
		return runError(err)
	}
	if f.json {
		_ = printJSON(a.stdout, newRunJSON(ran, err))
	} else if ran.Doc != nil {
		_ = report.WriteSummary(a.stdout, ran.Doc, term.ColorEnabled(a.stdout, a.getenv))
		fmt.Fprintf(a.stdout, "\nreport: %s\n", ran.HTML)
	}
	return runOutcome(a, ran, err, f.keep)
}

// runError is the command's error for a run that did not start: the
// user's input (exit 2), or a check that could not run (exit 1).
func runError(err error) error {
	var in *study.InputError
	var ee *exitError
	switch {
	case errors.As(err, &ee):
		return err
	case errors.As(err, &in):
		return usageError(err)
	}
	return failure(err)
}

// runOutcome turns a study's run error into the command's error, after
// its output is written, saying how to go on.
func runOutcome(a *app, ran *study.Ran, runErr error, kept bool) error {
	dir := ran.Dir
	switch {
	case runErr == nil:
		return nil
	case errors.Is(runErr, context.Canceled):
		fmt.Fprintf(a.stderr, "dbrig: interrupted: %d finished points are saved in %s%s; resume with: dbrig run --resume %s\n", countOK(ran.Results), dir, cutShort(ran.Outcome), dir)
		return runErr
	case errors.Is(runErr, study.ErrPointFailed):
		what := runErr.Error()
		var pe *study.PointError
		if errors.As(runErr, &pe) {
			what = "point " + pe.Key + " failed"
		}
		keep := ""
		if !kept {
			keep = "; --keep keeps the instances' directories and server logs for inspection"
		}
		return failure(fmt.Errorf("%s (the error is above and in %s)%s.\nResults so far are in %s; once the cause is fixed, dbrig run --resume %s runs the points that are missing (with the study as saved in %s: after a change to the study file, run the file again)",
			what, filepath.Join(dir, study.ResultsFile), keep, dir, dir, filepath.Join(dir, study.SpecFile)))
	}
	return failure(runErr)
}

// newProgress shows a run's progress on stderr: bars on a terminal, lines
// otherwise.
func newProgress(a *app) study.Progress {
	if term.IsTerminal(a.stderr) && a.getenv("TERM") != "dumb" {
		return &study.BarProgress{W: a.stderr}
	}
	return &study.LineProgress{W: a.stderr}
}

// cmpProgress is p, or the default progress when p is nil.
func cmpProgress(p study.Progress, a *app) study.Progress {
	if p != nil {
		return p
	}
	return newProgress(a)
}

// newLogger logs what dbrig does to stderr: warnings, and with --verbose
// every step.
func newLogger(a *app, verbose bool) *slog.Logger {
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: level}))
}

// redactedArgs is the command line as run.json and reports record it,
// with every password hidden.
func redactedArgs(a *app) []string {
	out := []string{"dbrig"}
	for _, arg := range a.args {
		out = append(out, redactSecrets(engine.RedactURI(arg), a.secrets))
	}
	return out
}

// checkOut refuses --out DIR when DIR is a directory of the user's, before
// anything starts: only a new or empty directory, or a run directory
// (resumed under the resume rules), receives a run.
func checkOut(dir string) error {
	if dir == "" {
		return nil
	}
	if err := study.CheckOutDir(dir); err != nil {
		return usageError(fmt.Errorf("--out: %w", err))
	}
	return nil
}

// cutShort says what became of the point an interrupt cut short.
func cutShort(out study.Outcome) string {
	if len(out.Interrupted) == 0 {
		return ""
	}
	return fmt.Sprintf(" (%s, cut short, is recorded as interrupted: its figures are no result)", out.Interrupted[0].Key)
}

func countOK(rs []workload.Result) int {
	n := 0
	for _, r := range rs {
		if r.OK() {
			n++
		}
	}
	return n
}

func pickScale(f runFlags) (string, error) {
	n := 0
	scale := f.scale
	if f.quick {
		n++
		scale = "quick"
	}
	if f.full {
		n++
		scale = "full"
	}
	if f.scale != "" {
		n++
	}
	if n > 1 {
		return "", errors.New("--quick, --full and --scale choose the same thing: give one")
	}
	return scale, nil
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

type runJSON struct {
	Dir      string `json:"dir"`
	HTML     string `json:"report_html,omitempty"`
	Markdown string `json:"report_md,omitempty"`
	// Ran counts the points run now; Done those already in the directory
	// (a resumed run); Failed the points that failed; Unreachable the
	// points skipped because a target cannot give what they ask for.
	Ran         int              `json:"ran"`
	Done        int              `json:"done"`
	Failed      int              `json:"failed"`
	Unreachable int              `json:"unreachable"`
	Error       string           `json:"error,omitempty"`
	Findings    []report.Finding `json:"findings,omitempty"`
	doc         *report.Doc
}

// newRunJSON is the JSON summary of a run that started.
func newRunJSON(ran *study.Ran, runErr error) runJSON {
	out := ran.Outcome
	j := runJSON{Dir: ran.Dir, HTML: ran.HTML, Markdown: ran.Markdown, Ran: out.Ran, Done: out.Done, Failed: out.Failed, Unreachable: out.Unreachable, doc: ran.Doc}
	if runErr != nil {
		j.Error = runErr.Error()
	}
	if ran.Doc != nil {
		j.Findings = ran.Doc.Findings
	}
	return j
}

// printJSON prints one indented JSON document.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func newReportCmd(a *app) *cobra.Command {
	var asJSON, predictions bool
	cmd := &cobra.Command{
		Use:   "report DIR...",
		Short: "Rebuild runs' report.html and report.md from their results.jsonl",
		Long: `report rebuilds report.html and report.md in each run directory from the
files the run saved there (spec.toml, run.json, environment.json,
results.jsonl), and prints each report's findings and paths. Give several
directories, or a pattern such as runs/rbar-latency-*, to rebuild them all:
one that is not a run directory, or whose report cannot be built, is named
on stderr and the others are still rebuilt. With --json it prints one JSON
array holding a document per directory, in the order given. With
--predictions it rebuilds nothing and prints how many headline figures a
model predicted before the point ran or fitted with the point held out,
their median and p90 absolute error, per run and over them all, and where
each workload's model misses most (--json: the same as one document).

Exit codes: 0 every report rebuilt, 1 a report could not be built, 2 a
directory is not a dbrig run directory (or none was given).`,
		Example: `  dbrig report runs/rbar-latency-20250101-120000
  dbrig report runs/rbar-latency-*
  dbrig report runs/* --json
  dbrig report --predictions runs/*`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			reg := newRegistry(binDirs{})
			if predictions {
				return printPredictions(a.stdout, args, reg, asJSON)
			}
			return rebuildReports(a, args, reg, asJSON)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array with each directory's findings and paths (and error, if any)")
	cmd.Flags().BoolVar(&predictions, "predictions", false, "rebuild nothing: print each run's share of headline figures predicted or fitted held out, their median and p90 error, and where each workload's model misses most")
	return cmd
}

// rebuildReports rebuilds each directory's reports and prints their
// summaries, or one JSON array; a directory that fails does not stop the
// others.
func rebuildReports(a *app, dirs []string, reg *study.Registry, asJSON bool) error {
	color := term.ColorEnabled(a.stdout, a.getenv)
	var docs []runJSON
	var notRuns, failed []error
	for i, dir := range dirs {
		rep, err := rebuildReport(dir, reg)
		var notRun *notRunDirError
		switch {
		case errors.As(err, &notRun):
			notRuns = append(notRuns, err)
		case err != nil:
			failed = append(failed, err)
		}
		if asJSON {
			docs = append(docs, reportJSON(dir, rep, err))
			continue
		}
		if err != nil {
			continue
		}
		if len(dirs) > 1 {
			if i > 0 {
				fmt.Fprintln(a.stdout)
			}
			fmt.Fprintf(a.stdout, "== %s ==\n", dir)
		}
		if err := report.WriteSummary(a.stdout, rep.Doc, color); err != nil {
			return failure(err)
		}
		fmt.Fprintf(a.stdout, "\nreport: %s\nmarkdown: %s\n", rep.HTML, rep.Markdown)
	}
	if asJSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(docs); err != nil {
			return failure(err)
		}
	}
	return reportOutcome(len(dirs), notRuns, failed)
}

// reportJSON is a directory's entry in report --json: its paths and
// findings, or why its report could not be built.
func reportJSON(dir string, rep study.Report, err error) runJSON {
	j := runJSON{Dir: dir, HTML: rep.HTML, Markdown: rep.Markdown}
	if err != nil {
		j.Error = err.Error()
	}
	if rep.Doc != nil {
		j.Findings = rep.Doc.Findings
	}
	return j
}

// notRunDirError is a directory given to dbrig report that holds no run:
// the user's mistake, not a failed rebuild.
type notRunDirError struct{ dir string }

func (e *notRunDirError) Error() string {
	return fmt.Sprintf("%s is not a dbrig run directory (no %s)", e.dir, study.RunFile)
}

// rebuildReport rebuilds one run directory's report.
func rebuildReport(dir string, reg *study.Registry) (study.Report, error) {
	if _, err := os.Stat(filepath.Join(dir, study.RunFile)); err != nil {
		return study.Report{}, &notRunDirError{dir: dir}
	}
	rep, err := study.WriteReport(dir, reg)
	if err != nil {
		return study.Report{}, fmt.Errorf("report of %s: %w", dir, err)
	}
	return rep, nil
}

// reportOutcome is dbrig report's error and exit code: 2 when a directory
// was not a run, else 1 when a report could not be built. With several
// directories the message counts what was not rebuilt.
func reportOutcome(total int, notRuns, failed []error) error {
	bad := len(notRuns) + len(failed)
	if bad == 0 {
		return nil
	}
	err := errors.Join(append(slices.Clone(notRuns), failed...)...)
	if total > 1 {
		err = fmt.Errorf("%d of %d reports not rebuilt:\n%w", bad, total, err)
	}
	if len(notRuns) > 0 {
		return usageError(err)
	}
	return failure(err)
}

func newStudiesCmd(a *app) *cobra.Command {
	var asJSON bool
	runsDir := "runs"
	cmd := &cobra.Command{
		Use:   "studies",
		Short: "List the built-in studies ('dbrig studies show NAME' prints one's file)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			reg := newRegistry(binDirs{})
			type row struct {
				Name   string         `json:"name"`
				Title  string         `json:"title"`
				Source string         `json:"source"`
				Points map[string]int `json:"points"` // per scale
				// LastRun is, per scale, how long the latest complete run
				// under --runs took on this machine, in seconds.
				LastRun map[string]float64 `json:"last_run_s,omitempty"`
				past    map[string]study.PastRun
			}
			var rows []row
			points := map[string]map[string]int{}
			for _, name := range reg.Studies() {
				spec, err := study.Open(name, reg)
				if err != nil {
					return failure(fmt.Errorf("built-in study %s: %w", name, err))
				}
				r := row{Name: name, Title: spec.Title, Source: spec.Source.Seed, Points: map[string]int{}, LastRun: map[string]float64{}}
				for _, sc := range spec.ScaleNames() {
					if p, err := spec.Plan(sc); err == nil {
						r.Points[sc] = len(p.Points())
					}
				}
				points[name] = r.Points
				rows = append(rows, r)
			}
			past := study.PastRuns(runsDir, func(name, scale string) (int, bool) {
				n, ok := points[name][scale]
				return n, ok
			})
			for i, r := range rows {
				rows[i].past = past[r.Name]
				for sc, run := range rows[i].past {
					rows[i].LastRun[sc] = run.Duration.Seconds()
				}
			}
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(rows)
			}
			for _, r := range rows {
				var scales []string
				for _, sc := range slices.Sorted(maps.Keys(r.Points)) {
					s := fmt.Sprintf("%s %d points", sc, r.Points[sc])
					if run, ok := r.past[sc]; ok {
						s += fmt.Sprintf(" (%s here: %s)", units.FormatDuration(run.Duration.Round(time.Second)), run.Dir)
					}
					scales = append(scales, s)
				}
				fmt.Fprintf(a.stdout, "%-18s %s\n%-18s source: seed %s; %s\n", r.Name, r.Title, "", r.Source, strings.Join(scales, ", "))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the list as JSON")
	cmd.Flags().StringVar(&runsDir, "runs", runsDir, "the `DIR` of earlier runs (dbrig run's default): each scale's last complete run there says how long it took on this machine")
	cmd.AddCommand(newStudiesShowCmd(a))
	return cmd
}

// newClientCmd is the hidden body of a constrained client process.
func newClientCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:    "__client",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if code := study.ClientMain(cmd.Context(), newRegistry(binDirs{}), os.Stdin, a.stdout, a.stderr); code != 0 {
				return &exitError{code: code, err: errors.New("")}
			}
			return nil
		},
	}
}
