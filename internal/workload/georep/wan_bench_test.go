package georep

import (
	"context"
	"fmt"
	"time"

	"testing"

	"github.com/dbrig/dbrig/internal/benchgoal"
	"github.com/dbrig/dbrig/internal/link"
	"github.com/dbrig/dbrig/internal/replication"
	"github.com/dbrig/dbrig/internal/units"
)

// wanLink is one of the WANs the issue sets dbrig's replication against
// native logical replication through.
type wanLink struct {
	name string
	// slug names the link in a goal's name, one word.
	slug string
	cfg  link.Config
}

// wanLinks are the seed's 77 ms link with its 64 KiB window, where one
// connection's window bounds a transfer, and the same RTT at 100 Mbit/s with
// an autotuned window, where the rate shared by every connection does.
func wanLinks(tb testing.TB) []wanLink {
	legacy, err := link.ParseProfile("tukwila-blueridge+legacy-window")
	if err != nil {
		tb.Fatal(err)
	}
	fast, err := link.ParseProfile("tukwila-blueridge+autotuned")
	if err != nil {
		tb.Fatal(err)
	}
	fast.Rate = 100 * units.Mbit
	return []wanLink{
		{"tukwila-blueridge+legacy-window", "legacy-window", legacy},
		{"tukwila-blueridge+autotuned at 100 Mbit/s", "100mbit", fast},
	}
}

// windowModel is the window/RTT model's time for bytes crossing l on conns
// connections at once: bytes / min(rate, conns x window / RTT).
func windowModel(l link.Config, bytes int64, conns int) float64 {
	rate := l.Rate.BytesPerSecond()
	if w := l.InFlight(); w > 0 {
		perConn := float64(w) / l.EffectiveRTT().Seconds()
		if rate <= 0 || float64(conns)*perConn < rate {
			rate = float64(conns) * perConn
		}
	}
	if rate <= 0 {
		return 0
	}
	return float64(bytes) / rate
}

// wanFigure is one row of the table: dbrig's time and native's through the
// same link, and what crossed it.
type wanFigure struct {
	what, goalName          string
	native, dbrig           time.Duration
	nativeBytes, dbrigBytes int64
	nativeConns, dbrigConns int
	goal                    float64
	nativeModel, dbrigModel float64
}

func (f *wanFigure) ratio() float64 { return f.native.Seconds() / f.dbrig.Seconds() }

// printGoal prints the figure as a goal (native's time against dbrig's) and
// where its time goes by the window/RTT model.
func (f *wanFigure) printGoal(b *testing.B) {
	seconds := func(d time.Duration) string { return fmt.Sprintf("%.2fs", d.Seconds()) }
	benchgoal.Print(b, benchgoal.AtLeast(f.goalName, seconds(f.dbrig), seconds(f.native), f.ratio(), f.goal))
	benchgoal.Where(b, f.goalName, "by the window/RTT model, dbrig's %.1f MB on %d connections need %.2f s, native's %.1f MB on %d %.2f s",
		float64(f.dbrigBytes)/1e6, f.dbrigConns, f.dbrigModel, float64(f.nativeBytes)/1e6, f.nativeConns, f.nativeModel)
}

func (f *wanFigure) String() string {
	verdict := "met"
	if f.ratio() < f.goal {
		verdict = "NOT met"
	}
	return fmt.Sprintf("%-58s native %7.2f s (model %6.2f, %6.1f MB)  dbrig %7.2f s (model %6.2f, %6.1f MB, %d conn)  %5.2fx  goal >= %.0fx: %s",
		f.what, f.native.Seconds(), f.nativeModel, float64(f.nativeBytes)/1e6,
		f.dbrig.Seconds(), f.dbrigModel, float64(f.dbrigBytes)/1e6, f.dbrigConns, f.ratio(), f.goal, verdict)
}

// throughLink runs f with a fresh link in front of upstream and returns
// the bytes it carried from upstream to its clients.
func throughLink(ctx context.Context, tb testing.TB, upstream string, l link.Config, f func(via string) error) int64 {
	tb.Helper()
	p, err := link.Listen(ctx, "127.0.0.1:0", upstream, l)
	if err != nil {
		tb.Fatal(err)
	}
	defer p.Close()
	if err := f(p.Addr()); err != nil {
		tb.Fatal(err)
	}
	return p.Stats().Reverse.Bytes
}

// initThroughLink times dbrig's setup with --init snapshot from a
// subscriber's site: every publisher connection it makes, the copy's among
// them, crosses the link; timed until the subscriber is consistent (setup
// returns once the copy and the subscription's starting point commit).
func initThroughLink(ctx context.Context, cfg replication.Config, t replication.TableName, rows int, viaPub string, opts replication.SetupOptions) (time.Duration, replication.SetupResult, error) {
	opts.Init = replication.InitSnapshot
	return syncThroughLink(ctx, cfg, t, rows, viaPub, opts)
}

// BenchmarkWANAgainstNative sets dbrig's replication against PostgreSQL's
// native logical replication through the same emulated WANs (wanLinks),
// on rows that zstd compresses about 2:1 (PayloadHex1K):
//
//   - initial sync: DBRIG_BENCH_WAN_INIT_ROWS rows of 1 KB (default 20,000)
//     on the publisher; native CREATE SUBSCRIPTION ... WITH (copy_data)
//     whose connections cross the link, timed until every table is
//     synchronized, against dbrig replicate setup --init snapshot run at
//     the subscriber's site, timed until it returns;
//   - steady state: a backlog of DBRIG_BENCH_WAN_CHANGES changes of 1 KB
//     (default 20,000) drained through the link: native from its apply
//     worker's start, dbrig's agent in pull mode from its start (cold).
//
// DBRIG_BENCH_WAN_STREAMS sets setup's --streams (default 8),
// DBRIG_BENCH_WAN_READ_STREAMS the agent's --read-streams (default 8).
//
// It prints a table: each figure, native's, the ratio, the goal and the
// window/RTT model's time for what crossed the link; and each figure as a
// goal (internal/benchgoal).
//
//	go test -run '^$' -bench WANAgainstNative -benchtime 1x -timeout 60m -v ./internal/workload/georep/
func BenchmarkWANAgainstNative(b *testing.B) {
	initRows := benchEnv("DBRIG_BENCH_WAN_INIT_ROWS", 20_000)
	changes := benchEnv("DBRIG_BENCH_WAN_CHANGES", 20_000)
	streams := benchEnv("DBRIG_BENCH_WAN_STREAMS", replication.DefaultInitStreams)
	readStreams := benchEnv("DBRIG_BENCH_WAN_READ_STREAMS", 8)
	p := startPair(b)
	ctx := testCtx(b, 60*time.Minute)
	pubAddr := p.pub.Conn("app").Addr()
	for i := 0; i < b.N; i++ {
		var table []*wanFigure
		for _, l := range wanLinks(b) {
			b.Logf("%s: initial sync of %d rows of 1 KB", l.name, initRows)
			in := &wanFigure{what: fmt.Sprintf("initial sync, %d rows, %s", initRows, l.name), goal: 5, nativeConns: 1, dbrigConns: 1,
				goalName: fmt.Sprintf("repl-init-%d-rows-%s", initRows, l.slug)}
			in.nativeBytes = throughLink(ctx, b, pubAddr, l.cfg, func(via string) error {
				viaPub, err := p.pub.Conn("app").Via(via)
				if err != nil {
					return err
				}
				res, err := RunNative(ctx, NativeConfig{Publisher: p.pub.Conn("app"), Subscriber: p.sub.Conn("app"), PublisherFromSubscriber: viaPub,
					Payload: PayloadHex1K, InitialRows: initRows, SkipVerify: true})
				in.native = res.InitialSync
				return err
			})
			b.Logf("  native %.3f s", in.native.Seconds())
			in.dbrigBytes = throughLink(ctx, b, pubAddr, l.cfg, func(via string) error {
				d, res, err := initThroughLink(ctx, p.cfg, replication.TableName{Schema: "public", Name: "dbrig_wan_init"}, initRows, via,
					replication.SetupOptions{Streams: streams})
				in.dbrig = d
				for _, t := range res.Tables {
					in.dbrigConns = max(in.dbrigConns, t.Streams)
				}
				return err
			})
			b.Logf("  dbrig  %.3f s (%d streams)", in.dbrig.Seconds(), in.dbrigConns)

			b.Logf("%s: a backlog of %d changes of 1 KB", l.name, changes)
			dr := &wanFigure{what: fmt.Sprintf("backlog of %d changes, %s", changes, l.name), goal: 3, nativeConns: 1, dbrigConns: readStreams,
				goalName: fmt.Sprintf("repl-backlog-%d-changes-%s", changes, l.slug)}
			dr.nativeBytes = throughLink(ctx, b, pubAddr, l.cfg, func(via string) error {
				viaPub, err := p.pub.Conn("app").Via(via)
				if err != nil {
					return err
				}
				res, err := RunNative(ctx, NativeConfig{Publisher: p.pub.Conn("app"), Subscriber: p.sub.Conn("app"), PublisherFromSubscriber: viaPub,
					Payload: PayloadHex1K, Rows: changes, RowsPerTransaction: 1000, Preload: true, SkipVerify: true})
				dr.native = res.Elapsed
				return err
			})
			b.Logf("  native %.3f s", dr.native.Seconds())
			dr.dbrigBytes = throughLink(ctx, b, pubAddr, l.cfg, func(via string) error {
				t, err := replication.Pull.AgentTargets(p.cfg.Distribution(), p.cfg.Subscriber, via)
				if err != nil {
					return err
				}
				res, err := Drain(ctx, DrainConfig{Config: p.cfg, Agent: t, Mode: replication.Pull, Payload: PayloadHex1K, Rows: changes, RowsPerTransaction: 1000,
					Options: replication.AgentOptions{ReadStreams: readStreams}})
				dr.dbrig = res.Elapsed
				return err
			})
			b.Logf("  dbrig  %.3f s", dr.dbrig.Seconds())
			for _, f := range []*wanFigure{in, dr} {
				f.nativeModel = windowModel(l.cfg, f.nativeBytes, f.nativeConns)
				f.dbrigModel = windowModel(l.cfg, f.dbrigBytes, f.dbrigConns)
				table = append(table, f)
			}
		}
		b.Logf("dbrig against native through the same link (ratio: native's time / dbrig's; model: MB crossed / min(rate, connections x window / RTT)):")
		for _, f := range table {
			b.Logf("  %s", f)
			f.printGoal(b)
		}
	}
}
