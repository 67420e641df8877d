package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
	"github.com/dbrig/dbrig/internal/study"
)

// sweptServerSetting sweeps a setting only the server's configuration
// sets: one server that dbrig never reconfigures cannot give both values.
const sweptServerSetting = `name = "cache-sweep"
title = "shared_buffers swept"
[[instance]]
name = "db"
engine = "postgres"
settings = { shared_buffers = "${cache}" }
[workload]
kind = "rbar"
experiment = "client-row-by-row"
rows = 50
[sweep]
cache = ["64MB", "128MB"]
[repeat]
runs = 1
`

// TestYourServerAsItIs runs README's example, rbar-latency on the user's
// PostgreSQL server (at its smoke scale), on a server whose shared_buffers
// is not the study's 128MB: it runs, warns once, records both values in
// environment.json and the report, and prints the report's path. A study
// that sweeps a server setting of the target is refused (exit 2) before
// any point runs or anything of dbrig's is made on the server, and a
// built-in one says how to copy it.
func TestYourServerAsItIs(t *testing.T) {
	t.Parallel()
	server := pgtest.Start(t, "yours", map[string]string{"shared_buffers": "32MB"})
	env := map[string]string{"MY_PG": server.Conn("postgres").URI()}
	dir := filepath.Join(t.TempDir(), "run")
	code, out := runBinary(t, env, "run", "rbar-latency", "--scale", "smoke", "--out", dir, "--target", "db=env:MY_PG")
	if code != 0 {
		t.Fatalf("exit %d, want 0:\n%s", code, out)
	}
	if !strings.Contains(out, "report: "+filepath.Join(dir, "report.html")) {
		t.Errorf("the run does not print the report's path:\n%s", out)
	}
	const diff = "shared_buffers: study: 128MB, target: 32MB (the target's ran)"
	if n := strings.Count(out, "the study's server settings differ from your server's"); n != 1 || !strings.Contains(out, diff) {
		t.Errorf("%d warnings, want one saying %q:\n%s", n, diff, out)
	}
	var environment study.Environment
	b, err := os.ReadFile(filepath.Join(dir, study.EnvironmentFile))
	if err == nil {
		err = json.Unmarshal(b, &environment)
	}
	want := study.SettingDiff{Name: "shared_buffers", Study: "128MB", Target: "32MB"}
	if err != nil || len(environment.Targets) != 1 || len(environment.Targets[0].Differs) != 1 || environment.Targets[0].Differs[0] != want {
		t.Errorf("environment.json targets = %+v (%v), want the one difference %+v", environment.Targets, err, want)
	}
	report, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil || !strings.Contains(string(report), "shared_buffers = study: 128MB, target: 32MB (the target's ran)") {
		t.Errorf("report.md lacks both values of shared_buffers (%v):\n%s", err, report)
	}

	file := filepath.Join(t.TempDir(), "cache-sweep.toml")
	if err := os.WriteFile(file, []byte(sweptServerSetting), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		want []string
	}{
		{[]string{"run", file}, []string{"cache-sweep.toml:6: instance.0.settings.shared_buffers: the study sweeps shared_buffers over 64MB, 128MB", "dbrig cannot reconfigure your server"}},
		{[]string{"run", "tpch-parallel"}, []string{"the study sweeps max_parallel_workers over", "`dbrig studies show tpch-parallel > my-study.toml`"}},
	} {
		refused := filepath.Join(t.TempDir(), "refused")
		code, out := runBinary(t, env, append(tt.args, "--out", refused, "--target", "env:MY_PG")...)
		if code != exitUsage {
			t.Errorf("%v: exit %d, want 2:\n%s", tt.args, code, out)
		}
		for _, w := range tt.want {
			if !strings.Contains(out, w) {
				t.Errorf("%v: the refusal does not say %q:\n%s", tt.args, w, out)
			}
		}
		if _, err := os.Stat(refused); !os.IsNotExist(err) {
			t.Errorf("%v: a refused study left a run directory (%v)", tt.args, err)
		}
	}
	if left := queryInt(t, server, "postgres", "SELECT count(*) FROM pg_database WHERE datname LIKE 'dbrig%'"); left != 0 {
		t.Errorf("%d databases of dbrig's left on the target", left)
	}
}

// runBinary runs the dbrig command (a study's client processes are the
// command's own) with env added to the environment, and returns its exit
// code and what it printed.
func runBinary(t *testing.T, env map[string]string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, dbrigBinary(t), args...)
	cmd.Env = append(os.Environ(), "NO_COLOR=1")
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	return exitCode(err), string(out)
}
