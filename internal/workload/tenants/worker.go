package tenants

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/load"
	"github.com/dbrig/dbrig/internal/procstat"
)

// tenant is one database and how the client reaches it.
type tenant struct {
	instance string // the instance that holds it
	db       string
	conn     engine.Conn
	// local is set when the server runs on this host and is dbrig's: its
	// backends' memory can be read from /proc.
	local bool
}

// slot is what one connection measured, read by the sampler while the run
// goes on (ok) and after the workers are closed (the rest).
type slot struct {
	ok atomic.Int64 // transactions that succeeded
	// calls counts every call, priming included, so the report can say
	// whether each connection had run every function before the clock.
	calls atomic.Int64
	// backend is the server's process for the connection; 0 where the
	// server serves connections on threads of one process (MariaDB).
	backend int
	mem     backendMemory
	// firstCalls and laterCalls are the priming's two passes over every
	// function: the first compiles each function and plans its statements
	// in this backend, the second finds them compiled. Their difference is
	// what the seed's recompilations cost a call.
	firstCalls, laterCalls callTimes
}

// callTimes is the time one connection's calls of every function took.
type callTimes struct {
	calls   int
	elapsed time.Duration
}

// perCall is the mean time of a call in ms; NaN before any call.
func (c callTimes) perCall() float64 {
	if c.calls == 0 {
		return math.NaN()
	}
	return float64(c.elapsed) / float64(time.Millisecond) / float64(c.calls)
}

// backendMemory is one connection's memory on the server, read as the
// connection closes.
type backendMemory struct {
	known bool
	// contexts is the backend's memory contexts in all; plans the part
	// holding compiled functions and their plans (PostgreSQL's PL/pgSQL
	// function, CachedPlan*, SPI Plan contexts). MariaDB: MEMORY_USED of
	// the connection, plans unknown.
	contexts, plans int64
	// private is the backend process's private memory from /proc
	// (RssAnon); 0 when unknown (a target, MariaDB's threads).
	private int64
	err     string
}

// tenantLoad is the tenants workload as the load layer drives it: one user
// per database.
type tenantLoad struct {
	tenants   []tenant
	engines   *engine.Registry
	engine    string
	functions []int // per family
	invoices  int64 // seeded per database
	prime     bool
	slots     []*slot

	startOnce sync.Once
	started   chan struct{} // closed at the first transaction
}

var _ load.Workload = (*tenantLoad)(nil)

func newTenantLoad(engines *engine.Registry, tenants []tenant, functions int, size int64, prime bool) *tenantLoad {
	l := &tenantLoad{tenants: tenants, engines: engines, functions: split(functions), invoices: sizeFor(size).invoices, prime: prime, started: make(chan struct{})}
	if len(tenants) > 0 {
		l.engine = tenants[0].conn.Engine
	}
	for range tenants {
		l.slots = append(l.slots, &slot{})
	}
	return l
}

// Mix is the ledger's transaction families.
func (l *tenantLoad) Mix() []load.TxType {
	out := make([]load.TxType, len(families))
	for i, f := range families {
		out[i] = load.TxType{Name: f.name, Weight: f.weight}
	}
	return out
}

func (l *tenantLoad) markStarted() { l.startOnce.Do(func() { close(l.started) }) }

// caller turns a transaction into one function call: the family's next
// function (round robin from a random start, so every function is called
// about as often) and its arguments.
type caller struct {
	invoices int // seeded invoices
	rng      *rand.Rand
	next     []int
	// texts[family][k] is the statement that calls function k.
	texts [][]string
}

func newCaller(id int, counts []int, invoices int64, text func(f family, k int) string) *caller {
	c := &caller{invoices: int(invoices), rng: rand.New(rand.NewPCG(uint64(id)+1, 0x7e4a47)), next: make([]int, len(counts))}
	for i, n := range counts {
		var ts []string
		for k := 1; k <= n; k++ {
			ts = append(ts, text(families[i], k))
		}
		c.texts = append(c.texts, ts)
		c.next[i] = c.rng.IntN(n)
	}
	return c
}

// args draws a transaction's arguments into a: accounts, customers,
// invoices of the seeded ledger and amounts in cents.
func (c *caller) args(f family, a *engine.Args) *engine.Args {
	a.Reset()
	account := func() int64 { return int64(1 + c.rng.IntN(accounts)) }
	switch f.name {
	case "balance", "statement":
		a.Int(account())
	case "open_invoices":
		a.Int(int64(1 + c.rng.IntN(customers)))
	case "post":
		d := account()
		cr := 1 + (d+int64(c.rng.IntN(accounts-1)))%accounts
		amount := int64(100 + c.rng.IntN(99900))
		a.Int(d).Int(cr).Int(amount)
	case "invoice":
		customer := int64(1 + c.rng.IntN(customers))
		a.Int(customer).Int(int64(1000 + c.rng.IntN(499000)))
	case "pay":
		invoice := int64(1 + c.rng.IntN(c.invoices))
		a.Int(invoice).Int(account())
	}
	return a
}

// pick is transaction tx's statement and its arguments, drawn into a.
func (c *caller) pick(tx int, a *engine.Args) (string, *engine.Args) {
	k := c.next[tx]
	c.next[tx] = (k + 1) % len(c.texts[tx])
	return c.texts[tx][k], c.args(families[tx], a)
}

// call is one statement and its arguments.
type call struct {
	text string
	args *engine.Args
}

// everyCall lists a call of every function once, for priming. pay is
// called for invoice 0, which does not exist: it changes nothing.
func (c *caller) everyCall() []call {
	var out []call
	for i, ts := range c.texts {
		for _, t := range ts {
			a := c.args(families[i], &engine.Args{})
			if families[i].name == "pay" {
				a.At(0).I = 0
			}
			out = append(out, call{t, a})
		}
	}
	return out
}

// NewWorker connects to the user's database and, when priming, calls
// every function twice, timing each pass (in a transaction it rolls back
// where the engine's SQL says so).
func (l *tenantLoad) NewWorker(ctx context.Context, id int) (load.Worker, error) {
	t := l.tenants[id]
	sq, err := sqlOf(t.conn.Engine)
	if err != nil {
		return nil, err
	}
	w := &worker{l: l, slot: l.slots[id], t: t, sql: sq, call: newCaller(id, l.functions, l.invoices, sq.call)}
	if err := w.connect(ctx); err != nil {
		return nil, err
	}
	if l.prime {
		if err := w.primeAll(ctx); err != nil {
			w.s.Close(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("prime %s: %w", t.db, err)
		}
	}
	return w, nil
}

// worker is one connection to one tenant database, in the session of its
// engine: each call one round trip (its arguments bound, no statement of
// the client's kept on the server, so the backend's memory is the
// functions' own).
type worker struct {
	l    *tenantLoad
	slot *slot
	t    tenant
	sql  engineSQL
	s    engine.Session
	call *caller
	args engine.Args
}

func (w *worker) connect(ctx context.Context) error {
	s, err := w.l.engines.OpenSession(ctx, w.t.conn, engine.SessionOptions{})
	if err != nil {
		return err
	}
	w.s = s
	w.slot.backend = s.BackendPID()
	return nil
}

func (w *worker) primeAll(ctx context.Context) error {
	if w.sql.primeInTransaction {
		if err := w.s.Exec(ctx, "BEGIN"); err != nil {
			return err
		}
		defer w.s.Exec(context.WithoutCancel(ctx), "ROLLBACK")
	}
	calls := w.call.everyCall()
	for _, pass := range []*callTimes{&w.slot.firstCalls, &w.slot.laterCalls} {
		t, err := w.callEach(ctx, calls)
		if err != nil {
			return err
		}
		*pass = t
	}
	return nil
}

// callEach makes every call once and times them together.
func (w *worker) callEach(ctx context.Context, calls []call) (callTimes, error) {
	start := time.Now()
	for _, c := range calls {
		if _, err := w.s.Query(ctx, c.text, c.args).Close(); err != nil {
			return callTimes{}, fmt.Errorf("%s: %w", c.text, err)
		}
		w.slot.calls.Add(1)
	}
	return callTimes{calls: len(calls), elapsed: time.Since(start)}, nil
}

// Do makes one call, on a new connection when the last one broke (a
// server that restarted after the kernel killed one of its processes
// under a memory cap has closed it).
func (w *worker) Do(ctx context.Context, tx int) error {
	w.l.markStarted()
	if !w.s.Alive() {
		w.s.Close(context.WithoutCancel(ctx))
		if err := w.connect(ctx); err != nil {
			return err
		}
	}
	text, args := w.call.pick(tx, &w.args)
	w.slot.calls.Add(1)
	if _, err := w.s.Query(ctx, text, args).Close(); err != nil {
		return err
	}
	w.slot.ok.Add(1)
	return nil
}

// Close reads the connection's memory as the server counts it (where the
// login may read it) and its backend process's private memory from /proc,
// and disconnects.
func (w *worker) Close() error {
	if !w.s.Alive() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m := &w.slot.mem
	row, err := engine.Values(ctx, w.s, w.sql.memory)
	switch {
	case err != nil:
		m.err = firstLine(err.Error()) // e.g. permission denied for view pg_backend_memory_contexts
	case len(row) != 1 || len(row[0]) != 2:
		m.err = fmt.Sprintf("%d rows of the connection's memory, want one of two columns", len(row))
	case row[0][0] != "":
		m.known = true
		m.contexts, _ = strconv.ParseInt(row[0][0], 10, 64)
		m.plans, _ = strconv.ParseInt(row[0][1], 10, 64)
	}
	if w.t.local && w.slot.backend > 0 {
		if pm, err := procstat.ProcessMemory(w.slot.backend); err == nil {
			m.private = pm.RSSAnon
		}
	}
	return w.s.Close(ctx)
}
