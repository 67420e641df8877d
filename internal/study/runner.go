package study

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/idleloop"
	"github.com/dbrig/dbrig/internal/link"
	"github.com/dbrig/dbrig/internal/monitor"
	"github.com/dbrig/dbrig/internal/topology"
	"github.com/dbrig/dbrig/internal/units"
	"github.com/dbrig/dbrig/internal/workload"
)

// Runner runs a plan's points and appends their results to a run directory.
type Runner struct {
	Plan     *Plan
	Registry *Registry
	// Dir is the run directory; it holds the spec, environment and results.
	Dir string
	// Targets are the user's servers standing in for instances (the plan's
	// Options.Targets names them), by instance name.
	Targets map[string]engine.Conn
	// BaseDir holds the instances' directories; Keep leaves them in place
	// (and, on a target, the workload's database).
	BaseDir string
	Keep    bool
	// KeepGoing runs the remaining points after a point fails.
	KeepGoing bool
	// ClientCommand starts a client process (default: this executable with
	// the argument "__client").
	ClientCommand []string
	Progress      Progress
	// Events, when set, receives the run as it goes, for a live view.
	Events      *Feed
	Log         *slog.Logger
	Version     string
	CommandLine []string
	// SeriesInterval of the links' time series (0 = the link's default).
	SeriesInterval time.Duration
	// MonitorInterval is how often each server is sampled while a point
	// runs (0 = monitor.DefaultInterval).
	MonitorInterval time.Duration
	// Sites start the instances of sites placed on other hosts (the
	// spec's [site.NAME] host, or --host), by site name.
	Sites map[string]topology.Starter
	// checked: the plan passed CheckBeforeStart already (study.Run checks
	// it before anything starts, and the check runs servers' programs).
	checked bool
}

// Outcome is what a run did.
type Outcome struct {
	// Ran counts the points run now; Done the points already in the
	// directory; Failed the points run now that failed; Unreachable the
	// points run now that were skipped for a reason (see Result.Skipped).
	Ran, Done, Failed, Unreachable int
	Results                        []workload. // every result in the directory, old and new
					Result
	// Interrupted is the point an interrupt cut short now, recorded with
	// what it measured before the stop (Result.Interrupted), if it had
	// measured anything; it is not in Results.
	Interrupted []workload.Result
}

// ErrPointFailed is returned (wrapped) when a point failed.
var ErrPointFailed = errors.New("point failed")

// PointError is a point that failed and stopped the run.
type PointError struct {
	Key string
	Err error
}

func (e *PointError) Error() string { return e.Key + ": " + e.Err.Error() }

// Unwrap makes a PointError both ErrPointFailed and its cause.
func (e *PointError) Unwrap() []error { return []error{ErrPointFailed, e.Err} }

// Run runs every point that has no successful result in the directory yet.
// A finished point is on disk (fsynced) before the next one starts; on
// error, cancellation or panic every server and link is stopped.
func (r *Runner) Run(ctx context.Context) (out Outcome, err error) {
	if r.Log == nil {
		r.Log = slog.New(slog.DiscardHandler)
	}
	if r.Progress == nil {
		r.Progress = nopProgress{}
	}
	if !r.checked {
		if err := CheckBeforeStart(ctx, r.Plan, r.Registry.Engines()); err != nil {
			return out, err
		}
	}
	topo := topology.New(topology.Options{
		Engines: r.Registry.Engines(), Targets: r.Targets, Log: r.Log, SeriesInterval: r.SeriesInterval, Sites: r.Sites,
		Start: engine.StartOptions{BaseDir: r.BaseDir, Keep: r.Keep, Log: r.Log},
	})
	st := &runState{topo: topo, kind: r.Plan.Spec.Kind(), untaken: map[string][]string{}, warned: map[string]bool{}}
	defer func() {
		// Stop servers even when ctx is cancelled, and even after a panic.
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v\n%s", p, debug.Stack())
		}
		stopCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		if cerr := topo.Close(stopCtx); cerr != nil {
			err = errors.Join(err, cerr)
		}
		for i := len(st.cleanups) - 1; i >= 0; i-- {
			if cerr := st.cleanups[i](stopCtx); cerr != nil {
				err = errors.Join(err, fmt.Errorf("clean up after the workload: %w", cerr))
			}
		}
		r.Progress.Close()
	}()
	// Targets first: one that refuses fails the run before it leaves a
	// run directory behind.
	targets, err := r.attachTargets(ctx, topo)
	if err != nil {
		return out, err
	}
	if err := r.prepareDir(ctx, targets); err != nil {
		return out, err
	}
	todo, err := r.pending(st, &out)
	if err != nil {
		return out, err
	}
	w, err := OpenResults(r.Dir)
	if err != nil {
		return out, err
	}
	defer w.Close()
	err = r.runPending(ctx, st, w, todo, &out)
	return r.finish(out, st.results), err
}

// pending lists the points without a result in the directory yet, and
// counts the others done; the results so far go to the state.
func (r *Runner) pending(st *runState, out *Outcome) ([]Point, error) {
	existing, err := ReadResults(r.Dir)
	if err != nil {
		return nil, err
	}
	existing, _ = Finished(existing)
	done := map[string]bool{}
	for _, res := range existing {
		if res.OK() {
			done[res.Key] = true
		}
	}
	st.results = append(st.results, existing...)
	points := r.Plan.Points()
	var todo []Point
	for _, p := range points {
		if done[p.Key()] {
			out.Done++
		} else {
			todo = append(todo, p)
		}
	}
	r.Progress.Start(len(points), out.Done)
	r.Events.Publish(Event{Type: EventStart, Study: r.Plan.Spec.Name, Dir: r.Dir, Total: len(points), Done: out.Done})
	return todo, nil
}

// runPending runs the points one after another, each result on disk
// before the next starts, until one fails (unless KeepGoing) or the
// context ends.
func (r *Runner) runPending(ctx context.Context, st *runState, w *ResultWriter, todo []Point, out *Outcome) error {
	total := out.Done + len(todo)
	for i, p := range todo {
		if err := ctx.Err(); err != nil {
			return err
		}
		res, perr := r.runPoint(ctx, st, p, out.Done+i+1, total)
		if perr != nil && ctx.Err() != nil {
			if werr := r.recordInterrupted(out, w, st.kind, res); werr != nil {
				return errors.Join(ctx.Err(), werr)
			}
			return ctx.Err()
		}
		var unreachable *topology.Unreachable
		var skip *skipped
		switch {
		case errors.As(perr, &unreachable):
			res.Skipped = unreachable.Reason
			perr = nil
			out.Unreachable++
		case errors.As(perr, &skip):
			res.Skipped = skip.reason
			perr = nil
			out.Unreachable++
		case perr != nil:
			res.Error = perr.Error()
		}
		if werr := w.Write(res); werr != nil {
			return werr
		}
		st.results = append(st.results, res)
		out.Ran++
		r.endPoint(st.kind, res)
		if perr != nil {
			out.Failed++
			if !r.KeepGoing {
				return &PointError{Key: p.Key(), Err: perr}
			}
		}
	}
	if out.Failed > 0 {
		return fmt.Errorf("%w: %d of %d points failed", ErrPointFailed, out.Failed, out.Ran)
	}
	return nil
}

// runState is what one point leaves to the next: the servers and links,
// the data they hold, the results so far and what to remove at the end.
type runState struct {
	topo *topology.Topology
	kind workload.Kind
	// prepared is the PrepareKey of the data the instances hold; nil
	// until a point prepares it (and again after a Prepare failed), so
	// that the next point prepares whatever its key.
	prepared *string
	results  []workload.Result
	// cleanups are what workloads made outside the servers (Env.Cleanup):
	// removed once the servers that use them have stopped.
	cleanups []func(context.Context) error
	// untaken are, by instance, the study's settings its server runs
	// with another value (settingsTaken); warned, those said once.
	untaken map[string][]string
	warned  map[string]bool
}

// needsPrepare reports whether a point must prepare its data: on fresh
// instances, or when it needs other data than they hold.
func (st *runState) needsPrepare(fresh bool, key string) bool {
	return fresh || st.prepared == nil || *st.prepared != key
}

// recordInterrupted records a point an interrupt cut short, when it
// measured something before the stop: labelled, so that the run shows
// where it stopped and what the point saw, and never taken for a result
// (--resume runs the point again). A point that measured nothing leaves
// no line.
func (r *Runner) recordInterrupted(out *Outcome, w *ResultWriter, kind workload.Kind, res workload.Result) error {
	if !res.Interrupted() {
		return nil
	}
	out.Interrupted = append(out.Interrupted, res)
	r.endPoint(kind, res)
	return w.Write(res)
}

// endPoint shows a finished point: its line, and its figures to the feed.
func (r *Runner) endPoint(kind workload.Kind, res workload.Result) {
	r.Progress.EndPoint(PointLine(kind, res))
	r.Events.Publish(Event{Type: EventPoint, Key: res.Key, Point: pointDone(kind, res)})
}

func (r *Runner) finish(out Outcome, all []workload.Result) Outcome {
	out.Results = all
	return out
}

func (r *Runner) prepareDir(ctx context.Context, targets []TargetEnvironment) error {
	if err := CheckOutDir(r.Dir); err != nil {
		return err
	}
	if err := os.MkdirAll(r.Dir, 0o755); err != nil {
		return fmt.Errorf("create run directory: %w", err)
	}
	spec := r.Plan.Spec
	specPath := filepath.Join(r.Dir, SpecFile)
	var info RunInfo
	if err := readJSON(filepath.Join(r.Dir, RunFile), &info); err == nil {
		// The run is this plan's: study.Run checked it (checkResume).
		info.Resumed = append(info.Resumed, time.Now().UTC())
	} else {
		info = RunInfo{Study: spec.Name, Scale: r.Plan.Scale, Options: r.Plan.Options, SpecPath: spec.File, Command: r.CommandLine,
			DbrigVersion: r.Version, Started: time.Now().UTC()}
		text, err := spec.SavedText()
		if err != nil {
			return fmt.Errorf("save the spec: %w", err)
		}
		if err := os.WriteFile(specPath, []byte(text), 0o644); err != nil {
			return fmt.Errorf("save the spec: %w", err)
		}
	}
	if err := writeJSON(filepath.Join(r.Dir, RunFile), info); err != nil {
		return fmt.Errorf("save run info: %w", err)
	}
	env := CaptureEnvironment(ctx, r.Version)
	env.Targets = targets
	env.Disks = diskEnvironment(r.Plan)
	for _, name := range r.Plan.Engines() {
		e, ok := r.Registry.Engines().Lookup(name)
		if !ok {
			return fmt.Errorf("unknown engine %q", name)
		}
		bin, err := e.Binaries(ctx)
		if err != nil {
			return err
		}
		env.Servers[name] = bin.Version
	}
	if err := writeJSON(filepath.Join(r.Dir, EnvironmentFile), env); err != nil {
		return fmt.Errorf("save environment: %w", err)
	}
	return nil
}

// attachTargets connects to every target before the first point, checks
// that it gives what the study needs (a database of dbrig's own), and
// records its version and settings in the environment: a server setting
// of the study's that the target runs with another value is recorded
// beside it, with one warning, since the target's value is the one the
// points run with. A target that refuses fails the run here, with what
// was missing.
func (r *Runner) attachTargets(ctx context.Context, topo *topology.Topology) ([]TargetEnvironment, error) {
	if len(r.Plan.Options.Targets) == 0 {
		return nil, nil
	}
	var targets []engine.InstanceConfig
	seen := map[string]bool{}
	for _, c := range r.Plan.Combos {
		for _, in := range c.Instances {
			if in.Target != "" && !seen[in.Name] {
				seen[in.Name] = true
				targets = append(targets, in)
			}
		}
	}
	r.Progress.Note("attaching targets")
	if _, err := topo.Apply(ctx, targets, nil); err != nil {
		return nil, err // it names the target
	}
	var envs []TargetEnvironment
	for _, t := range targets {
		te, err := r.targetEnvironment(ctx, topo.Instance(t.Name), t)
		if err != nil {
			return nil, err
		}
		envs = append(envs, te)
	}
	if w := targetSettingsWarning(envs); w != "" {
		r.Log.Warn(w)
	}
	return envs, nil
}

// targetEnvironment makes the workload's database on an attached target
// and describes the target for the environment.
func (r *Runner) targetEnvironment(ctx context.Context, inst engine.Instance, cfg engine.InstanceConfig) (TargetEnvironment, error) {
	db := DatabaseName(r.Plan.Spec.Name)
	if err := inst.CreateDatabase(ctx, db); err != nil {
		return TargetEnvironment{}, fmt.Errorf("target %q cannot hold the workload's database %s: %w", cfg.Name, db, err)
	}
	te := TargetEnvironment{Name: cfg.Name, Engine: inst.Engine(), Version: inst.Version(), Server: inst.Login("").String()}
	if d, ok := inst.(interface {
		NonDefaultSettings(context.Context) (map[string]string, error)
	}); ok {
		te.Settings, _ = d.NonDefaultSettings(ctx)
	}
	eng, ok := r.Registry.Engines().Lookup(cfg.Engine)
	if !ok {
		return TargetEnvironment{}, fmt.Errorf("target %q: unknown engine %q", cfg.Name, cfg.Engine)
	}
	var err error
	te.Differs, err = compareServerSettings(ctx, eng, inst, cfg.Settings)
	return te, err
}

// DatabaseName is the database a study's workload makes on every instance:
// dbrig_ and the study's name in lowercase letters, digits and '_'.
func DatabaseName(study string) string {
	return "dbrig_" + strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, strings.ToLower(study))
}

// runPoint runs one point: its topology, its data when the point needs
// other data than the instances hold, and the workload, watched by a
// monitor on each server.
func (r *Runner) runPoint(ctx context.Context, st *runState, p Point, n, total int) (res workload.Result, err error) {
	c := p.Combo
	res = workload.Result{Study: r.Plan.Spec.Name, Key: p.Key(), Combo: c.Key, Run: p.Run, Values: c.Values, Params: c.Params, Client: c.Client, Started: time.Now().UTC()}
	r.Progress.StartPoint(n, total, p.Key())
	r.Events.Publish(Event{Type: EventPointStart, Key: p.Key(), N: n, Total: total})
	defer func() {
		if rec := recover(); rec != nil {
			err = fmt.Errorf("panic in workload %s: %v\n%s", st.kind.Name, rec, debug.Stack())
		}
	}()
	res.Instances = c.Instances
	if reason := cpuCapUnavailable(c, r.Plan.Spec.Sites, engine.CgroupSupport); reason != "" {
		return res, &skipped{reason}
	}
	fresh, err := r.applyTopology(ctx, st, c)
	if err != nil {
		return res, err
	}
	w, err := st.kind.New(c.Params)
	if err != nil {
		return res, err
	}
	env := r.pointEnv(ctx, st, p)
	if err := r.prepare(ctx, st, w, env, fresh); err != nil {
		return res, err
	}
	// Probed and predicted before the idle loops and the monitors start,
	// so that neither the probe's work nor its second shows in what the
	// point measures.
	var pred workload.Prediction
	if st.kind.Predict != nil {
		res.Links = plannedLinks(c.Links)
		res.Probe = probeBefore(ctx, st.kind, res, env)
		pred = st.kind.Predict(res, st.results)
		res.SetModel(pred, workload.Prediction{})
	}
	loops, err := startIdleLoops(c.Client.Idle)
	if err != nil {
		return res, err
	}
	defer func() { res.IdleLoops = stopIdleLoops(loops, r.Log) }()
	samplers := r.startMonitors(ctx, st, c, env.Database)
	defer func() { // on a panic too; Stop again is harmless
		for _, s := range samplers {
			s.Stop()
		}
	}()
	start := time.Now()
	stopWatching := r.watchLinks(st.topo, p.Key())
	var m workload.Measurement
	if c.Client.Constrained() {
		m, err = r.runConstrained(ctx, st.topo, st.kind, c, env)
	} else {
		m, err = safeRun(ctx, w, env)
	}
	stopWatching()
	res.Seconds = time.Since(start).Seconds()
	for _, s := range samplers {
		res.Monitor = append(res.Monitor, s.Stop())
	}
	res.Links = linkResults(withCarried(st.topo.Stats(), m.Links))
	if err != nil {
		if ctx.Err() != nil && len(m.Metrics) > 0 {
			res.Status = workload.StatusInterrupted
			res.Keep(m)
		}
		return res, err
	}
	res.Keep(m)
	st.qualify(&res, c)
	var fit workload.Prediction
	if st.kind.Model != nil {
		fit = st.kind.Model(res, workload.OtherCombinations(res, st.results))
	}
	res.SetModel(pred, fit)
	return res, nil
}

// probeBefore measures what the point's prediction needs just before it runs;
// a probe that fails leaves the prediction without it, not the point.
func probeBefore(ctx context.Context, kind workload.Kind, res workload.Result, env *workload.Env) map[string]float64 {
	if kind.Probe == nil {
		return nil
	}
	got, err := kind.Probe(ctx, res, env)
	if err != nil {
		env.Log.Warn("probe before the point's prediction", "err", err)
		return nil
	}
	return got
}

// startIdleLoops starts, for a point whose client.idle is "spin", a busy
// loop on each CPU, after its data is made and before its workload warms
// up: only the points that ask run with them, so a sweep can set halt and
// spin side by side.
func startIdleLoops(mode string) (*idleloop.Loops, error) {
	if mode != idleloop.Spin {
		return nil, nil
	}
	loops, err := idleloop.Start(nil)
	if errors.As(err, new(engine.NoCgroupError)) {
		// As a cpu_speed without cgroups: the point cannot run as asked.
		return nil, &skipped{fmt.Sprintf("client.idle = %q: %v", mode, err)}
	}
	if err != nil {
		return nil, fmt.Errorf("client.idle = %q: %w", mode, err)
	}
	return loops, nil
}

// startMonitors watches each of the point's servers while the workload
// runs, over a connection opened before the workload's own.
func (r *Runner) startMonitors(ctx context.Context, st *runState, c *Combo, db string) []*monitor.Sampler {
	var samplers []*monitor.Sampler
	for _, in := range c.Instances {
		if inst := st.topo.Instance(in.Name); inst != nil {
			samplers = append(samplers, monitor.Start(ctx, r.Registry.Engines(), inst, db, r.MonitorInterval))
		}
	}
	return samplers
}

// stopIdleLoops stops a point's loops and says what they were.
func stopIdleLoops(loops *idleloop.Loops, log *slog.Logger) *workload.IdleLoops {
	if loops == nil {
		return nil
	}
	spent, err := loops.Stop()
	if err != nil {
		log.Warn("stop the idle loops", "err", err)
	}
	cpus := loops.CPUs()
	return &workload.IdleLoops{CPUs: idleloop.FormatCPUs(cpus), Count: len(cpus), CPUSeconds: spent, CPUSecondsEach: loops.Each()}
}

// skipped is why a point is not run on this machine although nothing
// failed: it asks for a limit the machine cannot apply.
type skipped struct{ reason string }

func (s *skipped) Error() string { return s.reason }

// cpuCapUnavailable says why a point cannot run as its file asks when it
// caps the CPU time of a target (the user's server, which dbrig never
// changes), or of the client or a server dbrig starts on this machine where
// support (engine.CgroupSupport) finds no cpu cgroup dbrig may write: run
// uncapped, the point would measure another processor than the file asks for.
func cpuCapUnavailable(c *Combo, remote map[string]SiteSpec, support func(string) (string, error)) string {
	capped := c.Client.CPUSpeed > 0
	for _, in := range c.Instances {
		// A remote site's engine applies its own cap, or fails to start.
		_, far := remote[in.Site]
		switch {
		case in.CPUSpeed > 0 && in.Target != "":
			return fmt.Sprintf("cpu_speed %g: instance %s is --target %s, the user's server, whose CPU time dbrig never caps", in.CPUSpeed, in.Name, in.Target)
		case in.CPUSpeed > 0 && !far:
			capped = true
		}
	}
	if !capped {
		return ""
	}
	if _, err := support("cpu"); err != nil {
		return "cpu_speed: " + err.Error()
	}
	return ""
}

// applyTopology brings up a point's instances and links, and reports
// whether an instance is fresh (its data is to be made).
func (r *Runner) applyTopology(ctx context.Context, st *runState, c *Combo) (fresh bool, err error) {
	var links []topology.Link
	for _, l := range c.Links {
		links = append(links, topology.Link{Name: l.Name, Between: l.Between, Mode: l.Mode, Profile: l.Profile, Config: l.Config})
	}
	changes, err := st.topo.Apply(ctx, c.Instances, links)
	if err != nil {
		return false, fmt.Errorf("bring up the topology: %w", err)
	}
	r.settingsTaken(ctx, st, c, changes)
	for _, name := range slices.Sorted(maps.Keys(changes)) {
		if changes[name].Fresh() {
			fresh = true
		}
		if ch := changes[name]; ch == topology.Reloaded || ch == topology.Restarted {
			r.Progress.Note(fmt.Sprintf("%s %s with its new settings", name, ch))
		}
	}
	return fresh, nil
}

// pointEnv is what the workload sees of its point.
func (r *Runner) pointEnv(ctx context.Context, st *runState, p Point) *workload.Env {
	c := p.Combo
	var second func(workload.Second)
	if r.Events != nil {
		second = func(s workload.Second) { r.Events.Publish(Event{Type: EventSecond, Key: p.Key(), Second: &s}) }
	}
	return &workload.Env{
		Second:     second,
		Params:     c.Params,
		Database:   DatabaseName(r.Plan.Spec.Name),
		ClientSite: c.Client.Site,
		Log:        r.Log.With("point", p.Key()),
		Progress:   r.Progress.Update,
		Conn: func(from, instance, db string) (workload.Endpoint, error) {
			return st.topo.Conn(ctx, from, instance, db)
		},
		Instance: st.topo.Instance,
		Engines:  r.Registry.Engines(),
		Via:      st.topo.Via,
		Set:      func(name string) []string { return c.Sets[name] },
		Cleanup:  func(f func(context.Context) error) { st.cleanups = append(st.cleanups, f) },
		ReadFile: r.Plan.Spec.ReadFile,
		SiteOf: func(name string) string {
			for _, in := range c.Instances {
				if in.Name == name {
					return in.Site
				}
			}
			return ""
		},
	}
}

// prepare makes the point's data when the instances are fresh or hold
// other data (Kind.PrepareKey); the links' statistics start after it.
func (r *Runner) prepare(ctx context.Context, st *runState, w workload.Workload, env *workload.Env, fresh bool) error {
	key := ""
	if st.kind.PrepareKey != nil {
		key = st.kind.PrepareKey(env.Params)
	}
	if !st.needsPrepare(fresh, key) {
		return nil
	}
	r.Progress.Note("preparing data")
	st.prepared = nil
	if err := w.Prepare(ctx, env); err != nil {
		return fmt.Errorf("prepare: %w", err)
	}
	st.prepared = &key
	st.topo.ResetLinks() // the point's link statistics start now
	return nil
}

func (r *Runner) runConstrained(ctx context.Context, topo *topology.Topology, kind workload.Kind, c *Combo, env *workload.Env) (workload.Measurement, error) {
	job := clientJob{Kind: kind.Name, Params: c.Params, Database: env.Database, Sets: c.Sets,
		ClientSite: c.Client.Site, CPUs: c.Client.CPUs, Endpoints: map[string]clientEndpoint{}, Files: r.Plan.Spec.filesRead()}
	for _, in := range c.Instances {
		e, err := topo.Conn(ctx, c.Client.Site, in.Name, env.Database)
		var unreachable *topology.Unreachable
		if errors.As(err, &unreachable) {
			return workload.Measurement{}, err
		}
		if err != nil {
			continue // not reachable from the client's site: not the client's to use
		}
		job.Endpoints[in.Name] = clientEndpoint{Conn: e.Conn.Seal(), Link: e.Link, Transport: e.Transport}
	}
	command := r.ClientCommand
	if len(command) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return workload.Measurement{}, fmt.Errorf("find dbrig's executable for the client process: %w", err)
		}
		command = []string{exe, "__client"}
	}
	return runInChild(ctx, command, job, c.Client, env)
}

// safeRun turns a panic in the workload's own goroutine into an error, so
// that the runner still stops every server.
func safeRun(ctx context.Context, w workload.Workload, env *workload.Env) (m workload.Measurement, err error) {
	defer func() {
		if rec := recover(); rec != nil {
			err = fmt.Errorf("panic in workload: %v\n%s", rec, debug.Stack())
		}
	}()
	return w.Run(ctx, env)
}

// withCarried adds to each link's statistics what the workload's own runs
// of it carried (load agents').
func withCarried(stats []topology.LinkStats, carried map[string]link.Stats) []topology.LinkStats {
	for i := range stats {
		if c, ok := carried[stats[i].Link.Name]; ok {
			if !stats[i].Used {
				stats[i].Stats = link.Stats{}
			}
			stats[i].Stats, stats[i].Used = topology.MergeStats(stats[i].Stats, c), true
		}
	}
	return stats
}

func linkResults(stats []topology.LinkStats) []workload.LinkResult {
	var out []workload.LinkResult
	for _, ls := range stats {
		l := ls.Link
		lr := linkResult(l.Name, l.Between, l.Profile, l.Mode, l.Config)
		if ls.Used {
			s := ls.Stats
			lr.ForwardBytes, lr.ReverseBytes = s.Forward.Bytes, s.Reverse.Bytes
			lr.Connections = s.Connections
			lr.WindowStalls = s.Forward.WindowStalls + s.Reverse.WindowStalls
			lr.LostSegments = s.Forward.LostSegments + s.Reverse.LostSegments
			lr.ForwardSegments, lr.ReverseSegments = s.Forward.Segments, s.Reverse.Segments
			if l.Config.CountsShadowCollisions() {
				shadow := s.Forward.ShadowCollisions
				lr.ShadowCollisions = &shadow
			}
			lr.SeriesSeconds = s.Forward.SeriesInterval.Seconds()
			lr.ForwardSeries, lr.ReverseSeries = s.Forward.Series, s.Reverse.Series
		}
		out = append(out, lr)
	}
	return out
}

// linkResult is a link's configuration as a point's result records it.
func linkResult(name string, between [2]string, profile, mode string, cfg link.Config) workload.LinkResult {
	lr := workload.LinkResult{Name: name, Between: between, Profile: profile, Mode: mode}
	if mode != "link" {
		lr.Description = map[string]string{"unix": "unix socket, no link", "direct": "loopback TCP, no link"}[mode]
		return lr
	}
	lr.RTTSeconds = cfg.EffectiveRTT().Seconds()
	lr.RTOSeconds = cfg.RetransmitTimeout().Seconds()
	if cfg.Duplex != link.FullDuplex {
		lr.Duplex = cfg.Duplex.String()
	}
	lr.RateBitsPerS = float64(cfg.Rate)
	lr.WindowBytes = int64(cfg.Window)
	lr.SendBufferBytes = int64(cfg.SendBuffer)
	lr.Description = cfg.String()
	return lr
}

// Planned is the point's result as it stands before the point runs: its
// keys, values, parameters and links as configured, what a prediction may
// read.
func (p Point) Planned() workload.Result {
	c := p.Combo
	return workload.Result{Key: p.Key(), Combo: c.Key, Run: p.Run, Values: c.Values, Params: c.Params, Client: c.Client,
		Instances: c.Instances, Links: plannedLinks(c.Links)}
}

// plannedLinks are a point's links as configured, before any traffic: what
// a prediction made before the point runs may read.
func plannedLinks(links []ResolvedLink) []workload.LinkResult {
	var out []workload.LinkResult
	for _, l := range links {
		out = append(out, linkResult(l.Name, l.Between, l.Profile, l.Mode, l.Config))
	}
	return out
}

// FormatMetric prints a metric with its unit, read from the metric's name
// suffix (_s, _us, _bytes, _bps, _per_s ...).
func FormatMetric(name string, v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	switch {
	case strings.HasSuffix(name, "_us"):
		return units.FormatDuration(time.Duration(v * 1e3))
	case strings.HasSuffix(name, "_ms"):
		return units.FormatDuration(time.Duration(v * 1e6))
	case name == "seconds" || strings.HasSuffix(name, "_s") && !strings.HasSuffix(name, "_per_s"):
		return units.FormatDuration(time.Duration(v * 1e9))
	case strings.HasSuffix(name, "_bps"):
		return units.Rate(v).String() + "/s"
	case strings.HasSuffix(name, "_bytes"):
		return units.Size(int64(v)).String()
	}
	return workload.FormatNumber(v)
}

// PercentError is (measured - model) / model in percent.
func PercentError(measured, model float64) float64 {
	if model == 0 || math.IsNaN(model) || math.IsNaN(measured) {
		return math.NaN()
	}
	return (measured - model) / model * 100
}
