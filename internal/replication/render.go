package replication

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// A command buffer holds consecutive commands rendered for the subscriber
// by the reader; the writer sends it in one write and waits for one answer:
// it is one Sync group of the extended query protocol. Changes are executed
// through prepared statements with text parameters (each parameter is the
// value's text form exactly as the publisher's output function wrote it, so
// the subscriber's input function reads it back unchanged); a run of inserts
// into one table is one multi-row INSERT.
type buffer struct {
	msg []byte
	// stmts describe the buffer's Execute messages, in order.
	stmts []stmtInfo
	// commits are the subscriber transactions this buffer commits.
	commits []commitPoint
	// cmds counts the data commands in the buffer.
	cmds int64
	seq  int64
	// walInsert and walFlush are the subscriber's WAL positions read at the
	// end of a buffer that commits (see durability).
	walInsert, walFlush LSN
	// flushProbe: the buffer is a synchronous commit that makes every
	// earlier commit of the session durable.
	flushProbe bool
}

func (b *buffer) reset(seq int64) {
	b.msg = b.msg[:0]
	b.stmts = b.stmts[:0]
	b.commits = b.commits[:0]
	b.cmds, b.seq = 0, seq
	b.walInsert, b.walFlush, b.flushProbe = 0, 0, false
}

// size is what the buffer sends so far.
func (b *buffer) size() int { return len(b.msg) }

// finish ends the buffer's Sync group and returns the bytes to send.
func (b *buffer) finish() []byte {
	b.msg = append(b.msg, 'S', 0, 0, 0, 4)
	return b.msg
}

// Frontend messages of the extended query protocol, encoded in place.

// appendParse prepares the statement name.
func appendParse(dst []byte, name, sql string) []byte {
	at := len(dst)
	dst = append(dst, 'P', 0, 0, 0, 0)
	dst = append(dst, name...)
	dst = append(dst, 0)
	dst = append(dst, sql...)
	dst = append(dst, 0, 0, 0) // terminator, no parameter types
	putLen(dst, at)
	return dst
}

// params are the parameters of one Bind message: each value's length and
// bytes, and its format (text, or binary when the log reader asked
// pgoutput for binary values).
type params struct {
	data []byte
	fmts []byte // 0 text, 1 binary, one per parameter
	n    int
	bin  bool
}

func (p *params) reset() { p.data, p.fmts, p.n, p.bin = p.data[:0], p.fmts[:0], 0, false }

// add appends a column value ('n' is NULL, 'b' binary, 't' text).
func (p *params) add(v tupleValue) {
	if v.Kind == 'n' {
		p.data = append(p.data, 0xff, 0xff, 0xff, 0xff)
		p.fmts = append(p.fmts, 0)
	} else {
		p.data = binary.BigEndian.AppendUint32(p.data, uint32(len(v.Data)))
		p.data = append(p.data, v.Data...)
		if v.Kind == 'b' {
			p.fmts = append(p.fmts, 1)
			p.bin = true
		} else {
			p.fmts = append(p.fmts, 0)
		}
	}
	p.n++
}

// addText appends a text value.
func (p *params) addText(s string) {
	p.data = binary.BigEndian.AppendUint32(p.data, uint32(len(s)))
	p.data = append(p.data, s...)
	p.fmts = append(p.fmts, 0)
	p.n++
}

// appendBindExecute binds the statement name to p, then executes it.
func appendBindExecute(dst []byte, name string, p *params) []byte {
	at := len(dst)
	dst = append(dst, 'B', 0, 0, 0, 0, 0) // unnamed portal
	dst = append(dst, name...)
	dst = append(dst, 0)
	if p == nil {
		dst = append(dst, 0, 0, 0, 0)
	} else {
		if p.bin {
			dst = binary.BigEndian.AppendUint16(dst, uint16(p.n))
			for _, f := range p.fmts {
				dst = append(dst, 0, f)
			}
		} else {
			dst = append(dst, 0, 0)
		}
		dst = binary.BigEndian.AppendUint16(dst, uint16(p.n))
		dst = append(dst, p.data...)
	}
	dst = append(dst, 0, 0) // result formats: text
	putLen(dst, at)
	return append(dst, 'E', 0, 0, 0, 9, 0, 0, 0, 0, 0)
}

// putLen writes the length of the message that starts at at.
func putLen(msg []byte, at int) {
	binary.BigEndian.PutUint32(msg[at+1:], uint32(len(msg)-at-1))
}

// stmtKind says what a statement of a buffer does.
type stmtKind byte

const (
	stmtControl  stmtKind = iota // BEGIN, set_config, guard, advance, COMMIT, the flush probe
	stmtPosition                 // the subscriber's WAL positions after the buffer's commits
	stmtInsert
	stmtUpdate
	stmtDelete
	stmtTruncate
)

// stmtInfo describes one statement of a buffer, to say which commands
// failed when the subscriber refuses it.
type stmtInfo struct {
	kind        stmtKind
	first, last int64 // command ids
	rows        int
	table       string
	xactLSN     LSN
	what        string // for control statements
}

func (s stmtInfo) describe() string {
	switch s.kind {
	case stmtInsert:
		return fmt.Sprintf("INSERT into %s, %d rows", s.table, s.rows)
	case stmtUpdate:
		return "UPDATE of " + s.table
	case stmtDelete:
		return "DELETE from " + s.table
	case stmtTruncate:
		return "TRUNCATE of " + s.table
	}
	return s.what
}

// commitPoint is a subscriber commit: after it, the subscription stands at
// command cmd (the last source transaction's Commit row).
type commitPoint struct {
	cmd   int64
	lsn   LSN
	local LSN // the subscriber's WAL insert position just after the commit
	time  time.Time
	xacts int64
	cmds  int64
}

// relInfo is a published relation as the agent applies it.
type relInfo struct {
	rel    *relation
	table  TableName
	quoted string
	name   string   // prefix of its prepared statements' names
	cols   []string // quoted column names
	keyIdx []int    // positions of the key columns in rel.Columns
	// maxRows bounds the rows of one INSERT (65,535 parameters).
	maxRows int
}

func newRelInfo(rel *relation, keys map[TableName][]string, version int64) (*relInfo, error) {
	ri := &relInfo{rel: rel, table: TableName{Schema: rel.Namespace, Name: rel.Name}}
	ri.quoted = ri.table.Quoted()
	ri.name = "dbrig_" + strconv.FormatUint(uint64(rel.ID), 10) + "v" + strconv.FormatInt(version, 10)
	ri.cols = make([]string, len(rel.Columns))
	for i, c := range rel.Columns {
		ri.cols[i] = quoteIdent(c.Name)
	}
	ri.maxRows = min(256, 65535/max(len(ri.cols), 1))
	key, ok := keys[ri.table]
	if ok && len(key) > 0 {
		for _, k := range key {
			found := false
			for i, c := range rel.Columns {
				if c.Name == k {
					ri.keyIdx = append(ri.keyIdx, i)
					found = true
				}
			}
			if !found {
				return nil, fmt.Errorf("table %s: primary key column %s is not published", ri.table, k)
			}
		}
	} else {
		for i, c := range rel.Columns {
			if c.Key {
				ri.keyIdx = append(ri.keyIdx, i)
			}
		}
	}
	if len(ri.keyIdx) == 0 {
		return nil, fmt.Errorf("table %s has no key to identify rows by", ri.table)
	}
	return ri, nil
}

// insertSQL is the INSERT of n rows.
func (ri *relInfo) insertSQL(n int) string {
	var b strings.Builder
	b.WriteString("INSERT INTO " + ri.quoted + " (" + strings.Join(ri.cols, ", ") + ") VALUES ")
	p := 1
	for r := 0; r < n; r++ {
		if r > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('(')
		for c := range ri.cols {
			if c > 0 {
				b.WriteByte(',')
			}
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(p))
			p++
		}
		b.WriteByte(')')
	}
	return b.String()
}

// updateSQL is the UPDATE setting the columns set[i] is true for.
func (ri *relInfo) updateSQL(set []bool) string {
	var b strings.Builder
	b.WriteString("UPDATE " + ri.quoted + " SET ")
	p := 1
	for i, s := range set {
		if !s {
			continue
		}
		if p > 1 {
			b.WriteByte(',')
		}
		b.WriteString(ri.cols[i] + "=$" + strconv.Itoa(p))
		p++
	}
	if p == 1 { // nothing changed but TOAST values: touch the key
		k := ri.cols[ri.keyIdx[0]]
		b.WriteString(k + "=" + k)
	}
	ri.where(&b, p)
	return b.String()
}

func (ri *relInfo) deleteSQL() string {
	var b strings.Builder
	b.WriteString("DELETE FROM " + ri.quoted)
	ri.where(&b, 1)
	return b.String()
}

func (ri *relInfo) where(b *strings.Builder, p int) {
	b.WriteString(" WHERE ")
	for n, i := range ri.keyIdx {
		if n > 0 {
			b.WriteString(" AND ")
		}
		b.WriteString(ri.cols[i] + "=$" + strconv.Itoa(p+n))
	}
}

// Statements of the subscriber's bookkeeping, prepared once per run.
var controlSQL = map[string]string{
	"dbrig_begin":   "BEGIN",
	"dbrig_commit":  "COMMIT",
	"dbrig_token":   "SELECT set_config('dbrig.batch', $1, true)",
	"dbrig_guard":   "SELECT " + Schema + ".guard($1)",
	"dbrig_advance": "SELECT " + Schema + ".advance($1, $2, $3, $4, $5, $6)",
	// What durability needs: the positions, and the flush probe's write.
	"dbrig_position":     "SELECT pg_current_wal_insert_lsn(), pg_current_wal_flush_lsn()",
	"dbrig_commit_flush": "SELECT set_config('synchronous_commit', 'local', true)",
	"dbrig_probe":        "UPDATE " + Schema + ".subscription SET applied_at = applied_at WHERE name = $1",
}

// renderer turns the command stream into buffers. It decides where
// subscriber transactions begin and commit: every commitBatch source
// transactions, never inside one.
type renderer struct {
	subscription string
	commitBatch  int
	bufferSize   int
	guard        bool // pipelined: each buffer continuing a transaction checks it is still there
	runID        string

	rels     map[uint32]*relInfo
	keys     map[TableName][]string
	versions int64
	prepared map[string]bool // statements prepared on the writer's connection

	inTxn      bool
	token      string
	txnSeq     int64
	applied    int64 // the subscription's command before the open transaction (advance's p_from)
	xacts      int64 // complete source transactions in the open subscriber transaction
	cmdsInTxn  int64
	lastCommit commitPoint

	// The open multi-row INSERT, if any: its rows' parameters so far.
	group     *relInfo
	groupRows int
	groupArgs params
	groupInfo stmtInfo

	scratch params
	cur     *buffer
}

// valueSize estimates the encoded size of a tuple.
func valueSize(vals []tupleValue) int {
	n := 16
	for _, v := range vals {
		n += len(v.Data) + 4
	}
	return n
}

// room reports whether the current buffer can take about n more bytes. A
// buffer without commands takes any command, however large (a guard or a
// BEGIN does not count).
func (r *renderer) room(n int) bool {
	if r.cur.cmds == 0 && len(r.cur.commits) == 0 && r.group == nil {
		return true
	}
	return r.cur.size()+len(r.groupArgs.data)+2*r.groupArgs.n+n <= r.bufferSize
}

// exec appends the execution of a prepared statement (preparing it first if
// this run has not).
func (r *renderer) exec(name string, sql func() string, p *params, info stmtInfo) {
	b := r.cur
	if !r.prepared[name] {
		b.msg = appendParse(b.msg, name, sql())
		r.prepared[name] = true
	}
	b.msg = appendBindExecute(b.msg, name, p)
	b.stmts = append(b.stmts, info)
}

// control executes one of the bookkeeping statements.
func (r *renderer) control(name, what string, args ...string) {
	p := &r.scratch
	p.reset()
	for _, a := range args {
		p.addText(a)
	}
	r.exec(name, func() string { return controlSQL[name] }, p, stmtInfo{kind: stmtControl, what: what})
}

// startBuffer prepares a fresh buffer: inside an open transaction a
// pipelined writer first checks that the transaction still stands.
func (r *renderer) startBuffer(b *buffer) {
	r.cur = b
	if r.inTxn && r.guard {
		r.control("dbrig_guard", "check the open transaction", r.token)
	}
}

// closeGroup executes the open multi-row INSERT.
func (r *renderer) closeGroup() {
	if r.group == nil {
		return
	}
	ri, n := r.group, r.groupRows
	name := ri.name + "_i" + strconv.Itoa(n)
	r.exec(name, func() string { return ri.insertSQL(n) }, &r.groupArgs, r.groupInfo)
	r.group, r.groupRows = nil, 0
	r.groupArgs.reset()
}

// seal ends the buffer's statements: a buffer that commits reads the
// subscriber's WAL positions after its commits.
func (r *renderer) seal() {
	r.closeGroup()
	if len(r.cur.commits) == 0 {
		return
	}
	r.exec("dbrig_position", func() string { return controlSQL["dbrig_position"] }, nil,
		stmtInfo{kind: stmtPosition, what: "read the subscriber's WAL positions"})
}

// flushProbe renders a transaction that commits synchronously, between
// subscriber transactions: once it returns, every commit the session made
// before it is durable.
func (r *renderer) flushProbe() {
	r.control("dbrig_begin", "BEGIN the flush probe")
	r.control("dbrig_commit_flush", "make the flush probe's commit synchronous")
	r.control("dbrig_probe", "write the flush probe", r.subscription)
	r.control("dbrig_commit", "COMMIT the flush probe")
	r.cur.flushProbe = true
}

// begin opens a subscriber transaction, tagged for the guard.
func (r *renderer) begin() {
	if r.inTxn {
		return
	}
	r.txnSeq++
	r.token = r.runID + "." + strconv.FormatInt(r.txnSeq, 10)
	r.control("dbrig_begin", "BEGIN")
	if r.guard {
		r.control("dbrig_token", "tag the transaction", r.token)
	}
	r.inTxn = true
	r.xacts, r.cmdsInTxn = 0, 0
}

// commit records the subscription's progress and commits, in the same
// subscriber transaction as the changes: exactly once.
func (r *renderer) commit() {
	if !r.inTxn {
		return
	}
	r.closeGroup()
	lc := r.lastCommit
	r.control("dbrig_advance", "advance the subscription", r.subscription, itoa(r.applied), itoa(lc.cmd), lc.lsn.String(),
		lc.time.UTC().Format("2006-01-02 15:04:05.999999Z07:00"), itoa(r.xacts))
	r.control("dbrig_commit", "COMMIT")
	lc.xacts, lc.cmds = r.xacts, r.cmdsInTxn
	r.cur.commits = append(r.cur.commits, lc)
	r.applied = lc.cmd
	r.inTxn = false
	r.xacts, r.cmdsInTxn = 0, 0
}

// render adds one command to the current buffer. It returns full = true
// when the buffer must go to the writer before the command fits; the
// caller then hands it over (after closeGroup) and calls render again with
// a fresh buffer.
func (r *renderer) render(cmd int64, kind byte, xactLSN LSN, data []byte) (full bool, err error) {
	switch kind {
	case kindRelation:
		return false, r.describe(cmd, data)
	case kindCommit:
		return r.renderCommit(cmd, data)
	case kindTruncate:
		return r.renderTruncate(cmd, xactLSN, data)
	case kindInsert, kindUpdate, kindDelete:
		return r.renderChange(cmd, kind, xactLSN, data)
	}
	return false, fmt.Errorf("command %d: unknown kind %q", cmd, kind)
}

// describe takes a Relation command: the statements of the relation's new
// version get names of their own, so the old ones prepared on the writer's
// connection are never reused for another shape.
func (r *renderer) describe(cmd int64, data []byte) error {
	rel, err := parseRelation(data)
	if err != nil {
		return fmt.Errorf("command %d: %w", cmd, err)
	}
	if old, ok := r.rels[rel.ID]; ok && r.group == old {
		r.closeGroup()
	}
	r.versions++
	ri, err := newRelInfo(rel, r.keys, r.versions)
	if err != nil {
		return fmt.Errorf("command %d: %w", cmd, err)
	}
	r.rels[rel.ID] = ri
	return nil
}

// renderCommit ends a source transaction, and the subscriber transaction
// with it once it holds commitBatch of them.
func (r *renderer) renderCommit(cmd int64, data []byte) (full bool, err error) {
	c, err := parseCommit(data)
	if err != nil {
		return false, fmt.Errorf("command %d: %w", cmd, err)
	}
	if !r.room(300) {
		return true, nil
	}
	r.begin()
	r.xacts++
	r.lastCommit = commitPoint{cmd: cmd, lsn: LSN(c.TransactionEndLSN), time: c.CommitTime}
	if r.xacts >= int64(r.commitBatch) {
		r.commit()
	}
	return false, nil
}

// renderTruncate executes the TRUNCATE of the relations the command names,
// through the unnamed statement.
func (r *renderer) renderTruncate(cmd int64, xactLSN LSN, data []byte) (full bool, err error) {
	t, err := parseTruncate(data)
	if err != nil {
		return false, fmt.Errorf("command %d: %w", cmd, err)
	}
	if !r.room(100 * len(t.RelIDs)) {
		return true, nil
	}
	r.closeGroup()
	r.begin()
	var names []string
	for _, id := range t.RelIDs {
		ri, ok := r.rels[id]
		if !ok {
			return false, fmt.Errorf("command %d: TRUNCATE of relation %d, which no Relation command described", cmd, id)
		}
		names = append(names, ri.quoted)
	}
	sql := "TRUNCATE ONLY " + strings.Join(names, ", ")
	if t.RestartIdentity {
		sql += " RESTART IDENTITY"
	}
	if t.Cascade {
		sql += " CASCADE"
	}
	b := r.cur
	b.msg = appendParse(b.msg, "", sql)
	b.msg = appendBindExecute(b.msg, "", nil)
	b.stmts = append(b.stmts, stmtInfo{kind: stmtTruncate, first: cmd, last: cmd, rows: 1, table: strings.Join(names, ", "), xactLSN: xactLSN})
	b.cmds++
	r.cmdsInTxn++
	return false, nil
}

// renderChange adds an insert (to the open multi-row INSERT), an update or
// a delete.
func (r *renderer) renderChange(cmd int64, kind byte, xactLSN LSN, data []byte) (full bool, err error) {
	ch, err := parseChange(data)
	if err != nil {
		return false, fmt.Errorf("command %d: %w", cmd, err)
	}
	ri, ok := r.rels[ch.RelID]
	if !ok {
		return false, fmt.Errorf("command %d: change of relation %d, which no Relation command described", cmd, ch.RelID)
	}
	if !r.room(valueSize(ch.New) + valueSize(ch.Old) + 64) {
		return true, nil
	}
	r.begin()
	switch kind {
	case kindInsert:
		err = r.renderInsert(cmd, xactLSN, ri, ch.New)
	case kindUpdate:
		err = r.renderUpdate(cmd, xactLSN, ri, ch)
	case kindDelete:
		err = r.renderDelete(cmd, xactLSN, ri, ch.Old)
	}
	if err != nil {
		return false, err
	}
	r.cur.cmds++
	r.cmdsInTxn++
	return false, nil
}

// renderInsert adds the row to the open multi-row INSERT into its table,
// opening one when the open one is another table's or full.
func (r *renderer) renderInsert(cmd int64, xactLSN LSN, ri *relInfo, row []tupleValue) error {
	if len(row) != len(ri.rel.Columns) {
		return fmt.Errorf("command %d: insert into %s has %d values for %d columns", cmd, ri.table, len(row), len(ri.rel.Columns))
	}
	if r.group != ri || r.groupRows >= ri.maxRows {
		r.closeGroup()
		r.group = ri
		r.groupInfo = stmtInfo{kind: stmtInsert, first: cmd, table: ri.table.String(), xactLSN: xactLSN}
	}
	for _, v := range row {
		r.groupArgs.add(v)
	}
	r.groupRows++
	r.groupInfo.rows = r.groupRows
	r.groupInfo.last = cmd
	return nil
}

// renderUpdate executes the UPDATE of the columns the change carries: an
// unchanged TOAST value is left as the subscriber holds it, so each set of
// columns sent is a statement of its own.
func (r *renderer) renderUpdate(cmd int64, xactLSN LSN, ri *relInfo, ch changeMsg) error {
	r.closeGroup()
	set := make([]bool, len(ri.cols))
	mask := make([]byte, len(ri.cols))
	p := &r.scratch
	p.reset()
	for i := range ri.cols {
		mask[i] = '0'
		if i < len(ch.New) && ch.New[i].Kind != 'u' { // unchanged TOAST value: keep the subscriber's
			set[i], mask[i] = true, '1'
			p.add(ch.New[i])
		}
	}
	key := ch.New
	if ch.Old != nil {
		key = ch.Old
	}
	if err := appendKey(p, ri, key, cmd); err != nil {
		return err
	}
	r.exec(ri.name+"_u"+string(mask), func() string { return ri.updateSQL(set) }, p,
		stmtInfo{kind: stmtUpdate, first: cmd, last: cmd, rows: 1, table: ri.table.String(), xactLSN: xactLSN})
	return nil
}

// renderDelete executes the DELETE of the row the old key names.
func (r *renderer) renderDelete(cmd int64, xactLSN LSN, ri *relInfo, key []tupleValue) error {
	r.closeGroup()
	p := &r.scratch
	p.reset()
	if err := appendKey(p, ri, key, cmd); err != nil {
		return err
	}
	r.exec(ri.name+"_d", ri.deleteSQL, p,
		stmtInfo{kind: stmtDelete, first: cmd, last: cmd, rows: 1, table: ri.table.String(), xactLSN: xactLSN})
	return nil
}

// appendKey appends the key columns' values as parameters.
func appendKey(p *params, ri *relInfo, key []tupleValue, cmd int64) error {
	for _, i := range ri.keyIdx {
		if i >= len(key) || (key[i].Kind != 't' && key[i].Kind != 'b') {
			return fmt.Errorf("command %d: change of %s without a value for key column %s", cmd, ri.table, ri.rel.Columns[i].Name)
		}
		p.add(key[i])
	}
	return nil
}
