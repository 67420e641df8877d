package script

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
	"github.com/dbrig/dbrig/internal/workload"
)

// pgbenchServer starts a server with database db holding pgbench's tables
// at scale 1, and returns it with the database's login on its unix socket.
func pgbenchServer(tb testing.TB, name, db string) (*postgres.Instance, engine.Conn) {
	tb.Helper()
	inst := pgtest.Start(tb, name, nil)
	if err := inst.CreateDatabase(tb.Context(), db); err != nil {
		tb.Fatal(err)
	}
	login, _ := inst.UnixLogin(db)
	if err := Init(tb.Context(), login, 1, nil); err != nil {
		tb.Fatal(err)
	}
	return inst, login
}

// pgbenchDatabase makes a database of the test's own on the package's
// shared server holding pgbench's tables at scale 1, and returns its login
// on the unix socket.
func pgbenchDatabase(tb testing.TB) engine.Conn {
	tb.Helper()
	inst, db := sharedServer.Database(tb)
	login, _ := inst.UnixLogin(db)
	if err := Init(tb.Context(), login, 1, nil); err != nil {
		tb.Fatal(err)
	}
	return login
}

// runPgbench runs pgbench against a database of inst in dir, its login in
// the environment, and returns its standard output and error.
func runPgbench(tb testing.TB, inst *postgres.Instance, db, dir string, args ...string) (string, string, error) {
	tb.Helper()
	ci := inst.UnixConn(db)
	cmd := exec.Command(inst.Binaries().Path("pgbench"), args...)
	cmd.Env = append(os.Environ(), ci.Env()...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if strings.Contains(out.String()+errb.String(), ci.Password()) {
		tb.Fatal("pgbench printed the password")
	}
	return out.String(), errb.String(), err
}

// writeFile writes a script into dir and returns its path.
func writeFile(tb testing.TB, dir, name, text string) string {
	tb.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		tb.Fatal(err)
	}
	return p
}

// testParams are the workload's defaults with some set.
func testParams(tb testing.TB, set map[string]any) workload.Params {
	tb.Helper()
	p := workload.Params{}
	for _, ps := range params() {
		if ps.Default != nil {
			v, err := ps.Normalize(ps.Default)
			if err != nil {
				tb.Fatal(err)
			}
			p[ps.Name] = v
		}
	}
	for k, v := range set {
		p[k] = v
	}
	return p
}

// mustParse parses one script's text.
func mustParse(tb testing.TB, text string, opts Options) *Program {
	tb.Helper()
	p, err := Parse([]Source{{Name: "test.sql", Text: text, Weight: 1}}, opts)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

func fmtSscan(s string, n *int64) (int, error) { return fmt.Sscan(s, n) }

// kindErrors are what a study's parse refuses of a point's parameters:
// CheckParams's and CheckFiles's, the files read from the disk.
func kindErrors(k workload.Kind, p workload.Params) []workload.ParamError {
	return append(k.CheckParams(p), k.CheckFiles(p, nil)...)
}
