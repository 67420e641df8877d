package study

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/measure"
	"github.com/dbrig/dbrig/internal/monitor"
)

// Files of a run directory.
const (
	ResultsFile     = "results.jsonl"    // one Result per finished point
	SpecFile        = "spec.toml"        // the study file as run
	RunFile         = "run.json"         // scale, command line, dbrig version
	EnvironmentFile = "environment.json" // the host and servers
)

// Result is one point: a line of results.jsonl. A finished point has no
// Status; one cut short by an interrupt has StatusInterrupted.
type Result struct {
	Study  string         `json:"study"`
	Key    string         `json:"key"`   // combination and run: "net=lan-1g #2"
	Combo  string         `json:"combo"` // combination only
	Run    int            `json:"run"`
	Values map[string]any `json:"values"` // sweep values
	Params Params         `json:"params"` // resolved workload parameters
	Client ResolvedClient `json:"client"`
	// Instances are the servers the point ran on, as configured for it.
	Instances []engine.InstanceConfig `json:"instances,omitempty"`
	Links     []LinkResult            `json:"links,omitempty"`
	Started   time.Time               `json:"started"`
	Seconds   float64                 `json:"seconds"` // wall time of the workload's Run
	Metrics   map[string]float64      `json:"metrics,omitempty"`
	Series    map[string][]float64    `json:"series,omitempty"`
	// SeriesInterval is the seconds between two values of Series.
	SeriesInterval float64 `json:"series_interval_s,omitempty"`
	// Histograms are the run's latency distributions, whole.
	Histograms map[string]*measure.Histogram `json:"histograms,omitempty"`
	Notes      []string                      `json:"notes,omitempty"`
	// Warnings qualify the figures themselves (see Measurement.Warnings).
	Warnings []string `json:"warnings,omitempty"`
	// Monitor is what dbrig saw of each server while the point ran, over a
	// connection of its own (see package monitor).
	Monitor []monitor.Series   `json:"monitor,omitempty"`
	Model   map[string]float64 `json:"model,omitempty"`
	Formula string             `json:"formula,omitempty"`
	Error   string             `json:"error,omitempty"`
	// Skipped says why a point was not measured although it did not fail
	// (a target cannot give the path the point asks for).
	Skipped string `json:"skipped,omitempty"`
	// Status is StatusInterrupted for a point an interrupt cut short: its
	// metrics are what it measured before the stop, kept so the run shows
	// where it stopped, and are no result (see Finished).
	Status string `json:"status,omitempty"`
}

// StatusInterrupted marks a point cut short by SIGINT, SIGTERM or SIGHUP.
const StatusInterrupted = "interrupted"

// Interrupted reports whether an interrupt cut the point short.
func (r Result) Interrupted() bool { return r.Status == StatusInterrupted }

// OK reports whether the point is done: measured, or skipped for a reason
// no rerun changes. An interrupted point is not: --resume runs it again.
func (r Result) OK() bool { return r.Error == "" && !r.Interrupted() }

// Measured reports whether the point was measured.
func (r Result) Measured() bool { return r.OK() && r.Skipped == "" }

// Finished splits a run's results into the points that finished (measured,
// failed or skipped: the results) and the interrupted points no later
// result of the same point replaced. An interrupted point's partial
// measurement is never a result: it is neither summarized, modelled,
// compared nor reported as one.
func Finished(results []Result) (finished, interrupted []Result) {
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

// LinkResult is a link's configuration and what it carried during a point.
type LinkResult struct {
	Name    string    `json:"name"`
	Between [2]string `json:"between"`
	Profile string    `json:"profile"`
	Mode    string    `json:"mode"`
	// Model figures of the link, for the report's models.
	RTTSeconds float64 `json:"rtt_s"`
	// RTOSeconds is the stall a lost segment costs before its
	// retransmission arrives (RTT + the minimum RTO), doubling on repeats.
	RTOSeconds float64 `json:"rto_s,omitempty"`
	// Duplex is "half" or "mismatch" when the link is not full duplex.
	Duplex       string  `json:"duplex,omitempty"`
	RateBitsPerS float64 `json:"rate_bps,omitempty"`
	WindowBytes  int64   `json:"window_bytes,omitempty"`
	Description  string  `json:"description"`
	ForwardBytes int64   `json:"forward_bytes"`
	ReverseBytes int64   `json:"reverse_bytes"`
	Connections  int64   `json:"connections"`
	WindowStalls int64   `json:"window_stalls,omitempty"`
	LostSegments int64   `json:"lost_segments,omitempty"`
	// Segments carried each way (a lost one counted once).
	ForwardSegments int64   `json:"forward_segments,omitempty"`
	ReverseSegments int64   `json:"reverse_segments,omitempty"`
	SeriesSeconds   float64 `json:"series_interval_s,omitempty"`
	// Bytes delivered per interval, each direction.
	ForwardSeries []int64 `json:"forward_series,omitempty"`
	ReverseSeries []int64 `json:"reverse_series,omitempty"`
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
func (w *ResultWriter) Write(r Result) error {
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

// ReadResults reads results.jsonl. A torn last line (a crash in the middle
// of a write) is ignored; any other bad line is an error naming it.
func ReadResults(dir string) ([]Result, error) {
	f, err := os.Open(filepath.Join(dir, ResultsFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return decodeResults(f, filepath.Join(dir, ResultsFile))
}

func decodeResults(r io.Reader, name string) ([]Result, error) {
	var out []Result
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	var pending error
	line := 0
	for sc.Scan() {
		line++
		if pending != nil {
			return nil, pending
		}
		if len(sc.Bytes()) == 0 {
			continue
		}
		var res Result
		if err := json.Unmarshal(sc.Bytes(), &res); err != nil {
			pending = fmt.Errorf("%s:%d: not a result: %w", name, line, err)
			continue
		}
		out = append(out, res)
	}
	return out, sc.Err()
}

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
