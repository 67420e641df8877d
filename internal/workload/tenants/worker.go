package tenants

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/mariadb"
	"github.com/dbrig/dbrig/internal/engine/postgres"
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
	// backend is the server's process for the connection (PostgreSQL) or
	// its connection id (MariaDB).
	backend int
	mem     backendMemory
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
	engine    string
	functions []int // per family
	invoices  int64 // seeded per database
	prime     bool
	slots     []*slot

	startOnce sync.Once
	started   chan struct{} // closed at the first transaction
}

var _ load.Workload = (*tenantLoad)(nil)

func newTenantLoad(tenants []tenant, functions int, size int64, prime bool) *tenantLoad {
	l := &tenantLoad{tenants: tenants, functions: split(functions), invoices: sizeFor(size).invoices, prime: prime, started: make(chan struct{})}
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

// args draws a transaction's arguments: accounts, customers, invoices of
// the seeded ledger and amounts in cents.
func (c *caller) args(f family) []any {
	account := func() int { return 1 + c.rng.IntN(accounts) }
	switch f.name {
	case "balance", "statement":
		return []any{account()}
	case "open_invoices":
		return []any{1 + c.rng.IntN(customers)}
	case "post":
		d := account()
		cr := 1 + (d+c.rng.IntN(accounts-1))%accounts
		return []any{d, cr, 100 + c.rng.IntN(99900)}
	case "invoice":
		return []any{1 + c.rng.IntN(customers), 1000 + c.rng.IntN(499000)}
	case "pay":
		return []any{1 + c.rng.IntN(c.invoices), account()}
	}
	return nil
}

func (c *caller) pick(tx int) (string, []any) {
	k := c.next[tx]
	c.next[tx] = (k + 1) % len(c.texts[tx])
	return c.texts[tx][k], c.args(families[tx])
}

// everyCall lists a call of every function once, for priming. pay is
// called for invoice 0, which does not exist: it changes nothing.
func (c *caller) everyCall() []struct {
	text string
	args []any
} {
	var out []struct {
		text string
		args []any
	}
	for i, ts := range c.texts {
		for _, t := range ts {
			a := c.args(families[i])
			if families[i].name == "pay" {
				a[0] = 0
			}
			out = append(out, struct {
				text string
				args []any
			}{t, a})
		}
	}
	return out
}

func pgCallText(f family, k int) string {
	n := map[string]int{"balance": 1, "statement": 1, "open_invoices": 1, "post": 3, "invoice": 2, "pay": 2}[f.name]
	args := "$1"
	for i := 2; i <= n; i++ {
		args += fmt.Sprintf(", $%d", i)
	}
	return fmt.Sprintf("SELECT %s(%s)", functionName(f, k), args)
}

func mariaCallText(f family, k int) string {
	n := map[string]int{"balance": 1, "statement": 1, "open_invoices": 1, "post": 3, "invoice": 2, "pay": 2}[f.name]
	args := "?"
	for i := 2; i <= n; i++ {
		args += ", ?"
	}
	return fmt.Sprintf("CALL %s(%s)", functionName(f, k), args)
}

// NewWorker connects to the user's database and, when priming, calls
// every function once (PostgreSQL: in a transaction it rolls back).
func (l *tenantLoad) NewWorker(ctx context.Context, id int) (load.Worker, error) {
	t := l.tenants[id]
	switch t.conn.Engine {
	case postgres.Name:
		return newPGWorker(ctx, l, id, t)
	case mariadb.Name:
		return newMariaWorker(ctx, l, id, t)
	}
	return nil, fmt.Errorf("the tenants workload speaks PostgreSQL's and MariaDB's dialects only, not %q", t.conn.Engine)
}

// pgWorker is one connection to one PostgreSQL database.
type pgWorker struct {
	l    *tenantLoad
	slot *slot
	t    tenant
	cfg  *pgx.ConnConfig
	conn *pgx.Conn
	call *caller
}

func newPGWorker(ctx context.Context, l *tenantLoad, id int, t tenant) (*pgWorker, error) {
	cfg, err := postgres.ConnInfoOf(t.conn).ConnConfig()
	if err != nil {
		return nil, err
	}
	// One round trip per call, and no prepared statement of the client's
	// in the backend: its memory is the functions' own.
	cfg.DefaultQueryExecMode = pgx.QueryExecModeExec
	w := &pgWorker{l: l, slot: l.slots[id], t: t, cfg: cfg, call: newCaller(id, l.functions, l.invoices, pgCallText)}
	if err := w.connect(ctx); err != nil {
		return nil, err
	}
	if l.prime {
		if err := w.primeAll(ctx); err != nil {
			w.conn.Close(context.WithoutCancel(ctx))
			return nil, fmt.Errorf("prime %s: %w", t.db, err)
		}
	}
	return w, nil
}

func (w *pgWorker) connect(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, w.cfg)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", w.t.conn, err)
	}
	w.conn = conn
	w.slot.backend = int(conn.PgConn().PID())
	return nil
}

func (w *pgWorker) primeAll(ctx context.Context) error {
	tx, err := w.conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	for _, c := range w.call.everyCall() {
		if _, err := tx.Exec(ctx, c.text, c.args...); err != nil {
			return fmt.Errorf("%s: %w", c.text, err)
		}
		w.slot.calls.Add(1)
	}
	return nil
}

func (w *pgWorker) Do(ctx context.Context, tx int) error {
	w.l.markStarted()
	if w.conn == nil || w.conn.IsClosed() {
		if err := w.connect(ctx); err != nil {
			return err
		}
	}
	text, args := w.call.pick(tx)
	w.slot.calls.Add(1)
	if _, err := w.conn.Exec(ctx, text, args...); err != nil {
		return err
	}
	w.slot.ok.Add(1)
	return nil
}

// pgMemorySQL sums the backend's memory contexts, and those that hold the
// compiled functions and their plans.
const pgMemorySQL = `SELECT coalesce(sum(total_bytes), 0)::bigint,
  coalesce(sum(total_bytes) FILTER (WHERE name IN ('PL/pgSQL function', 'CachedPlan', 'CachedPlanSource', 'CachedPlanQuery', 'SPI Plan', 'PLpgSQL function hash')), 0)::bigint
FROM pg_backend_memory_contexts`

// Close reads the backend's memory (its contexts, where the login may read
// them, and its process's private memory from /proc) and disconnects.
func (w *pgWorker) Close() error {
	if w.conn == nil || w.conn.IsClosed() {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m := &w.slot.mem
	if err := w.conn.QueryRow(ctx, pgMemorySQL).Scan(&m.contexts, &m.plans); err != nil {
		m.err = firstLine(err.Error()) // e.g. permission denied for view pg_backend_memory_contexts
	} else {
		m.known = true
	}
	if w.t.local {
		if pm, err := procstat.ProcessMemory(w.slot.backend); err == nil {
			m.private = pm.RSSAnon
		}
	}
	return w.conn.Close(ctx)
}

// mariaWorker is one connection to one MariaDB database.
type mariaWorker struct {
	l    *tenantLoad
	slot *slot
	t    tenant
	db   *sql.DB
	call *caller
}

func newMariaWorker(ctx context.Context, l *tenantLoad, id int, t tenant) (*mariaWorker, error) {
	cfg, err := mariadb.Config(t.conn)
	if err != nil {
		return nil, err
	}
	// The client writes each call's arguments into its text: one round
	// trip, and no server-side prepared statement per function and
	// connection (max_prepared_stmt_count would cap them).
	cfg.InterpolateParams = true
	db, err := openMaria(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", t.conn, err)
	}
	w := &mariaWorker{l: l, slot: l.slots[id], t: t, db: db, call: newCaller(id, l.functions, l.invoices, mariaCallText)}
	if err := db.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&w.slot.backend); err != nil {
		db.Close()
		return nil, err
	}
	if l.prime {
		for _, c := range w.call.everyCall() {
			if _, err := db.ExecContext(ctx, c.text, c.args...); err != nil {
				db.Close()
				return nil, fmt.Errorf("prime %s: %s: %w", t.db, c.text, err)
			}
			w.slot.calls.Add(1)
		}
	}
	return w, nil
}

func (w *mariaWorker) Do(ctx context.Context, tx int) error {
	w.l.markStarted()
	text, args := w.call.pick(tx)
	w.slot.calls.Add(1)
	if _, err := w.db.ExecContext(ctx, text, args...); err != nil {
		return err
	}
	w.slot.ok.Add(1)
	return nil
}

// Close reads the connection's memory as MariaDB counts it and disconnects.
func (w *mariaWorker) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m := &w.slot.mem
	var used sql.NullInt64
	err := w.db.QueryRowContext(ctx, "SELECT MEMORY_USED FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()").Scan(&used)
	switch {
	case err != nil:
		m.err = firstLine(err.Error())
	case used.Valid:
		m.known, m.contexts = true, used.Int64
	}
	return w.db.Close()
}

// openMaria opens one connection of the login (a pool of one, which
// reconnects after a lost connection).
func openMaria(ctx context.Context, cfg *mysql.Config) (*sql.DB, error) {
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}
