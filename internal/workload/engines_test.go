package workload_test

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// engineSpecific are the packages that name one engine or speak its
// driver: a workload runs its SQL through the session its login's engine
// opens (Env.Engines) and keeps each engine's SQL in sql/<engine>/ files,
// so that a third engine touches internal/engine/<e> and SQL files only.
var engineSpecific = []string{
	"github.com/dbrig/dbrig/internal/engine/postgres",
	"github.com/dbrig/dbrig/internal/engine/mariadb",
	"github.com/jackc/pgx/v5",
	"github.com/jackc/pgx/v5/pgconn",
	"github.com/go-sql-driver/mysql",
}

// postgresByNature are the workloads that are PostgreSQL's by what they
// measure (logical decoding) and declare Kind.Engines = postgres.
var postgresByNature = []string{"georep"}

// notYetOnSessions still carry sessions of their own in each engine's
// driver; each leaves this list when it runs on engine sessions, and the
// test fails for one listed that no longer needs to be.
var notYetOnSessions = []string{"oltp", "rbar", "script"}

// importsOf lists the packages each package matching pattern imports
// itself (not its tests, not its dependencies'), by import path.
func importsOf(t *testing.T, root, pattern string) map[string][]string {
	t.Helper()
	list := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, pattern)
	list.Dir = root
	out, err := list.Output()
	if err != nil {
		t.Fatalf("go list %s: %v", pattern, err)
	}
	imports := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, deps, _ := strings.Cut(line, " ")
		imports[pkg] = strings.Fields(deps)
	}
	return imports
}

// TestWorkloadsNameNoEngine fails for each package under internal/workload
// that imports an engine's package or a driver, but for the workloads
// that are PostgreSQL's by nature and those listed as not yet on engine
// sessions.
func TestWorkloadsNameNoEngine(t *testing.T) {
	t.Parallel()
	const prefix = "github.com/dbrig/dbrig/internal/workload/"
	imports := importsOf(t, filepath.Join("..", ".."), "./internal/workload/...")
	for pkg, deps := range imports {
		name := strings.TrimPrefix(pkg, prefix)
		top, _, _ := strings.Cut(name, "/")
		if slices.Contains(postgresByNature, top) || strings.HasSuffix(name, "test") {
			continue // test helpers start servers of an engine by name
		}
		var named []string
		for _, d := range deps {
			if slices.Contains(engineSpecific, d) {
				named = append(named, d)
			}
		}
		switch {
		case len(named) > 0 && !slices.Contains(notYetOnSessions, name):
			t.Errorf("%s imports %s: run its SQL through an engine session and keep it in sql/<engine>/", pkg, strings.Join(named, ", "))
		case len(named) == 0 && slices.Contains(notYetOnSessions, name):
			t.Errorf("%s names no engine any more: take it off notYetOnSessions", pkg)
		}
	}
	if len(imports) < 10 {
		t.Fatalf("go list found %d packages under internal/workload", len(imports))
	}
}
