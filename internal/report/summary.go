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

// summaryWidth is the terminal width the summary is laid out for.
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

	p("\n%s\n", st.Bold("Findings"))
	if len(d.Findings) == 0 {
		p("  none published for this study\n")
	} else {
		rows := [][]string{{"#", "Verdict", "Published", "Measured here", "Model"}}
		for i, f := range d.Findings {
			rows = append(rows, []string{fmt.Sprintf("F%d", i+1), string(orVerdict(f.Verdict)), oneLine(f.Published), oneLine(f.Measured), oneLine(f.Model)})
		}
		colour := func(row, col int, padded string) string {
			switch {
			case row == 0:
				return st.Bold(padded)
			case col == 1:
				return verdictStyle(st, d.Findings[row-1].Verdict, padded)
			}
			return padded
		}
		writeTable(bw, rows, []bool{false, false, true, true, true}, "  ", summaryWidth, colour)
		for i, f := range d.Findings {
			if f.Verdict != Differs || f.Why == "" {
				continue
			}
			head := fmt.Sprintf("  F%d differs: ", i+1)
			for j, l := range wrap(oneLine(f.Why), summaryWidth-len(head)) {
				if j == 0 {
					p("%s%s\n", verdictStyle(st, Differs, head), l)
				} else {
					p("%s%s\n", strings.Repeat(" ", len(head)), l)
				}
			}
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

// writeTable writes rows (the first is the header) as an aligned plain-text
// table no wider than width. Columns marked in flex share what is left
// after the fixed ones and wrap their text; style colours a padded cell
// (so escapes never disturb alignment).
func writeTable(w io.Writer, rows [][]string, flex []bool, indent string, width int, style func(row, col int, padded string) string) {
	const gap = "  "
	ncol := len(flex)
	widths := make([]int, ncol)
	for _, r := range rows {
		for c := 0; c < ncol && c < len(r); c++ {
			widths[c] = max(widths[c], runewidth.StringWidth(r[c]))
		}
	}
	avail := width - runewidth.StringWidth(indent) - len(gap)*(ncol-1)
	total := 0
	for _, x := range widths {
		total += x
	}
	// Narrow the widest flexible column one step at a time until the table
	// fits, so the columns end up as even as their contents allow.
	const minFlex = 12
	for total > avail {
		widest := -1
		for c := range ncol {
			if flex[c] && widths[c] > minFlex && (widest < 0 || widths[c] > widths[widest]) {
				widest = c
			}
		}
		if widest < 0 {
			break
		}
		widths[widest]--
		total--
	}
	rule := make([]string, ncol)
	for c := range ncol {
		rule[c] = strings.Repeat("-", widths[c])
	}
	all := append([][]string{rows[0], rule}, rows[1:]...)
	for ri, r := range all {
		cells := make([][]string, ncol)
		height := 1
		for c := range ncol {
			text := ""
			if c < len(r) {
				text = r[c]
			}
			cells[c] = wrap(text, widths[c])
			height = max(height, len(cells[c]))
		}
		styleRow := ri - 1 // the rule is not styled; data rows count from 1
		if ri == 0 {
			styleRow = 0
		}
		for line := range height {
			var b strings.Builder
			b.WriteString(indent)
			for c := range ncol {
				text := ""
				if line < len(cells[c]) {
					text = cells[c][line]
				}
				padded := text
				if c < ncol-1 {
					padded = runewidth.FillRight(text, widths[c])
				}
				if style != nil && ri != 1 && text != "" {
					padded = style(styleRow, c, padded)
				}
				b.WriteString(padded)
				if c < ncol-1 {
					b.WriteString(gap)
				}
			}
			fmt.Fprintln(w, strings.TrimRight(b.String(), " "))
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
