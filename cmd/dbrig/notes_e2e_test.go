package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/blockdev"
	"github.com/dbrig/dbrig/internal/engine/mariadb/mariatest"
	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/workload"
)

// notesRun runs a seed-002 study's smoke scale through the CLI, on both
// engines (see smokeStudyRun); it fails when anything is left in the
// instances' base directory.
func notesRun(t *testing.T, name string) (studySummary, []workload.Result, string) {
	t.Helper()
	return notesRunIn(t, name, filepath.Join(t.TempDir(), "run"))
}

// sharedKeyLookup is the key-lookup smoke run that tests share when they
// read its results and at most rebuild its report: a run costs both
// engines' servers and the table loaded on each. The first test to ask
// makes it, and its leftovers are judged there; TestMain removes it.
var sharedKeyLookup struct {
	once    sync.Once
	parent  string
	summary studySummary
	results []workload.Result
	dir     string
}

// sharedKeyLookupRun returns the shared key-lookup run; a caller changes
// neither its results nor the files a run is read from.
func sharedKeyLookupRun(t *testing.T) (studySummary, []workload.Result, string) {
	t.Helper()
	pgtest.Binaries(t)
	mariatest.Engine(t)
	r := &sharedKeyLookup
	r.once.Do(func() {
		parent, err := os.MkdirTemp("", "dbrig-shared-run-")
		if err != nil {
			t.Fatal(err)
		}
		r.parent = parent
		summary, results, dir := notesRunIn(t, "key-lookup", filepath.Join(parent, "run"))
		r.summary, r.results, r.dir = summary, results, dir
	})
	if r.dir == "" {
		t.Fatal("the shared key-lookup smoke run failed: see the test that made it")
	}
	return r.summary, r.results, r.dir
}

// notesRunIn is notesRun writing the run to dir.
func notesRunIn(t *testing.T, name, dir string) (studySummary, []workload.Result, string) {
	t.Helper()
	pgtest.Binaries(t)
	mariatest.Engine(t)
	return smokeStudyRunIn(t, name, dir, func(t *testing.T, base string) {
		// A lazily unmounted file system frees its loop device, and its
		// directory, only when the last process lets go: wait (a bound
		// only a hang reaches), then name what is left.
		deadline := time.Now().Add(10 * time.Second)
		for {
			left, _ := os.ReadDir(base)
			loops := loopsBackedUnder(base)
			if len(left) == 0 && len(loops) == 0 {
				return
			}
			if time.Now().After(deadline) {
				var names []string
				for _, e := range left {
					names = append(names, e.Name())
				}
				t.Fatalf("left in the instances' directory: %v; loop devices still attached: %q", names, loops)
			}
			time.Sleep(200 * time.Millisecond)
		}
	})
}

// TestKeyLookupSmokeStudy: both paths on both engines over a table made
// once per engine, every finding judged, and the report rebuilt from the
// run with the seed's row beside ours.
func TestKeyLookupSmokeStudy(t *testing.T) {
	t.Parallel()
	summary, results, dir := sharedKeyLookupRun(t)
	if summary.Ran != 4 || summary.Failed != 0 || len(summary.Findings) != 4 {
		t.Errorf("summary: %+v", summary)
	}
	for _, f := range summary.Findings {
		if f.Verdict == report.NotMeasured {
			t.Errorf("finding not judged: %+v", f)
		}
	}
	for _, r := range results {
		if r.Metrics["physical_reads"] != 0 || r.Model["pages"] == 0 {
			t.Errorf("%s: %v physical reads, page model %v", r.Key, r.Metrics["physical_reads"], r.Model)
		}
	}
	os.Remove(filepath.Join(dir, "report.md"))
	if code, out, errOut := runDbrig(t, t.TempDir(), nil, "report", dir); code != 0 {
		t.Fatalf("dbrig report: exit %d\n%s\n%s", code, out, errOut)
	}
	if md, err := os.ReadFile(filepath.Join(dir, "report.md")); err != nil || !strings.Contains(string(md), "seed (SQL Server 2005)") {
		t.Errorf("the rebuilt report lacks the seed's row: %v", err)
	}
	// The comparison page of two key-lookup runs (the run beside itself):
	// its charts' long combination labels once left each a flat strip.
	compared := filepath.Join(t.TempDir(), "compare.html")
	if code, out, errOut := runDbrig(t, t.TempDir(), nil, "compare", dir, dir, "--html", compared); code != 0 {
		t.Fatalf("dbrig compare: exit %d\n%s\n%s", code, out, errOut)
	}
	checkInBrowser(t, filepath.Join(dir, "report.html"))
	checkInBrowser(t, compared)
}

// TestReadAheadSmokeStudy: cold scans at both settings on both engines,
// each on a loop device of the run's own, removed when the run ends; where
// this process may not make loop devices every point is skipped with the
// reason and no finding is judged.
func TestReadAheadSmokeStudy(t *testing.T) {
	t.Parallel()
	summary, results, dir := notesRun(t, "read-ahead")
	if summary.Ran != 4 || summary.Failed != 0 || len(summary.Findings) != 4 {
		t.Errorf("summary: %+v", summary)
	}
	if err := blockdev.Permitted(); err != nil {
		for _, r := range results {
			if !strings.Contains(r.Skipped, err.Error()) {
				t.Errorf("%s: skipped %q, want the reason %q", r.Key, r.Skipped, err)
			}
		}
		for _, f := range summary.Findings {
			if f.Verdict != report.NotMeasured {
				t.Errorf("judged without a measurement: %+v", f)
			}
		}
		checkInBrowser(t, filepath.Join(dir, "report.html"))
		return
	}
	for _, r := range results {
		// On san-2009 the device's rates are known before a scan: its time
		// is predicted, not fitted after it.
		if r.Skipped != "" || r.Metrics["resident_before"] != 0 || r.Metrics["bytes_read"] <= 0 || r.Model["seconds"] <= 0 || r.ModelFrom("seconds") != "predicted" {
			t.Errorf("%s: skipped %q, metrics %v, model %v", r.Key, r.Skipped, r.Metrics, r.Model)
		}
	}
	checkInBrowser(t, filepath.Join(dir, "report.html"))
}

// loopsBackedUnder lists the attached loop devices whose backing file lies
// under base: those of the dbrig run given base as its TMPDIR, and no other
// run's on the same machine.
func loopsBackedUnder(base string) []string {
	out, _ := exec.Command("losetup", "--list", "--noheadings", "--output", "NAME,BACK-FILE").Output()
	var mine []string
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && strings.HasPrefix(f[1], base+"/") {
			mine = append(mine, line)
		}
	}
	return mine
}

// TestPageCompressionSmokeStudy: both orders and periods on PostgreSQL and
// on MariaDB with 16 KiB and 64 KiB pages (the page size fixed when the
// data directory is made: a new instance, not a restart), every finding
// judged.
func TestPageCompressionSmokeStudy(t *testing.T) {
	t.Parallel()
	summary, results, dir := notesRun(t, "page-compression")
	if summary.Ran != 12 || summary.Failed != 0 || len(summary.Findings) != 5 {
		t.Errorf("summary: %+v", summary)
	}
	for _, f := range summary.Findings {
		if f.Verdict == report.NotMeasured {
			t.Errorf("finding not judged: %+v", f)
		}
	}
	for _, r := range results {
		if r.Metrics["ratio"] <= 1 || r.Model["dictionary_ratio"] <= 0 {
			t.Errorf("%s: ratio %v, dictionary model %v", r.Key, r.Metrics["ratio"], r.Model)
		}
	}
	checkInBrowser(t, filepath.Join(dir, "report.html"))
}
