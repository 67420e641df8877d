package diagnose

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/dbrig/dbrig/internal/units"
	"github.com/dbrig/dbrig/internal/workload"
)

// Point is the diagnosis of one point (one run of one combination).
type Point struct {
	Key    string         `json:"point"`
	Values map[string]any `json:"values,omitempty"`
	// Histogram names the distribution judged ("latency": every
	// transaction of the point).
	Histogram string `json:"histogram"`
	Signature
	MedianMS  float64 `json:"median_ms"`
	EdgeMS    float64 `json:"first_cluster_ms,omitempty"`
	SpacingMS float64 `json:"spacing_ms,omitempty"`
	// Types are each transaction type's share of stalled transactions,
	// when the point recorded a distribution per type.
	Types []TypeShare `json:"types,omitempty"`
	// Links are what the point's emulated links lost, for the reader to
	// set beside the signature.
	Links []LinkLoss `json:"links,omitempty"`
}

// TypeShare is one transaction type's part in a point's stalls.
type TypeShare struct {
	Type      string  `json:"type"`
	Samples   int64   `json:"samples"`
	Found     bool    `json:"found"`
	HitShare  float64 `json:"hit_share"`
	Over200ms int64   `json:"over_200ms"`
}

// LinkLoss is what one emulated link of a point lost.
type LinkLoss struct {
	Name            string  `json:"name"`
	Profile         string  `json:"profile"`
	Duplex          string  `json:"duplex,omitempty"`
	RTOMS           float64 `json:"rto_ms,omitempty"`
	LostSegments    int64   `json:"lost_segments"`
	ForwardSegments int64   `json:"forward_segments,omitempty"`
}

// Diagnosis is a run's diagnosis, point by point.
type Diagnosis struct {
	Dir    string  `json:"run"`
	Study  string  `json:"study,omitempty"`
	Points []Point `json:"points"`
	// Found is the number of points with the signature.
	Found int `json:"found"`
	// Without lists the points that recorded no distribution (failed,
	// skipped, or a workload that records none), with why.
	Without []string `json:"without_distribution,omitempty"`
}

// InputError is a run directory that cannot be diagnosed: missing,
// unreadable, or without any latency distribution.
type InputError struct{ Err error }

func (e *InputError) Error() string { return e.Err.Error() }
func (e *InputError) Unwrap() error { return e.Err }

func inputErr(format string, a ...any) error { return &InputError{Err: fmt.Errorf(format, a...)} }

// Run diagnoses the run in dir: every measured point's latency
// distribution, read from results.jsonl alone, so a study's run, a `dbrig
// load` run and a run against your own server read the same way.
func Run(dir string) (*Diagnosis, error) {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, inputErr("%s: no such directory", dir)
	case err != nil:
		return nil, inputErr("%s: %w", dir, err)
	case !fi.IsDir():
		return nil, inputErr("%s is a file, not a run directory", dir)
	}
	resultsPath := filepath.Join(dir, workload.ResultsFile)
	if _, err := os.Stat(resultsPath); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, inputErr("%s is not a dbrig run directory: it has no %s", dir, workload.ResultsFile)
		}
		return nil, inputErr("%s: %w", resultsPath, err)
	}
	results, err := workload.ReadResults(dir)
	if err != nil {
		return nil, inputErr("%w", err)
	}
	d := &Diagnosis{Dir: dir}
	for _, r := range results {
		if d.Study == "" {
			d.Study = r.Study
		}
		switch {
		case r.Error != "":
			d.Without = append(d.Without, r.Key+": failed")
			continue
		case r.Skipped != "":
			d.Without = append(d.Without, r.Key+": skipped")
			continue
		case r.Interrupted():
			d.Without = append(d.Without, r.Key+": interrupted (its partial figures are no result)")
			continue
		}
		p, ok := Result(r)
		if !ok {
			d.Without = append(d.Without, r.Key+": no latency distribution")
			continue
		}
		if p.Found {
			d.Found++
		}
		d.Points = append(d.Points, p)
	}
	if len(d.Points) == 0 {
		if len(results) == 0 {
			return nil, inputErr("%s has no finished point yet: nothing to diagnose", dir)
		}
		return nil, inputErr("%s: no point recorded a latency distribution (this workload records none, or every point failed): nothing to diagnose", dir)
	}
	return d, nil
}

// candidates lists the distributions of a result that may show stalls:
// every transaction's ("latency") when there is one, else each one but
// the open loop's start lag, which is the schedule's, not the server's.
func candidates(r workload.Result) []string {
	if h := r.Histograms["latency"]; h != nil {
		return []string{"latency"}
	}
	var out []string
	for _, name := range slices.Sorted(maps.Keys(r.Histograms)) {
		if name != "start_lag" && r.Histograms[name] != nil {
			out = append(out, name)
		}
	}
	return out
}

// Result diagnoses one point's result; false when it recorded no
// distribution.
func Result(r workload.Result) (Point, bool) {
	names := candidates(r)
	if len(names) == 0 {
		return Point{}, false
	}
	p := Point{Key: r.Key, Values: r.Values}
	ev := Evidence{Users: int64(r.Metrics["users"]), SecondMax: r.Series["max_ms"]}
	for i, name := range names {
		e := ev
		if name != "latency" {
			e.SecondMax = nil // the series is every transaction's
		}
		s := DetectWith(r.Histograms[name], e)
		if i == 0 || s.Found {
			p.Histogram, p.Signature = name, s
		}
		if s.Found {
			break
		}
	}
	p.MedianMS = ms(p.Median)
	if p.Found {
		p.EdgeMS, p.SpacingMS = ms(p.Edge), ms(p.Spacing)
	}
	if p.Histogram == "latency" {
		var slow []string
		var slowBeyond int64
		for _, name := range slices.Sorted(maps.Keys(r.Histograms)) {
			t, ok := strings.CutPrefix(name, "latency/")
			h := r.Histograms[name]
			if !ok || h == nil {
				continue
			}
			ts := DetectWith(h, Evidence{Users: ev.Users})
			p.Types = append(p.Types, TypeShare{Type: t, Samples: ts.Samples, Found: ts.Found, HitShare: ts.HitShare, Over200ms: ts.Over200ms})
			// A type that is slow by itself fills the cluster with its
			// ordinary time: hardly any of its transactions are fast. A
			// type that timeouts hit often (many round trips each) keeps
			// a fast part, the transactions no timeout hit.
			fast := ts.Samples - h.CountAbove(time.Duration(medianShare*float64(p.Edge)))
			if p.Found && ts.Samples > 0 && float64(fast) < slowTypeFast*float64(ts.Samples) {
				slow = append(slow, fmt.Sprintf("%s (median %s)", t, units.FormatDuration(ts.Median)))
				slowBeyond += h.CountAbove(p.Edge - windowAt(p.Edge, 0)/2)
			}
		}
		if p.Found && 2*slowBeyond >= p.Hit {
			p.Found = false
			p.Why = fmt.Sprintf("a cluster from %s, but it is mostly the ordinary time of transactions that are slow by themselves: %s",
				units.FormatDuration(p.Edge), strings.Join(slow, ", "))
		}
	}
	for _, l := range r.Links {
		if l.Mode != "link" {
			continue
		}
		p.Links = append(p.Links, LinkLoss{Name: l.Name, Profile: l.Profile, Duplex: l.Duplex, RTOMS: 1000 * l.RTOSeconds,
			LostSegments: l.LostSegments, ForwardSegments: l.ForwardSegments})
	}
	return p, true
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// WriteText writes the diagnosis for a person: the points with the
// signature first, each with its share of transactions hit, then the
// others with why not.
func (d *Diagnosis) WriteText(w io.Writer) error {
	var b strings.Builder
	head := d.Dir
	if d.Study != "" {
		head += " (" + d.Study + ")"
	}
	fmt.Fprintf(&b, "%s: %s diagnosed\n", head, plural(len(d.Points), "point", "points"))
	if d.Found == 0 {
		fmt.Fprintf(&b, "\nNo retransmission-stall signature in any point.\n")
	} else {
		fmt.Fprintf(&b, "\nRetransmission stalls in %d of %s:\n", d.Found, plural(len(d.Points), "point", "points"))
		for _, p := range d.Points {
			if !p.Found {
				continue
			}
			fmt.Fprintf(&b, "  %s\n", p.Key)
			fmt.Fprintf(&b, "      %s of %s transactions stalled (%s): clusters at %s × %s, the first from %s; %s over 200 ms, %s over 1 s; median %s\n",
				count(p.Hit), count(p.Samples), percent(p.HitShare), Multiples(p.Clusters), units.FormatDuration(p.Spacing),
				units.FormatDuration(p.Edge), count(p.Over200ms), count(p.Over1s), units.FormatDuration(p.Median))
			if p.Histogram != "latency" {
				fmt.Fprintf(&b, "      distribution: %s\n", p.Histogram)
			}
			if line := typesLine(p.Types); line != "" {
				fmt.Fprintf(&b, "      by transaction: %s\n", line)
			}
			for _, l := range p.Links {
				fmt.Fprintf(&b, "      %s\n", linkLine(l))
			}
		}
	}
	if d.Found < len(d.Points) {
		fmt.Fprintf(&b, "\nNo signature in %s:\n", plural(len(d.Points)-d.Found, "point", "points"))
		for _, p := range d.Points {
			if !p.Found {
				fmt.Fprintf(&b, "  %s: %s\n", p.Key, p.Why)
			}
		}
	}
	if len(d.Without) > 0 {
		fmt.Fprintf(&b, "\nNot diagnosed: %s.\n", strings.Join(d.Without, "; "))
	}
	if d.Found > 0 {
		fmt.Fprintf(&b, "\nWhat it means: the stalled transactions waited for TCP to retransmit a lost segment (a timeout of at least 200 ms, doubling when the retransmission is lost too), while the server answered the others in a few milliseconds. Look for what loses segments between client and server: a duplex mismatch (one end at half duplex: ethtool shows it, and late collisions in its counters), a faulty cable or port, a full queue on the path.\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func typesLine(ts []TypeShare) string {
	hit := slices.Clone(ts)
	slices.SortStableFunc(hit, func(a, b TypeShare) int {
		switch {
		case a.HitShare > b.HitShare:
			return -1
		case a.HitShare < b.HitShare:
			return 1
		}
		return 0
	})
	var parts []string
	for _, t := range hit {
		if t.Samples == 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %s", t.Type, percent(t.HitShare)))
	}
	return strings.Join(parts, ", ")
}

func linkLine(l LinkLoss) string {
	s := fmt.Sprintf("link %s (%s", l.Name, l.Profile)
	if l.Duplex != "" {
		s += ", duplex " + l.Duplex
	}
	s += ")"
	if l.RTOMS > 0 {
		s += fmt.Sprintf(", retransmission timeout %s", units.FormatDuration(time.Duration(l.RTOMS*float64(time.Millisecond))))
	}
	if l.ForwardSegments > 0 {
		return s + fmt.Sprintf(": %s segments lost, against %s sent client to server", count(l.LostSegments), count(l.ForwardSegments))
	}
	return s + fmt.Sprintf(": %s segments lost", count(l.LostSegments))
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
