package study

import (
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/units"
	"github.com/dbrig/dbrig/internal/workload"
)

// RunData is everything a run directory holds, read back for a report.
type RunData struct {
	Dir         string
	Spec        *Spec
	Plan        *Plan
	Info        RunInfo
	Environment Environment
	Results     []workload. // the finished points' results
			Result
	// Interrupted are the points an interrupt cut short and no later
	// result replaced: their partial measurements, which are no result.
	Interrupted []workload.Result
	Summaries   []*Summary
}

// LoadRun reads a run directory: its saved spec, run info, environment and
// results. The report is rebuilt from these files alone.
func LoadRun(dir string, reg *Registry) (*RunData, error) {
	rd := &RunData{Dir: dir}
	if err := readJSON(filepath.Join(dir, RunFile), &rd.Info); err != nil {
		return nil, fmt.Errorf("%s is not a dbrig run directory: %w", dir, err)
	}
	spec, err := LoadFile(filepath.Join(dir, SpecFile), reg)
	if err != nil {
		return nil, err
	}
	rd.Spec = spec
	if rd.Plan, err = spec.PlanWith(rd.Info.Scale, rd.Info.Options); err != nil {
		return nil, err
	}
	if err := readJSON(filepath.Join(dir, EnvironmentFile), &rd.Environment); err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	all, err := ReadResults(dir)
	if err != nil {
		return nil, err
	}
	rd.Results, rd.Interrupted = Finished(all)
	HoldOut(spec.Kind(), rd.Results)
	rd.Summaries = Summarize(rd.Results, rd.Plan.Repeat)
	return rd, nil
}

// BuildReport makes the report of a run: the generic parts (question,
// points, environment, failures) and the workload's own findings and charts.
func BuildReport(rd *RunData) *report.Doc {
	s := rd.Spec
	d := &report.Doc{
		Title:     s.Title,
		Question:  s.Question,
		Source:    sourceLine(s.Source),
		Limits:    s.Limits,
		Command:   strings.Join(rd.Info.Command, " "),
		Generated: time.Now().UTC(),
	}
	kind := s.Kind()
	for _, p := range s.Published {
		switch judge, ok := s.judges[p.ID]; {
		case p.NotMeasured != "":
			d.Findings = append(d.Findings, report.Finding{Published: p.Finding, Measured: "-", Model: "-", Verdict: report.NotMeasured,
				Why: fmt.Sprintf("%s This run: %s, %s.", strings.TrimSpace(p.NotMeasured), rd.Environment.Virtualization, rd.Environment.CPUModel)})
		case ok:
			d.Findings = append(d.Findings, judge(rd, p))
		}
	}
	for i := range s.Expect {
		d.Findings = append(d.Findings, s.Expect[i].finding(rd))
	}
	for _, add := range s.reports {
		add(rd, d)
	}
	if sec, ok := distributionSection(rd); ok {
		d.Sections = append(d.Sections, sec)
	}
	if sec, ok := monitorSection(rd); ok {
		d.Sections = append(d.Sections, sec)
	}
	d.Points = pointsTable(rd)
	d.Predictions = predictionsSection(rd)
	d.Counts = report.Counts{Planned: len(rd.Plan.Points()), Combinations: len(rd.Plan.Combos), Runs: rd.Plan.Repeat.Runs}
	for _, r := range rd.Latest() {
		switch {
		case r.Error != "":
			d.Counts.Failed++
			d.Failures = append(d.Failures, r.Key+": "+r.Error)
		case r.Skipped != "":
			d.Counts.Skipped++
			d.Skipped = append(d.Skipped, r.Key+": "+r.Skipped)
		default:
			d.Counts.Measured++
			for _, w := range r.Warnings {
				d.Warnings = append(d.Warnings, fmt.Sprintf("%s (%s): %s", r.Key, HeadlineFigures(kind, r), w))
			}
		}
	}
	for _, r := range rd.Interrupted {
		d.Interrupted = append(d.Interrupted, fmt.Sprintf("%s: interrupted after %s; what it measured before the stop is in %s, labelled \"status\": \"interrupted\", and is no result",
			r.Key, units.FormatDuration(time.Duration(r.Seconds*float64(time.Second)).Round(100*time.Millisecond)), ResultsFile))
	}
	d.Counts.Missing = max(0, d.Counts.Planned-d.Counts.Measured-d.Counts.Failed-d.Counts.Skipped)
	d.Environment = environmentRows(rd)
	return d
}

// Latest returns each point's last result, in the plan's order (points of
// another plan last): a point that failed and then succeeded on --resume
// counts as measured.
func (rd *RunData) Latest() []workload.Result {
	last := map[string]workload.Result{}
	var order []string
	for _, r := range rd.Results {
		if _, seen := last[r.Key]; !seen {
			order = append(order, r.Key)
		}
		last[r.Key] = r
	}
	var out []workload.Result
	for _, p := range rd.Plan.Points() {
		if r, ok := last[p.Key()]; ok {
			out = append(out, r)
			delete(last, p.Key())
		}
	}
	for _, k := range order {
		if r, ok := last[k]; ok {
			out = append(out, r)
		}
	}
	return out
}

func sourceLine(src Source) string {
	parts := []string{}
	if src.Study != "" {
		parts = append(parts, src.Study)
	}
	if src.Seed != "" {
		parts = append(parts, "seed "+src.Seed)
	}
	if src.URL != "" {
		parts = append(parts, src.URL)
	}
	return strings.Join(parts, ", ")
}

// pointsTable lists every combination: its value of each swept variable
// (a column each, so no dimension is hidden), each run, the value the
// study's rule keeps, the runs' range, the stored model and the error.
func pointsTable(rd *RunData) report.Table {
	rule := "every run is averaged"
	switch {
	case rd.Plan.Repeat.DiscardFirst && rd.Plan.Repeat.Trim == "min-max":
		rule = "the first run is dropped, then the lowest and highest (when three remain), and the rest averaged"
	case rd.Plan.Repeat.Trim == "min-max":
		rule = "the lowest and highest runs are dropped when three or more ran (the median of three), and the rest averaged"
	case rd.Plan.Repeat.DiscardFirst:
		rule = "the first run is dropped and the rest averaged"
	}
	t := report.Table{
		Title: "Every point",
		Note: fmt.Sprintf("Each combination ran %s; 'kept' is the value the study's rule keeps (%s), 'range' the lowest and highest run. The model is the prediction stored before each point ran ('predicted', the mean over the kept runs), or else a fit on the other combinations with this one left out ('fit'), never on the point itself, or why there is none; error = (kept - model) / model.",
			plural(rd.Plan.Repeat.Runs, "time", "times"), rule),
	}
	dims := rd.Spec.SweepKeys
	t.Columns = append(append(t.Columns, dims...), "metric", "runs", "kept", "range", "model", "error")
	for _, sm := range rd.Summaries {
		last := sm.Results[len(sm.Results)-1]
		for i, name := range rd.HeadlineMetrics(sm) {
			st := sm.Stats[name]
			var runs []string
			for _, v := range st.Runs {
				runs = append(runs, rd.FormatMetric(name, v))
			}
			model, errPct := "-", "-"
			if why := last.Reason(name); why != "" && strings.HasPrefix(why, "no ") {
				model = why
			}
			if mv, from, ok := rd.keptModel(sm, name); ok {
				model = rd.FormatMetric(name, mv) + " " + from
				if e := PercentError(st.Mean, mv); !math.IsNaN(e) {
					errPct = fmt.Sprintf("%+.1f%%", e)
				}
			}
			row := make([]string, 0, len(t.Columns))
			for _, k := range dims {
				v := fmt.Sprint(sm.Values[k])
				if i > 0 {
					v = ""
				}
				row = append(row, v)
			}
			row = append(row, name, strings.Join(runs, ", "), rd.FormatMetric(name, st.Mean),
				rd.FormatMetric(name, st.Min)+" - "+rd.FormatMetric(name, st.Max), model, errPct)
			t.Rows = append(t.Rows, row)
		}
	}
	return t
}

// HeadlineMetrics picks a combination's metrics for tables: the workload's
// declared headline metrics, else the modelled ones and "seconds".
func (rd *RunData) HeadlineMetrics(sm *Summary) []string {
	var out []string
	for _, m := range rd.Spec.Kind().Metrics {
		if _, ok := sm.Stats[m.Name]; ok && m.Headline {
			out = append(out, m.Name)
		}
	}
	if len(out) > 0 {
		return out
	}
	last := sm.Results[len(sm.Results)-1]
	for k := range last.Model {
		if _, ok := sm.Stats[k]; ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	if _, ok := sm.Stats["seconds"]; ok && !slices.Contains(out, "seconds") {
		out = append(out, "seconds")
	}
	if len(out) == 0 {
		for k := range sm.Stats {
			out = append(out, k)
		}
		sort.Strings(out)
	}
	return out
}

// FormatMetric prints a metric's value in its declared unit (or, for a
// metric the workload did not declare, the unit its name suggests).
func (rd *RunData) FormatMetric(name string, v float64) string {
	if m, ok := rd.Spec.Kind().Metric(name); ok {
		return m.Format(v)
	}
	return FormatMetric(name, v)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

func environmentRows(rd *RunData) [][2]string {
	e := rd.Environment
	rows := [][2]string{
		{"host", e.Hostname},
		{"CPU", fmt.Sprintf("%s, %d logical CPUs", e.CPUModel, e.CPUs)},
	}
	if e.CPUMaxMHz > 0 {
		rows = append(rows, [2]string{"CPU max frequency", fmt.Sprintf("%.0f MHz (governor %s)", e.CPUMaxMHz, orNone(e.Governor))})
	}
	rows = append(rows,
		[2]string{"memory", fmt.Sprintf("%.1f GiB", float64(e.MemoryBytes)/float64(units.GiB))},
		[2]string{"kernel", e.Kernel},
		[2]string{"OS", e.OS},
		[2]string{"virtualization", e.Virtualization},
		[2]string{"load average at start", e.LoadAverage},
	)
	if e.CPUIdle != nil {
		rows = append(rows, [2]string{"idle CPUs wait by", e.CPUIdle.String()})
	}
	for _, k := range slices.Sorted(maps.Keys(e.Servers)) {
		rows = append(rows, [2]string{k, e.Servers[k]})
	}
	rows = append(rows,
		[2]string{"dbrig", strings.TrimSpace(e.DbrigVersion + " " + e.DbrigCommit)},
		[2]string{"Go", e.GoVersion},
		[2]string{"scale", orDefaultScale(rd.Info.Scale)},
		[2]string{"started", rd.Info.Started.Format(time.RFC3339)},
	)
	rows = append(rows, instanceRows(rd)...)
	if row, ok := idleRow(rd.Results); ok {
		rows = append(rows, row)
	}
	return rows
}

// idleRow says which points ran with a busy loop on each CPU (client.idle
// "spin"), on which CPUs and what the loops took; none when no point did.
func idleRow(results []workload.Result) ([2]string, bool) {
	var spun, points int
	var combos []string
	var cpus []string
	var spent float64
	for _, r := range results {
		if !r.Measured() {
			continue
		}
		points++
		if r.IdleLoops == nil {
			continue
		}
		spun++
		spent += r.IdleLoops.CPUSeconds
		if !slices.Contains(combos, r.Combo) {
			combos = append(combos, r.Combo)
		}
		if l := fmt.Sprintf("%s on CPUs %s", plural(r.IdleLoops.Count, "loop", "loops"), r.IdleLoops.CPUs); !slices.Contains(cpus, l) {
			cpus = append(cpus, l)
		}
	}
	if spun == 0 {
		return [2]string{}, false
	}
	which := strings.Join(combos, "; ")
	if len(combos) > 6 {
		which = strings.Join(combos[:6], "; ") + fmt.Sprintf("; and %d more", len(combos)-6)
	}
	return [2]string{"idle CPUs (client.idle)", fmt.Sprintf(
		"spin on %d of %d measured points (%s): a lowest-priority busy loop pinned to each CPU kept this machine's CPUs from halting (%s); they took %.1f CPU-seconds, which the host's busy CPU time leaves out. The other points: halt (the CPUs idle as the machine idles them)",
		spun, points, which, strings.Join(cpus, " | "), spent)}, true
}

// orDefaultScale names the scale a run ran at ("" is the study's sweep as
// the file writes it, when it has no default scale).
func orDefaultScale(s string) string {
	if s == "" {
		return "none (the sweep as the study file writes it)"
	}
	return s
}

// instanceRows describe each instance as the points ran it: engine and
// version, CPUs, memory, directories and settings, with every value a
// swept attribute took (never a "${var}" unfilled).
func instanceRows(rd *RunData) [][2]string {
	attrs := newInstanceAttrs()
	for _, r := range rd.Results {
		for _, in := range r.Instances {
			attrs.addInstance(rd, in)
		}
		if r.Client.CPUSpeed > 0 {
			attrs.add(clientRow, "cpu_speed", formatCPUSpeed(r.Client.CPUSpeed))
		}
	}
	rows := attrs.rows()
	if len(rows) > 0 {
		rows = append(rows, [2]string{"", "Values separated by | are the values a swept attribute took across the points."})
	}
	for _, t := range rd.Environment.Targets {
		rows = append(rows, [2]string{"target " + t.Name, targetRow(t)})
	}
	return rows
}

// instanceAttrs gathers each instance's attributes across the points, in the
// order first met, with every distinct value a swept attribute took.
type instanceAttrs struct {
	names []string
	by    map[string]*attrValues
}

type attrValues struct {
	order  []string
	values map[string][]string
}

func newInstanceAttrs() *instanceAttrs {
	return &instanceAttrs{by: map[string]*attrValues{}}
}

func (a *instanceAttrs) add(inst, key, val string) {
	s, ok := a.by[inst]
	if !ok {
		s = &attrValues{values: map[string][]string{}}
		a.by[inst] = s
		a.names = append(a.names, inst)
	}
	if _, ok := s.values[key]; !ok {
		s.order = append(s.order, key)
	}
	if !slices.Contains(s.values[key], val) {
		s.values[key] = append(s.values[key], val)
	}
}

// addInstance records what one point ran an instance with; an attribute left
// at its default is not written.
func (a *instanceAttrs) addInstance(rd *RunData, in engine.InstanceConfig) {
	eng := in.Engine
	if v := rd.Environment.Servers[in.Engine]; v != "" && in.Target == "" {
		eng += " " + v
	}
	if in.Target != "" {
		eng += " (your server, --target " + in.Target + ")"
	}
	a.add(in.Name, "engine", eng)
	if in.CPUs != "" {
		a.add(in.Name, "cpus", in.CPUs)
	}
	if in.Memory > 0 {
		a.add(in.Name, "memory", units.Size(in.Memory).String())
	}
	if in.CPUSpeed > 0 {
		a.add(in.Name, "cpu_speed", formatCPUSpeed(in.CPUSpeed))
	}
	if in.DataDir != "" {
		a.add(in.Name, "data_dir", in.DataDir)
	}
	if in.WALDir != "" {
		a.add(in.Name, "wal_dir", in.WALDir)
	}
	if in.DataDisk != "" {
		a.add(in.Name, "data_disk", diskLabel(rd, in.DataDisk))
	}
	if in.WALDisk != "" {
		a.add(in.Name, "wal_disk", diskLabel(rd, in.WALDisk))
	}
	for _, k := range slices.Sorted(maps.Keys(in.Settings)) {
		a.add(in.Name, k, ranSetting(rd, in, k))
	}
}

// rows writes one row per instance, "key = value" for each attribute, the
// values a sweep took separated by "|".
func (a *instanceAttrs) rows() [][2]string {
	var rows [][2]string
	for _, n := range a.names {
		s := a.by[n]
		var parts []string
		for _, k := range s.order {
			parts = append(parts, k+" = "+strings.Join(s.values[k], " | "))
		}
		label := "instance " + n
		if n == clientRow {
			label = "client"
		}
		rows = append(rows, [2]string{label, strings.Join(parts, "; ")})
	}
	return rows
}

// targetRow describes a user's server as dbrig found it.
func targetRow(t TargetEnvironment) string {
	var set []string
	for _, k := range slices.Sorted(maps.Keys(t.Settings)) {
		set = append(set, k+"="+t.Settings[k])
	}
	row := fmt.Sprintf("%s %s at %s; settings that differ from the defaults: %s", t.Engine, t.Version, t.Server, strings.Join(set, ", "))
	if len(t.Differs) > 0 {
		var differs []string
		for _, d := range t.Differs {
			differs = append(differs, d.String())
		}
		row += "; the study's server settings it ran with values of its own (dbrig never reconfigures a target): " + strings.Join(differs, "; ")
	}
	return row
}

// ranSetting is the value of a setting an instance ran with: the study's,
// or on a target that runs with its own, both.
func ranSetting(rd *RunData, in engine.InstanceConfig, name string) string {
	if in.Target == "" {
		return in.Settings[name]
	}
	for _, t := range rd.Environment.Targets {
		if t.Name != in.Name {
			continue
		}
		for _, d := range t.Differs {
			if d.Name == name {
				return "study: " + d.Study + ", target: " + d.Target + " (the target's ran)"
			}
		}
	}
	return in.Settings[name]
}

// distributionSection lists the percentiles of every distribution the
// points recorded, each from the histogram merged over a combination's
// kept runs.
func distributionSection(rd *RunData) (report.Section, bool) {
	dims := rd.Spec.SweepKeys
	t := report.Table{Columns: append(slices.Clone(dims), "distribution", "samples", "p50", "p95", "p99", "p99.9", "max")}
	for _, sm := range rd.Summaries {
		for _, name := range slices.Sorted(maps.Keys(sm.Histograms)) {
			h := sm.Histograms[name]
			if h.Count() == 0 {
				continue
			}
			row := make([]string, 0, len(t.Columns))
			for _, k := range dims {
				row = append(row, fmt.Sprint(sm.Values[k]))
			}
			f := func(d time.Duration) string { return units.FormatDuration(d) }
			row = append(row, name, strconv.FormatInt(h.Count(), 10), f(h.Quantile(0.5)), f(h.Quantile(0.95)),
				f(h.Quantile(0.99)), f(h.Quantile(0.999)), f(h.Max()))
			t.Rows = append(t.Rows, row)
		}
	}
	if len(t.Rows) == 0 {
		return report.Section{}, false
	}
	kept := "every run"
	if rd.Plan.Repeat.DiscardFirst {
		kept = "every run but the first"
	}
	return report.Section{
		Title:  "Distributions",
		Text:   fmt.Sprintf("Percentiles of each recorded latency distribution, from the histogram merged over %s of the combination (HDR, 3 significant figures): never an average of the runs' percentiles.", kept),
		Tables: []report.Table{t},
	}, true
}

// monitorSection says what dbrig saw of each server while each point ran:
// sessions, how many were running and waiting, on what, the server's CPU,
// and every sample that could not be taken.
func monitorSection(rd *RunData) (report.Section, bool) {
	dims := rd.Spec.SweepKeys
	t := report.Table{Columns: append(slices.Clone(dims), "run", "server", "samples", "missed", "sessions", "running", "waiting", "most waited on", "server CPUs")}
	var missed []string
	via := map[string]string{}
	for _, r := range rd.Latest() {
		for _, ser := range r.Monitor {
			via[ser.Instance] = ser.Via
			sum := ser.Summarize()
			row := make([]string, 0, len(t.Columns))
			for _, k := range dims {
				row = append(row, fmt.Sprint(r.Values[k]))
			}
			cpu := "-"
			if sum.MeanCPU >= 0 {
				cpu = fmt.Sprintf("%.2f", sum.MeanCPU)
			}
			sessions, running, waiting := "-", "-", "-"
			if sum.Taken > 0 {
				sessions = fmt.Sprintf("%.1f (max %.0f)", sum.MeanSessions, sum.MaxSessions)
				running, waiting = fmt.Sprintf("%.1f", sum.MeanActive), fmt.Sprintf("%.1f", sum.MeanWaiting)
			}
			row = append(row, strconv.Itoa(r.Run), ser.Instance, strconv.Itoa(len(ser.Samples)), strconv.Itoa(sum.Missed),
				sessions, running, waiting, orNone(strings.Join(sum.TopWaits, ", ")), cpu)
			t.Rows = append(t.Rows, row)
			if line := ser.MissedLine(); line != "" {
				missed = append(missed, r.Key+": "+line)
			}
		}
	}
	if len(t.Rows) == 0 {
		return report.Section{}, false
	}
	var ways []string
	for _, name := range slices.Sorted(maps.Keys(via)) {
		ways = append(ways, name+" through "+via[name])
	}
	text := "dbrig sampled each server about once a second while the workload ran, over a connection of its own (" + strings.Join(ways, "; ") +
		"). Means are over the samples taken; 'waiting' counts running sessions that waited (on a lock, I/O, the network); 'server CPUs' is the CPU time of the server's processes per second (for a server dbrig started on this machine)."
	if len(missed) == 0 {
		text += " Every sample was taken."
	} else {
		text += " Samples that could not be taken: " + strings.Join(missed, "; ") + "."
	}
	return report.Section{Title: "Servers while the points ran", Text: text, Tables: []report.Table{t}}, true
}

// clientRow names the client among the instances whose attributes the
// environment lists; no instance name has a space.
const clientRow = "the client"

// formatCPUSpeed is a cpu_speed as the file wrote it, with its unit.
func formatCPUSpeed(cores float64) string {
	return strconv.FormatFloat(cores, 'g', -1, 64) + " cores' worth of CPU time (CFS quota)"
}

// diskLabel names an emulated disk with the rates the run recorded for it.
func diskLabel(rd *RunData, name string) string {
	for _, d := range rd.Environment.Disks {
		if d.Name == name {
			return d.Profile.String()
		}
	}
	return name
}
