package report

import (
	"bufio"
	"fmt"
	"html/template"
	"io"
	"regexp"
	"strings"
	"time"
)

// pageTmpl is parsed once; html/template escapes every piece of text from
// the Doc for the context it lands in.
var pageTmpl = template.Must(template.New("report").Funcs(template.FuncMap{
	"verdictClass": verdictClass,
	"paragraphs":   paragraphs,
	"plural":       plural,
	"inc":          func(i int) int { return i + 1 },
}).Parse(pageTemplate))

// openRowsLimit is how many rows the table of every point may have and
// still be shown open; a longer one starts collapsed.
const openRowsLimit = 40

// WriteHTML writes d as one self-contained HTML page: the style, the
// echarts library and every chart's data are inlined, so the page opens
// without network access. Charts resize with the window.
func WriteHTML(w io.Writer, d *Doc) error {
	if d == nil {
		return fmt.Errorf("write HTML report: no document")
	}
	cs, err := buildCharts(d.Charts)
	if err != nil {
		return fmt.Errorf("write HTML report: %w", err)
	}
	v := pageView{
		Doc:        d,
		CSS:        template.CSS(pageCSS),
		EchartsJS:  template.JS(echartsJS),
		PageJS:     template.JS(pageJS),
		Charts:     cs,
		Points:     newTableView(d.Points),
		PointsOpen: len(d.Points.Rows) <= openRowsLimit,
		Counts:     countVerdicts(d.Findings),
		Generated:  formatTime(d.Generated),
	}
	if d.Predictions != nil {
		v.Predictions = newSectionView("predictions", *d.Predictions)
	}
	for i, s := range d.Sections {
		sv := sectionView{ID: fmt.Sprintf("section-%d", i+1), Section: s}
		for _, t := range s.Tables {
			sv.Tables = append(sv.Tables, newTableView(t))
		}
		v.Sections = append(v.Sections, sv)
	}
	bw := bufio.NewWriter(w)
	if err := pageTmpl.Execute(bw, v); err != nil {
		return fmt.Errorf("write HTML report: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write HTML report: %w", err)
	}
	return nil
}

type pageView struct {
	*Doc
	CSS       template.CSS
	EchartsJS template.JS
	PageJS    template.JS
	Charts    []chartData
	Sections  []sectionView
	// Predictions is nil when the report has none.
	Predictions *sectionView
	Points      tableView
	PointsOpen  bool
	Counts      verdictCounts
	Generated   string
}

type sectionView struct {
	ID string
	Section
	Tables []tableView
}

// tableView is a Table with each column marked numeric or not, so numbers
// line up on the right.
type tableView struct {
	Title, Note string
	Columns     []columnView
	Rows        [][]cellView
}

type columnView struct {
	Name string
	Num  bool
}

type cellView struct {
	Text string
	Num  bool
}

func newTableView(t Table) tableView {
	width := len(t.Columns)
	for _, r := range t.Rows {
		width = max(width, len(r))
	}
	num := make([]bool, width)
	for c := range width {
		seen, all := false, true
		for _, r := range t.Rows {
			if c >= len(r) || blankCell(r[c]) {
				continue
			}
			seen = true
			if !numericCell(r[c]) {
				all = false
				break
			}
		}
		num[c] = seen && all
	}
	v := tableView{Title: t.Title, Note: t.Note}
	for c := range width {
		name := ""
		if c < len(t.Columns) {
			name = t.Columns[c]
		}
		v.Columns = append(v.Columns, columnView{Name: name, Num: num[c]})
	}
	for _, r := range t.Rows {
		row := make([]cellView, width)
		for c := range width {
			if c < len(r) {
				row[c] = cellView{Text: r[c], Num: num[c]}
			} else {
				row[c] = cellView{Num: num[c]}
			}
		}
		v.Rows = append(v.Rows, row)
	}
	return v
}

// numericRe matches a number with an optional sign, spread, and unit:
// "12.5", "-3", "1,200", "1.2e+06", "±4.1%", "38 ms", "2.1×".
var numericRe = regexp.MustCompile(`^[-+±~≈−]?\s?(\d[\d,]*\.?\d*|\.\d+)([eE][-+]?\d+)?\s?(%|×|x|[a-zA-Zµμ/]{1,8}(/[a-z]{1,3})?)?$`)

func numericCell(s string) bool { return numericRe.MatchString(strings.TrimSpace(s)) }

func blankCell(s string) bool {
	switch strings.TrimSpace(s) {
	case "", "-", "–", "—", "n/a", "NaN":
		return true
	}
	return false
}

type verdictCounts struct {
	Reproduced, Differs, WithinNoise, NotMeasured, Other int
}

func countVerdicts(fs []Finding) verdictCounts {
	var c verdictCounts
	for _, f := range fs {
		switch f.Verdict {
		case Reproduced:
			c.Reproduced++
		case Differs:
			c.Differs++
		case WithinNoise:
			c.WithinNoise++
		case NotMeasured:
			c.NotMeasured++
		default:
			c.Other++
		}
	}
	return c
}

func verdictClass(v Verdict) string {
	switch v {
	case Reproduced:
		return "v-reproduced"
	case Differs:
		return "v-differs"
	case NotMeasured:
		return "v-not-measured"
	case WithinNoise:
		return "v-within-noise"
	}
	return "v-other"
}

var blankLineRe = regexp.MustCompile(`\n[ \t]*\n`)

// paragraphs splits text at blank lines.
func paragraphs(s string) []string {
	var out []string
	for _, p := range blankLineRe.Split(strings.TrimSpace(s), -1) {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

// formatTime writes a report's time in UTC, or nothing for the zero time.
func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

func newSectionView(id string, s Section) *sectionView {
	sv := &sectionView{ID: id, Section: s}
	for _, t := range s.Tables {
		sv.Tables = append(sv.Tables, newTableView(t))
	}
	return sv
}
