package study

import (
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/units"
)

// RunData is everything a run directory holds, read back for a report.
type RunData struct {
	Dir         string
	Spec        *Spec
	Plan        *Plan
	Info        RunInfo
	Environment Environment
	Results     []Result
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
	if rd.Results, err = ReadResults(dir); err != nil {
		return nil, err
	}
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
	if kind.Judges != nil {
		for _, p := range s.Published {
			d.Findings = append(d.Findings, kind.Judges[p.ID](rd, p))
		}
	}
	if kind.Report != nil {
		kind.Report(rd, d)
	}
	d.Points = pointsTable(rd)
	for _, r := range rd.Results {
		if !r.OK() {
			d.Failures = append(d.Failures, r.Key+": "+r.Error)
		}
	}
	if missing := len(rd.Plan.Points()) - countOK(rd.Results); missing > 0 {
		d.Failures = append(d.Failures, fmt.Sprintf("%d of %d planned points have no result yet (resume with `dbrig run --resume %s`)",
			missing, len(rd.Plan.Points()), rd.Dir))
	}
	d.Environment = environmentRows(rd)
	return d
}

func countOK(rs []Result) int {
	seen := map[string]bool{}
	for _, r := range rs {
		if r.OK() {
			seen[r.Key] = true
		}
	}
	return len(seen)
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

// pointsTable lists every combination: parameters, each run, the trimmed
// mean and spread of each modelled metric, the model and the error.
func pointsTable(rd *RunData) report.Table {
	t := report.Table{
		Title: "Every point",
		Note: fmt.Sprintf("Each combination ran %d time(s); 'kept' is the value the study's rule keeps (discard first: %v, trim: %s; min-max on three runs keeps the median), 'range' the lowest and highest run. Error = (kept - model) / model.",
			rd.Plan.Repeat.Runs, rd.Plan.Repeat.DiscardFirst, orNone(rd.Plan.Repeat.Trim)),
		Columns: []string{"point", "link", "metric", "runs", "kept", "range", "model", "error"},
	}
	for _, sm := range rd.Summaries {
		last := sm.Results[len(sm.Results)-1]
		linkDesc := ""
		for _, l := range last.Links {
			linkDesc = strings.TrimSpace(linkDesc + " " + l.Profile)
		}
		metrics := headlineMetrics(sm)
		for i, name := range metrics {
			st := sm.Stats[name]
			var runs []string
			for _, v := range st.Runs {
				runs = append(runs, FormatMetric(name, v))
			}
			model, errPct := "-", "-"
			if mv, ok := last.Model[name]; ok {
				model = FormatMetric(name, mv)
				if e := PercentError(st.Mean, mv); !math.IsNaN(e) {
					errPct = fmt.Sprintf("%+.1f%%", e)
				}
			}
			point, ld := sm.Combo, linkDesc
			if i > 0 {
				point, ld = "", ""
			}
			t.Rows = append(t.Rows, []string{point, ld, name, strings.Join(runs, ", "), FormatMetric(name, st.Mean),
				FormatMetric(name, st.Min) + " - " + FormatMetric(name, st.Max), model, errPct})
		}
	}
	return t
}

// headlineMetrics picks a point's metrics for the table: the modelled ones
// first, then "seconds".
func headlineMetrics(sm *Summary) []string {
	last := sm.Results[len(sm.Results)-1]
	var out []string
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
		[2]string{"memory", units.Size(e.MemoryBytes).String()},
		[2]string{"kernel", e.Kernel},
		[2]string{"OS", e.OS},
		[2]string{"virtualization", e.Virtualization},
		[2]string{"load average at start", e.LoadAverage},
	)
	for _, k := range slices.Sorted(maps.Keys(e.Servers)) {
		rows = append(rows, [2]string{k, e.Servers[k]})
	}
	rows = append(rows,
		[2]string{"dbrig", strings.TrimSpace(e.DbrigVersion + " " + e.DbrigCommit)},
		[2]string{"Go", e.GoVersion},
		[2]string{"scale", rd.Info.Scale},
		[2]string{"started", rd.Info.Started.Format(time.RFC3339)},
	)
	for _, in := range rd.Spec.Instances {
		var set []string
		for _, k := range slices.Sorted(maps.Keys(in.Settings)) {
			set = append(set, fmt.Sprintf("%s=%v", k, in.Settings[k]))
		}
		rows = append(rows, [2]string{"instance " + in.Name + " settings", strings.Join(set, ", ")})
	}
	return rows
}
