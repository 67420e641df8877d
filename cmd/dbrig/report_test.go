package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/study"
)

// emptyRun makes the directory a run leaves when it is interrupted before
// its first point finishes: the study file as run, run.json and an empty
// results.jsonl. Its report is rebuilt from these files alone.
func emptyRun(t *testing.T, name string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	spec, err := os.ReadFile("../../studies/rbarlatency/rbar-latency.toml")
	if err != nil {
		t.Fatal(err)
	}
	info, _ := json.Marshal(study.RunInfo{Study: "rbar-latency", Scale: "smoke", SpecPath: "rbar-latency.toml", DbrigVersion: "test"})
	for file, data := range map[string][]byte{study.SpecFile: spec, study.RunFile: info, "results.jsonl": nil} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, file), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestReportSeveralDirectories rebuilds the reports of several runs in one
// command, as README's "dbrig report runs/rbar-latency-*" does once there
// are two runs, and reports the directories it cannot rebuild.
func TestReportSeveralDirectories(t *testing.T) {
	t.Parallel()
	first, second := emptyRun(t, "rbar-latency-1"), emptyRun(t, "rbar-latency-2")
	notRun := t.TempDir()
	broken := emptyRun(t, "broken")
	if err := os.Remove(filepath.Join(broken, study.SpecFile)); err != nil {
		t.Fatal(err)
	}
	reportRun := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(t.Context(), append([]string{"report"}, args...), &app{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }, version: "test"})
		return code, out.String(), errb.String()
	}
	rebuilt := func(dirs ...string) {
		t.Helper()
		for _, d := range dirs {
			for _, f := range []string{"report.html", "report.md"} {
				if st, err := os.Stat(filepath.Join(d, f)); err != nil || st.Size() == 0 {
					t.Errorf("%s not rebuilt: %v", filepath.Join(d, f), err)
				}
				os.Remove(filepath.Join(d, f))
			}
		}
	}

	code, out, errs := reportRun(first, second)
	if code != 0 {
		t.Fatalf("report of two runs: exit %d\n%s\n%s", code, out, errs)
	}
	for _, d := range []string{first, second} {
		for _, want := range []string{"== " + d + " ==", "report: " + filepath.Join(d, "report.html"), "markdown: " + filepath.Join(d, "report.md")} {
			if !strings.Contains(out, want) {
				t.Errorf("stdout lacks %q:\n%s", want, out)
			}
		}
	}
	rebuilt(first, second)

	for _, tt := range []struct {
		name    string
		args    []string
		code    int
		stderr  []string
		rebuilt []string
	}{
		{"one run, as before", []string{first}, 0, nil, []string{first}},
		{"a directory that is no run", []string{first, notRun, second}, 2,
			[]string{"1 of 3 reports not rebuilt", notRun + " is not a dbrig run directory (no run.json)"}, []string{first, second}},
		{"a run whose report cannot be built", []string{broken, first}, 1,
			[]string{"1 of 2 reports not rebuilt", "report of " + broken, "spec.toml"}, []string{first}},
		{"both", []string{broken, notRun, second}, 2,
			[]string{"2 of 3 reports not rebuilt", notRun + " is not a dbrig run directory", "report of " + broken}, []string{second}},
		{"the one directory is no run", []string{notRun}, 2, []string{"dbrig: " + notRun + " is not a dbrig run directory"}, nil},
		{"no directory", nil, 2, []string{"requires at least 1 arg"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := reportRun(tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d\n%s\n%s", code, tt.code, out, errs)
			}
			for _, w := range tt.stderr {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errs)
				}
			}
			rebuilt(tt.rebuilt...)
		})
	}

	// --json: one array, a document per directory in the order given.
	code, out, errs = reportRun(first, notRun, second, "--json")
	if code != 2 {
		t.Errorf("--json with a directory that is no run: exit %d, want 2: %s", code, errs)
	}
	var docs []struct {
		Dir   string `json:"dir"`
		HTML  string `json:"report_html"`
		MD    string `json:"report_md"`
		Error string `json:"error"`
	}
	if err := json.Unmarshal([]byte(out), &docs); err != nil {
		t.Fatalf("--json output is not a JSON array: %v\n%s", err, out)
	}
	if len(docs) != 3 || docs[0].Dir != first || docs[1].Dir != notRun || docs[2].Dir != second {
		t.Fatalf("--json documents %+v, want one per directory in order", docs)
	}
	if docs[0].HTML != filepath.Join(first, "report.html") || docs[0].MD != filepath.Join(first, "report.md") || docs[0].Error != "" ||
		docs[1].HTML != "" || !strings.Contains(docs[1].Error, "not a dbrig run directory") || docs[2].Error != "" {
		t.Errorf("--json documents %+v", docs)
	}
	rebuilt(first, second)
}
