package study

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/workload"
)

// TestPastRunsTakeOnlyCompleteRuns: the duration of a study's scale comes
// from its latest run that ran every planned point, from the run's start
// to its last point's end; a run cut short, resumed, failed or of another
// scale does not count.
func TestPastRunsTakeOnlyCompleteRuns(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	t0 := time.Date(2026, 11, 27, 2, 0, 0, 0, time.UTC)
	run := func(name, scale string, points int, resumed bool, failed bool) {
		dir := filepath.Join(root, name)
		info := RunInfo{Study: "key-lookup", Scale: scale, Started: t0}
		if resumed {
			info.Resumed = []time.Time{t0.Add(time.Minute)}
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := writeJSON(filepath.Join(dir, RunFile), info); err != nil {
			t.Fatal(err)
		}
		w, err := OpenResults(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		for i := range points {
			r := workload.Result{Key: "p", Combo: "p", Run: i + 1, Started: t0.Add(time.Duration(i) * 10 * time.Second), Seconds: 8}
			if failed && i == 0 {
				r.Error = "boom"
			}
			if err := w.Write(r); err != nil {
				t.Fatal(err)
			}
		}
	}
	run("key-lookup-20261127-020000", "quick", 4, false, false) // 30 s + 8 s
	run("key-lookup-20261127-030000", "quick", 3, false, false) // cut short: the plan has 4
	run("key-lookup-20261127-040000", "quick", 4, true, false)  // resumed
	run("key-lookup-20261127-050000", "quick", 4, false, true)  // a point failed
	run("key-lookup-20261127-060000", "smoke", 2, false, false) // another scale
	planned := func(study, scale string) (int, bool) {
		return map[string]int{"quick": 4, "smoke": 2}[scale], study == "key-lookup"
	}
	got := PastRuns(root, planned)
	q := got["key-lookup"]["quick"]
	if filepath.Base(q.Dir) != "key-lookup-20261127-020000" || q.Duration != 38*time.Second {
		t.Errorf("quick: %+v, want the complete run of 38s", q)
	}
	if s := got["key-lookup"]["smoke"]; s.Duration != 18*time.Second {
		t.Errorf("smoke: %+v, want 18s", s)
	}
	if len(PastRuns(filepath.Join(root, "none"), planned)) != 0 {
		t.Error("a directory that does not exist has runs")
	}
}
