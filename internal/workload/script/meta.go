package script

import (
	"strconv"
	"strings"

	"github.com/dbrig/dbrig/internal/workload/script/expr"
)

// metaCommands lists what a script may say after a backslash, for the
// refusal of anything else.
const metaCommands = `\set, \sleep, \gset, \aset, \if, \elif, \else, \endif, \startpipeline and \endpipeline`

// refused are meta commands dbrig will not run, with what to write instead.
var refused = map[string]string{
	"shell":        `dbrig does not run shell commands from a script: compute the value with \set`,
	"setshell":     `dbrig does not run shell commands from a script: compute the value with \set, or read it from the database with \gset`,
	"syncpipeline": `\syncpipeline is pgbench 17's and dbrig follows pgbench 15's language: end the pipeline with \endpipeline and start another with \startpipeline`,
	"copy":         `\copy is psql's, not pgbench's: load data before the run (init = true makes pgbench's tables) or with INSERT`,
	"gexec":        `\gexec is psql's, not pgbench's: write the statements themselves into the script`,
	"crosstabview": `\crosstabview is psql's, not pgbench's: a load keeps no rows to show`,
	"watch":        `\watch is psql's, not pgbench's: the load repeats every script already`,
	"i":            `\i is psql's, not pgbench's: list the file as a script of its own (FILE@WEIGHT)`,
	"include":      `\include is psql's, not pgbench's: list the file as a script of its own (FILE@WEIGHT)`,
	"g":            `\g is psql's, not pgbench's: end the statement with a semicolon, or with \gset to keep its row`,
	"echo":         `\echo is psql's, not pgbench's: a load prints nothing per transaction`,
}

// meta adds a meta command.
func (b *builder) meta(it item) {
	name := strings.ToLower(it.name)
	text := firstLine(`\` + it.name + " " + it.args)
	text = strings.TrimRight(text, " ")
	switch name {
	case "set":
		b.set(it, text)
	case "sleep":
		b.sleep(it, text)
	case "gset", "aset":
		b.gset(it, name)
	case "if", "elif":
		kind := If
		if name == "elif" {
			kind = Elif
		}
		if it.args == "" {
			b.fail(it.line, `syntax error in command "%s": the condition is missing`, name)
			return
		}
		n, err := expr.Parse(it.args, b.p.slot)
		if err != nil {
			b.fail(it.line, `syntax error in command "%s": %v`, name, err)
			return
		}
		b.cmds = append(b.cmds, Command{Type: kind, Line: it.line, Text: text, Expr: n})
	case "else", "endif", "startpipeline", "endpipeline":
		if it.args != "" {
			b.fail(it.line, `unexpected argument in command "%s"`, name)
			return
		}
		kind := map[string]CommandType{"else": Else, "endif": Endif, "startpipeline": StartPipeline, "endpipeline": EndPipeline}[name]
		b.cmds = append(b.cmds, Command{Type: kind, Line: it.line, Text: text})
	default:
		if why := refused[name]; why != "" {
			b.fail(it.line, `\%s: %s`, it.name, why)
			return
		}
		b.fail(it.line, `invalid command \%s: a script's meta commands are %s`, it.name, metaCommands)
	}
}

// set parses \set NAME EXPRESSION.
func (b *builder) set(it item, text string) {
	target, rest := cutSpace(it.args)
	if target == "" || rest == "" {
		b.fail(it.line, `missing argument in command "set": write \set NAME EXPRESSION`)
		return
	}
	if !validVarName(target) {
		b.fail(it.line, `\set: invalid variable name %q`, target)
		return
	}
	n, err := expr.Parse(rest, b.p.slot)
	if err != nil {
		b.fail(it.line, `syntax error in command "set": %v`, err)
		return
	}
	b.cmds = append(b.cmds, Command{Type: Set, Line: it.line, Text: text, Target: b.p.slot(target), Expr: n})
}

// cutSpace splits s at its first run of white space.
func cutSpace(s string) (string, string) {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, " \t\r\f\v"); i >= 0 {
		return s[:i], strings.TrimSpace(s[i:])
	}
	return s, ""
}

// sleep parses \sleep N [us|ms|s], \sleep Nms or \sleep :var [unit].
func (b *builder) sleep(it item, text string) {
	words := strings.Fields(it.args)
	switch {
	case len(words) == 0:
		b.fail(it.line, `missing argument in command "sleep": write \sleep 10 ms`)
		return
	case len(words) > 2:
		b.fail(it.line, `too many arguments in command "sleep": write \sleep 10 ms`)
		return
	}
	c := Command{Type: Sleep, Line: it.line, Text: text, SleepSlot: -1, SleepUnit: 1_000_000}
	unit := ""
	if len(words) == 2 {
		unit = words[1]
	}
	if strings.HasPrefix(words[0], ":") {
		c.SleepSlot = b.p.slot(words[0][1:])
	} else {
		num := words[0]
		i := 0
		if i < len(num) && (num[i] == '+' || num[i] == '-') {
			i++
		}
		j := i
		for j < len(num) && num[j] >= '0' && num[j] <= '9' {
			j++
		}
		if j == i || (j < len(num) && len(words) == 2) {
			b.fail(it.line, `invalid sleep time, must be an integer (%s) in command "sleep"`, num)
			return
		}
		if j < len(num) {
			unit = num[j:]
		}
		n, err := strconv.ParseInt(num[:j], 10, 64)
		if err != nil {
			b.fail(it.line, `invalid sleep time %q in command "sleep"`, num)
			return
		}
		c.SleepN = n
	}
	switch strings.ToLower(unit) {
	case "", "s":
	case "ms":
		c.SleepUnit = 1000
	case "us":
		c.SleepUnit = 1
	default:
		b.fail(it.line, `unrecognized time unit, must be us, ms or s (%s) in command "sleep"`, unit)
		return
	}
	b.cmds = append(b.cmds, c)
}

// gset makes the SQL command before it keep its row in variables.
func (b *builder) gset(it item, name string) {
	if len(strings.Fields(it.args)) > 1 {
		b.fail(it.line, `too many arguments in command "%s": at most a prefix for the variables' names`, name)
		return
	}
	n := len(b.cmds)
	if n == 0 || b.cmds[n-1].Type != SQLCommand || b.cmds[n-1].SQL.Result != Discard {
		b.fail(it.line, `\%s must follow an SQL command`, name)
		return
	}
	q := b.cmds[n-1].SQL
	q.Result, q.Prefix = Gset, strings.TrimSpace(it.args)
	if name == "aset" {
		q.Result = Aset
	}
}

// checkConditionals checks the \if structure as pgbench does and links
// each branch to the next and to its \endif.
func (b *builder) checkConditionals() {
	type open struct {
		at, last int // the \if and the latest branch
		sawElse  bool
	}
	var stack []open
	for i := range b.cmds {
		c := &b.cmds[i]
		switch c.Type {
		case If:
			stack = append(stack, open{at: i, last: i})
		case Elif, Else:
			word := map[CommandType]string{Elif: "elif", Else: "else"}[c.Type]
			if len(stack) == 0 {
				b.fail(c.Line, `\%s without matching \if`, word)
				continue
			}
			top := &stack[len(stack)-1]
			if top.sawElse {
				b.fail(c.Line, `\%s after \else`, word)
				continue
			}
			b.cmds[top.last].Next = i
			top.last, top.sawElse = i, c.Type == Else
		case Endif:
			if len(stack) == 0 {
				b.fail(c.Line, `\endif without matching \if`)
				continue
			}
			top := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			b.cmds[top.last].Next = i
			for j := top.at; j < i; j++ {
				if k := b.cmds[j].Type; (k == Elif || k == Else) && b.cmds[j].End == 0 {
					b.cmds[j].End = i
				}
			}
		}
	}
	for _, o := range stack {
		b.fail(b.cmds[o.at].Line, `\if without matching \endif`)
	}
}

// checkPipelines refuses, before the run, what pgbench would abort a client
// for when it met it: a pipeline under the simple protocol, nested or
// unended, holding \gset or \aset, or crossing an \if's branches.
func (b *builder) checkPipelines() {
	start, startDepth, depth := -1, 0, 0
	for i, c := range b.cmds {
		switch c.Type {
		case If:
			depth++
		case Elif, Else, Endif:
			if start >= 0 && startDepth >= depth {
				b.fail(c.Line, `%s inside a pipeline started in its \if's branch: put \startpipeline and \endpipeline in the same branch`, strings.Fields(c.Text)[0])
			}
			if c.Type == Endif {
				depth--
			}
		case StartPipeline:
			switch {
			case b.p.Protocol == Simple:
				b.fail(c.Line, `\startpipeline: cannot use pipeline mode with the simple query protocol: set protocol = "extended" or "prepared"`)
			case start >= 0:
				b.fail(c.Line, `\startpipeline: already in pipeline mode (since line %d): end it with \endpipeline first`, b.cmds[start].Line)
			}
			start, startDepth = i, depth
		case EndPipeline:
			switch {
			case start < 0:
				b.fail(c.Line, `\endpipeline: not in pipeline mode: start one with \startpipeline`)
			case depth != startDepth:
				b.fail(c.Line, `\endpipeline in another \if branch than its \startpipeline (line %d): put both in the same branch`, b.cmds[start].Line)
			}
			start = -1
		case SQLCommand:
			if start >= 0 && c.SQL.Result != Discard {
				b.fail(c.Line, `\gset and \aset are not allowed in pipeline mode, whose results come at \endpipeline: move the query out of the pipeline`)
			}
		}
	}
	if start >= 0 {
		b.fail(b.cmds[start].Line, `end of script reached with pipeline open: end it with \endpipeline`)
	}
}
