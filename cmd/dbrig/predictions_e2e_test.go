package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/study"
)

// TestReportPredictionsOverRuns: two run directories of key-lookup's
// smoke scale, and dbrig report --predictions over both prints each run's
// share of figures predicted and their error, the total, and where the
// model misses most; --json the same; a directory that is not a run is a
// usage error, before anything is printed. The second directory holds the
// files of the shared run, copied: the command reads a run from its files
// alone, and a second smoke run on both engines cost 2.5 s more CPU (the
// test alone: 7.5 s against 5.0) for the same counts of figures.
func TestReportPredictionsOverRuns(t *testing.T) {
	t.Parallel()
	_, _, first := sharedKeyLookupRun(t)
	second := copyRunFiles(t, first)

	code, out, errOut := runDbrig(t, t.TempDir(), nil, "report", "--predictions", first, second)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	// Each run: 2 engines × 2 paths × (time, pages); the scan, first of
	// its table, has no prediction, so its pages are a fit.
	for _, want := range []string{"figures", "predicted", "median error", first, second, "all 2 runs", "repeat median", "Where each workload's model misses most:", "key-lookup "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	code, out, errOut = runDbrig(t, t.TempDir(), nil, "report", "--predictions", "--json", first, second)
	if code != 0 {
		t.Fatalf("--json: exit %d\n%s\n%s", code, out, errOut)
	}
	var doc struct {
		Runs []struct {
			Dir       string   `json:"dir"`
			Figures   int      `json:"figures"`
			Predicted int      `json:"predicted"`
			Fitted    int      `json:"fitted"`
			MedianPct *float64 `json:"median_error_pct"`
			Repeat    *struct {
				Figures int `json:"figures"`
			} `json:"repeatability"`
		} `json:"runs"`
		All struct {
			Figures   int `json:"figures"`
			Predicted int `json:"predicted"`
			Worst     []struct {
				Workload string `json:"workload"`
				Reason   string `json:"reason"`
			} `json:"worst"`
		} `json:"all"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("--json output: %v\n%s", err, out)
	}
	if len(doc.Runs) != 2 || doc.Runs[0].Dir != first || doc.Runs[0].Figures != 8 || doc.All.Figures != 16 {
		t.Errorf("runs %+v, all %+v: want 8 figures a run, 16 in all", doc.Runs, doc.All)
	}
	for _, r := range doc.Runs {
		// The lookup paths' time and pages are predicted from the scans.
		if r.Predicted != 4 || r.Predicted+r.Fitted > r.Figures || r.MedianPct == nil {
			t.Errorf("run %s: %d predicted, %d fit of %d, median %v; want the lookups' 4 predicted", r.Dir, r.Predicted, r.Fitted, r.Figures, r.MedianPct)
		}
		// Both runs are key-lookup's: each figure has the other run's.
		if r.Repeat == nil || r.Repeat.Figures != r.Figures {
			t.Errorf("run %s: repeatability %+v, want each of its %d figures held against the other run's", r.Dir, r.Repeat, r.Figures)
		}
	}
	if len(doc.All.Worst) != 1 || doc.All.Worst[0].Workload != "key-lookup" || doc.All.Worst[0].Reason == "" {
		t.Errorf("worst: %+v, want key-lookup's with the reason its model states", doc.All.Worst)
	}

	notRun := t.TempDir()
	code, out, errOut = runDbrig(t, t.TempDir(), nil, "report", "--predictions", first, notRun)
	if code != 2 || out != "" || !strings.Contains(errOut, notRun+" is not a dbrig run directory") {
		t.Errorf("a directory that is not a run: exit %d, stdout %q, stderr %q; want 2, nothing printed, the directory named", code, out, errOut)
	}
}

// copyRunFiles copies the files a run is read from (not its reports, which
// another test may be rebuilding) into a run directory of the test's own,
// and returns it.
func copyRunFiles(t *testing.T, dir string) string {
	t.Helper()
	copied := filepath.Join(t.TempDir(), "run")
	if err := os.Mkdir(copied, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{study.RunFile, study.SpecFile, study.EnvironmentFile, study.ResultsFile} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(copied, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return copied
}
