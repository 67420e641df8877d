package script

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// Source is one script's text and how to name it.
type Source struct {
	Name    string `json:"name"` // the file as given, or a built-in's name
	Text    string `json:"text"`
	Weight  int    `json:"weight"`
	Builtin bool   `json:"builtin,omitempty"`
}

// Options are what parsing depends on besides the scripts.
type Options struct {
	Protocol string
	// MariaDB reads the scripts for MariaDB: backslashes escape in quotes,
	// backquotes quote names, variables become ? and a bare END is COMMIT.
	MariaDB bool
	Defines []Define
}

// maxScripts is the most scripts a program holds, as pgbench's
// MAX_SCRIPTS; maxVarsPerCommand is pgbench's limit of variable uses in
// one statement.
const (
	maxScripts        = 128
	maxVarsPerCommand = 255
)

// Parse reads scripts into a program, reporting every problem with its
// file and line.
func Parse(sources []Source, opts Options) (*Program, error) {
	if opts.Protocol == "" {
		opts.Protocol = Simple
	}
	p := newProgram(opts.Protocol, opts.MariaDB)
	var errs []error
	if len(sources) > maxScripts {
		errs = append(errs, fmt.Errorf("%d scripts: at most %d, as pgbench", len(sources), maxScripts))
	}
	total := 0
	for _, src := range sources {
		s, serrs := p.parseScript(src)
		errs = append(errs, serrs...)
		if s != nil {
			p.Scripts = append(p.Scripts, s)
		}
		total += src.Weight
	}
	if len(sources) > 0 && total == 0 {
		errs = append(errs, errors.New("total script weight must not be zero: give a script a weight above 0 (FILE@1)"))
	}
	for _, d := range opts.Defines {
		if !validVarName(d.Name) {
			errs = append(errs, fmt.Errorf("define %q: invalid variable name", d.Name))
			continue
		}
		p.Defines = append(p.Defines, Define{d.Name, d.Value})
		p.slot(d.Name)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return p, nil
}

var varNameRE = regexp.MustCompile(`^[A-Za-z_\x80-\xff][A-Za-z0-9_\x80-\xff]*$`)

// validVarName is pgbench's rule: letters (any non-ASCII too), digits and
// underscores, not starting with a digit.
func validVarName(name string) bool { return varNameRE.MatchString(name) }

// builder collects one script's commands.
type builder struct {
	p    *Program
	src  Source
	cmds []Command
	errs []error
}

func (b *builder) fail(line int, format string, a ...any) {
	b.errs = append(b.errs, &ParseError{File: b.src.Name, Line: line, Msg: fmt.Sprintf(format, a...)})
}

func (p *Program) parseScript(src Source) (*Script, []error) {
	b := &builder{p: p, src: src}
	for _, it := range scan(src.Text, p.MariaDB) {
		if it.meta {
			b.meta(it)
		} else {
			b.sql(it)
		}
	}
	if len(b.cmds) == 0 && len(b.errs) == 0 {
		b.fail(1, "empty command list for script %q", src.Name)
	}
	b.checkConditionals()
	b.checkPipelines()
	if len(b.errs) > 0 {
		return nil, b.errs
	}
	return &Script{Name: src.Name, Weight: src.Weight, Builtin: src.Builtin, Commands: b.cmds}, nil
}

// firstLine is a command's first line, at most 127 bytes, as pgbench shows
// it in its per-statement report.
func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	s = strings.TrimRight(s, "\r")
	if len(s) > 127 {
		s = s[:127]
	}
	return s
}

var (
	copyRE = regexp.MustCompile(`(?is)^\s*copy\b.*\b(stdin|stdout)\b`)
	endRE  = regexp.MustCompile(`(?i)^\s*end(\s+(work|transaction))?\s*;?\s*$`)
)

// sql adds an SQL command.
func (b *builder) sql(it item) {
	if copyRE.MatchString(it.text) {
		b.fail(it.line, "COPY FROM STDIN and TO STDOUT need a data stream a script has not: load data before the run (init = true makes pgbench's tables) or with INSERT")
		return
	}
	if len(it.varNames) > maxVarsPerCommand {
		b.fail(it.line, "statement has too many variables (at most %d, as pgbench)", maxVarsPerCommand)
		return
	}
	q := &SQL{ID: b.p.Statements, Pieces: it.pieces, Compound: it.compound}
	b.p.Statements++
	if b.p.MariaDB && endRE.MatchString(it.text) {
		// MariaDB has no END statement; pgbench's END is COMMIT.
		q.Pieces = []string{"COMMIT"}
	}
	var num strings.Builder
	for i, name := range it.varNames {
		q.Vars = append(q.Vars, b.p.slot(name))
		num.WriteString(q.Pieces[i])
		if b.p.MariaDB {
			num.WriteByte('?')
		} else {
			num.WriteString("$" + strconv.Itoa(i+1))
		}
	}
	num.WriteString(q.Pieces[len(q.Pieces)-1])
	q.Numbered = num.String()
	b.cmds = append(b.cmds, Command{Type: SQLCommand, Line: it.line, Text: firstLine(it.text), SQL: q})
}
