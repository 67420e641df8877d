package load

import (
	"math"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/dbrig/dbrig/internal/measure"
)

// How a worker records and the collector reads, without a lock on the hot
// path and without losing a sample to a worker that is busy or idle:
//
// Each worker owns a recorder with two buffers of sparse HDR histograms and
// counters. The worker records into the active buffer inside a "writer
// critical section" of a WriterReaderPhaser (HdrHistogram's own recorder
// design): entering and leaving are one atomic add each, never a wait. At
// every tick the collector swaps the active buffer for the spare one and
// flips the phaser, which waits only for writers already inside the old
// buffer (a few nanoseconds of bookkeeping, never an operation). The old
// buffer is then the collector's alone: it merges it into the interval's and
// the run's dense histograms, resets it, and keeps it as the next spare.
//
// So the collector pulls every worker's samples at every tick, including from
// a worker that is stuck in a long operation or asleep in its think time;
// each sample lands in the second in which its operation finished. Memory is
// bounded: the buffers are reset and reused, and a sparse histogram holds one
// entry per populated bucket, not per sample. Dense per-worker histograms
// (184 KB each at this range and precision) would cost 1,000 users × (2 per
// type) × 2 buffers × 184 KB — gigabytes — which is why workers keep sparse
// ones and only the collector keeps dense ones.

// phaser is the WriterReaderPhaser of HdrHistogram (Gil Tene's design):
// writers never block; the single reader flips the phase and waits for the
// writers that entered before the flip to leave.
type phaser struct {
	start   atomic.Int64 // incremented on entry; its sign is the phase
	evenEnd atomic.Int64 // incremented on exit by writers of the even phase
	oddEnd  atomic.Int64 // incremented on exit by writers of the odd phase
}

func (p *phaser) init() { p.oddEnd.Store(math.MinInt64) }

// enter starts a writer critical section; pass its result to exit.
func (p *phaser) enter() int64 { return p.start.Add(1) - 1 }

// exit ends the writer critical section that enter began.
func (p *phaser) exit(entered int64) {
	if entered < 0 {
		p.oddEnd.Add(1)
	} else {
		p.evenEnd.Add(1)
	}
}

// flip moves writers to the other phase and returns once every writer that
// entered in the previous phase has exited. Only one goroutine may flip.
func (p *phaser) flip() {
	nextEven := p.start.Load() < 0
	var initial int64
	if nextEven {
		p.evenEnd.Store(0)
	} else {
		initial = math.MinInt64
		p.oddEnd.Store(math.MinInt64)
	}
	startAtFlip := p.start.Swap(initial)
	for {
		var ended int64
		if nextEven {
			ended = p.oddEnd.Load()
		} else {
			ended = p.evenEnd.Load()
		}
		if ended == startAtFlip {
			return
		}
		runtime.Gosched() // a writer is between two plain field updates
	}
}

// typeBuffer is one transaction type's share of a buffer.
type typeBuffer struct {
	latency    *hdrhistogram.PackedHistogram // successful operations, from the intended start
	service    *hdrhistogram.PackedHistogram // successful operations, from the actual start (open loop only)
	ok         int64
	errors     ErrorCounts
	overLimit  int64 // operations (ok or failed) slower than the transaction limit
	cancelled  int64 // operations cut short by the end of the run
	clamped    int64 // latencies above 1 h, recorded as 1 h
	latencySum int64 // ns, exact, for the Prometheus histogram's sum
}

// buffer is what one worker records between two ticks.
type buffer struct {
	types []typeBuffer
	lag   *hdrhistogram.PackedHistogram // start lag of operations that had a schedule
	late  int64                         // of which later than LateAfter
	// samples are the recorded latencies of successful operations (µs),
	// kept only with Config.KeepSamples.
	samples []int64
}

func newBuffer(types int, open bool) *buffer {
	b := &buffer{types: make([]typeBuffer, types), lag: measure.NewPacked()}
	for i := range b.types {
		b.types[i].latency = measure.NewPacked()
		if open {
			b.types[i].service = measure.NewPacked()
		}
	}
	return b
}

// reset empties the buffer, keeping its storage.
func (b *buffer) reset() {
	for i := range b.types {
		t := &b.types[i]
		t.latency.Reset()
		if t.service != nil {
			t.service.Reset()
		}
		t.ok, t.errors, t.overLimit, t.cancelled, t.clamped, t.latencySum = 0, ErrorCounts{}, 0, 0, 0, 0
	}
	b.lag.Reset()
	b.late = 0
	b.samples = b.samples[:0]
}

// outcome is how an operation ended.
type outcome uint8

const (
	succeeded outcome = iota
	failed
	cancelled // by the end of the run, not by the workload
)

// noLag marks an operation that had no schedule to be late against (a
// closed-loop operation that followed the previous one without a pause).
const noLag = time.Duration(-1)

// recorder is one worker's pair of buffers; see the comment at the top of
// this file.
type recorder struct {
	phaser    phaser
	active    atomic.Pointer[buffer]
	spare     *buffer // the collector's
	lateAfter time.Duration
	txLimit   time.Duration
	// keepSamples is set before the run starts, never during it.
	keepSamples bool
}

func newRecorder(types int, open bool, lateAfter, txLimit time.Duration) *recorder {
	r := &recorder{spare: newBuffer(types, open), lateAfter: lateAfter, txLimit: txLimit}
	r.phaser.init()
	r.active.Store(newBuffer(types, open))
	return r
}

// record adds one operation. latency runs from the intended start, service
// from the actual start; lag is how late the operation started against its
// schedule, or noLag. It never blocks and does not allocate once the
// buffer's histograms have grown to the run's spread of values.
func (r *recorder) record(tx int, o outcome, class ErrorClass, latency, service, lag time.Duration) {
	entered := r.phaser.enter()
	b := r.active.Load()
	t := &b.types[tx]
	switch o {
	case succeeded:
		t.ok++
		v, clamped := measure.ToMicros(latency)
		if clamped {
			t.clamped++
		}
		_ = t.latency.RecordValue(v) // in range by construction
		if r.keepSamples {
			b.samples = append(b.samples, v)
		}
		t.latencySum += int64(latency)
		if t.service != nil {
			v, _ = measure.ToMicros(service)
			_ = t.service.RecordValue(v)
		}
	case failed:
		t.errors[class]++
	case cancelled:
		t.cancelled++
	}
	if latency > r.txLimit {
		t.overLimit++
	}
	if lag >= 0 {
		v, _ := measure.ToMicros(lag)
		_ = b.lag.RecordValue(v)
		if lag > r.lateAfter {
			b.late++
		}
	}
	r.phaser.exit(entered)
}

// take swaps the buffers and returns the one the worker was recording into,
// now the caller's until it calls give. Only the collector calls it.
func (r *recorder) take() *buffer {
	old := r.active.Swap(r.spare)
	r.phaser.flip()
	r.spare = nil
	return old
}

// give returns a buffer from take, emptied, as the next spare.
func (r *recorder) give(b *buffer) {
	b.reset()
	r.spare = b
}
