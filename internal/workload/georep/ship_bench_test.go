package georep

import (
	"context"
	"fmt"
	"io"
	"net"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/link"
	"github.com/dbrig/dbrig/internal/replication"
)

// BenchmarkShippedBackup times an initial sync to a consistent subscriber
// through the emulated WANs (wanLinks: the seed's 77 ms with its 64 KiB
// window, and 77 ms at 100 Mbit/s), DBRIG_BENCH_SHIP_ROWS rows of 1 KB of
// hex (default 20,000; zstd makes about 2:1 of it):
//
//   - native: CREATE SUBSCRIPTION ... WITH (copy_data), its connection
//     across the link;
//   - backup: dbrig replicate setup --init backup at the subscriber's site,
//     pg_dump's archive crossing the link as it is;
//   - shipped: the same with --ship: dbrig replicate ship (the dbrig this
//     benchmark builds, a process of its own) runs pg_dump at the
//     publisher's site and its zstd stream crosses the link, as ssh's
//     session would; setup's own connections to the publisher cross too;
//   - snapshot: --init snapshot in its default streams, for reference.
//
// Each is verified identical on both sides, then torn down.
//
//	go test -run '^$' -bench ShippedBackup -benchtime 1x -timeout 30m -v ./internal/workload/georep/
func BenchmarkShippedBackup(b *testing.B) {
	rows := benchEnv("DBRIG_BENCH_SHIP_ROWS", 20_000)
	bin := filepath.Join(b.TempDir(), "dbrig")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/dbrig/dbrig/cmd/dbrig").CombinedOutput(); err != nil {
		b.Fatalf("build dbrig: %v\n%s", err, out)
	}
	p := startPair(b)
	ctx := testCtx(b, 30*time.Minute)
	pubAddr := p.pub.Conn("app").Addr()
	table := replication.TableName{Schema: "public", Name: "dbrig_ship"}
	for i := 0; i < b.N; i++ {
		for _, l := range wanLinks(b) {
			var native time.Duration
			nativeBytes := throughLink(ctx, b, pubAddr, l.cfg, func(via string) error {
				viaPub, err := p.pub.Conn("app").Via(via)
				if err != nil {
					return err
				}
				res, err := RunNative(ctx, NativeConfig{Publisher: p.pub.Conn("app"), Subscriber: p.sub.Conn("app"), PublisherFromSubscriber: viaPub,
					Payload: PayloadHex1K, InitialRows: rows, SkipVerify: true})
				native = res.InitialSync
				return err
			})
			b.Logf("%s, %d rows: native copy_data %6.2f s, %5.1f MB crossed", l.name, rows, native.Seconds(), float64(nativeBytes)/1e6)
			for _, how := range []string{"backup", "shipped", "snapshot"} {
				var d time.Duration
				var res replication.SetupResult
				carrier := &acrossLink{cfg: l.cfg}
				crossed := throughLink(ctx, b, pubAddr, l.cfg, func(via string) error {
					opts := replication.SetupOptions{Init: replication.InitBackup}
					switch how {
					case "shipped":
						opts.InitPublisher = p.pub.Conn("app") // the ship is at the publisher's site
						opts.Shipper = &replication.Shipper{Where: "local", Carry: carrier.carry,
							Command: func() *exec.Cmd { return exec.Command(bin, "replicate", "ship") }}
					case "snapshot":
						opts.Init = replication.InitSnapshot
					}
					var err error
					d, res, err = syncThroughLink(ctx, p.cfg, table, rows, via, opts)
					return err
				})
				crossed += carrier.crossed()
				b.Logf("%s, %d rows: %-8s %6.2f s (native's %.2fx), %5.1f MB crossed; archive %.1f MB, shipped %.1f MB",
					l.name, rows, how, d.Seconds(), native.Seconds()/d.Seconds(), float64(crossed)/1e6, float64(res.InitBytes)/1e6, float64(res.ShippedBytes)/1e6)
			}
		}
	}
}

// syncThroughLink times setup from the subscriber's site until the
// subscriber is consistent, every connection setup makes to the publisher
// through viaPub unless opts names the initialization's own, and checks
// the subscriber identical.
func syncThroughLink(ctx context.Context, cfg replication.Config, t replication.TableName, rows int, viaPub string, opts replication.SetupOptions) (time.Duration, replication.SetupResult, error) {
	var res replication.SetupResult
	cfg.Tables = []replication.TableName{t}
	if err := PrepareTable(ctx, cfg.Publisher, cfg.Subscriber, t, PayloadHex1K, false); err != nil {
		return 0, res, err
	}
	if _, err := InsertRows(ctx, cfg.Publisher, t, PayloadHex1K, 1, rows, 10000); err != nil {
		return 0, res, err
	}
	far := cfg
	pub, err := cfg.Publisher.Via(viaPub)
	if err != nil {
		return 0, res, err
	}
	far.Publisher = pub
	start := time.Now()
	if res, err = replication.Setup(ctx, far, opts); err != nil {
		return 0, res, err
	}
	elapsed := time.Since(start)
	defer replication.Teardown(context.WithoutCancel(ctx), cfg, replication.TeardownOptions{Force: true})
	v, err := replication.Verify(ctx, cfg, replication.VerifyOptions{})
	if err != nil {
		return 0, res, err
	}
	if !v.Equal {
		return 0, res, fmt.Errorf("the initialized subscriber differs from the publisher: %+v", v.Tables)
	}
	return elapsed, res, nil
}

// acrossLink carries a stream as it is across an emulated link of its
// own, as an ssh session's would cross the WAN.
type acrossLink struct {
	cfg   link.Config
	proxy *link.Proxy
}

func (c *acrossLink) carry(ctx context.Context, r io.Reader) (io.ReadCloser, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	defer ln.Close()
	if c.proxy, err = link.Listen(ctx, "127.0.0.1:0", ln.Addr().String(), c.cfg); err != nil {
		return nil, err
	}
	out, err := net.Dial("tcp", c.proxy.Addr())
	if err != nil {
		return nil, err
	}
	in, err := ln.Accept()
	if err != nil {
		out.Close()
		return nil, err
	}
	go func() { // ends with the stream, or when the reader closes in
		_, _ = io.Copy(out, r)
		out.Close()
	}()
	return in, nil
}

// crossed is what the carrier's link carried, and closes it.
func (c *acrossLink) crossed() int64 {
	if c.proxy == nil {
		return 0
	}
	defer c.proxy.Close()
	return c.proxy.Stats().Forward.Bytes
}
