package script

import (
	"fmt"

	"github.com/dbrig/dbrig/internal/workload/script/expr"
)

// Protocols are pgbench's query modes (-M): the simple query protocol with
// the variables' text in the SQL, the extended protocol with parameters,
// and the extended protocol with statements prepared once per connection.
const (
	Simple   = "simple"
	Extended = "extended"
	Prepared = "prepared"
)

// Program is a parsed set of scripts, ready to run: every variable any of
// them names has a slot, so a client keeps its variables in a slice.
type Program struct {
	Scripts  []*Script
	Protocol string
	// MariaDB: the scripts were read for MariaDB (its quoting, ?
	// placeholders, END as COMMIT).
	MariaDB bool
	// Vars names the slots.
	Vars  []string
	slots map[string]int
	// Statements counts the SQL commands.
	Statements int
	Defines    []Define
	// The slots of the variables pgbench sets for every client.
	ClientID, Scale, RandomSeed, DefaultSeed int
}

// Define is a variable given a value before the run (pgbench -D).
type Define struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// Script is one file (or built-in): one transaction type of the load.
type Script struct {
	Name     string
	Weight   int
	Builtin  bool
	Commands []Command
}

// CommandType is what a command does.
type CommandType uint8

const (
	SQLCommand CommandType = iota
	Set
	Sleep
	If
	Elif
	Else
	Endif
	StartPipeline
	EndPipeline
)

// Command is one SQL or meta command of a script.
type Command struct {
	Type CommandType
	Line int
	// Text is the command's first line, as pgbench -r shows it.
	Text string
	SQL  *SQL
	// Set: the variable's slot and the expression; If, Elif: the condition.
	Target int
	Expr   expr.Node
	// Sleep: a number of microseconds per unit, from a constant or a
	// variable's slot (-1 for a constant).
	SleepN    int64
	SleepSlot int
	SleepUnit int64
	// If, Elif: the command of the next branch (\elif, \else or \endif)
	// when the condition is false. Elif, Else: the \endif, where a branch
	// taken ends.
	Next int
	End  int
}

// Result is what a query's rows set: nothing, the last row of the last
// result (\gset) or of every result (\aset).
type Result uint8

const (
	Discard Result = iota
	Gset
	Aset
)

// SQL is an SQL command with its variables found.
type SQL struct {
	// ID numbers the program's SQL commands, for a session's prepared
	// statements.
	ID int
	// Pieces are the text around the variables: len(Vars)+1 of them.
	Pieces []string
	Vars   []int
	// Numbered is the text with $1, $2 ... (PostgreSQL) or ? (MariaDB) for
	// the variables, for the extended protocol and prepared statements.
	Numbered string
	Compound bool
	Result   Result
	Prefix   string
}

// slot returns a variable's slot, giving it one if new.
func (p *Program) slot(name string) int {
	if s, ok := p.slots[name]; ok {
		return s
	}
	p.slots[name] = len(p.Vars)
	p.Vars = append(p.Vars, name)
	return len(p.Vars) - 1
}

// Slot returns the slot of a variable the program names.
func (p *Program) Slot(name string) (int, bool) {
	s, ok := p.slots[name]
	return s, ok
}

func newProgram(protocol string, mariadb bool) *Program {
	p := &Program{Protocol: protocol, MariaDB: mariadb, slots: map[string]int{}}
	p.ClientID = p.slot("client_id")
	p.Scale = p.slot("scale")
	p.RandomSeed = p.slot("random_seed")
	p.DefaultSeed = p.slot(expr.DefaultSeed)
	return p
}

// ParseError is a problem in a script, at its file and line.
type ParseError struct {
	File string
	Line int
	Msg  string
}

func (e *ParseError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

// HasPipeline reports whether a script uses \startpipeline.
func (p *Program) HasPipeline() bool {
	for _, s := range p.Scripts {
		for _, c := range s.Commands {
			if c.Type == StartPipeline {
				return true
			}
		}
	}
	return false
}

// HasCompound reports whether a command joins statements with \;.
func (p *Program) HasCompound() bool {
	for _, s := range p.Scripts {
		for _, c := range s.Commands {
			if c.Type == SQLCommand && c.SQL.Compound {
				return true
			}
		}
	}
	return false
}
