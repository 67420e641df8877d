package study

import (
	"os"
	"path/filepath"
	"time"
)

// PastRun is a finished run of a study found on this machine: how long it
// took from its start to its last point's end.
type PastRun struct {
	Dir      string
	Study    string
	Scale    string
	Points   int
	Duration time.Duration
}

// PastRuns finds the runs under dir (a run directory per entry, as dbrig
// run writes them under runs/) that ran every point of their plan without
// a resume, the latest first for each study and scale: what the points'
// own recorded times say a run takes on this machine. A directory that is
// not a run, or a run cut short, is left out.
func PastRuns(dir string, planned func(study, scale string) (int, bool)) map[string]map[string]PastRun {
	out := map[string]map[string]PastRun{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return out
	}
	for _, e := range entries {
		run, ok := pastRun(filepath.Join(dir, e.Name()), planned)
		if !ok {
			continue
		}
		if out[run.Study] == nil {
			out[run.Study] = map[string]PastRun{}
		}
		if old, seen := out[run.Study][run.Scale]; !seen || old.Dir < run.Dir {
			out[run.Study][run.Scale] = run
		}
	}
	return out
}

// pastRun reads one run directory, if it is a complete run.
func pastRun(dir string, planned func(study, scale string) (int, bool)) (PastRun, bool) {
	var info RunInfo
	if err := readJSON(filepath.Join(dir, RunFile), &info); err != nil || len(info.Resumed) > 0 {
		return PastRun{}, false
	}
	want, ok := planned(info.Study, info.Scale)
	results, err := ReadResults(dir)
	if !ok || err != nil || len(results) < want || want == 0 {
		return PastRun{}, false
	}
	var end time.Time
	for _, r := range results {
		if !r.OK() {
			return PastRun{}, false // a failed or interrupted point
		}
		if e := r.Started.Add(time.Duration(r.Seconds * float64(time.Second))); e.After(end) {
			end = e
		}
	}
	if end.Before(info.Started) {
		return PastRun{}, false
	}
	return PastRun{Dir: dir, Study: info.Study, Scale: info.Scale, Points: len(results), Duration: end.Sub(info.Started)}, true
}
