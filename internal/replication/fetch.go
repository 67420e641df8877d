package replication

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/pgconn"
)

// fetchAhead is how many chunks each of the reader's further connections
// may hold read and not yet applied: enough to keep its stream moving
// while the others' chunks are applied, few enough that the reader's
// memory stays a few MiB per connection.
const fetchAhead = 4

// fetch hands every chunk of the command stream after command after to
// chunk, in order. With one connection it is one streaming result set;
// with more, the pending chunks are listed and dealt out among the
// connections in turn, each reading its share as a result set of its own,
// and taken back in order.
func (run *agentRun) fetch(dist *pgconn.PgConn, after int64, chunk func(first int64, data []byte) error) error {
	if len(run.readers) == 0 {
		return run.fetchAll(dist, after, chunk)
	}
	ids, err := run.pendingChunks(dist, after)
	if err != nil {
		return err
	}
	if len(ids) < 2 {
		return run.fetchAll(dist, after, chunk)
	}
	conns := append([]*pgconn.PgConn{dist}, run.readers...)
	k := min(len(conns), len(ids))
	run.a.cfg.Logger.Debug("read pending chunks through several connections", "chunks", len(ids), "connections", k)
	ctx, stop := context.WithCancel(run.ctx)
	shares := make([]chan fetchedChunk, k)
	errs := make([]error, k)
	var wg sync.WaitGroup
	for i := range shares {
		shares[i] = make(chan fetchedChunk, fetchAhead)
		var mine []int64
		for j := i; j < len(ids); j += k {
			mine = append(mine, ids[j])
		}
		wg.Add(1)
		go func() { // waited for below
			defer wg.Done()
			defer close(shares[i])
			errs[i] = run.fetchShare(ctx, conns[i], mine, shares[i])
		}()
	}
	err = takeInOrder(ids, shares, chunk)
	if err != nil {
		stop() // unblocks the connections still sending; they are lost with the run
	}
	wg.Wait()
	stop()
	var failed []error
	for _, e := range errs {
		if e != nil && !errors.Is(e, context.Canceled) {
			failed = append(failed, e)
		}
	}
	if ferr := errors.Join(failed...); ferr != nil {
		// A connection's failure explains a chunk not read.
		return fmt.Errorf("read commands after %d from %s: %w", after, run.a.cfg.Distribution, ferr)
	}
	return err
}

type fetchedChunk struct {
	first int64
	data  []byte
}

// takeInOrder applies the chunks ids lists, taking chunk j from the share
// it was dealt to.
func takeInOrder(ids []int64, shares []chan fetchedChunk, chunk func(first int64, data []byte) error) error {
	for j, id := range ids {
		c, ok := <-shares[j%len(shares)]
		if !ok {
			return fmt.Errorf("the chunk starting at command %d was not read (the distribution database no longer holds it, or its connection failed)", id)
		}
		if c.first != id {
			return fmt.Errorf("read the chunk starting at command %d where %d was due", c.first, id)
		}
		if err := chunk(c.first, c.data); err != nil {
			return err
		}
	}
	return nil
}

// fetchAll reads every chunk after command after as one result set.
func (run *agentRun) fetchAll(dist *pgconn.PgConn, after int64, chunk func(first int64, data []byte) error) error {
	rr := dist.ExecParams(run.ctx, "SELECT first_cmd, data FROM "+commandsTable(run.a.cfg.Publication)+" WHERE last_cmd > $1 ORDER BY first_cmd",
		[][]byte{[]byte(itoa(after))}, nil, nil, []int16{1, 1})
	for rr.NextRow() {
		v := rr.Values()
		if err := chunk(int64(binary.BigEndian.Uint64(v[0])), v[1]); err != nil {
			rr.Close()
			return err
		}
	}
	if _, err := rr.Close(); err != nil {
		return fmt.Errorf("read commands after %d from %s: %w", after, run.a.cfg.Distribution, err)
	}
	return nil
}

// pendingChunks lists the chunks after command after.
func (run *agentRun) pendingChunks(dist *pgconn.PgConn, after int64) ([]int64, error) {
	res := dist.ExecParams(run.ctx, "SELECT first_cmd FROM "+commandsTable(run.a.cfg.Publication)+" WHERE last_cmd > $1 ORDER BY first_cmd",
		[][]byte{[]byte(itoa(after))}, nil, nil, []int16{1}).Read()
	if res.Err != nil {
		return nil, fmt.Errorf("list the commands after %d in %s: %w", after, run.a.cfg.Distribution, res.Err)
	}
	ids := make([]int64, len(res.Rows))
	for i, r := range res.Rows {
		ids[i] = int64(binary.BigEndian.Uint64(r[0]))
	}
	return ids, nil
}

// fetchShare reads the chunks ids names as one result set and sends each
// on out, a copy of its own (the result's buffer is reused).
func (run *agentRun) fetchShare(ctx context.Context, c *pgconn.PgConn, ids []int64, out chan<- fetchedChunk) error {
	list := make([]string, len(ids))
	for i, id := range ids {
		list[i] = strconv.FormatInt(id, 10)
	}
	rr := c.ExecParams(ctx, "SELECT first_cmd, data FROM "+commandsTable(run.a.cfg.Publication)+" WHERE first_cmd = ANY($1::bigint[]) ORDER BY first_cmd",
		[][]byte{[]byte("{" + strings.Join(list, ",") + "}")}, nil, nil, []int16{1, 1})
	for rr.NextRow() {
		v := rr.Values()
		f := fetchedChunk{first: int64(binary.BigEndian.Uint64(v[0])), data: append([]byte(nil), v[1]...)}
		select {
		case out <- f:
		case <-ctx.Done():
			rr.Close()
			return ctx.Err()
		}
	}
	_, err := rr.Close()
	return err
}
