// Package load drives a workload with virtual users and measures it: the one
// load layer of dbrig's workloads under virtual users (the online shop of
// `dbrig load oltp`, many tenants, pgbench-compatible scripts; TPC-H's
// power test runs its queries one stream at a time without it). It knows
// nothing of databases except how to classify their errors.
//
// # Plugging a workload in
//
// A workload implements [Workload]: its transaction mix ([TxType]: a name and
// a weight) and NewWorker, which prepares one [Worker] per virtual user,
// typically one connection with its prepared statements. The layer calls
// Worker.Do(ctx, tx) for each operation, from one goroutine per worker, with
// tx chosen by weight from the worker's own seeded random source; it closes
// every worker on every path out of the run. A workload whose errors the
// default [ClassifyError] would not understand also implements
// [ErrorClassifier].
//
//	type pointSelect struct {
//		engines *engine.Registry // Env.Engines
//		login   engine.Conn
//	}
//	type selectWorker struct{ s engine.Session }
//
//	func (p *pointSelect) Mix() []load.TxType { return []load.TxType{{Name: "point-select", Weight: 1}} }
//
//	func (p *pointSelect) NewWorker(ctx context.Context, id int) (load.Worker, error) {
//		// One connection per virtual user, in the login's engine's driver.
//		s, err := p.engines.OpenSession(ctx, p.login, engine.SessionOptions{Blocking: true})
//		return &selectWorker{s: s}, err
//	}
//
//	func (w *selectWorker) Do(ctx context.Context, tx int) error { return w.s.Exec(ctx, "select 1") }
//
//	func (w *selectWorker) Close() error { return w.s.Close(context.Background()) }
//
// and a run of it (see Example for one that runs):
//
//	r, err := load.NewRunner(load.Config{Users: 8, WarmUp: 5 * time.Second, Duration: time.Minute}, &pointSelect{engines, login})
//	...
//	res, err := r.Run(ctx)
//	...
//	res.WriteText(os.Stdout)
//
// # Closed and open loops
//
// In a closed loop (Rate 0) each of [Config.Users] virtual users runs an
// operation, pauses (keying time before, think time after: fixed or
// negative-exponential with a cap), and runs the next. Throughput follows
// Little's law, users / (response time + pauses), until the server
// saturates; this is how pgbench, sysbench, HammerDB and BenchBase drive a
// server, and it answers "how many users can it serve".
//
// A closed loop has a blind spot. When the server stalls for a second, each
// user waits for its one slow operation and then carries on: the run records
// one slow operation per user, and none of the operations the users would
// have issued during the stall. Real clients do not wait for each other, so
// in production that second queues up everything that arrived in it. The
// closed loop has coordinated with the server to omit those samples
// ("coordinated omission", Gil Tene's term) and its percentiles look far
// better than what the users of the stalled system saw.
//
// In an open loop (Rate > 0) operations arrive on a schedule of their own,
// at a fixed rate or as a Poisson process, whatever the server does. Each
// arrival has an intended start time; a free worker starts it, and its
// latency is measured from the INTENDED start, so the time it waited behind
// a stall is part of it, as it would be for a real client. The service time,
// from the actual start, is kept separately. An operation that starts more
// than [Config.LateAfter] behind its schedule is counted as late, and the
// distribution of the start lag is kept. Arrivals wait for a worker up to
// [Config.MaxInFlight] operations in flight; an arrival past that bound is
// not started and is counted ("over the in-flight bound: N arrivals not
// started"), never silently dropped, and the run keeps its schedule and its
// duration under any overload, saying so in every per-second line and in the
// result. pgbench -R measures the same way; k6's arrival-rate executors count
// dropped iterations the same way; BenchBase, cockroach workload and sysbench
// start the clock when a worker picks the work up, which loses the queueing.
//
// Since start lag is part of an open loop's latency, nothing waits for an
// arrival on a Go timer, which on an otherwise idle process wakes up to
// about a millisecond late (BenchmarkArrivalWaiter measures the waiters). Up
// to 10,000 arrivals per second, with an in-flight bound of at least one a
// worker, a free worker claims the next arrival ahead of its time and waits
// for it itself: on a thread of its own it sleeps in ppoll on a timerfd
// of its own, as a pgbench client sleeps, otherwise on a timerfd in Go's
// network poller; the dispatcher sleeps on a timerfd that each claim moves on, and
// wakes only for an arrival that falls due while every worker is busy,
// which it queues or counts over the bound (arrivals.go). Above 10,000 a
// second the dispatcher wakes for the arrivals and hands each to a free
// worker, at most every 100 µs, starting every arrival then due, trading up
// to 100 µs of measured lag for a wake-up shared by several arrivals. Closed-loop pauses (think
// and keying time) use Go timers; their lateness is the closed loop's start
// lag, reported but not part of the latency.
//
// Each user of a run of at most 256 (without pauses; four a CPU with them)
// waits for its server on an OS thread of its own, and the run gives each a
// P (GOMAXPROCS); it adds a spare P a CPU only where something must run
// while every user waits: users who pause, a dispatcher that hands arrivals
// over, or an emulated link in the same process. A spare P costs a thread's
// wake-up at each user's yield (procs.go), so a component of this process
// that relays or serves the users' conversations holds one through
// internal/spareproc for as long as it runs, as the link does.
//
// The test TestOpenLoopShowsTheQueueingDelayThatAClosedLoopHides shows the
// difference exactly on a fake clock: one 995 ms stall among 1 ms operations
// puts 1 operation over 100 ms in a closed loop and 100 in an open loop at
// 100 operations per second.
//
// # A run
//
// Workers are opened before the clock starts. Users start at once or spread
// over [Config.RampUp] (an open loop's rate ramps up instead); the
// [Config.WarmUp] runs and is discarded from the results; the measured
// interval lasts [Config.Duration] (or [Config.Ops] operations). At the end
// no operation starts; those in flight have [Config.Grace] to finish (they
// are reported as finishing after the end, with their latency), then their
// context is cancelled (the hard deadline) and they are counted as cancelled
// at the stop. An interrupt (the run's context) stops and cancels at once and
// still returns the partial result. Every goroutine belongs to the run and
// has returned when Run returns.
//
// # Recording
//
// Latencies go into HDR histograms (hdrhistogram-go) at 3 significant figures
// from 1 µs to 1 h, per transaction type; a value above an hour is recorded
// as an hour and counted as clamped. Each worker records into its own sparse
// histograms without a lock: a WriterReaderPhaser (HdrHistogram's recorder
// design) lets the collector swap every worker's buffer once a second even
// while the worker is in a long operation or asleep, so each operation
// counts in the second it finished, and the per-second series is complete
// when it is printed. See recorder.go for why the workers keep sparse
// histograms and the collector dense ones: memory stays flat with time and
// with 1,000 users (TestThousandUsersForAnHourKeepMemoryFlat).
//
// A [Result] keeps the per-second series ([Interval]: throughput, p50, p99,
// max and errors per type and overall, late and not-started counts: 192
// bytes plus 96 per transaction type per second, 2.4 MB for an hour of a
// 5-type mix) and the
// measured interval's full distributions ([Histogram]) per type and overall.
// A measure.Histogram merges without loss with another, also one decoded from another
// process or machine (the HdrHistogram V2 encoding): percentiles of a merged
// distribution are exact to the histograms' resolution, so percentiles are
// always computed from merged distributions and never averaged. Set
// [Config.IntervalHistograms] to receive each second's distributions, as a
// load agent streaming to a coordinator would.
//
// # Errors
//
// Failed operations are counted per type by [ErrorClass]: serialization
// failure, deadlock, timeout, connection lost, other. The engines class
// their errors ([engine.Error], from an engine's session; PostgreSQL's by
// SQLSTATE, MariaDB's by error number); [ClassifyError] reads that class,
// else the standard library's context and network errors.
// An operation slower than [Config.TxLimit] (30 s by default, as seed 001
// counted) is counted as over the limit whether it succeeded or not.
//
// # Watching a run
//
// [Config.OnInterval] receives each second as it ends ([Interval.String] is
// a line for a terminal). [Runner.Metrics] is a Prometheus collector of the
// live run, and [ServeMetrics] serves it on HOST:PORT until its context ends.
package load
