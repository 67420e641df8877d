package script

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/load"
	"github.com/dbrig/dbrig/internal/workload"
	"github.com/dbrig/dbrig/internal/workload/workloadtest"
)

// busyScript computes without asking the server anything: its client is
// all a point of it measures.
var busyScript = strings.Repeat("\\set x random(1, 1000000) * 3 + hash(:client_id)\n", 50)

// TestClientBoundPointIsSaid: a script that only computes (\set, no SQL)
// keeps its one user's CPU busy, and its point says that the load
// generator limited it, with the client's CPU per transaction; one that
// waits for the server (pg_sleep) does not say so. Neither runs beside
// another test: the client's figures are the whole process's. The server,
// a process of its own, is the package's shared one.
func TestClientBoundPointIsSaid(t *testing.T) {
	inst, db := sharedServer.Database(t)
	files := map[string]string{"busy.sql": busyScript, "sleepy.sql": "SELECT pg_sleep(0.002);\n"}
	env := workloadtest.Env(db, inst)
	env.ReadFile = func(name string) ([]byte, error) {
		if text, ok := files[name]; ok {
			return []byte(text), nil
		}
		return nil, fmt.Errorf("%s: %w", name, os.ErrNotExist)
	}
	for _, tc := range []struct {
		script  string
		limited bool
	}{{"busy.sql", true}, {"sleepy.sql", false}} {
		t.Run(tc.script, func(t *testing.T) {
			m := runScriptPoint(t, env, tc.script)
			said := false
			for _, w := range m.Warnings {
				said = said || strings.HasPrefix(w, load.ClientLimitedWarning)
			}
			if tc.limited && !said && m.Metrics["client_cpu_pct"] < 25 {
				// As the load layer's own test: a machine this busy gave the
				// computing user under the rule's quarter of a core (17 % at
				// load average 35 to 65), too little to tell the client's
				// limit from another process's.
				t.Skipf("the computing user ran %.0f %% of a core (busy %.0f %%): too busy a machine to judge",
					m.Metrics["client_cpu_pct"], m.Metrics["client_busy_pct"])
			}
			if said != tc.limited {
				t.Errorf("warnings %q (client busy %.0f %%, CPU %.0f %%), want the client said to limit it: %v",
					m.Warnings, m.Metrics["client_busy_pct"], m.Metrics["client_cpu_pct"], tc.limited)
			}
			t.Logf("client busy %.0f %%, CPU %.0f %%, %.1f µs of CPU a transaction", m.Metrics["client_busy_pct"], m.Metrics["client_cpu_pct"], m.Metrics["client_cpu_us_per_tx"])
			if m.Metrics["client_cpu_us_per_tx"] <= 0 {
				t.Errorf("client_cpu_us_per_tx %v", m.Metrics["client_cpu_us_per_tx"])
			}
		})
	}
}

// runScriptPoint runs one user of a script for a second, as a study's
// point runs it.
func runScriptPoint(t *testing.T, env *workload.Env, script string) workload.Measurement {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	k := KindWith(nil)
	p := testParams(t, map[string]any{"script": script, "users": int64(1), "duration": "1s", "warm_up": "200ms"})
	if errs := k.CheckParams(p); len(errs) > 0 {
		t.Fatalf("params: %v", errs)
	}
	w, err := k.New(p)
	if err != nil {
		t.Fatal(err)
	}
	m, err := w.Run(ctx, env)
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if m.Metrics["errors"] > 0 || m.Metrics["tps"] <= 0 {
		t.Fatalf("tps %v, errors %v: %q", m.Metrics["tps"], m.Metrics["errors"], m.Notes)
	}
	return m
}
