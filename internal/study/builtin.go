package study

import (
	"maps"
	"slices"

	"github.com/dbrig/dbrig/internal/report"
)

// Builtin is what a built-in study brings beside its TOML file: judges for
// the published findings it cites and sections for the report of every run
// of its workload. Each lives in a package of its own under studies/ and
// is registered in main beside the workloads; a workload never knows the
// studies that use it.
type Builtin struct {
	// Name is the study's name, as `dbrig run NAME` takes it.
	Name string
	// File is the study file. Path is where it lives in the source tree,
	// for the messages about it ("studies/rbarlatency/rbar-latency.toml").
	File []byte
	Path string
	// Workload is the workload kind the study runs.
	Workload string
	// Judges decide the published findings a study of Workload may cite,
	// by finding id: a study citing an id no judge decides is refused at
	// parse.
	Judges map[string]Judge
	// Report, when set, adds sections (findings, charts, tables) to the
	// report of every run of Workload: the study's, a user's study of the
	// same workload, a `dbrig load`.
	Report func(rd *RunData, d *report.Doc)
}

// Judge decides one published finding from a run's results: what was
// measured, what the model says, and whether the finding is reproduced.
// Every judge has a unit test on hand-made results that makes it say both
// "reproduced" and "differs".
type Judge func(rd *RunData, p Published) report.Finding

// Builtin finds a built-in study by name.
func (r *Registry) Builtin(name string) (Builtin, bool) {
	i := slices.IndexFunc(r.builtins, func(b Builtin) bool { return b.Name == name && b.File != nil })
	if i < 0 {
		return Builtin{}, false
	}
	return r.builtins[i], true
}

// Studies lists the built-in studies' names, sorted.
func (r *Registry) Studies() []string {
	var out []string
	for _, b := range r.builtins {
		if b.File != nil {
			out = append(out, b.Name)
		}
	}
	slices.Sort(out)
	return out
}

// judges are every judge a study of the workload may cite.
func (r *Registry) judges(kind string) map[string]Judge {
	var out map[string]Judge
	for _, b := range r.builtins {
		if b.Workload == kind && b.Judges != nil {
			if out == nil {
				out = map[string]Judge{}
			}
			maps.Copy(out, b.Judges)
		}
	}
	return out
}

// reports are the sections the built-in studies add to a run of the
// workload, in the order they were registered.
func (r *Registry) reports(kind string) []func(*RunData, *report.Doc) {
	var out []func(*RunData, *report.Doc)
	for _, b := range r.builtins {
		if b.Workload == kind && b.Report != nil {
			out = append(out, b.Report)
		}
	}
	return out
}
