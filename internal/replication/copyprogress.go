package replication

import (
	"sync"
	"sync/atomic"
	"time"
)

// CopyProgress is how far an --init snapshot's copy has come, as
// SetupOptions.Progress is told it.
type CopyProgress struct {
	// Table is the table being copied, Index its place among the Tables
	// (from 1).
	Table         string
	Index, Tables int
	// TableBytes are its rows' bytes (COPY's text) copied so far, OnDisk
	// its size on the publisher's disk, for scale (the two differ: COPY's
	// text is not the heap's layout).
	TableBytes, OnDisk int64
	// Bytes are every table's copied so far.
	Bytes   int64
	Elapsed time.Duration
}

// copyWatch tells SetupOptions.Progress how far the copy has come, every
// ProgressEvery while bytes move (tellEvery), from start until stop.
type copyWatch struct {
	opts  SetupOptions
	begun time.Time
	stop  func()

	mu     sync.Mutex
	p      CopyProgress
	before int64         // bytes of the tables done
	cur    *atomic.Int64 // the table being copied's counter
}

func newCopyWatch(opts SetupOptions, tables int) *copyWatch {
	return &copyWatch{opts: opts, begun: time.Now(), p: CopyProgress{Tables: tables}}
}

// table says the copy of table number i (from 1) starts, counting its
// bytes in copied.
func (w *copyWatch) table(i int, name string, onDisk int64, copied *atomic.Int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.cur != nil {
		w.before += w.cur.Load()
	}
	w.p.Index, w.p.Table, w.p.OnDisk, w.cur = i, name, onDisk, copied
}

func (w *copyWatch) sofar() CopyProgress {
	w.mu.Lock()
	defer w.mu.Unlock()
	p := w.p
	if w.cur != nil {
		p.TableBytes = w.cur.Load()
	}
	p.Bytes, p.Elapsed = w.before+p.TableBytes, time.Since(w.begun)
	return p
}

// start runs the reports, if asked for, until stop.
func (w *copyWatch) start() {
	w.stop = tellEvery(w.opts.ProgressEvery, w.sofar, func(p CopyProgress) int64 { return p.Bytes }, w.opts.Progress)
}
