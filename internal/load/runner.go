package load

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Runner runs a workload once under a [Config]. Make it with [NewRunner];
// register [Runner.Metrics] with Prometheus before [Runner.Run] to watch the
// run live.
type Runner struct {
	cfg      Config
	wl       Workload
	mix      []TxType
	cumw     []int // cumulative weights
	classify func(error) ErrorClass
	started  atomic.Bool

	// dedicated gives each closed-loop user an OS thread of its own (see
	// reserveProcs).
	dedicated bool
	// clientCores is the most CPUs the users can keep busy: one each, no
	// more than the GOMAXPROCS the process had before the run raised it.
	clientCores int

	// Set once Run has opened the workers and started the clock.
	t0        time.Time
	recorders []*recorder
	stopCtx   context.Context // done when no operation may start any more
	stopDone  <-chan struct{} // stopCtx.Done()
	opCtx     context.Context // cancelled at the hard deadline or on interrupt
	newWaiter func(*Runner, context.Context) movableWaiter
	// newUserWaiter is an open-loop worker's when the workers claim ahead.
	newUserWaiter func(*Runner, context.Context) waiter
	// handOff keeps the dispatcher handing every arrival to a worker where
	// the workers could claim ahead (tests compare the two).
	handOff bool

	// Shared between the users, the dispatcher, the collector and the
	// Prometheus collector; all atomic.
	usersStarted    atomic.Int64
	inFlight        atomic.Int64 // open loop: arrived, not finished
	notStarted      atomic.Int64 // open loop: arrivals over the in-flight bound
	notStartedAtEnd atomic.Int64 // open loop: arrivals taken from the queue after the end
	queue           chan time.Duration
	arrivals        *arrivals // open loop whose workers claim ahead; else nil

	live live // what Prometheus reads, published once per second
}

// NewRunner checks the configuration and the workload's mix.
func NewRunner(cfg Config, wl Workload) (*Runner, error) {
	errs := []error{cfg.Validate()}
	mix := wl.Mix()
	if len(mix) == 0 {
		errs = append(errs, errors.New("mix: the workload has no transaction types"))
	}
	if len(mix) > 1<<16 {
		errs = append(errs, fmt.Errorf("mix: %d transaction types, at most 65536", len(mix)))
	}
	cumw := make([]int, len(mix))
	total := 0
	seen := map[string]bool{}
	for i, t := range mix {
		if t.Weight < 0 {
			errs = append(errs, fmt.Errorf("mix: %q has weight %d; weights must not be negative", t.Name, t.Weight))
		}
		if t.Name == "" || seen[t.Name] {
			errs = append(errs, fmt.Errorf("mix: transaction type %d has an empty or repeated name %q", i, t.Name))
		}
		seen[t.Name] = true
		total += max(t.Weight, 0)
		cumw[i] = total
	}
	if len(mix) > 0 && total == 0 {
		errs = append(errs, errors.New("mix: every weight is 0; at least one type must have a positive weight"))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("load configuration: %w", err)
	}
	r := &Runner{cfg: cfg.withDefaults(), wl: wl, mix: mix, cumw: cumw, classify: ClassifyError, newWaiter: newArrivalWaiter, newUserWaiter: newUserWaiter}
	if c, ok := wl.(ErrorClassifier); ok {
		r.classify = c.ClassifyError
	}
	r.live.init(mix)
	return r, nil
}

// Run runs the workload: opens a worker per user, warms up, measures, stops,
// and closes every worker. The result is returned whenever the run started,
// also when it was interrupted (then with ctx's error, and Interrupted set).
func (r *Runner) Run(ctx context.Context) (res *Result, err error) {
	if r.started.Swap(true) {
		return nil, errors.New("load: a Runner runs once; make a new one")
	}
	r.clientCores = r.cfg.clientCores()
	handOff := r.cfg.Open() && !r.claims()
	dedicated, restoreProcs := reserveProcs(r.cfg.Users, r.cfg.Think.Mean > 0 || r.cfg.Keying > 0, handOff)
	defer restoreProcs()
	r.dedicated = dedicated
	workers, err := r.openWorkers(ctx)
	defer func() {
		if cerr := closeWorkers(workers); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}()
	if err != nil {
		return nil, err
	}
	if r.cfg.Ready != nil {
		if err := r.cfg.Ready(ctx); err != nil {
			return nil, fmt.Errorf("before the start: %w", err)
		}
	}

	res = r.drive(ctx, workers)
	res.NotStartedAtEnd = r.notStartedAtEnd.Load() + int64(len(r.queue)) // arrivals no worker started
	if ctx.Err() != nil {
		res.Interrupted = true
		return res, fmt.Errorf("load run interrupted: %w", ctx.Err())
	}
	return res, nil
}

// clientCores is how many cores the client may use: one per user, and one
// for the arrival process of an open loop.
func (c Config) clientCores() int {
	if c.Open() {
		return min(runtime.GOMAXPROCS(0), c.Users+1)
	}
	return min(runtime.GOMAXPROCS(0), c.Users)
}

// closeWorkers closes every worker opened, nil for one that failed to open.
func closeWorkers(workers []Worker) error {
	var errs []error
	for i, w := range workers {
		if w == nil {
			continue
		}
		if cerr := w.Close(); cerr != nil {
			errs = append(errs, fmt.Errorf("close worker %d: %w", i, cerr))
		}
	}
	return errors.Join(errs...)
}

// drive runs the users from the start to the end of the run, with the
// collector sampling beside them, and returns what it gathered.
func (r *Runner) drive(ctx context.Context, workers []Worker) *Result {
	stopCtx, stop := context.WithCancel(ctx)
	defer stop()
	opCtx, cancelOps := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelOps()
	r.stopCtx, r.stopDone, r.opCtx = stopCtx, stopCtx.Done(), opCtx

	r.prepareRecorders(len(workers))
	col := newCollector(r)
	stopAt := make(chan time.Duration, 1)
	usersDone := make(chan struct{})
	finished := make(chan struct{})

	r.t0 = time.Now()
	var collecting sync.WaitGroup
	collecting.Go(func() { col.loop(stopAt, finished) })
	var users sync.WaitGroup
	r.startUsers(&users, workers)
	go func() { users.Wait(); close(usersDone) }() // ends with the last user

	r.awaitRunEnd(ctx, usersDone)
	stopAt <- r.since()
	stop()
	r.awaitUsers(ctx, usersDone, cancelOps)
	close(finished)
	collecting.Wait()
	return col.result()
}

// prepareRecorders gives each user a recorder and an open loop its queue of
// arrivals.
func (r *Runner) prepareRecorders(users int) {
	r.recorders = make([]*recorder, users)
	for i := range r.recorders {
		r.recorders[i] = newRecorder(len(r.mix), r.cfg.Open(), r.cfg.LateAfter, r.cfg.TxLimit)
		r.recorders[i].keepSamples = r.cfg.KeepSamples
	}
	if r.cfg.Open() {
		r.queue = make(chan time.Duration, r.cfg.MaxInFlight)
	}
	if r.claims() {
		r.arrivals = newArrivals(r.cfg)
	}
}

// claims reports whether the run's open-loop workers claim their arrivals
// ahead (claimsAhead), unless a test keeps the hand-off.
func (r *Runner) claims() bool { return r.cfg.claimsAhead() && !r.handOff }

// awaitRunEnd waits for the run deadline, the last user or an interrupt.
// The run deadline stops new operations; the hard deadline, Grace later,
// cancels the ones still running (awaitUsers). An interrupt does both at once.
func (r *Runner) awaitRunEnd(ctx context.Context, usersDone <-chan struct{}) {
	var deadline <-chan time.Time
	if r.cfg.Duration > 0 {
		t := time.NewTimer(r.cfg.WarmUp + r.cfg.Duration)
		defer t.Stop()
		deadline = t.C
	}
	select {
	case <-usersDone:
	case <-deadline:
	case <-ctx.Done():
	}
}

// awaitUsers lets the operations still running finish within Grace, then
// cancels them, at once on an interrupt, and returns when every user is done.
func (r *Runner) awaitUsers(ctx context.Context, usersDone <-chan struct{}, cancelOps context.CancelFunc) {
	if ctx.Err() != nil {
		cancelOps()
	} else {
		grace := time.NewTimer(r.cfg.Grace)
		select {
		case <-usersDone:
		case <-grace.C:
			cancelOps()
		case <-ctx.Done():
			cancelOps()
		}
		grace.Stop()
	}
	<-usersDone
}

// openWorkers makes every user's worker before the clock starts, a few at a
// time so a server is not hit by a storm of connections. On failure it
// returns the workers it made (for Close) and the first error.
func (r *Runner) openWorkers(ctx context.Context) ([]Worker, error) {
	const parallel = 8
	workers := make([]Worker, r.cfg.Users)
	errs := make([]error, r.cfg.Users)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i := range workers {
		sem <- struct{}{}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			w, err := r.wl.NewWorker(ctx, i)
			if err != nil {
				errs[i] = fmt.Errorf("open worker for user %d of %d: %w", i+1, r.cfg.Users, err)
				cancel()
				return
			}
			workers[i] = w
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return workers, err
	}
	if err := ctx.Err(); err != nil {
		return workers, fmt.Errorf("open workers: %w", err)
	}
	return workers, nil
}

func (r *Runner) since() time.Duration { return time.Since(r.t0) }

// stopped reports, without blocking or locking, whether the run has ended.
func (r *Runner) stopped() bool {
	select {
	case <-r.stopDone:
		return true
	default:
		return false
	}
}

// user is one virtual user's private state.
type user struct {
	id     int
	worker Worker
	rec    *recorder
	rng    *rand.Rand
	timer  *time.Timer
}

func (r *Runner) startUsers(wg *sync.WaitGroup, workers []Worker) {
	per, extra := int64(0), int64(0)
	if r.cfg.Ops > 0 && !r.cfg.Open() {
		per, extra = r.cfg.Ops/int64(len(workers)), r.cfg.Ops%int64(len(workers))
	}
	for i, w := range workers {
		u := &user{id: i, worker: w, rec: r.recorders[i],
			rng: rand.New(rand.NewPCG(r.cfg.Seed, uint64(i))), timer: time.NewTimer(time.Hour)}
		u.timer.Stop()
		if r.arrivals != nil {
			wg.Go(func() { r.claimArrivals(u) })
			continue
		}
		if r.cfg.Open() {
			wg.Go(func() { r.serveArrivals(u) })
			continue
		}
		quota := per
		if int64(i) < extra {
			quota++
		}
		if r.cfg.Ops > 0 && quota == 0 {
			continue // more users than operations
		}
		wg.Go(func() {
			if r.dedicated {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
			}
			r.closedUser(u, quota)
		})
	}
	switch {
	case r.arrivals != nil:
		r.usersStarted.Store(int64(len(workers)))
		wg.Go(r.dispatchUnclaimed)
	case r.cfg.Open():
		r.usersStarted.Store(int64(len(workers)))
		wg.Go(r.dispatch)
	}
}

// pick chooses a transaction type by weight.
func (r *Runner) pick(rng *rand.Rand) int {
	x := rng.IntN(r.cumw[len(r.cumw)-1])
	for i, c := range r.cumw {
		if x < c {
			return i
		}
	}
	return len(r.cumw) - 1
}

// sleepUntil waits until the run's clock reads at, or the run stops.
func (r *Runner) sleepUntil(u *user, at time.Duration) bool {
	wait := at - r.since()
	if wait <= 0 {
		return !r.stopped()
	}
	u.timer.Reset(wait)
	select {
	case <-u.timer.C:
		return true
	case <-r.stopDone:
		u.timer.Stop()
		return false
	}
}

// thinkTime draws a closed-loop user's pause after an operation.
func (r *Runner) thinkTime(rng *rand.Rand) time.Duration {
	t := r.cfg.Think
	if !t.Exponential {
		return t.Mean
	}
	return min(time.Duration(rng.ExpFloat64()*float64(t.Mean)), t.Max)
}

// yieldEvery is how often a closed-loop user passes through the scheduler.
// A user that only waits in blocking system calls never does, so after 10
// ms on one scheduling tick the runtime's sysmon preempts it and takes its P
// in the middle of a wait; each such retake sends sysmon back to polling
// every 20 µs for a millisecond and more. On 2 CPUs with 2 users that
// polling was a third of the client's CPU (sysmon's thread: 0.36 to 0.43
// context switches a transaction, 29 to 37 of 90 to 107 ticks); a yield
// every 5 ms, under the 10 ms, left it under 0.05 a transaction.
const yieldEvery = 5 * time.Millisecond

// yield passes a closed-loop user through the scheduler (see yieldEvery).
// A user with a thread of its own lets go of it for the yield: a locked
// goroutine that yields cannot be picked up by its own thread, which must
// hand its P to another thread that finds the goroutine, gives the P back
// and wakes it, three threads woken for one yield; unlocked, the thread
// that yields usually picks the goroutine up again itself, and it locks
// again to whichever thread runs it. Select-only under the script runner
// at 2, 4 and 8 users made 0.13-0.24 futex calls a transaction with the
// lock kept and 0.07-0.10 with it let go (perf stat, medians of 5
// alternating rounds at load average 12 to 23).
func (r *Runner) yield() {
	if !r.dedicated {
		runtime.Gosched()
		return
	}
	runtime.UnlockOSThread()
	runtime.Gosched()
	runtime.LockOSThread()
}

// closedUser is one closed-loop virtual user: (keying, operation, think)
// until the run stops or its quota is done. Its latency is its operation's
// service time; how late its timer woke it against the end of the pause is
// its start lag.
func (r *Runner) closedUser(u *user, quota int64) {
	if r.cfg.RampUp > 0 {
		if !r.sleepUntil(u, r.cfg.RampUp*time.Duration(u.id)/time.Duration(r.cfg.Users)) {
			return
		}
	}
	r.usersStarted.Add(1)
	last := r.since()
	yielded := last
	pause := r.cfg.Keying
	for n := int64(0); quota == 0 || n < quota; n++ {
		if last-yielded >= yieldEvery {
			r.yield()
			yielded = last
		}
		lag := noLag
		if pause > 0 {
			due := last + pause
			if !r.sleepUntil(u, due) {
				return
			}
			lag = r.since() - due
		} else if r.stopped() {
			return
		}
		tx := r.pick(u.rng)
		start := r.since()
		err := u.worker.Do(r.opCtx, tx)
		last = r.since()
		r.finish(u.rec, tx, err, last-start, last-start, lag)
		pause = r.cfg.Keying + r.thinkTime(u.rng)
	}
}

// minWakeInterval bounds how often the arrival process wakes: at rates above
// 1/minWakeInterval (10,000/s) it wakes every 100 µs and starts every arrival
// that is due, so a wake-up (a few microseconds of CPU) is shared by several
// arrivals instead of costing each one; those start up to 100 µs late, and
// that lag is measured like any other.
const minWakeInterval = 100 * time.Microsecond

// dispatch is the open loop's arrival process: at each intended start it
// hands the arrival to a free worker through the queue, or counts it as not
// started when MaxInFlight operations are already running or waiting. It
// never waits for a worker, so it keeps the schedule under any overload.
func (r *Runner) dispatch() {
	defer close(r.queue)
	sched := newSchedule(r.cfg.Rate, r.cfg.Arrival, r.cfg.RampUp, r.cfg.Seed)
	w := r.newWaiter(r, r.stopCtx)
	defer w.close()
	limit := int64(r.cfg.MaxInFlight)
	lastWake := -minWakeInterval
	for n := int64(0); r.cfg.Ops == 0 || n < r.cfg.Ops; n++ {
		at := sched.next() + r.cfg.ArrivalOffset
		if at > r.since() {
			if !w.waitUntil(max(at, lastWake+minWakeInterval)) {
				return
			}
			lastWake = r.since()
		} else if r.stopped() {
			return
		}
		r.enqueue(at, limit)
	}
}

// enqueue queues an arrival for the first free worker, or counts it as not
// started when limit operations are already in flight. Only the dispatcher
// adds, so the check and the add cannot race past the bound; the queue
// holds MaxInFlight and only arrivals in flight are in it, so the send
// never blocks.
func (r *Runner) enqueue(at time.Duration, limit int64) {
	if r.inFlight.Load() >= limit {
		r.notStarted.Add(1)
		return
	}
	r.inFlight.Add(1)
	r.queue <- at
}

// serveArrivals is one open-loop worker: it runs arrivals as they come,
// timing each from its intended start.
func (r *Runner) serveArrivals(u *user) {
	for {
		var at time.Duration
		select {
		case a, ok := <-r.queue:
			if !ok {
				return
			}
			at = a
		case <-r.stopDone:
			return
		}
		if r.stopped() {
			r.inFlight.Add(-1)
			r.notStartedAtEnd.Add(1)
			return
		}
		r.runArrival(u, at)
	}
}

// userThreads is how many of the users each ran on an OS thread of its
// own (0 when they shared the runtime's): closed-loop users and open-loop
// workers that claim their arrivals, when the run is dedicated.
func (r *Runner) userThreads() int {
	if !r.dedicated || r.cfg.Open() && r.arrivals == nil {
		return 0
	}
	return r.cfg.Users
}

// runArrival runs one open-loop arrival in flight, timed from its intended
// start at, and takes it out of flight.
func (r *Runner) runArrival(u *user, at time.Duration) {
	tx := r.pick(u.rng)
	start := r.since()
	err := u.worker.Do(r.opCtx, tx)
	end := r.since()
	r.inFlight.Add(-1)
	r.finish(u.rec, tx, err, end-at, end-start, start-at)
}

// finish classifies an operation's outcome and records it.
func (r *Runner) finish(rec *recorder, tx int, err error, latency, service, lag time.Duration) {
	o, class := succeeded, ErrorClass(0)
	if err != nil {
		if r.opCtx.Err() != nil {
			o = cancelled
		} else {
			o, class = failed, r.classify(err)
		}
	}
	rec.record(tx, o, class, latency, service, lag)
}
