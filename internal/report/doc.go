// Package report renders a study's findings: an HTML page (one
// self-contained file with interactive charts), the same as Markdown tables,
// and a short summary for the terminal.
//
// The package knows nothing of studies or workloads: a study builds a [Doc]
// from its results, and the renderers here lay it out. What a report says,
// in order: the question and its source; the findings (published, measured,
// model, verdict); the charts; every point; the environment; what this
// machine cannot show.
package report

import (
	"fmt"
	"time"
)

// Doc is one report.
type Doc struct {
	Title    string
	Question string
	// Source names the study reproduced (seed file and title).
	Source string
	// Warnings qualify measurements the report shows (a point whose users
	// found no connection slot), each with the point's headline figures:
	// said at the top, where the figures are read, not in a note.
	Warnings []string
	// Predictions open the report: the share of headline figures a model
	// predicted or fitted with the point held out, their error, and where
	// each workload's model misses most (nil: no modelled figure).
	Predictions *Section
	// Findings set each published finding beside our measurement.
	Findings []Finding
	Charts   []Chart
	// Sections hold further tables and text (e.g. per-experiment tables).
	Sections []Section
	// Points is the table of every point: parameters, each run, the trimmed
	// mean, spread, model, error.
	Points Table
	// Failures lists points that failed, with why.
	Failures []string
	// Skipped lists points that were not measured for a reason that is not
	// a failure (a target that cannot give the point's path), with why.
	Skipped []string
	// Interrupted lists points an interrupt cut short: what they measured
	// before the stop is kept in the run, labelled, and is no result.
	Interrupted []string
	// Counts are the plan's points and what became of them.
	Counts Counts
	// Environment is the machine and software, as ordered key/value pairs.
	Environment [][2]string
	// Limits says plainly what this machine cannot show.
	Limits []string
	// Command is the exact command line of the run.
	Command   string
	Generated time.Time
}

// Counts say what became of a plan's points. A point is one run of one
// combination of the sweep's values; the plan has Combinations × runs.
type Counts struct {
	Planned      int // points in the plan
	Combinations int // combinations of sweep values
	Runs         int // runs of each combination
	Measured     int // points with a measurement
	Failed       int // points that failed
	Skipped      int // points skipped for a reason (see Doc.Skipped)
	Missing      int // points not run yet (an interrupted run)
}

// Line says it in one sentence: "207 points (69 combinations × 3 runs):
// 205 measured, 1 failed, 1 not run yet"; "" when there was no plan.
func (c Counts) Line() string {
	if c.Planned == 0 {
		return "" // a document of no plan of its own (a comparison of two runs)
	}
	s := fmt.Sprintf("%s (%s × %s): %d measured", plural(c.Planned, "point", "points"),
		plural(c.Combinations, "combination", "combinations"), plural(c.Runs, "run", "runs"), c.Measured)
	if c.Failed > 0 {
		s += fmt.Sprintf(", %d failed", c.Failed)
	}
	if c.Skipped > 0 {
		s += fmt.Sprintf(", %d skipped", c.Skipped)
	}
	if c.Missing > 0 {
		s += fmt.Sprintf(", %d not run yet", c.Missing)
	}
	return s
}

// Verdict classifies a finding.
type Verdict string

const (
	Reproduced  Verdict = "reproduced"
	Differs     Verdict = "differs"
	NotMeasured Verdict = "not measured"
	// WithinNoise is a bound that falls inside the runs' own range: some
	// runs are on either side of it, so the runs neither show nor refute
	// it. It is never a pass.
	WithinNoise Verdict = "within noise"
)

// Finding is one published finding beside what dbrig measured.
type Finding struct {
	Published string  // what the source found, in its words, with its figure
	Measured  string  // what dbrig measured here, with the figure
	Model     string  // what the model predicts
	Verdict   Verdict // reproduced / differs / within noise / not measured
	Why       string  // the verdict in words: why it holds or differs
	// Spread is the runs' own spread the verdict was judged against
	// ("3 runs each: 309-953 Mbit/s"), so a reader can weigh it.
	Spread string
}

// Chart is one chart: series of points or lines against an axis.
type Chart struct {
	ID       string // unique in the report, used as the HTML element id
	Title    string
	Subtitle string
	XLabel   string
	YLabel   string
	XLog     bool
	YLog     bool
	// XCategories, when set, makes the x axis categorical: a point's X is
	// an index into it.
	XCategories []string
	Series      []Series
	// Note is a sentence under the chart saying how to read it.
	Note string
}

// Empty reports whether no series of the chart has a point: a chart of
// something that did not run, which the renderers leave out.
func (c Chart) Empty() bool {
	for _, s := range c.Series {
		if len(s.Points) > 0 {
			return false
		}
	}
	return true
}

// SeriesStyle is how a series is drawn.
type SeriesStyle string

const (
	Points SeriesStyle = "points" // one marker per measurement (every run)
	Line   SeriesStyle = "line"   // measured means joined
	Model  SeriesStyle = "model"  // a model's prediction: a dashed line
	Bars   SeriesStyle = "bars"
	Area   SeriesStyle = "area" // a time series, e.g. throughput over time
	// Box is a box plot per x: its points at one x are a distribution
	// (the runs of a point), drawn as the median, the quartiles' box and
	// whiskers to the least and the greatest.
	Box SeriesStyle = "box"
)

// Series is one named set of points.
type Series struct {
	Name   string
	Style  SeriesStyle
	Points []XY
	// Unit is what its values count ("tps", "ms"); empty means the chart's
	// YLabel. Series of different units on one axis are a defect the
	// browser check finds: the smaller lies flat under the larger's scale.
	Unit string
	// Metric is the one word its values measure ("tps", "response"): a
	// series named after another series' metric misleads, and the browser
	// check says so.
	Metric string
}

// XY is one point of a series.
type XY struct {
	X, Y float64
	// Label is shown on hover (e.g. the point's parameters).
	Label string
}

// Section is a titled block of text and tables.
type Section struct {
	Title  string
	Text   string
	Tables []Table
}

// Table is a table of text cells.
type Table struct {
	Title   string
	Note    string
	Columns []string
	Rows    [][]string
}
