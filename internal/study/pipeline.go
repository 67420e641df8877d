package study

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/topology"
)

// Options are one run as a command asks for it: what to run (a study by
// name or file, a study already parsed, or a run directory to resume) and
// how.
type Options struct {
	// Study is a built-in study's name or a study file's path; Spec is a
	// study already parsed (a load's). Resume is a run directory to
	// resume instead: its study, scale and options are the run's, and
	// Study, Scale and Engine, when given, must be the same.
	Study  string
	Spec   *Spec
	Resume string
	// Scale is the scale to run ("": the study's default).
	Scale string
	// Engine puts every instance that is not a target on this engine.
	Engine string
	// Targets are the user's servers standing in for instances, by
	// instance name, and TargetEngines their engines.
	Targets       map[string]engine.Conn
	TargetEngines map[string]string
	// Dir is the run directory ("": runs/NAME-YYYYMMDD-HHMMSS).
	Dir             string
	Keep, KeepGoing bool
	// Place, when set, places the study's sites on hosts before it is
	// planned, and returns the sites' starters and what closes them after
	// the run.
	Place    func(ctx context.Context, spec *Spec) (map[string]topology.Starter, func(), error)
	Progress Progress
	// Events, when set, receives the run as it goes (see Feed); the
	// caller closes it.
	Events      *Feed
	Log         *slog.Logger
	Version     string
	CommandLine []string
	// Starting, when set, is told the plan and the run directory once
	// every check has passed, before anything starts.
	Starting func(plan *Plan, dir string)
}

// InputError is input refused before anything started: a study file, an
// option, a run directory that cannot take the run. Commands exit 2.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

func inputError(err error) error {
	if err == nil {
		return nil
	}
	return &InputError{err}
}

// Ran is a run that started: where, what it did, and its report.
type Ran struct {
	Dir string
	Outcome
	Report
}

// Run is the one way a study or a load runs: open it (or the run to
// resume), plan it, check everything a plan must pass before anything
// starts, run every point the directory lacks, and write the report from
// whatever finished. It returns *InputError when it refused the input
// before anything started, and once the run started its Ran with the
// run's error (or the report's, when the run succeeded).
func Run(ctx context.Context, reg *Registry, o Options) (*Ran, error) {
	spec, scale, opts, err := o.open(reg)
	if err != nil {
		return nil, err
	}
	var sites map[string]topology.Starter
	if o.Place != nil {
		var closeSites func()
		if sites, closeSites, err = o.Place(ctx, spec); err != nil {
			return nil, err
		}
		defer closeSites()
	}
	plan, err := spec.PlanWith(scale, opts)
	if err != nil {
		return nil, inputError(builtinHint(reg, spec, err))
	}
	dir := cmp.Or(o.Resume, o.Dir, filepath.Join("runs", fmt.Sprintf("%s-%s", spec.Name, time.Now().Format("20060102-150405"))))
	if o.Resume == "" {
		if err := checkRunDir(dir, plan); err != nil {
			return nil, inputError(err)
		}
	}
	if err := CheckBeforeStart(ctx, plan, reg.Engines()); err != nil {
		var es SpecErrors
		if errors.As(err, &es) {
			return nil, inputError(builtinHint(reg, spec, err))
		}
		return nil, err
	}
	if o.Starting != nil {
		o.Starting(plan, dir)
	}
	r := &Runner{
		Plan: plan, Registry: reg, Dir: dir, Targets: o.Targets, Keep: o.Keep, KeepGoing: o.KeepGoing,
		Progress: o.Progress, Events: o.Events, Log: o.Log, Version: o.Version, CommandLine: o.CommandLine, Sites: sites, checked: true,
	}
	out, runErr := r.Run(ctx)
	ran := &Ran{Dir: dir, Outcome: out}
	rep, repErr := WriteReport(dir, reg)
	ran.Report = rep
	if repErr != nil && runErr == nil {
		runErr = fmt.Errorf("write the report: %w", repErr)
	}
	switch {
	case errors.Is(runErr, context.Canceled):
		o.Events.Publish(Event{Type: EventError, Error: "interrupted: the finished points are saved, --resume runs the rest"})
	case runErr != nil:
		o.Events.Publish(Event{Type: EventError, Error: runErr.Error()})
	}
	o.Events.Publish(Event{Type: EventEnd, Dir: dir, Report: rep.HTML})
	return ran, runErr
}

// open reads what to run: the study, its scale and options, checked
// against the run a resumed directory holds. A target given without a
// name gets the study's only instance's.
func (o *Options) open(reg *Registry) (*Spec, string, PlanOptions, error) {
	switch {
	case o.Resume != "":
		rd, err := LoadRun(o.Resume, reg)
		if err != nil {
			return nil, "", PlanOptions{}, inputError(fmt.Errorf("resume %s: %w", o.Resume, err))
		}
		if err := o.nameTargets(rd.Spec); err != nil {
			return nil, "", PlanOptions{}, err
		}
		info := rd.Info
		// The targets' logins are not stored: each is given again, and
		// one given beyond them is no part of the run.
		given := map[string]string{}
		for name := range info.Options.Targets {
			if e, ok := o.TargetEngines[name]; ok {
				given[name] = e
			}
		}
		want := PlanOptions{Engine: cmp.Or(o.Engine, info.Options.Engine), Targets: given}
		if err := checkResume(o.Resume, info, cmp.Or(o.Study, info.Study), cmp.Or(o.Scale, info.Scale), want); err != nil {
			return nil, "", PlanOptions{}, inputError(err)
		}
		return rd.Spec, info.Scale, info.Options, nil
	case o.Spec != nil:
		err := o.nameTargets(o.Spec)
		return o.Spec, o.Scale, o.planOptions(), err
	case o.Study == "":
		return nil, "", PlanOptions{}, inputError(fmt.Errorf("name a study or a study file (built-in: %s)", strings.Join(reg.Studies(), ", ")))
	}
	spec, err := Open(o.Study, reg)
	if err != nil {
		return nil, "", PlanOptions{}, inputError(err)
	}
	err = o.nameTargets(spec)
	return spec, o.Scale, o.planOptions(), err
}

func (o *Options) planOptions() PlanOptions {
	return PlanOptions{Engine: o.Engine, Targets: o.TargetEngines}
}

// nameTargets names a target given without a name after the study's only
// instance.
func (o *Options) nameTargets(spec *Spec) error {
	logins, engines, err := nameTargets(spec, o.Targets, o.TargetEngines)
	if err != nil {
		return inputError(err)
	}
	o.Targets, o.TargetEngines = logins, engines
	return nil
}

// checkRunDir refuses a run directory that already holds another run: a
// new run goes into a new or empty directory, or resumes its own.
func checkRunDir(dir string, plan *Plan) error {
	var info RunInfo
	if err := readJSON(filepath.Join(dir, RunFile), &info); err != nil {
		return nil
	}
	return checkResume(dir, info, plan.Spec.Name, plan.Scale, plan.Options)
}

// checkResume says whether the run in dir resumes as asked: the same
// study, scale, engine and targets. It is the one check of a resume.
func checkResume(dir string, info RunInfo, study, scale string, opts PlanOptions) error {
	switch {
	case study != info.Study && study != info.SpecPath:
		return fmt.Errorf("%s holds a run of %s, not %s", dir, info.Study, study)
	case scale != info.Scale:
		return fmt.Errorf("%s was run at scale %q; it resumes at that scale, not %q", dir, info.Scale, scale)
	case opts.Engine != info.Options.Engine:
		return fmt.Errorf("%s was run with %s; it resumes with the same", dir, info.Options)
	}
	for _, name := range sortedKeys(info.Options.Targets) {
		if _, ok := opts.Targets[name]; !ok {
			return fmt.Errorf("%s was run with --target %s: give it again to resume (dbrig does not store its login)", dir, name)
		}
	}
	if !maps.Equal(info.Options.Targets, opts.Targets) {
		return fmt.Errorf("%s was run with %s; it resumes with the same, not %s", dir, info.Options, opts)
	}
	return nil
}

// Open reads a study by a built-in study's name or a study file's path.
func Open(arg string, reg *Registry) (*Spec, error) {
	if st, err := os.Stat(arg); err == nil && !st.IsDir() {
		return LoadFile(arg, reg)
	}
	if b, ok := reg.Builtin(arg); ok {
		return Parse(b.Path, b.File, reg)
	}
	if strings.HasSuffix(arg, ".toml") || strings.ContainsRune(arg, '/') {
		return nil, fmt.Errorf("study file %s: no such file", arg)
	}
	return nil, fmt.Errorf("no built-in study %q and no such file (built-in: %s; see `dbrig studies`)", arg, strings.Join(reg.Studies(), ", "))
}

// Report is a run directory's report as written: its files, the document
// and the run it was built from.
type Report struct {
	HTML, Markdown string
	Doc            *report.Doc
	Run            *RunData
}

// WriteReport builds a run directory's report from the files the run saved
// there and writes report.html and report.md.
func WriteReport(dir string, reg *Registry) (Report, error) {
	rd, err := LoadRun(dir, reg)
	if err != nil {
		return Report{}, err
	}
	rep := Report{Doc: BuildReport(rd), Run: rd}
	rep.HTML, rep.Markdown, err = report.WriteFiles(dir, rep.Doc)
	return rep, err
}
