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

import "time"

// Doc is one report.
type Doc struct {
	Title    string
	Question string
	// Source names the study reproduced (seed file and title).
	Source string
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
	// Environment is the machine and software, as ordered key/value pairs.
	Environment [][2]string
	// Limits says plainly what this machine cannot show.
	Limits []string
	// Command is the exact command line of the run.
	Command   string
	Generated time.Time
}

// Verdict classifies a finding.
type Verdict string

const (
	Reproduced  Verdict = "reproduced"
	Differs     Verdict = "differs"
	NotMeasured Verdict = "not measured"
)

// Finding is one published finding beside what dbrig measured.
type Finding struct {
	Published string  // what the source found, in its words, with its figure
	Measured  string  // what dbrig measured here, with the figure
	Model     string  // what the model predicts
	Verdict   Verdict // reproduced / differs / not measured
	Why       string  // the verdict in words: why it holds or differs
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

// SeriesStyle is how a series is drawn.
type SeriesStyle string

const (
	Points SeriesStyle = "points" // one marker per measurement (every run)
	Line   SeriesStyle = "line"   // measured means joined
	Model  SeriesStyle = "model"  // a model's prediction: a dashed line
	Bars   SeriesStyle = "bars"
	Area   SeriesStyle = "area" // a time series, e.g. throughput over time
)

// Series is one named set of points.
type Series struct {
	Name   string
	Style  SeriesStyle
	Points []XY
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
