package workload_test

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// forbidden are what a workload never needs: it generates load, measures
// and states its model; judging and reporting a run are a study's
// (studies/NAME), which imports the workload and not the other way round.
var forbidden = []string{"github.com/dbrig/dbrig/internal/report", "github.com/dbrig/dbrig/internal/study"}

// TestWorkloadsImportNoReportNorStudy lists the packages every package
// under internal/workload builds on (go list -deps, from the module root)
// and fails on each that reaches internal/report or internal/study.
func TestWorkloadsImportNoReportNorStudy(t *testing.T) {
	t.Parallel()
	list := exec.Command("go", "list", "-deps", "-f", `{{.ImportPath}}{{range .Deps}} {{.}}{{end}}`, "./internal/workload/...")
	list.Dir = filepath.Join("..", "..")
	out, err := list.Output()
	if err != nil {
		t.Fatalf("go list -deps ./internal/workload/...: %v", err)
	}
	workloads := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, deps, _ := strings.Cut(line, " ")
		if !strings.HasPrefix(pkg, "github.com/dbrig/dbrig/internal/workload") {
			continue
		}
		workloads++
		for _, f := range forbidden {
			if slices.Contains(strings.Fields(deps), f) {
				t.Errorf("%s builds on %s", pkg, f)
			}
		}
	}
	if workloads == 0 {
		t.Fatalf("go list found no package under internal/workload:\n%s", out)
	}
}
