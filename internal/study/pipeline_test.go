package study

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/workload"
)

// loadKind is the demo kind with a load mode whose rows are swept.
func loadKind() workload.Kind {
	k := testKind()
	k.Load = &workload.LoadMode{Sweep: "rows", Fixed: workload.Params{"instance": "db"}, Defaults: workload.Params{"mode": "b"},
		Describe: func(v workload.LoadValues) workload.LoadHead {
			return workload.LoadHead{Title: "demo of mode " + v.Params.String("mode"), Settings: map[string]any{"work_mem": "8MB"}}
		}}
	return k
}

// A load's values become a study file that parses as one: the command's
// defaults beneath the values given, the swept parameter a point each, and
// a value the declaration refuses refused at its key with the
// declaration's own error, for a load command to word for its flag.
func TestALoadIsAStudyFileOfItsValues(t *testing.T) {
	t.Parallel()
	reg := NewRegistry(testEngines(), []workload.Kind{loadKind()})
	spec, err := ParseLoad(LoadRequest{Kind: loadKind(), Engine: "postgres", Params: workload.Params{"pause": "1s"}, Sweep: []any{int64(10), int64(20)}}, reg)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := spec.Plan("")
	if err != nil {
		t.Fatal(err)
	}
	if spec.Name != "load-demo" || spec.Title != "demo of mode b" || len(plan.Points()) != 2 {
		t.Fatalf("spec %q %q with %d points", spec.Name, spec.Title, len(plan.Points()))
	}
	if p := plan.Combos[1].Params; p.Int("rows") != 20 || p.String("mode") != "b" || p.Duration("pause").String() != "1s" || p.String("instance") != "db" {
		t.Errorf("second point's parameters = %v", p)
	}
	if got := plan.Combos[0].Instances[0].Settings["work_mem"]; got != "8MB" {
		t.Errorf("the server dbrig starts gets work_mem = %v", got)
	}

	_, err = ParseLoad(LoadRequest{Kind: loadKind(), Engine: "postgres", Sweep: []any{int64(0)}}, reg)
	var es SpecErrors
	var ve *workload.ValueError
	if !errors.As(err, &es) || len(es) != 1 || ParamOfKey(es[0].Key) != "rows" || !errors.As(es[0].Err, &ve) {
		t.Errorf("rows = 0: %v, want one SpecError at workload.rows holding the declaration's ValueError", err)
	}
	_, err = ParseLoad(LoadRequest{Kind: loadKind(), Engine: "postgres", Target: true}, reg)
	if !errors.As(err, &es) || !strings.Contains(err.Error(), "workload.rows: missing") {
		t.Errorf("no rows: %v, want rows missing", err)
	}
}

// A run directory is checked against the run asked of it once, before
// anything starts: a new run into a directory that holds another, or a
// resume at another scale or engine, is refused as input.
func TestARunDirectoryIsCheckedBeforeAnythingStarts(t *testing.T) {
	t.Parallel()
	reg := NewRegistry(testEngines(), []workload.Kind{testKind()})
	spec, err := Parse("demo.toml", []byte(goodSpec), reg)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	info := RunInfo{Study: "demo", Scale: "quick", SpecPath: "demo.toml", Options: PlanOptions{Engine: "postgres"}}
	if err := writeJSON(filepath.Join(dir, RunFile), info); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, SpecFile), []byte(goodSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		opts Options
		want string
	}{
		{"a new run on the study's engines", Options{Spec: spec, Scale: "quick", Dir: dir}, "was run with --engine postgres; it resumes with the same"},
		{"a new run at another scale", Options{Spec: spec, Dir: dir, Engine: "postgres"}, `was run at scale "quick"; it resumes at that scale, not ""`},
		{"a resume at another scale", Options{Resume: dir, Scale: "full"}, `it resumes at that scale, not "full"`},
		{"a resume on another engine", Options{Resume: dir, Engine: "mariadb"}, "was run with --engine postgres; it resumes with the same"},
		{"a resume of another study", Options{Resume: dir, Study: "rbar-latency"}, "holds a run of demo, not rbar-latency"},
	} {
		ran, err := Run(t.Context(), reg, tt.opts)
		var in *InputError
		if ran != nil || !errors.As(err, &in) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Run = %v, %v; want an InputError saying %q", tt.name, ran, err, tt.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 2 {
		t.Errorf("the refused runs wrote into the directory: %d entries", len(entries))
	}
}
