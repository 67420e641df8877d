package report

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/mattn/go-runewidth"

	"github.com/dbrig/dbrig/internal/term"
)

// summaryWidth is the width the summary is laid out for when its output
// is not a terminal; on one, the terminal's width (60 to 160 columns).
const summaryWidth = 100

// summaryMaxFailures is how many failures the summary lists by name.
const summaryMaxFailures = 5

// WriteSummary writes a short summary of d for the terminal: the title, each
// finding with its verdict, how many points ran and failed, and what this
// machine cannot show. Verdicts are coloured when color is true.
func WriteSummary(w io.Writer, d *Doc, color bool) error {
	if d == nil {
		return fmt.Errorf("write summary: no document")
	}
	st := term.Style{Enabled: color}
	width := min(max(term.Width(w, summaryWidth), 60), 160)
	bw := bufio.NewWriter(w)
	p := func(format string, a ...any) { fmt.Fprintf(bw, format, a...) }

	p("%s\n", st.Bold(orDefault(d.Title, "dbrig report")))
	for _, l := range wrap(oneLine(d.Question), summaryWidth) {
		p("%s\n", l)
	}
	if d.Source != "" {
		for i, l := range wrap("Source: "+oneLine(d.Source), summaryWidth) {
			if i > 0 {
				l = "  " + l
			}
			p("%s\n", st.Dim(l))
		}
	}

	for _, w := range d.Warnings {
		p("\n")
		writeItem(bw, "WARNING: ", oneLine(w), st.Red)
	}

	if s := d.Predictions; s != nil {
		p("\n")
		writeItem(bw, "", s.Title+": "+oneLine(s.Text), nil)
		for _, t := range s.Tables {
			for _, row := range t.Rows {
				writeItem(bw, "  - ", predictionRow(t.Columns, row), nil)
			}
		}
	}

	p("\n%s\n", st.Bold("Findings"))
	if len(d.Findings) == 0 {
		p("  none published for this study\n")
	} else {
		for i, f := range d.Findings {
			if i > 0 {
				p("\n")
			}
			writeFinding(bw, st, i+1, f, width)
		}
	}

	p("\n")
	if line := d.Counts.Line(); line != "" {
		if d.Counts.Failed > 0 {
			line = st.Red(line)
		}
		p("%s %s\n", st.Bold("Points:"), line)
	}
	for i, f := range d.Failures {
		if i == summaryMaxFailures {
			p("  ... and %d more (see the report)\n", len(d.Failures)-summaryMaxFailures)
			break
		}
		writeItem(bw, "  - ", firstLine(f), st.Red)
	}
	for _, in := range d.Interrupted {
		writeItem(bw, "  - ", in, st.Yellow)
	}
	if len(d.Limits) > 0 {
		p("\n%s\n", st.Bold("What this machine cannot show"))
		for _, l := range d.Limits {
			writeItem(bw, "  - ", oneLine(l), nil)
		}
	}
	p("\n%s\n", st.Dim("Charts, every point and the environment are in report.html and report.md."))
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write summary: %w", err)
	}
	return nil
}

func orVerdict(v Verdict) Verdict {
	if v == "" {
		return "no verdict"
	}
	return v
}

func verdictStyle(st term.Style, v Verdict, s string) string {
	switch v {
	case Reproduced:
		return st.Green(s)
	case Differs:
		return st.Red(s)
	case NotMeasured, WithinNoise:
		return st.Yellow(s)
	}
	return s
}

// writeItem writes a bulleted item wrapped to the summary width.
func writeItem(w io.Writer, bullet, text string, style func(string) string) {
	for i, l := range wrap(text, summaryWidth-len(bullet)) {
		if style != nil {
			l = style(l)
		}
		if i == 0 {
			fmt.Fprintf(w, "%s%s\n", bullet, l)
		} else {
			fmt.Fprintf(w, "%s%s\n", strings.Repeat(" ", len(bullet)), l)
		}
	}
}

// wrap breaks text into lines of at most width columns at spaces, cutting
// words longer than a line.
func wrap(text string, width int) []string {
	text = strings.TrimSpace(text)
	if text == "" {
		return nil
	}
	width = max(width, 1)
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		for runewidth.StringWidth(word) > width {
			if line != "" {
				lines = append(lines, line)
				line = ""
			}
			head := runewidth.Truncate(word, width, "")
			if head == "" { // a character wider than the line
				_, n := utf8.DecodeRuneInString(word)
				head = word[:n]
			}
			lines = append(lines, head)
			word = word[len(head):]
		}
		switch {
		case line == "":
			line = word
		case runewidth.StringWidth(line)+1+runewidth.StringWidth(word) <= width:
			line += " " + word
		default:
			lines = append(lines, line)
			line = word
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// firstLine is a failure's first line: the rest (a server log's last
// lines) was printed when the point failed and is in the report, and
// folded into one paragraph it reads as noise.
func firstLine(s string) string {
	first, rest, more := strings.Cut(strings.TrimSpace(s), "\n")
	first = oneLine(first)
	if more && strings.TrimSpace(rest) != "" {
		first = strings.TrimSuffix(first, ":") + " (the rest is in report.md)"
	}
	return first
}

// oneLine folds whitespace, newlines included, into single spaces.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// writeFinding writes one finding as a block: its number and verdict, then
// what the source published, what was measured, the model and, unless it
// reproduced, why; each part wrapped to the width under its label, and a
// part per engine or combination (a line of its own in the finding) on a
// line of its own.
// labelWidth is the column of a finding's part labels ("published ").
const labelWidth = 11

func writeFinding(w io.Writer, st term.Style, n int, f Finding, width int) {
	head := fmt.Sprintf("  F%-3d %-14s ", n, orVerdict(f.Verdict))
	indent := strings.Repeat(" ", runewidth.StringWidth(head))
	first := true
	part := func(label, text string) {
		if strings.TrimSpace(text) == "" || text == "-" {
			return
		}
		for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
			for j, l := range wrap(oneLine(line), width-len(indent)-labelWidth) {
				lead, tag := indent, fmt.Sprintf("%-*s", labelWidth, label)
				if first {
					lead = verdictStyle(st, f.Verdict, head)
					first = false
				}
				if j > 0 || label == "" {
					tag = strings.Repeat(" ", labelWidth)
				} else {
					tag = st.Dim(tag)
				}
				fmt.Fprintf(w, "%s%s%s\n", lead, tag, l)
			}
			label = ""
		}
	}
	part("published", f.Published)
	part("measured", f.Measured)
	part("spread", f.Spread)
	part("model", f.Model)
	if f.Verdict != Reproduced {
		part("why", f.Why)
	}
}

// predictionRow writes a row of the predictions' table on one line: its
// cells but the first, each named by its column where the name helps.
func predictionRow(columns, row []string) string {
	var parts []string
	for i, cell := range row {
		if cell == "" || cell == "-" || cell == "none" {
			continue
		}
		switch name := columns[min(i, len(columns)-1)]; name {
		case "workload", "combination", "metric", "from":
			parts = append(parts, cell)
		default:
			parts = append(parts, name+" "+cell)
		}
	}
	return strings.Join(parts, ", ")
}
