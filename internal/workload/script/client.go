package script

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/dbrig/dbrig/internal/workload/script/expr"
)

// session is one connection of one engine that runs a program's SQL. A
// client calls it from one goroutine.
type session interface {
	// exec runs an SQL command with the client's variables and gives the
	// rows its Result keeps to c.keep.
	exec(c *client, q *SQL) error
	// startPipeline and endPipeline delimit a pipeline: exec then sends
	// without waiting, and endPipeline syncs and reads every result.
	startPipeline() error
	endPipeline(c *client) error
	// inTransaction reports whether a transaction block is open, when the
	// engine says so at no cost (PostgreSQL's ReadyForQuery); false else.
	inTransaction() bool
	// recover ends a pipeline and rolls back what an error left open.
	recover()
	// watch makes ctx's end interrupt a statement in flight.
	watch(ctx context.Context)
	// traffic is the bytes sent and received so far, and the round trips:
	// the times the client waited for the server.
	traffic() (out, in, trips int64)
	close() error
}

// client runs scripts for one virtual user: its variables, its random
// generator and its session.
type client struct {
	prog *Program
	sess session
	vars []expr.Value
	rand expr.Rand
	env  expr.Env
	// saved are the variables and generator at the start of a
	// transaction, for a retry to start from.
	saved     []expr.Value
	savedRand expr.Rand
	timer     *time.Timer
	// Scratch reused by sessions: parameters, a statement's text, the row
	// a \gset keeps and the slots its columns go to.
	params   [][]byte
	text     []byte
	row      [][]byte
	names    []string
	keepSlot map[*SQL]keepSlots
	// stats are this client's figures; clock says what to count.
	stats *clientStats
	clock *window
}

// keepSlots are the slots of a kept query's columns (-1: no script reads
// it), for the column names they were made for.
type keepSlots struct {
	names []string
	slots []int
}

// newClient makes the client with id (pgbench's :client_id) and its
// variables set as pgbench sets them: -D values, then client_id, scale,
// random_seed and default_seed unless -D gave them; its generator starts
// from clientSeed (see clientSeeds).
func newClient(prog *Program, id, scale int, seed, clientSeed uint64, defaultSeed int64, clock *window) *client {
	c := &client{prog: prog, vars: make([]expr.Value, len(prog.Vars)), saved: make([]expr.Value, len(prog.Vars)),
		keepSlot: map[*SQL]keepSlots{}, clock: clock, stats: newClientStats(prog)}
	for _, d := range prog.Defines {
		c.vars[prog.slots[d.Name]] = expr.TextValue(d.Value)
	}
	preset := func(slot int, v int64) {
		if c.vars[slot].Type == expr.Unset {
			c.vars[slot] = expr.IntValue(v)
		}
	}
	preset(prog.ClientID, int64(id))
	preset(prog.Scale, int64(scale))
	preset(prog.RandomSeed, int64(seed))
	preset(prog.DefaultSeed, defaultSeed)
	c.rand = expr.NewRand(clientSeed)
	c.env = expr.Env{Vars: c.vars, Rand: &c.rand}
	return c
}

// clientSeeds draws the clients' seeds and :default_seed as pgbench does:
// it seeds a base sequence with --random-seed, each client's generator
// from the base's next number in client order, then :default_seed, so that
// it depends on the number of clients.
func clientSeeds(seed uint64, clients int) ([]uint64, int64) {
	base := expr.NewRand(seed)
	seeds := make([]uint64, max(clients, 1))
	for i := range seeds {
		seeds[i] = base.Uint64()
	}
	return seeds, int64(base.Uint64())
}

// scriptError is a failure at a command of a script.
type scriptError struct {
	script, command int
	err             error
}

func (e *scriptError) Error() string { return e.err.Error() }
func (e *scriptError) Unwrap() error { return e.err }

// errOpenTransaction is a script that ended inside a transaction block.
var errOpenTransaction = errors.New("end of script reached without completing the last transaction")

// run runs script s once: its commands in order, branches taken as its
// conditions say. It returns the failing command with the error.
func (c *client) run(ctx context.Context, s int) error {
	cmds := c.prog.Scripts[s].Commands
	fail := func(pc int, err error) error { return &scriptError{script: s, command: pc, err: err} }
	for pc := 0; pc < len(cmds); {
		cmd := &cmds[pc]
		switch cmd.Type {
		case SQLCommand:
			start := time.Now()
			if err := c.sql(cmd.SQL); err != nil {
				return fail(pc, fmt.Errorf("line %d: %w", cmd.Line, err))
			}
			c.stats.statement(c.clock, s, pc, start)
			pc++
		case Set:
			v, err := cmd.Expr.Eval(&c.env)
			if err != nil {
				return fail(pc, fmt.Errorf("line %d: \\set %s: %w", cmd.Line, c.prog.Vars[cmd.Target], err))
			}
			c.vars[cmd.Target] = v
			pc++
		case Sleep:
			start := time.Now()
			if err := c.sleep(ctx, cmd); err != nil {
				return fail(pc, fmt.Errorf("line %d: \\sleep: %w", cmd.Line, err))
			}
			c.stats.sleep(c.clock, s, pc, start)
			pc++
		case If:
			next, err := c.branch(cmds, pc)
			if err != nil {
				return fail(pc, err)
			}
			pc = next
		case Elif, Else:
			pc = cmd.End + 1 // the branch before it ran: skip to its \endif
		case Endif:
			pc++
		case StartPipeline:
			if err := c.sess.startPipeline(); err != nil {
				return fail(pc, fmt.Errorf("line %d: \\startpipeline: %w", cmd.Line, err))
			}
			pc++
		case EndPipeline:
			start := time.Now()
			if err := c.sess.endPipeline(c); err != nil {
				return fail(pc, fmt.Errorf("line %d: \\endpipeline: %w", cmd.Line, err))
			}
			c.stats.statement(c.clock, s, pc, start)
			pc++
		}
	}
	if c.sess != nil && c.sess.inTransaction() {
		return fail(len(cmds)-1, errOpenTransaction)
	}
	return nil
}

// branch evaluates an \if and the \elif after it until one holds, and
// returns where to go on.
func (c *client) branch(cmds []Command, pc int) (int, error) {
	for {
		cmd := &cmds[pc]
		v, err := cmd.Expr.Eval(&c.env)
		if err != nil {
			return 0, fmt.Errorf("line %d: %s: %w", cmd.Line, cmd.Text, err)
		}
		if v.Truth() {
			return pc + 1, nil
		}
		if cmds[cmd.Next].Type != Elif {
			return cmd.Next + 1, nil
		}
		pc = cmd.Next
	}
}

// sql checks the command's variables and runs it.
func (c *client) sql(q *SQL) error {
	for _, slot := range q.Vars {
		if c.vars[slot].Type == expr.Unset {
			return fmt.Errorf("undefined variable %q", c.prog.Vars[slot])
		}
	}
	return c.sess.exec(c, q)
}

// sleep waits the command's time, or until ctx ends.
func (c *client) sleep(ctx context.Context, cmd *Command) error {
	n := cmd.SleepN
	if cmd.SleepSlot >= 0 {
		v := c.vars[cmd.SleepSlot]
		if v.Type == expr.Unset {
			return fmt.Errorf("undefined variable %q", c.prog.Vars[cmd.SleepSlot])
		}
		var ok bool
		if n, ok = atoi(string(v.AppendText(c.text[:0]))); !ok {
			return fmt.Errorf("invalid sleep time %q for variable %q", v.String(), c.prog.Vars[cmd.SleepSlot])
		}
	}
	d := time.Duration(n*cmd.SleepUnit) * time.Microsecond
	if d <= 0 {
		return nil
	}
	if c.timer == nil {
		c.timer = time.NewTimer(d)
	} else {
		c.timer.Reset(d)
	}
	select {
	case <-c.timer.C:
		return nil
	case <-ctx.Done():
		c.timer.Stop()
		return ctx.Err()
	}
}

// atoi is C's atoi as pgbench's \sleep reads a variable: spaces, a sign,
// the digits up to the first other character; false when no digit starts
// it.
func atoi(s string) (int64, bool) {
	i := 0
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n') {
		i++
	}
	j := i
	if j < len(s) && (s[j] == '+' || s[j] == '-') {
		j++
	}
	k := j
	for k < len(s) && s[k] >= '0' && s[k] <= '9' {
		k++
	}
	if k == j {
		return 0, false
	}
	n, err := strconv.ParseInt(s[i:k], 10, 64)
	return n, err == nil
}

// bind appends the text of the command's variables, as pgbench sends
// them: nil for NULL.
func (c *client) bind(q *SQL) [][]byte {
	for len(c.params) < len(q.Vars) {
		c.params = append(c.params, nil)
	}
	params := c.params[:len(q.Vars)]
	for i, slot := range q.Vars {
		v := c.vars[slot]
		if v.Type == expr.Null {
			params[i] = nil
			continue
		}
		params[i] = v.AppendText(params[i][:0])
		if params[i] == nil {
			params[i] = []byte{}
		}
	}
	return params
}

// textOf is the command with its variables' text in place, as pgbench's
// simple protocol sends it.
func (c *client) textOf(q *SQL) []byte {
	b := append(c.text[:0], q.Pieces[0]...)
	for i, slot := range q.Vars {
		b = c.vars[slot].AppendText(b)
		b = append(b, q.Pieces[i+1]...)
	}
	c.text = b
	return b
}

// keep stores a kept row's columns in the variables named after them
// (with the command's prefix); a column no script reads is dropped.
func (c *client) keep(q *SQL, names []string, row [][]byte) error {
	ks, ok := c.keepSlot[q]
	if !ok || !slices.Equal(ks.names, names) {
		ks = keepSlots{names: append([]string(nil), names...), slots: make([]int, len(names))}
		for i, n := range names {
			name := q.Prefix + n
			if !validVarName(name) {
				return fmt.Errorf("error storing into variable %q: invalid variable name", name)
			}
			slot, ok := c.prog.slots[name]
			if !ok {
				slot = -1
			}
			ks.slots[i] = slot
		}
		c.keepSlot[q] = ks
	}
	for i, slot := range ks.slots {
		if slot >= 0 {
			c.vars[slot] = expr.TextValue(string(row[i]))
		}
	}
	return nil
}

// copyRow copies a row's values into the client's reused buffers.
func (c *client) copyRow(vals [][]byte) [][]byte {
	for len(c.row) < len(vals) {
		c.row = append(c.row, nil)
	}
	row := c.row[:len(vals)]
	for i, v := range vals {
		row[i] = append(row[i][:0], v...)
	}
	return row
}

// save and restore keep a transaction's starting point for its retries:
// pgbench starts a retry from the variables and random state the first
// try started from.
func (c *client) save() {
	copy(c.saved, c.vars)
	c.savedRand = c.rand
}

func (c *client) restore(withRand bool) {
	copy(c.vars, c.saved)
	if withRand {
		c.rand = c.savedRand
	}
}
