package load

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestLoadNamesNoDriver fails when the load layer imports a database
// driver: the engines class their own errors (engine.Error, and each
// engine's ClassifyError for the errors of its driver).
func TestLoadNamesNoDriver(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-f", `{{join .Imports " "}}`, ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	imports := strings.Fields(string(out))
	if !slices.Contains(imports, "github.com/dbrig/dbrig/internal/measure") {
		t.Fatalf("go list gave load's imports as %q", imports)
	}
	for _, driver := range []string{"github.com/jackc/pgx/v5", "github.com/jackc/pgx/v5/pgconn", "github.com/go-sql-driver/mysql"} {
		if slices.Contains(imports, driver) {
			t.Errorf("load imports %s", driver)
		}
	}
}
