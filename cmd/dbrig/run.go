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
	"github.com/dbrig/dbrig/internal/workload"
	"github.com/dbrig/dbrig/internal/workload/georep"
	"github.com/dbrig/dbrig/internal/workload/keylookup"
	"github.com/dbrig/dbrig/internal/workload/oltp"
	"github.com/dbrig/dbrig/internal/workload/pagecompress"
	"github.com/dbrig/dbrig/internal/workload/rbar"
	"github.com/dbrig/dbrig/internal/workload/readahead"
	"github.com/dbrig/dbrig/internal/workload/tenants"
	"github.com/dbrig/dbrig/internal/workload/tpch"
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

// workloads lists the workload kinds dbrig knows.
func workloads() []workload.Kind {
	return []workload.Kind{rbar.Kind(), georep.Kind(), tpch.Kind(), keylookup.Kind(), readahead.Kind(), pagecompress.Kind(), oltp.Kind(), tenants.Kind()}
}

// loadStudy reads a study by built-in name or file path.
func loadStudy(arg string, reg *study.Registry) (*study.Spec, error) {
	if st, err := os.Stat(arg); err == nil && !st.IsDir() {
		return study.LoadFile(arg, reg)
	}
	if b, ok := reg.Builtin(arg); ok {
		return study.Parse(b.Path, b.File, reg)
	}
	if strings.HasSuffix(arg, ".toml") || strings.ContainsRune(arg, '/') {
		return nil, fmt.Errorf("study file %s: no such file", arg)
	}
	return nil, fmt.Errorf("no built-in study %q and no such file (built-in: %s; see `dbrig studies`)", arg, strings.Join(reg.Studies(), ", "))
}

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
the environment variable VAR, so no password shows in the process list). dbrig
never starts, stops or reconfigures a target: it creates one database of its
own there (dbrig_<study>, or a schema when the login may not create databases)
and removes it at the end unless --keep. The emulated links still apply in
front of a target.

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
	fl.BoolVar(&f.keep, "keep", false, "keep the instances' directories (data, logs) after the run")
	fl.BoolVar(&f.keepGoing, "keep-going", false, "run the remaining points after one fails")
	fl.StringVar(&f.bins.pg, "pg-bin", "", "PostgreSQL server binaries `DIR` (default: newest found)")
	fl.StringVar(&f.bins.mariadb, "mariadb-bin", "", "MariaDB server binaries `DIR` (default: found on PATH, /usr/sbin, /usr/bin)")
	fl.StringVar(&f.engine, "engine", "", "run every instance on this `ENGINE` (postgres, mariadb)")
	fl.StringArrayVar(&f.targets, "target", nil, "replace instance NAME by your server: `NAME=URI` or NAME=env:VAR (repeatable)")
	fl.BoolVar(&f.verbose, "verbose", false, "log what dbrig does to stderr")
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
	opts := study.PlanOptions{Engine: f.engine, Targets: targetEngines}
	if err := checkOut(f.out); err != nil {
		return err
	}
	var spec *study.Spec
	dir := f.out
	switch {
	case f.resume != "":
		if f.out != "" {
			return usageError(errors.New("--resume and --out both name the run directory: give one"))
		}
		rd, err := study.LoadRun(f.resume, reg)
		if err != nil {
			return usageError(fmt.Errorf("resume %s: %w", f.resume, err))
		}
		if len(args) == 1 && args[0] != rd.Spec.Name && args[0] != rd.Info.SpecPath {
			return usageError(fmt.Errorf("%s holds a run of %s, not %s", f.resume, rd.Spec.Name, args[0]))
		}
		if scale != "" && scale != rd.Info.Scale {
			return usageError(fmt.Errorf("%s was run at scale %q; it resumes at that scale, not %q", f.resume, rd.Info.Scale, scale))
		}
		if f.engine != "" && f.engine != rd.Info.Options.Engine {
			return usageError(fmt.Errorf("%s was run with %s; it resumes with the same", f.resume, rd.Info.Options))
		}
		for name := range rd.Info.Options.Targets {
			if _, ok := targets[name]; !ok {
				return usageError(fmt.Errorf("%s was run with --target %s: give it again to resume (dbrig does not store its login)", f.resume, name))
			}
		}
		opts = rd.Info.Options
		spec, scale, dir = rd.Spec, rd.Info.Scale, f.resume
	case len(args) == 0:
		return usageError(fmt.Errorf("name a study or a study file (built-in: %s)", strings.Join(reg.Studies(), ", ")))
	default:
		if spec, err = loadStudy(args[0], reg); err != nil {
			return usageError(err)
		}
	}
	plan, err := spec.PlanWith(scale, opts)
	if err != nil {
		return usageError(err)
	}
	// Every setting is checked by its engine, and what the instances ask of
	// this machine, before anything starts.
	if err := study.CheckBeforeStart(ctx, plan, reg.Engines()); err != nil {
		var es study.SpecErrors
		if errors.As(err, &es) {
			return usageError(err)
		}
		return failure(err)
	}
	if dir == "" {
		dir = filepath.Join("runs", fmt.Sprintf("%s-%s", spec.Name, time.Now().Format("20060102-150405")))
	}

	progressOut := a.stderr
	var progress study.Progress = &study.LineProgress{W: progressOut}
	if term.IsTerminal(progressOut) && a.getenv("TERM") != "dumb" {
		progress = &study.BarProgress{W: progressOut}
	}
	level := slog.LevelWarn
	if f.verbose {
		level = slog.LevelInfo
	}
	log := slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: level}))
	fmt.Fprintf(a.stderr, "dbrig: running %s (scale %s, %d points) into %s\n", spec.Name, orDefault(plan.Scale, "default"), len(plan.Points()), dir)

	r := &study.Runner{
		Plan: plan, Registry: reg, Dir: dir, Targets: targets, Keep: f.keep, KeepGoing: f.keepGoing,
		Progress: progress, Log: log, Version: a.version, CommandLine: redactedArgs(a),
	}
	out, runErr := r.Run(ctx)

	// Write the report from whatever finished, also after a failure.
	htmlPath, mdPath, doc, repErr := writeReport(dir, reg)
	if repErr != nil && runErr == nil {
		return failure(fmt.Errorf("write the report: %w", repErr))
	}
	if f.json {
		_ = printRunJSON(a.stdout, dir, htmlPath, mdPath, out, doc, runErr)
	} else if doc != nil {
		_ = report.WriteSummary(a.stdout, doc, term.ColorEnabled(a.stdout, a.getenv))
		fmt.Fprintf(a.stdout, "\nreport: %s\n", htmlPath)
	}
	switch {
	case runErr == nil:
		return nil
	case errors.Is(runErr, context.Canceled):
		fmt.Fprintf(a.stderr, "dbrig: interrupted: %d finished points are saved in %s%s; resume with: dbrig run --resume %s\n", countOK(out.Results), dir, cutShort(out), dir)
		return runErr
	case errors.Is(runErr, study.ErrPointFailed):
		what := runErr.Error()
		var pe *study.PointError
		if errors.As(runErr, &pe) {
			what = "point " + pe.Key + " failed"
		}
		keep := ""
		if !f.keep {
			keep = "; --keep keeps the instances' directories and server logs for inspection"
		}
		return failure(fmt.Errorf("%s (the error is above and in %s)%s.\nResults so far are in %s; once the cause is fixed, dbrig run --resume %s runs the points that are missing (with the study as saved in %s: after a change to the study file, run the file again)",
			what, filepath.Join(dir, study.ResultsFile), keep, dir, dir, filepath.Join(dir, study.SpecFile)))
	}
	return failure(runErr)
}

// parseTargets reads --target NAME=URI (or NAME=env:VAR) flags: the logins
// by instance name, and each target's engine by the URI's scheme. No error
// shows a password.
func parseTargets(flags []string, engines *engine.Registry, getenv func(string) string) (map[string]engine.Conn, map[string]string, error) {
	if len(flags) == 0 {
		return nil, nil, nil
	}
	logins, kinds := map[string]engine.Conn{}, map[string]string{}
	for _, fl := range flags {
		name, uri, ok := strings.Cut(fl, "=")
		if !ok || name == "" || uri == "" {
			return nil, nil, errors.New("--target: want NAME=URI or NAME=env:VAR, e.g. --target db=postgres://user@host/db")
		}
		if v, fromEnv := strings.CutPrefix(uri, "env:"); fromEnv {
			if uri = getenv(v); uri == "" {
				return nil, nil, fmt.Errorf("--target %s=env:%s: the environment variable %s is empty or unset", name, v, v)
			}
		}
		if _, dup := logins[name]; dup {
			return nil, nil, fmt.Errorf("--target %s is given twice", name)
		}
		e, login, err := engines.ParseTarget(uri)
		if err != nil {
			return nil, nil, fmt.Errorf("--target %s: %w", name, err)
		}
		logins[name], kinds[name] = login, e.Name()
	}
	return logins, kinds, nil
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

func writeReport(dir string, reg *study.Registry) (htmlPath, mdPath string, doc *report.Doc, err error) {
	rd, err := study.LoadRun(dir, reg)
	if err != nil {
		return "", "", nil, err
	}
	doc = study.BuildReport(rd)
	htmlPath, mdPath, err = report.WriteFiles(dir, doc)
	return htmlPath, mdPath, doc, err
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
}

func printRunJSON(w io.Writer, dir, html, md string, out study.Outcome, doc *report.Doc, runErr error) error {
	j := runJSON{Dir: dir, HTML: html, Markdown: md, Ran: out.Ran, Done: out.Done, Failed: out.Failed, Unreachable: out.Unreachable}
	if runErr != nil {
		j.Error = runErr.Error()
	}
	if doc != nil {
		j.Findings = doc.Findings
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(j)
}

func newReportCmd(a *app) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "report DIR...",
		Short: "Rebuild runs' report.html and report.md from their results.jsonl",
		Long: `report rebuilds report.html and report.md in each run directory from the
files the run saved there (spec.toml, run.json, environment.json,
results.jsonl), and prints each report's findings and paths. Give several
directories, or a pattern such as runs/rbar-latency-*, to rebuild them all:
one that is not a run directory, or whose report cannot be built, is named
on stderr and the others are still rebuilt. With --json it prints one JSON
array holding a document per directory, in the order given.

Exit codes: 0 every report rebuilt, 1 a report could not be built, 2 a
directory is not a dbrig run directory (or none was given).`,
		Example: `  dbrig report runs/rbar-latency-20250101-120000
  dbrig report runs/rbar-latency-*
  dbrig report runs/* --json`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			reg := newRegistry(binDirs{})
			color := term.ColorEnabled(a.stdout, a.getenv)
			var docs []runJSON
			var notRuns, failed []error
			for i, dir := range args {
				htmlPath, mdPath, doc, err := rebuildReport(dir, reg)
				var notRun *notRunDirError
				switch {
				case errors.As(err, &notRun):
					notRuns = append(notRuns, err)
				case err != nil:
					failed = append(failed, err)
				}
				if asJSON {
					j := runJSON{Dir: dir, HTML: htmlPath, Markdown: mdPath}
					if err != nil {
						j.Error = err.Error()
					}
					if doc != nil {
						j.Findings = doc.Findings
					}
					docs = append(docs, j)
					continue
				}
				if err != nil {
					continue
				}
				if len(args) > 1 {
					if i > 0 {
						fmt.Fprintln(a.stdout)
					}
					fmt.Fprintf(a.stdout, "== %s ==\n", dir)
				}
				if err := report.WriteSummary(a.stdout, doc, color); err != nil {
					return failure(err)
				}
				fmt.Fprintf(a.stdout, "\nreport: %s\nmarkdown: %s\n", htmlPath, mdPath)
			}
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(docs); err != nil {
					return failure(err)
				}
			}
			return reportOutcome(len(args), notRuns, failed)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print a JSON array with each directory's findings and paths (and error, if any)")
	return cmd
}

// notRunDirError is a directory given to dbrig report that holds no run:
// the user's mistake, not a failed rebuild.
type notRunDirError struct{ dir string }

func (e *notRunDirError) Error() string {
	return fmt.Sprintf("%s is not a dbrig run directory (no %s)", e.dir, study.RunFile)
}

// rebuildReport rebuilds one run directory's report.
func rebuildReport(dir string, reg *study.Registry) (htmlPath, mdPath string, doc *report.Doc, err error) {
	if _, err := os.Stat(filepath.Join(dir, study.RunFile)); err != nil {
		return "", "", nil, &notRunDirError{dir: dir}
	}
	htmlPath, mdPath, doc, err = writeReport(dir, reg)
	if err != nil {
		return "", "", nil, fmt.Errorf("report of %s: %w", dir, err)
	}
	return htmlPath, mdPath, doc, nil
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
	cmd := &cobra.Command{
		Use:   "studies",
		Short: "List the built-in studies",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			reg := newRegistry(binDirs{})
			type row struct {
				Name   string         `json:"name"`
				Title  string         `json:"title"`
				Source string         `json:"source"`
				Points map[string]int `json:"points"` // per scale
			}
			var rows []row
			for _, name := range reg.Studies() {
				spec, err := loadStudy(name, reg)
				if err != nil {
					return failure(fmt.Errorf("built-in study %s: %w", name, err))
				}
				r := row{Name: name, Title: spec.Title, Source: spec.Source.Seed, Points: map[string]int{}}
				for _, sc := range spec.ScaleNames() {
					if p, err := spec.Plan(sc); err == nil {
						r.Points[sc] = len(p.Points())
					}
				}
				rows = append(rows, r)
			}
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(rows)
			}
			for _, r := range rows {
				var scales []string
				for _, sc := range slices.Sorted(maps.Keys(r.Points)) {
					scales = append(scales, fmt.Sprintf("%s %d points", sc, r.Points[sc]))
				}
				fmt.Fprintf(a.stdout, "%-18s %s\n%-18s source: seed %s; %s\n", r.Name, r.Title, "", r.Source, strings.Join(scales, ", "))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the list as JSON")
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
