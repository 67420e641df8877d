// Package loadoltptest is for the tests of the studies of the oltp
// workload: a study parsed from its own file beside the workload and the
// sections of studies/loadoltp, the run data of hand-made points
// (package oltptest) and a finding decided by the study's judges.
package loadoltptest

import (
	"testing"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/mariadb"
	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/workload"
	"github.com/dbrig/dbrig/internal/workload/oltp"
	"github.com/dbrig/dbrig/internal/workload/oltp/oltptest"
	"github.com/dbrig/dbrig/studies/loadoltp"
)

// Spec parses the built-in study b from its own file, whose published
// findings its judges read.
func Spec(tb testing.TB, b study.Builtin) *study.Spec {
	tb.Helper()
	reg := study.NewRegistry(engine.NewRegistry(postgres.New(""), mariadb.New("")), []workload.Kind{oltp.Kind()}, loadoltp.Study(), b)
	spec, err := study.Parse(b.Path, b.File, reg)
	if err != nil {
		tb.Fatal(err)
	}
	return spec
}

// Run is the run data of b's quick scale from hand-made points with think
// time think, each result's model computed as the runner does, on a
// machine of 2 CPUs.
func Run(tb testing.TB, b study.Builtin, think string, pts []oltptest.Point) *study.RunData {
	tb.Helper()
	spec := Spec(tb, b)
	plan, err := spec.Plan("quick")
	if err != nil {
		tb.Fatal(err)
	}
	all := oltptest.Results(spec.Name, think, pts)
	return &study.RunData{Spec: spec, Plan: plan, Results: all, Summaries: study.Summarize(all, plan.Repeat),
		Environment: study.Environment{CPUs: 2}}
}

// Judge decides the finding id of rd's study with b's judge of it.
func Judge(tb testing.TB, b study.Builtin, rd *study.RunData, id string) report.Finding {
	tb.Helper()
	p, ok := rd.Spec.PublishedByID(id)
	if !ok {
		tb.Fatalf("%s has no finding %q", rd.Spec.Name, id)
	}
	j, ok := b.Judges[id]
	if !ok {
		tb.Fatalf("no judge for %q", id)
	}
	return j(rd, p)
}

// EveryFindingJudged fails for each finding of b's file that no judge of
// b decides (the parser refuses the study then; this names the ids).
func EveryFindingJudged(t *testing.T, b study.Builtin) {
	t.Helper()
	for _, p := range Spec(t, b).Published {
		if _, ok := b.Judges[p.ID]; !ok && p.NotMeasured == "" {
			t.Errorf("%s: no judge for %q", b.Name, p.ID)
		}
	}
}
