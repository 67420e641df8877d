package replication

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dbrig/dbrig/internal/engine/postgres"
)

const (
	// DefaultInitStreams is how many publisher sessions --init snapshot
	// copies a table with. Across a WAN each session's TCP window bounds its
	// own stream (64 KiB / 77 ms is 0.85 MB/s), so N streams carry about N
	// times one; 8 fill the 77 ms legacy-window link's 1 Gbit/s eight times
	// better while costing the publisher only 8 sessions.
	DefaultInitStreams = 8
	// MaxInitStreams bounds the publisher sessions a copy holds at once.
	MaxInitStreams = 64
	// minStreamBlocks is the smallest block range (256 KiB of 8 KiB
	// blocks) worth a stream of its own: below it a table is copied by
	// fewer streams, a small one by one, as before.
	minStreamBlocks = 32
	// copyChunk is about how much of a stream's rows the merger hands to
	// the subscriber's COPY at once: whole rows, so streams interleave
	// between rows, never inside one.
	copyChunk = 256 << 10
)

// snapshotSessions are publisher sessions that all see the slot's exported
// snapshot, one per stream of the copy.
type snapshotSessions []*pgconn.PgConn

// connectSnapshotSessions connects n sessions at once: across a WAN each
// costs its handshake's round trips, paid once for all, and setup opens
// them while it checks the servers.
func connectSnapshotSessions(ctx context.Context, ci postgres.ConnInfo, n int) (snapshotSessions, error) {
	s := make(snapshotSessions, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range s {
		wg.Add(1)
		go func() { // waited for below
			defer wg.Done()
			s[i], errs[i] = connectStreaming(ctx, ci, "dbrig snapshot")
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		s.close(ctx)
		return nil, fmt.Errorf("publisher: %w", err)
	}
	return s, nil
}

// tableSize is a table's size on disk.
type tableSize struct{ blocks, bytes int64 }

// snapshotCopy is the snapshot's sessions as the copy uses them: each
// imports the slot's snapshot in a read-only repeatable-read transaction
// in the same round trip as its first COPY (across a WAN the import alone
// would be one more), and a session that copies nothing never imports it.
type snapshotCopy struct {
	sessions snapshotSessions
	begin    string
	imported []bool
}

func newSnapshotCopy(s snapshotSessions, snapshot string) *snapshotCopy {
	return &snapshotCopy{sessions: s, imported: make([]bool, len(s)),
		begin: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET TRANSACTION SNAPSHOT " + quoteLiteral(snapshot) + "; "}
}

// query is q as session i sends it: after the snapshot's import when it
// is the session's first.
func (c *snapshotCopy) query(i int, q string) string {
	if c.imported[i] {
		return q
	}
	c.imported[i] = true
	return c.begin + q
}

// close ends the sessions, and with them their read-only transactions
// (no COMMIT: each would be a round trip across a WAN).
func (s snapshotSessions) close(ctx context.Context) {
	for _, c := range s {
		if c != nil {
			c.Close(context.WithoutCancel(ctx))
		}
	}
}

// blockRanges splits a table of blocks into at most n ctid ranges of at
// least minStreamBlocks each, as COPY queries: the last range is open, so
// a row in a block added since the size was read is still copied.
func blockRanges(t *tableInfo, blocks int64, n int) []string {
	k := int64(n)
	if most := blocks / minStreamBlocks; most < k {
		k = most
	}
	cols := quoteList(t.copyColumns())
	if k <= 1 {
		return []string{"COPY " + t.Name.Quoted() + " (" + cols + ") TO STDOUT"}
	}
	out := make([]string, k)
	for i := int64(0); i < k; i++ {
		lo, hi := i*blocks/k, (i+1)*blocks/k
		where := "ctid >= '(" + strconv.FormatInt(lo, 10) + ",0)'::tid"
		if i < k-1 {
			where += " AND ctid < '(" + strconv.FormatInt(hi, 10) + ",0)'::tid"
		}
		out[i] = "COPY (SELECT " + cols + " FROM " + t.Name.Quoted() + " WHERE " + where + ") TO STDOUT"
	}
	return out
}

// copyTableStreams copies one table from the snapshot sessions into the
// subscriber's transaction: each session COPYs a block range of the table
// (its tuples visible in the snapshot are each in exactly one range), and
// their rows are merged, whole rows at a time, into the one COPY FROM
// STDIN of the subscriber's transaction, so the copy still commits or
// vanishes as one; ahead are the statements of that transaction sent in
// the same query before the COPY (across a WAN each query is a round
// trip; the rows follow the query at once, and the server reads them once
// it reaches the COPY, or drops them if a statement before it failed).
// The ranges come from the table's size when setup checked it; copied
// counts the bytes copied so far.
func copyTableStreams(ctx context.Context, src *snapshotCopy, dst *pgx.Conn, t *tableInfo, ahead []string, copied *atomic.Int64) (TableCopy, error) {
	queries := blockRanges(t, t.size.blocks, len(src.sessions))
	for i := range queries {
		queries[i] = src.query(i, queries[i])
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m := &rowMerger{chunks: make(chan []byte, 2*len(queries)), copied: copied}
	var wg sync.WaitGroup
	for i, q := range queries {
		wg.Add(1)
		go func() { // waited for below
			defer wg.Done()
			cut := &rowCutter{ctx: ctx, out: m.chunks, copied: m.copied}
			_, err := src.sessions[i].CopyTo(ctx, cut, q)
			if err == nil {
				err = cut.flush()
			}
			if err != nil {
				m.fail(fmt.Errorf("snapshot: copy %s out of the publisher (stream %d of %d): %w", t.Name, i+1, len(queries), err))
				cancel()
			}
		}()
	}
	go func() { wg.Wait(); close(m.chunks) }() // ends the merged stream once every source has
	cols := quoteList(t.copyColumns())
	tag, err := dst.PgConn().CopyFrom(ctx, m, strings.Join(append(ahead, "COPY "+t.Name.Quoted()+" ("+cols+") FROM STDIN"), ";\n"))
	cancel()
	wg.Wait()
	if serr := m.failure(); serr != nil {
		return TableCopy{}, serr
	}
	if err != nil {
		return TableCopy{}, fmt.Errorf("snapshot: copy %s into the subscriber (after %d statements of its transaction): %w", t.Name, len(ahead), err)
	}
	return TableCopy{Table: t.Name.String(), Rows: tag.RowsAffected(), Bytes: m.copied.Load(), Streams: len(queries)}, nil
}

// rowCutter takes one stream's COPY text output and sends it on in chunks
// that end at a row's end: in COPY's text format a newline byte ends a row
// and never occurs inside one (a value's newline is written as \n).
type rowCutter struct {
	ctx    context.Context
	out    chan<- []byte
	copied *atomic.Int64
	buf    []byte
}

func (c *rowCutter) Write(p []byte) (int, error) {
	c.buf = append(c.buf, p...)
	if len(c.buf) < copyChunk {
		return len(p), nil
	}
	end := bytes.LastIndexByte(c.buf, '\n')
	if end < 0 {
		return len(p), nil // a row longer than a chunk: wait for its end
	}
	rest := append(make([]byte, 0, copyChunk+len(p)), c.buf[end+1:]...)
	if err := c.send(c.buf[:end+1]); err != nil {
		return 0, err
	}
	c.buf = rest
	return len(p), nil
}

func (c *rowCutter) flush() error {
	if len(c.buf) == 0 {
		return nil
	}
	if c.buf[len(c.buf)-1] != '\n' {
		return errors.New("the stream ended inside a row")
	}
	return c.send(c.buf)
}

func (c *rowCutter) send(rows []byte) error {
	select {
	case c.out <- rows:
		c.copied.Add(int64(len(rows)))
		return nil
	case <-c.ctx.Done():
		return c.ctx.Err()
	}
}

// rowMerger is the streams' rows as one reader, for the subscriber's COPY:
// it ends when every stream has, and fails when one did.
type rowMerger struct {
	chunks chan []byte
	cur    []byte
	copied *atomic.Int64

	mu  sync.Mutex
	err error
}

func (m *rowMerger) Read(p []byte) (int, error) {
	for len(m.cur) == 0 {
		c, ok := <-m.chunks
		if !ok {
			if err := m.failure(); err != nil {
				return 0, err
			}
			return 0, io.EOF
		}
		m.cur = c
	}
	n := copy(p, m.cur)
	m.cur = m.cur[n:]
	return n, nil
}

func (m *rowMerger) fail(err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.err == nil {
		m.err = err
	}
}

func (m *rowMerger) failure() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.err
}
