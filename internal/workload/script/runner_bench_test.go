package script

import (
	"context"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/dbrig/dbrig/internal/blockconn"
	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/load"
)

// What the script runner costs beyond the least a driver of the same
// SELECT pays. BenchmarkRunner runs select-only under the load layer's
// closed loop at 2 and 4 users on one server, once through the script
// runner and once through a bare worker that sends pgbench -S's SELECT as
// oltp's point-select does (a prepared statement, a random key, pgconn on a
// blocking socket, nothing counted beyond the layer's own recording). Each
// reports the process's CPU time (cpu-us/tx) and context switches
// (switches/tx) per transaction, and its allocations:
//
//	go test -run '^$' -bench Runner -benchtime 40000x -benchmem -count 3 ./internal/workload/script/
//
// The two are alternated with -count, so a disturbance of the shared
// machine falls on both.
func BenchmarkRunner(b *testing.B) {
	_, login := pgbenchServer(b, "runner", "dbrig_script_runner")
	src, _ := ParseFiles("select-only", nil)
	prog, err := Parse(src, Options{Protocol: Prepared})
	if err != nil {
		b.Fatal(err)
	}
	for _, users := range []int{2, 4} {
		b.Run("script/users="+strconv.Itoa(users), func(b *testing.B) {
			benchmarkLoad(b, users, &loadWorkload{prog: prog, login: login, scale: 1, seed: 1, users: users, maxTries: 1, clock: &window{}})
		})
		b.Run("bare/users="+strconv.Itoa(users), func(b *testing.B) {
			benchmarkLoad(b, users, &bareSelect{login: login})
		})
	}
}

// benchmarkLoad runs b.N transactions of w under the closed loop.
func benchmarkLoad(b *testing.B, users int, w load.Workload) {
	r, err := load.NewRunner(load.Config{Users: users, Ops: int64(b.N), Seed: 1}, w)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	before := processCPU(b)
	b.ResetTimer()
	res, err := r.Run(context.Background())
	b.StopTimer()
	used := processCPU(b).minus(before)
	if err != nil {
		b.Fatal(err)
	}
	if done := res.Overall.Ops + res.WarmUpOps; done != int64(b.N) || res.Overall.Errors.Total() > 0 {
		b.Fatalf("%d transactions done of %d, %d failed", done, b.N, res.Overall.Errors.Total())
	}
	b.ReportMetric(float64(used.cpu)/float64(time.Microsecond)/float64(b.N), "cpu-us/tx")
	b.ReportMetric(float64(used.switches)/float64(b.N), "switches/tx")
}

// bareSelect is the peer: pgbench -S's SELECT by a random key, prepared
// once per connection, as oltp's point-select sends it.
type bareSelect struct{ login engine.Conn }

func (*bareSelect) Mix() []load.TxType { return []load.TxType{{Name: "select", Weight: 1}} }

func (s *bareSelect) NewWorker(ctx context.Context, id int) (load.Worker, error) {
	cfg, err := postgres.ConnInfoOf(s.login).ConnConfig()
	if err != nil {
		return nil, err
	}
	cfg.DialFunc = blockconn.Dial
	pc, err := pgconn.ConnectConfig(ctx, &cfg.Config)
	if err != nil {
		return nil, err
	}
	sd, err := pc.Prepare(ctx, "bare", "SELECT abalance FROM pgbench_accounts WHERE aid = $1", nil)
	if err != nil {
		pc.Close(ctx)
		return nil, err
	}
	return &bareWorker{pc: pc, sd: sd, rng: rand.New(rand.NewPCG(1, uint64(id))), params: make([][]byte, 1)}, nil
}

type bareWorker struct {
	pc     *pgconn.PgConn
	sd     *pgconn.StatementDescription
	rng    *rand.Rand
	params [][]byte
}

func (w *bareWorker) Do(context.Context, int) error {
	w.params[0] = strconv.AppendInt(w.params[0][:0], 1+w.rng.Int64N(100_000), 10)
	rr := w.pc.ExecStatement(context.Background(), w.sd, w.params, nil, nil)
	for rr.NextRow() {
	}
	_, err := rr.Close()
	return err
}

func (w *bareWorker) Close() error { return w.pc.Close(context.Background()) }
