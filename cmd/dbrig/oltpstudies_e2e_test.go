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
	"github.com/dbrig/dbrig/internal/workload"
	"github.com/dbrig/dbrig/internal/workload/oltp"
)

// studySummary is what the smoke tests read of `dbrig run --json`.
type studySummary struct {
	Ran, Failed int
	Findings    []report.Finding `json:"findings"`
}

// smokeStudyRun runs a built-in study's smoke scale through the CLI and
// returns its --json summary and results once every server has stopped and
// leftovers (given the instances' base directory) found nothing left.
func smokeStudyRun(t *testing.T, name string, leftovers func(t *testing.T, base string)) (summary studySummary, results []workload.Result, dir string) {
	t.Helper()
	return smokeStudyRunIn(t, name, filepath.Join(t.TempDir(), "run"), leftovers)
}

// smokeStudyRunIn is smokeStudyRun writing the run to dir.
func smokeStudyRunIn(t *testing.T, name, dir string, leftovers func(t *testing.T, base string)) (summary studySummary, results []workload.Result, _ string) {
	t.Helper()
	base := pgtest.BaseDir(t)
	code, stdout, stderr := runDbrig(t, base, nil, "run", name, "--scale", "smoke", "--out", dir, "--json")
	if code != 0 {
		t.Fatalf("dbrig run %s: exit %d\n%s\n%s", name, code, stdout, stderr)
	}
	if err := json.Unmarshal([]byte(stdout), &summary); err != nil {
		t.Fatalf("--json output: %v\n%s", err, stdout)
	}
	pgtest.WaitNoServers(t, base, 10*time.Second)
	leftovers(t, base)
	var err error
	if results, err = study.ReadResults(dir); err != nil {
		t.Fatal(err)
	}
	return summary, results, dir
}

// oltpStudyRun runs a built-in OLTP study's smoke scale (see smokeStudyRun).
func oltpStudyRun(t *testing.T, name string) (studySummary, []workload.Result, string) {
	t.Helper()
	pgtest.Binaries(t)
	return smokeStudyRun(t, name, assertNoInstanceDirs)
}

// TestTransportOLTPSmokeStudy: the shop on every transport and the lookups
// and the report on the unix socket and lan-1g, each point with its
// closed-loop model; the findings judged; the report with the peaks; and
// dbrig diagnose finds no retransmission stall in a clean run.
func TestTransportOLTPSmokeStudy(t *testing.T) {
	t.Parallel()
	summary, results, dir := oltpStudyRun(t, "transport-oltp")
	if summary.Ran != 18 || summary.Failed != 0 || len(summary.Findings) != 6 {
		t.Errorf("summary: %+v", summary)
	}
	judged := 0
	for _, f := range summary.Findings {
		if f.Verdict != report.NotMeasured {
			judged++
		}
	}
	// Two load levels: too few for the saturation finding, every other
	// one judged.
	if judged != 5 {
		t.Errorf("%d findings judged, want 5: %+v", judged, summary.Findings)
	}
	nets := map[string]bool{}
	// As the report reads them: the first load level of a curve, with
	// nothing before it to predict it, has the fit on the other level.
	study.HoldOut(oltp.Kind(), results)
	for _, r := range results {
		nets[study.LinkOf(r).Profile+"/"+study.LinkOf(r).Mode] = true
		if r.Metrics["tps"] <= 0 || r.Metrics["errors"] != 0 || r.Model["tps"] <= 0 || r.Model["knee_users"] <= 0 {
			t.Errorf("%s: metrics %v, model %v", r.Key, r.Metrics, r.Model)
		}
	}
	if len(nets) != 5 {
		t.Errorf("transports %v, want 5", nets)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	for _, want := range []string{"## Peak throughput and the knee", "gain over lan-1g", "Throughput against virtual users, mix shop", "knees"} {
		if err != nil || !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q: %v", want, err)
		}
	}
	if code, out, errOut := runDbrig(t, t.TempDir(), nil, "diagnose", dir); code != 0 || !strings.Contains(out, "No retransmission-stall signature in any point.") {
		t.Errorf("dbrig diagnose on a clean run: exit %d\n%s\n%s", code, out, errOut)
	}
	checkInBrowser(t, filepath.Join(dir, "report.html"))
}

// TestDuplexMismatchSmokeStudy: the shop and the report over lan-1g at
// full duplex and at a mismatch; the mismatched link loses segments and
// dbrig diagnose names the mismatched shop point, and no full-duplex one.
func TestDuplexMismatchSmokeStudy(t *testing.T) {
	summary, results, dir := oltpStudyRun(t, "duplex-mismatch")
	if summary.Ran != 4 || summary.Failed != 0 || len(summary.Findings) != 5 {
		t.Errorf("summary: %+v", summary)
	}
	var shopMM string
	// As the report reads them: the stalls' bound is a fit on the point's
	// full-duplex twin, made when the report is.
	study.HoldOut(oltp.Kind(), results)
	for _, r := range results {
		l := study.LinkOf(r)
		mm := l.Duplex == "mismatch"
		if mm != strings.Contains(l.Profile, "+duplex-mismatch") || l.RTOSeconds < 0.2 {
			t.Errorf("%s: link %+v", r.Key, l)
		}
		if mm && r.Params.String("mix") == "shop" {
			shopMM = r.Key
			if l.LostSegments == 0 || r.Model["stall_model_tps"] <= 0 {
				t.Errorf("%s: %d segments lost, model %v", r.Key, l.LostSegments, r.Model)
			}
		}
		if !mm && l.LostSegments != 0 {
			t.Errorf("%s: the full-duplex link lost %d segments", r.Key, l.LostSegments)
		}
	}
	code, out, errOut := runDbrig(t, t.TempDir(), nil, "diagnose", dir, "--json")
	var d struct {
		Found  int
		Points []struct {
			Point    string
			Found    bool
			HitShare float64 `json:"hit_share"`
		}
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("dbrig diagnose --json: exit %d, %v\n%s\n%s", code, err, out, errOut)
	}
	if code != 1 {
		t.Errorf("dbrig diagnose --json: exit %d, want 1", code)
	}
	flagged := map[string]bool{}
	for _, p := range d.Points {
		if p.Found {
			flagged[p.Point] = true
			if !strings.Contains(p.Point, "+duplex-mismatch") || p.HitShare <= 0 {
				t.Errorf("flagged %s with %.4f of its transactions", p.Point, p.HitShare)
			}
		}
	}
	if !flagged[shopMM] {
		_, text, _ := runDbrig(t, t.TempDir(), nil, "diagnose", dir)
		t.Errorf("the mismatched shop point %q is not flagged:\n%s", shopMM, text)
	}
	if code, text, _ := runDbrig(t, t.TempDir(), nil, "diagnose", dir); code != 1 || !strings.Contains(text, "Retransmission stalls in ") || !strings.Contains(text, shopMM+"\n") {
		t.Errorf("dbrig diagnose: exit %d\n%s", code, text)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	for _, want := range []string{"## Duplex mismatch beside full duplex", "Retransmission stalls (dbrig diagnose)", "Response times at full duplex and at a duplex mismatch"} {
		if err != nil || !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q: %v", want, err)
		}
	}
	checkInBrowser(t, filepath.Join(dir, "report.html"))
}
