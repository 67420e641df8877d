package load

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/measure"
)

// The layer's own cost per operation, with a worker that does nothing: what
// the driver adds to every measured operation. Each benchmark reports wall
// time per operation (ns/op), the CPU time of the whole process per
// operation (cpu-ns/op: every goroutine of the layer, the collector's
// included), and allocations.
//
//	go test -run '^$' -bench 'ClosedLoop|OpenLoop|BareLoop' -benchtime 2000000x -count 3 ./internal/load/
//
// BenchmarkBareLoop is the peer in the same run: the least any driver that
// measures each operation pays (two clock reads and one histogram record, on
// one goroutine, with nothing else).

type noopWorkload struct{}

type noopWorker struct{}

func (noopWorkload) Mix() []TxType { return []TxType{{Name: "noop", Weight: 1}} }
func (noopWorkload) NewWorker(context.Context, int) (Worker, error) {
	return noopWorker{}, nil
}
func (noopWorker) Do(context.Context, int) error { return nil }
func (noopWorker) Close() error                  { return nil }

// cpuTime is the process's user and system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func benchmarkRun(b *testing.B, cfg Config) {
	cfg.Ops = int64(b.N)
	r, err := NewRunner(cfg, noopWorkload{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	cpu := cpuTime(b)
	b.ResetTimer()
	res, err := r.Run(b.Context())
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(cpuTime(b)-cpu)/float64(b.N), "cpu-ns/op")
	if cfg.Open() {
		b.ReportMetric(float64(res.StartLag.Quantile(0.99)), "lag-p99-ns")
	}
	if done := res.Overall.Ops + res.WarmUpOps; done != int64(b.N) {
		b.Fatalf("%d operations done of %d (not started %d)", done, b.N, res.NotStarted)
	}
}

func BenchmarkClosedLoop(b *testing.B) {
	b.Run("users=1", func(b *testing.B) { benchmarkRun(b, Config{Users: 1}) })
	b.Run("users=2", func(b *testing.B) { benchmarkRun(b, Config{Users: 2}) })
	b.Run("users=1000", func(b *testing.B) { benchmarkRun(b, Config{Users: 1000}) })
}

func BenchmarkOpenLoop(b *testing.B) {
	// At a rate the no-op workers keep up with, wall time is the schedule's;
	// cpu-ns/op is the layer's cost: the arrival process's timer, the queue,
	// the workers' wake-ups and the recording.
	b.Run("rate=100k/s,users=2", func(b *testing.B) { benchmarkRun(b, Config{Users: 2, Rate: 100_000}) })
	// Far above what they keep up with, every arrival is already late: no
	// timer sleeps, only the queue and the recording.
	b.Run("saturated,users=2", func(b *testing.B) {
		benchmarkRun(b, Config{Users: 2, Rate: 1e9, MaxInFlight: b.N})
	})
}

func BenchmarkBareLoop(b *testing.B) {
	h := measure.NewDense()
	w := noopWorker{}
	ctx := b.Context()
	b.ReportAllocs()
	cpu := cpuTime(b)
	for b.Loop() {
		start := time.Now()
		_ = w.Do(ctx, 0)
		_ = h.RecordValue(int64(time.Since(start) / time.Microsecond))
	}
	b.ReportMetric(float64(cpuTime(b)-cpu)/float64(b.N), "cpu-ns/op")
}
