package studies_test

import (
	"cmp"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/mariadb"
	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/workload"
	"github.com/dbrig/dbrig/studies"
)

// TestReplayPredictions runs today's Predict and Model over the results of
// earlier runs of any built-in study, as the runner would have (each point
// predicted from the results before it alone, its fit from the other
// combinations), and logs the stored and the replayed errors side by side,
// every figure's error worst first, and per variable value the share of
// figures over 20 %: a model change is measured on the same results before
// a new run, whose load moves the figures more than the change does. A
// tool, not a check: it runs only where DBRIG_REPLAY names run directories
// (separated by spaces), and reads them only.
//
//	DBRIG_REPLAY="runs/rbar-latency-20261127-172317" go test -count=1 -run ReplayPredictions -v ./studies/
func TestReplayPredictions(t *testing.T) {
	dirs := strings.Fields(os.Getenv("DBRIG_REPLAY"))
	if len(dirs) == 0 {
		t.Skip("DBRIG_REPLAY names no run directory to replay the models on")
	}
	reg := study.NewRegistry(engine.NewRegistry(postgres.New(""), mariadb.New("")), studies.Workloads(), studies.All()...)
	for _, dir := range dirs {
		if !filepath.IsAbs(dir) {
			dir = filepath.Join("..", dir) // a path from the module's root, as in the example
		}
		rd, err := study.LoadRun(dir, reg)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := rd.Spec.Workload["kind"].(string)
		kind, ok := reg.Lookup(name)
		if !ok {
			t.Fatalf("%s: no workload %q", dir, name)
		}
		stored := study.SummarizeFigures(rd.Figures())
		replay(t, kind, rd)
		figures := rd.Figures()
		now := study.SummarizeFigures(figures)
		t.Logf("%s: stored %s (median %.1f %%, p90 %.1f %%)", dir, stored.Line(), stored.MedianPct, stored.P90Pct)
		t.Logf("%s: replayed %s (median %.1f %%, p90 %.1f %%)", dir, now.Line(), now.MedianPct, now.P90Pct)
		logFigures(t, figures)
	}
}

// replay sets every measured result's prediction and fit as the runner
// would have with today's code: Predict sees the point as the plan has it
// before it runs (its links as configured, nothing measured) with what the
// probe measured just before it, and the results before it.
func replay(t *testing.T, kind workload.Kind, rd *study.RunData) {
	planned := map[string]workload.Result{}
	for _, p := range rd.Plan.Points() {
		planned[p.Key()] = p.Planned()
	}
	for i, r := range rd.Results {
		if !r.Measured() {
			continue
		}
		var pred, fit workload.Prediction
		if kind.Predict != nil {
			before, ok := planned[r.Key]
			if !ok {
				t.Fatalf("%s: the point %s is not in the run's plan", rd.Dir, r.Key)
			}
			before.Probe = r.Probe
			pred = kind.Predict(before, rd.Results[:i])
		}
		if kind.Model != nil {
			fit = kind.Model(r, workload.OtherCombinations(r, rd.Results))
		}
		rd.Results[i].SetModel(pred, fit)
	}
	rd.Summaries = study.Summarize(rd.Results, rd.Plan.Repeat)
}

// logFigures logs each figure's error, worst first, and per variable value
// the share of figures over 20 % (or with no model).
func logFigures(t *testing.T, figures []study.Figure) {
	slices.SortFunc(figures, func(a, b study.Figure) int { return cmp.Compare(math.Abs(b.ErrorPct), math.Abs(a.ErrorPct)) })
	over := map[string][2]int{}
	for _, f := range figures {
		t.Logf("%+8.1f %%  %-14s measured %-10.4g model %-10.4g %s  %s", f.ErrorPct, f.Metric, f.Measured, f.Model, f.From, f.Combo)
		for _, kv := range strings.Fields(f.Combo) {
			c := over[kv]
			c[1]++
			if math.Abs(f.ErrorPct) > 20 || !f.HasModel() {
				c[0]++
			}
			over[kv] = c
		}
	}
	for _, k := range slices.Sorted(maps.Keys(over)) {
		t.Logf("over 20 %%: %d of %d at %s", over[k][0], over[k][1], k)
	}
}
