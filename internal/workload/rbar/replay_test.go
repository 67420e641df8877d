package rbar_test

import (
	"cmp"
	"maps"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/mariadb"
	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/workload"
	"github.com/dbrig/dbrig/internal/workload/rbar"
	"github.com/dbrig/dbrig/studies/rbarlatency"
)

// TestReplayOnRuns runs today's model over the results of earlier runs of
// rbar-latency, as the runner would have (each point predicted from the
// results before it, fitted on the other combinations), and logs the
// stored and the replayed errors side by side, with every figure's error
// by experiment and link: a model change is measured on the same quiet
// results before a new run, whose load moves the figures more than the
// change does. A tool, not a check: it runs only where RBAR_REPLAY names
// run directories (separated by spaces), and reads them only.
//
//	RBAR_REPLAY=runs/rbar-latency-20261127-145108 go test -run ReplayOnRuns -v ./internal/workload/rbar/
func TestReplayOnRuns(t *testing.T) {
	dirs := strings.Fields(os.Getenv("RBAR_REPLAY"))
	if len(dirs) == 0 {
		t.Skip("RBAR_REPLAY names no run directory to replay the model on")
	}
	reg := study.NewRegistry(engine.NewRegistry(postgres.New(""), mariadb.New("")), []workload.Kind{rbar.Kind()}, rbarlatency.Study())
	for _, dir := range dirs {
		rd, err := study.LoadRun(dir, reg)
		if err != nil {
			t.Fatal(err)
		}
		stored := study.SummarizeFigures(rd.Figures())
		replay(rd)
		figures := rd.Figures()
		now := study.SummarizeFigures(figures)
		t.Logf("%s: stored %s (median %.1f %%, p90 %.1f %%)", dir, stored.Line(), stored.MedianPct, stored.P90Pct)
		t.Logf("%s: replayed %s (median %.1f %%, p90 %.1f %%)", dir, now.Line(), now.MedianPct, now.P90Pct)
		logFigures(t, figures)
	}
}

// replay sets every measured result's model as the runner would have with
// today's code.
func replay(rd *study.RunData) {
	for i, r := range rd.Results {
		if !r.Measured() {
			continue
		}
		before := r
		before.Metrics = nil
		pred := rbar.Predict(before, rd.Results[:i])
		rd.Results[i].SetModel(pred, rbar.Model(r, workload.OtherCombinations(r, rd.Results)))
	}
	rd.Summaries = study.Summarize(rd.Results, rd.Plan.Repeat)
}

// logFigures logs each figure's error, worst first, and per experiment and
// link the share of figures over 20 %.
func logFigures(t *testing.T, figures []study.Figure) {
	slices.SortFunc(figures, func(a, b study.Figure) int { return cmp.Compare(math.Abs(b.ErrorPct), math.Abs(a.ErrorPct)) })
	over := map[string][2]int{}
	for _, f := range figures {
		t.Logf("%+8.1f %%  %-14s measured %-10.4g model %-10.4g %s  %s", f.ErrorPct, f.Metric, f.Measured, f.Model, f.From, f.Combo)
		exp, net := valueOf(f.Combo, "experiment"), valueOf(f.Combo, "net")
		for _, k := range []string{"experiment=" + exp, "net=" + net} {
			c := over[k]
			c[1]++
			if math.Abs(f.ErrorPct) > 20 || !f.HasModel() {
				c[0]++
			}
			over[k] = c
		}
	}
	for _, k := range slices.Sorted(maps.Keys(over)) {
		t.Logf("over 20 %%: %d of %d at %s", over[k][0], over[k][1], k)
	}
}

// valueOf is a variable's value in a combination's name.
func valueOf(combo, name string) string {
	for _, kv := range strings.Fields(combo) {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	return "?"
}
