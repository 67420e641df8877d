package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dbrig/dbrig/internal/study"
)

// TestOutIntoAnotherRunIsRefusedBeforeAnythingStarts: --out naming the
// directory of a run at another scale is the user's mistake, refused with
// exit 2 before anything starts, as --resume with another scale is (it
// was refused once the runner had begun, exit 1, after the settings check
// had run the servers' programs), and the run there is left as it was.
func TestOutIntoAnotherRunIsRefusedBeforeAnythingStarts(t *testing.T) {
	t.Parallel()
	dir := emptyRun(t, "rbar-latency-smoke")
	before, err := os.ReadFile(filepath.Join(dir, study.RunFile))
	if err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := run(t.Context(), []string{"run", "rbar-latency", "--scale", "quick", "--out", dir}, &app{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }, version: "test"})
	if code != 2 || !strings.Contains(errb.String(), `was run at scale "smoke"; it resumes at that scale, not "quick"`) || strings.Contains(errb.String(), "running") {
		t.Errorf("exit %d, stderr:\n%s\nwant 2 refusing the scale before the run starts", code, errb.String())
	}
	after, _ := os.ReadFile(filepath.Join(dir, study.RunFile))
	if entries, _ := os.ReadDir(dir); !bytes.Equal(before, after) || len(entries) != 3 {
		t.Errorf("the run directory changed: %d entries, run.json %s", len(entries), after)
	}
}

// TestEveryLoadKindHasAGeneratedCommand: every workload kind with a load
// mode has its dbrig load command, with a flag for each parameter the
// command does not set itself, and every load command takes the same
// shared flags, which its --help lists (load tpch lacked --mariadb-bin).
func TestEveryLoadKindHasAGeneratedCommand(t *testing.T) {
	t.Parallel()
	a := &app{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, getenv: func(string) string { return "" }, version: "test"}
	loadCmd := newLoadCmd(a)
	var shared [][]string
	kinds := 0
	for _, k := range workloads() {
		if k.Load == nil {
			continue
		}
		kinds++
		cmd, _, err := loadCmd.Find([]string{k.Name})
		if err != nil || cmd == loadCmd {
			t.Errorf("no dbrig load %s: %v", k.Name, err)
			continue
		}
		params := map[string]bool{}
		for _, p := range k.Params {
			if _, fixed := k.Load.Fixed[p.Name]; fixed || p.Name == k.Load.Args {
				continue // the command sets it, or its arguments fill it
			}
			params[p.FlagName()] = true
			if cmd.Flags().Lookup(p.FlagName()) == nil {
				t.Errorf("dbrig load %s has no --%s for its parameter %s", k.Name, p.FlagName(), p.Name)
			}
		}
		for _, af := range k.Load.ArgFlags { // the kind's own, adding to its arguments
			params[af.Name] = true
		}
		var others []string
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			if !params[f.Name] {
				others = append(others, f.Name)
			}
		})
		shared = append(shared, others)
		help := helpOf(t, cmd)
		for _, name := range others {
			if f := cmd.Flags().Lookup(name); !f.Hidden && !strings.Contains(help, "--"+name+" ") {
				t.Errorf("dbrig load %s --help does not list --%s", k.Name, name)
			}
		}
	}
	if kinds < 2 {
		t.Fatalf("%d kinds with a load mode, want oltp and tpch at least", kinds)
	}
	for _, s := range shared[1:] {
		if !slices.Equal(s, shared[0]) {
			t.Errorf("load commands share different flags: %v and %v", shared[0], s)
		}
	}
	for _, want := range []string{"target", "engine", "pg-bin", "mariadb-bin", "out", "json", "keep", "verbose", "metrics-addr", "agents", "host", "link", "rtt", "link-rate"} {
		if !slices.Contains(shared[0], want) {
			t.Errorf("the shared flags %v lack --%s", shared[0], want)
		}
	}
}

// helpOf is a command's --help.
func helpOf(t *testing.T, cmd *cobra.Command) string {
	t.Helper()
	var b bytes.Buffer
	cmd.SetOut(&b)
	if err := cmd.Help(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
