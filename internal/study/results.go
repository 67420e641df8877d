package study

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/dbrig/dbrig/internal/workload"
)

// Files of a run directory.
const (
	ResultsFile     = workload.ResultsFile // one Result per finished point
	SpecFile        = "spec.toml"          // the study file as run
	RunFile         = "run.json"           // scale, command line, dbrig version
	EnvironmentFile = "environment.json"   // the host and servers
)

// Finished splits a run's results into the points that finished (measured,
// failed or skipped: the results) and the interrupted points no later
// result of the same point replaced. An interrupted point's partial
// measurement is never a result: it is neither summarized, modelled,
// compared nor reported as one.
func Finished(results []workload.Result) (finished, interrupted []workload.Result) {
	last := map[string]int{}
	for i, r := range results {
		last[r.Key] = i
	}
	for i, r := range results {
		switch {
		case !r.Interrupted():
			finished = append(finished, r)
		case last[r.Key] == i:
			interrupted = append(interrupted, r)
		}
	}
	return finished, interrupted
}

// ResultWriter appends results to results.jsonl, each flushed and fsynced
// before Write returns, so a crash or Ctrl-C loses no finished point.
type ResultWriter struct {
	f *os.File
}

// OpenResults opens (creating or appending) a run directory's results.
func OpenResults(dir string) (*ResultWriter, error) {
	f, err := os.OpenFile(filepath.Join(dir, ResultsFile), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open results: %w", err)
	}
	return &ResultWriter{f: f}, nil
}

// Write appends one result durably.
func (w *ResultWriter) Write(r workload.Result) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encode result %q: %w", r.Key, err)
	}
	b = append(b, '\n')
	if _, err := w.f.Write(b); err != nil {
		return fmt.Errorf("write result %q: %w", r.Key, err)
	}
	if err := w.f.Sync(); err != nil {
		return fmt.Errorf("sync results: %w", err)
	}
	return nil
}

// Close closes the file.
func (w *ResultWriter) Close() error { return w.f.Close() }

// ReadResults reads results.jsonl: [workload.ReadResults].
func ReadResults(dir string) ([]workload.Result, error) { return workload.ReadResults(dir) }

// RunInfo is what run.json records about a run.
type RunInfo struct {
	Study string `json:"study"`
	Scale string `json:"scale"`
	// Options are --engine and the instances --target replaced (the
	// targets' logins are not stored: --resume asks for them again).
	Options      PlanOptions `json:"options,omitempty"`
	SpecPath     string      `json:"spec_path"`
	Command      []string    `json:"command"`
	DbrigVersion string      `json:"dbrig_version"`
	Started      time.Time   `json:"started"`
	Resumed      []time.Time `json:"resumed,omitempty"`
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
