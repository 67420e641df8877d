package doctor

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/dbrig/dbrig/internal/term"
)

// WriteJSON writes the report as indented JSON (the format is in
// docs/doctor.md).
func WriteJSON(w io.Writer, rep *Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// WriteText writes a table per host, the findings with their fixes, and a
// fleet summary when there are several hosts. Colour is used only when
// style is enabled.
func WriteText(w io.Writer, rep *Report, style term.Style) error {
	p := &printer{w: w, st: style, explained: map[string]bool{}}
	for i, h := range rep.Hosts {
		if i > 0 {
			p.line("")
		}
		p.host(h)
	}
	if rep.Fleet != nil {
		p.line("")
		p.fleet(rep)
	}
	return p.err
}

type printer struct {
	w   io.Writer
	st  term.Style
	err error
	// explained holds the checks whose why was printed: on a fleet,
	// later hosts refer back to it.
	explained map[string]bool
}

func (p *printer) line(format string, args ...any) {
	if p.err != nil {
		return
	}
	_, p.err = fmt.Fprintf(p.w, format+"\n", args...)
}

// pad fills s with spaces to width runes.
func pad(s string, width int) string {
	if n := utf8.RuneCountInString(s); n < width {
		return s + strings.Repeat(" ", width-n)
	}
	return s
}

// statusWord is the status as the table shows it: failures and warnings
// in capitals, so they stand out without colour too.
func statusWord(s Status) string {
	if s == Fail || s == Warn {
		return strings.ToUpper(string(s))
	}
	return string(s)
}

func (p *printer) colour(s Status, text string) string {
	switch s {
	case Fail:
		return p.st.Red(text)
	case Warn:
		return p.st.Yellow(text)
	case Pass:
		return p.st.Green(text)
	}
	return p.st.Dim(text)
}

func (p *printer) host(h HostReport) {
	p.line("%s", p.st.Bold("== "+hostHeading(h)+" =="))
	p.table(h)
	p.findings(h)
	c := h.Counts
	checks := "checks"
	if len(h.Checks) == 1 {
		checks = "check"
	}
	p.line("%s: %d %s: %d pass, %d warn, %d fail, %d info, %d skip (%d ms)",
		h.Name, len(h.Checks), checks, c.Pass, c.Warn, c.Fail, c.Info, c.Skip, h.ElapsedMS)
}

// hostHeading names a host and its facts, or says it was unreachable.
func hostHeading(h HostReport) string {
	head := h.Name
	var facts []string
	if h.Hostname != "" && h.Hostname != h.Name {
		facts = append(facts, h.Hostname)
	}
	if h.Kernel != "" {
		facts = append(facts, "Linux "+h.Kernel)
	}
	if h.CPUs > 0 {
		facts = append(facts, fmt.Sprintf("%d CPUs", h.CPUs))
	}
	if h.MemoryBytes > 0 {
		facts = append(facts, humanBytes(h.MemoryBytes)+" RAM")
	}
	if len(facts) > 0 {
		head += ": " + strings.Join(facts, ", ")
	}
	if !h.Reachable {
		head += ": UNREACHABLE"
	}
	return head
}

// table writes a host's checks, a section at a time, in columns.
func (p *printer) table(h HostReport) {
	wID, wSubj := len("CHECK"), len("SUBJECT")
	for _, r := range h.Checks {
		wID = max(wID, len(r.ID))
		wSubj = max(wSubj, utf8.RuneCountInString(r.Subject))
	}
	p.line("  %s  %s  %s  %s", pad("STATUS", 6), pad("CHECK", wID), pad("SUBJECT", wSubj), "OBSERVED")
	for _, sec := range Sections {
		var rows []Result
		for _, r := range h.Checks {
			if r.Section == sec {
				rows = append(rows, r)
			}
		}
		switch {
		case len(rows) > 0:
		case sec == SectionHost:
			continue // only remote hosts have a reachability row
		case !h.Reachable || h.dbOnly:
			continue
		case sec == SectionDatabase:
			p.line("%s", p.st.Bold(sec.Title()))
			p.line("  %s", p.st.Dim("not checked: give --db URI for the database settings"))
			continue
		}
		p.line("%s", p.st.Bold(sec.Title()))
		for _, r := range rows {
			p.line("  %s  %s  %s  %s", p.colour(r.Status, pad(statusWord(r.Status), 6)), pad(r.ID, wID), pad(r.Subject, wSubj), r.Observed)
		}
	}
}

// findings explains a host's warnings and failures; a check explained on
// a host before refers to it.
func (p *printer) findings(h HostReport) {
	var findings []Result
	for _, r := range h.Checks {
		if r.Status == Fail || r.Status == Warn {
			findings = append(findings, r)
		}
	}
	if len(findings) == 0 {
		return
	}
	p.line("%s", p.st.Bold(fmt.Sprintf("FINDINGS ON %s", h.Name)))
	for _, r := range findings {
		p.line("  %s %s", p.colour(r.Status, statusWord(r.Status)), strings.TrimSpace(r.ID+" "+r.Subject))
		p.field("observed", r.Observed)
		p.field("expected", r.Expected)
		why := r.Why
		if r.Source != "" {
			why += " [" + r.Source + "]"
		}
		if p.explained[r.ID] {
			why = "as for " + r.ID + " above"
		}
		p.explained[r.ID] = true
		p.field("why", why)
		p.field("fix", r.Fix)
	}
}

// field writes "label  text" wrapped at 100 columns under the label.
func (p *printer) field(label, text string) {
	if text == "" {
		return
	}
	const indent = 15
	lines := wrap(text, 100-indent)
	for i, l := range lines {
		if i == 0 {
			p.line("    %s%s", pad(label, indent-4), l)
		} else {
			p.line("%s%s", strings.Repeat(" ", indent), l)
		}
	}
}

// wrap breaks text into lines of at most width runes at spaces.
func wrap(text string, width int) []string {
	var lines []string
	cur := ""
	for _, word := range strings.Fields(text) {
		switch {
		case cur == "":
			cur = word
		case utf8.RuneCountInString(cur)+1+utf8.RuneCountInString(word) > width:
			lines = append(lines, cur)
			cur = word
		default:
			cur += " " + word
		}
	}
	if cur != "" {
		lines = append(lines, cur)
	}
	return lines
}

func (p *printer) fleet(rep *Report) {
	f := rep.Fleet
	failed, unreachable := 0, 0
	for _, h := range f.Hosts {
		if !h.Reachable {
			unreachable++
		} else if h.Status == Fail {
			failed++
		}
	}
	p.line("%s", p.st.Bold(fmt.Sprintf("== FLEET SUMMARY: %d hosts, %d with failed checks, %d unreachable ==", len(f.Hosts), failed, unreachable)))
	wHost := len("HOST")
	for _, h := range f.Hosts {
		wHost = max(wHost, utf8.RuneCountInString(h.Host))
	}
	p.line("  %s  %s  %s  %s  %s", pad("HOST", wHost), pad("RESULT", 11), "FAIL", "WARN", "FAILED CHECKS")
	for _, h := range f.Hosts {
		res := statusWord(h.Status)
		if !h.Reachable {
			res = "UNREACHABLE"
		}
		list := strings.Join(h.Failed, ", ")
		if list == "" {
			list = "-"
		}
		p.line("  %s  %s  %s  %s  %s", pad(h.Host, wHost), p.colour(h.Status, pad(res, 11)),
			pad(fmt.Sprint(len(h.Failed)), 4), pad(fmt.Sprint(len(h.Warned)), 4), list)
	}
	for _, r := range f.Checks {
		p.line("  %s  %s  %s", p.colour(r.Status, pad(statusWord(r.Status), 6)), r.ID+" across hosts:", r.Observed)
		if r.Status == Warn || r.Status == Fail {
			p.field("fix", r.Fix)
		}
	}
	if len(f.ByCheck) == 0 {
		p.line("  no check failed or warned on any host")
		return
	}
	wID := len("CHECK")
	for _, c := range f.ByCheck {
		wID = max(wID, len(c.ID))
	}
	p.line("")
	p.line("  %s  %s", pad("CHECK", wID), "FAILED ON / WARNED ON")
	for _, c := range f.ByCheck {
		var parts []string
		if len(c.FailedOn) > 0 {
			parts = append(parts, p.st.Red("fail: ")+strings.Join(c.FailedOn, ", "))
		}
		if len(c.WarnedOn) > 0 {
			parts = append(parts, p.st.Yellow("warn: ")+strings.Join(c.WarnedOn, ", "))
		}
		p.line("  %s  %s", pad(c.ID, wID), strings.Join(parts, "; "))
	}
}
