package script

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/mariadb"
	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/load"
)

// loadWorkload is a program as the load layer sees it: one transaction
// type per script, weighted as the files said, and a client with its own
// connection per virtual user.
type loadWorkload struct {
	prog  *Program
	login engine.Conn
	// scale is :scale; seed is --random-seed; users is the run's number of
	// clients, which :default_seed depends on; maxTries is --max-tries (0:
	// until the run ends).
	scale    int
	seed     uint64
	users    int
	maxTries int
	clock    *window
	// seeds are the clients' generators' seeds and defaultSeed is
	// :default_seed, drawn as pgbench draws them (see clientSeeds).
	seedsOnce   sync.Once
	seeds       []uint64
	defaultSeed int64

	mu      sync.Mutex
	workers []*worker
}

var _ load.Workload = (*loadWorkload)(nil)

func (l *loadWorkload) Mix() []load.TxType {
	mix := make([]load.TxType, len(l.prog.Scripts))
	for i, s := range l.prog.Scripts {
		mix[i] = load.TxType{Name: l.prog.TypeName(i), Weight: s.Weight}
	}
	return mix
}

// TypeName is script i's transaction type: its name, numbered when a
// script is listed twice (pgbench lets one).
func (p *Program) TypeName(i int) string {
	n := 0
	for _, s := range p.Scripts[:i] {
		if s.Name == p.Scripts[i].Name {
			n++
		}
	}
	if n == 0 {
		return p.Scripts[i].Name
	}
	return fmt.Sprintf("%s#%d", p.Scripts[i].Name, n+1)
}

// open connects a session and returns it with the connection under it,
// whose turns are the round trips (nil when the driver dialled none of
// ours).
func (l *loadWorkload) open(ctx context.Context) (session, *countingConn, error) {
	var s session
	var err error
	var wire *countingConn
	ctx = withWire(ctx, &wire)
	switch l.login.Engine {
	case postgres.Name:
		s, err = openPostgres(ctx, l.login, l.prog)
	case mariadb.Name:
		s, err = openMaria(ctx, l.login, l.prog)
	default:
		err = fmt.Errorf("scripts run on PostgreSQL and MariaDB, not %s", l.login.Engine)
	}
	if err != nil {
		return nil, nil, err
	}
	return s, wire, nil
}

func (l *loadWorkload) NewWorker(ctx context.Context, id int) (load.Worker, error) {
	l.seedsOnce.Do(func() { l.seeds, l.defaultSeed = clientSeeds(l.seed, l.users) })
	c := newClient(l.prog, id, l.scale, l.seed, l.seeds[id%len(l.seeds)], l.defaultSeed, l.clock)
	s, wire, err := l.open(ctx)
	if err != nil {
		return nil, err
	}
	c.sess = s
	w := &worker{l: l, c: c, wire: wire}
	l.mu.Lock()
	l.workers = append(l.workers, w)
	l.mu.Unlock()
	return w, nil
}

// stats sums every client's figures; call it once the run is over.
func (l *loadWorkload) stats() *clientStats {
	total := newClientStats(l.prog)
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, w := range l.workers {
		total.merge(w.c.stats)
	}
	return total
}

// reconnectBackoff is how long a user whose connection broke waits before
// it connects again.
const reconnectBackoff = 100 * time.Millisecond

type worker struct {
	l *loadWorkload
	c *client
	// wire is the session's connection, whose turns are the round trips
	// the link sees; nil when unknown (the session's waits count then).
	wire    *countingConn
	retryAt time.Time
}

// trips is the round trips so far: the turns on the wire, else the times
// the session waited for the server.
func (w *worker) trips() int64 {
	if w.wire != nil {
		return w.wire.turns.Load()
	}
	_, _, n := w.c.sess.traffic()
	return n
}

// Do runs script tx once as one transaction: tried again after a
// serialization failure or a deadlock, up to max_tries, as pgbench 15
// does, its latency (the layer's) covering every try.
func (w *worker) Do(ctx context.Context, tx int) error {
	if w.c.sess == nil {
		if err := w.reconnect(ctx); err != nil {
			return err
		}
	}
	w.c.sess.watch(ctx)
	err := w.transaction(ctx, tx)
	if err != nil && (ctx.Err() != nil || load.ClassifyError(err) == load.ConnectionLost) {
		_ = w.c.sess.close()
		w.c.sess = nil
		w.retryAt = time.Now().Add(reconnectBackoff)
	}
	return err
}

func (w *worker) transaction(ctx context.Context, s int) error {
	c, st := w.c, w.c.stats
	sc := &st.scripts[s]
	c.save()
	st.txWait, st.txSleep = 0, 0
	out0, in0, _ := c.sess.traffic()
	trips0 := w.trips()
	start := time.Now()
	for tries := 1; ; tries++ {
		err := c.run(ctx, s)
		if err == nil {
			end := time.Now()
			if c.clock.counts(end) {
				out, in, _ := c.sess.traffic()
				sc.ok++
				sc.trips += w.trips() - trips0
				sc.bytesOut += out - out0
				sc.bytesIn += in - in0
				sc.wait += st.txWait
				sc.sleep += st.txSleep
				sc.total += end.Sub(start)
				if tries > 1 {
					sc.retried++
					sc.retries += int64(tries - 1)
				}
			}
			return nil
		}
		class := load.ClassifyError(err)
		if class != load.ConnectionLost && ctx.Err() == nil {
			c.sess.recover()
		}
		at := failedAt(err)
		counted := c.clock.counts(time.Now())
		if (class == load.Serialization || class == load.Deadlock) && (w.l.maxTries == 0 || tries < w.l.maxTries) && ctx.Err() == nil {
			if counted && at >= 0 {
				sc.commands[at].retries++
			}
			c.restore(true)
			continue
		}
		if counted {
			if at >= 0 {
				sc.commands[at].failures++
			}
			if tries > 1 {
				sc.retried++
				sc.retries += int64(tries - 1)
			}
		}
		// pgbench ends a failed transaction with the variables it started
		// with and the random state it reached.
		c.restore(false)
		return err
	}
}

// failedAt is the command a script failed at, -1 if unknown.
func failedAt(err error) int {
	var se *scriptError
	if errors.As(err, &se) {
		return se.command
	}
	return -1
}

// reconnect connects again, no sooner than the backoff allows.
func (w *worker) reconnect(ctx context.Context) error {
	if wait := time.Until(w.retryAt); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		}
	}
	s, wire, err := w.l.open(ctx)
	if err != nil {
		w.retryAt = time.Now().Add(reconnectBackoff)
		return err
	}
	w.c.sess, w.wire = s, wire
	w.c.keepSlot = map[*SQL]keepSlots{}
	return nil
}

func (w *worker) Close() error {
	if w.c.sess == nil {
		return nil
	}
	err := w.c.sess.close()
	w.c.sess = nil
	return err
}
