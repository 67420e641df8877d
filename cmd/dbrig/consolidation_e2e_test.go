package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/study"
)

// TestConsolidationStudySmoke runs the consolidation study's smoke scale
// through the CLI: databases made from a template and kept or added from
// one point to the next, a set of two instances, the durability settings
// restarted in place; every point measured with its model, the findings
// judged, the report rebuilt from the run directory, nothing left behind.
func TestConsolidationStudySmoke(t *testing.T) {
	t.Parallel()
	pgtest.Binaries(t)
	base := pgtest.BaseDir(t)
	dir := filepath.Join(t.TempDir(), "run")
	code, stdout, stderr := runDbrig(t, base, nil, "run", "consolidation", "--scale", "smoke", "--out", dir, "--json", "--verbose")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	var summary struct {
		Ran, Failed int
		Findings    []report.Finding `json:"findings"`
	}
	if err := json.Unmarshal([]byte(stdout), &summary); err != nil {
		t.Fatalf("--json output: %v\n%s", err, stdout)
	}
	if summary.Ran != 6 || summary.Failed != 0 || len(summary.Findings) != 8 {
		t.Errorf("summary: ran %d, failed %d, %d findings", summary.Ran, summary.Failed, len(summary.Findings))
	}
	// The smoke scale runs three of the six experiments: their findings
	// show figures (the verdict depends on the machine's load: a busy one
	// makes them "not measured", saying why); the others say what they
	// need.
	for i, f := range summary.Findings[:6] {
		ran := i == 0 || i == 1 || i == 5 // instances, databases per instance, durability
		if got := f.Measured != "-" && strings.Contains(f.Measured, "TPM"); got != ran || (!ran && !strings.Contains(f.Why, "Needs the experiment")) {
			t.Errorf("finding %d: measured %q, verdict %s, why %q", i+1, f.Measured, f.Verdict, f.Why)
		}
	}
	// The plan cache is judged on the databases experiment: its first and
	// later calls are timed whatever the verdict.
	if f := summary.Findings[7]; !strings.Contains(f.Measured, "first call on a connection took") {
		t.Errorf("plan-cache finding: measured %q, verdict %s, why %q", f.Measured, f.Verdict, f.Why)
	}
	if !strings.Contains(stderr, `msg="postgres restarted in place"`) || !strings.Contains(stderr, "created=0 kept=8") {
		t.Errorf("wal_level was not changed in place over the databases made once:\n%s", stderr)
	}
	pgtest.WaitNoServers(t, base, 10*time.Second)
	assertNoInstanceDirs(t, base)
	results, err := study.ReadResults(dir)
	if err != nil || len(results) != 6 {
		t.Fatalf("results: %d, %v", len(results), err)
	}
	for _, r := range results {
		if r.Metrics["tpm"] <= 0 || r.Model["tpm"] <= 0 || r.Metrics["databases"] != r.Params.Float("databases") || r.Histograms["response"] == nil {
			t.Errorf("%s: tpm %v, model %v, databases %v", r.Key, r.Metrics["tpm"], r.Model["tpm"], r.Metrics["databases"])
		}
		if r.Metrics["plan_cache_bytes"] <= 0 || r.Metrics["instance_memory_bytes"] <= 0 {
			t.Errorf("%s: no memory figures: %v", r.Key, r.Metrics)
		}
	}
	os.Remove(filepath.Join(dir, "report.md"))
	if code, out, errOut := runDbrig(t, base, nil, "report", dir); code != 0 {
		t.Errorf("dbrig report: exit %d\n%s\n%s", code, out, errOut)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"TPM by databases on one instance", "What two cores cannot show", "Durability: the recovery models mapped", "The baseline, measured again"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	checkInBrowser(t, filepath.Join(dir, "report.html"))
}
