package replication

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/link"
)

// TestInitialization initializes a subscriber by snapshot and by backup,
// across a link, while the publisher keeps committing: every row committed
// before the slot's consistent point arrives by the copy, every later one
// by the log reader, none twice.
func TestInitialization(t *testing.T) {
	for _, init := range []InitMethod{InitSnapshot, InitBackup} {
		t.Run(init.String(), func(t *testing.T) {
			p := startPair(t)
			ctx := testCtx(t, 3*time.Minute)
			execPub(t, p, typesDDL)
			execPub(t, p, typesRows...)
			execPub(t, p, `INSERT INTO kv SELECT 'bulk' || g, g, repeat('x', g % 300), null FROM generate_series(1, 20000) g`)

			// Writers keep committing while the subscriber is initialized.
			wctx, wstop := context.WithCancel(ctx)
			werr := make(chan error, 1)
			go func() { // waited for below
				c, err := pgxConnect(wctx, p.pub.Conn("app"), "writer")
				if err != nil {
					werr <- err
					return
				}
				defer c.Close(context.Background())
				for i := 0; ; i++ {
					_, err := c.Exec(wctx, fmt.Sprintf("INSERT INTO types (id, t) VALUES (%d, 'during init'); UPDATE kv SET v = 'touched' WHERE n = %d", 100000+i, 1+i%20000))
					if wctx.Err() != nil {
						werr <- nil
						return
					}
					if err != nil {
						werr <- err
						return
					}
				}
			}()

			proxy := startLink(t, p.pub.Conn("app").Addr(), link.Config{RTT: 10 * time.Millisecond, Window: link.AutotunedWindow})
			viaLink, err := p.pub.Conn("app").Via(proxy.Addr())
			if err != nil {
				t.Fatal(err)
			}
			cfg := p.cfg
			cfg.Tables = []TableName{{"public", "types"}, {"public", "kv"}}
			time.Sleep(100 * time.Millisecond)
			res, err := Setup(ctx, cfg, SetupOptions{Init: init, InitPublisher: viaLink, Mode: Pull})
			if err != nil {
				t.Fatalf("setup: %v", err)
			}
			time.Sleep(100 * time.Millisecond)
			wstop()
			if err := <-werr; err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %+v", init, res)
			if res.InitDuration <= 0 || res.InitBytes <= 0 || len(res.Tables) != 2 {
				t.Errorf("setup result %+v", res)
			}
			if proxy.Stats().Reverse.Bytes < 1<<20 {
				t.Errorf("the copy did not cross the link: %+v", proxy.Stats().Reverse)
			}
			r := startAgents(t, cfg, Targets{Distribution: cfg.Distribution(), Subscriber: cfg.Subscriber}, AgentOptions{})
			waitCaughtUp(t, cfg, r, time.Minute)
			if err := r.stop(); err != nil {
				t.Fatal(err)
			}
			mustVerify(t, cfg)
			if err := Teardown(ctx, cfg, TeardownOptions{}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestScenarioAndBaselines runs the study's building blocks on a small
// scale through a link: the replication system in both modes, native
// logical replication, remote inserts through postgres_fdw with batch
// sizes 1 and 50, and snapshot against backup initialization.
func TestScenarioAndBaselines(t *testing.T) {
	p := startPair(t)
	ctx := testCtx(t, 5*time.Minute)
	wan := link.Config{RTT: 20 * time.Millisecond, Rate: 100e6, Window: link.AutotunedWindow}
	pubLink := startLink(t, p.pub.Conn("app").Addr(), wan)
	subLink := startLink(t, p.sub.Conn("app").Addr(), wan)

	for _, tc := range []struct {
		mode    Mode
		payload Payload
		via     string
		opts    AgentOptions
	}{
		{Pull, PayloadChar1K, pubLink.Addr(), AgentOptions{}},
		{Push, PayloadBytes1K, subLink.Addr(), AgentOptions{Pipeline: PipelineAuto}},
		{Pull, PayloadBytes15K, pubLink.Addr(), AgentOptions{}},
	} {
		sc := ScenarioConfig{Config: p.cfg, Payload: tc.payload, Rows: 2000, RowsPerTransaction: 500, Options: tc.opts}
		sc = withMode(sc, tc.mode, tc.via)
		res, err := RunScenario(ctx, sc)
		if err != nil {
			t.Fatalf("%s %s: %v", tc.mode, tc.payload, err)
		}
		t.Logf("%s %s: %.3f s, %.0f rows/s, %.1f MB/s, %d round trips, pipeline %d", tc.mode, tc.payload,
			res.Elapsed.Seconds(), res.RowsPerSec, res.MBPerSec, res.Agent.RoundTrips, res.Agent.Pipeline)
		if res.Elapsed <= 0 || res.Verify == nil || !res.Verify.Equal || res.Agent.Commands != 2000 {
			t.Errorf("%s %s: %+v", tc.mode, tc.payload, res)
		}
	}
	// Preloaded: the agent alone.
	sc := withMode(ScenarioConfig{Config: p.cfg, Payload: PayloadChar1K, Rows: 3000, Preload: true}, Pull, pubLink.Addr())
	res, err := RunScenario(ctx, sc)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("preloaded pull: %.3f s, %.0f rows/s", res.Elapsed.Seconds(), res.RowsPerSec)

	// Initialization: snapshot against backup, through the link.
	viaPub, _ := p.pub.Conn("app").Via(pubLink.Addr())
	for _, init := range []InitMethod{InitSnapshot, InitBackup} {
		sc := ScenarioConfig{Config: p.cfg, Payload: PayloadChar1K, InitialRows: 5000,
			Setup: SetupOptions{Init: init, InitPublisher: viaPub}}
		res, err := RunScenario(ctx, sc)
		if err != nil {
			t.Fatalf("init %s: %v", init, err)
		}
		t.Logf("init %s: %v, %d bytes", init, res.Setup.InitDuration, res.Setup.InitBytes)
		if res.Setup.InitDuration <= 0 || res.Verify == nil || !res.Verify.Equal {
			t.Errorf("init %s: %+v", init, res)
		}
	}

	// Native logical replication: the subscriber's server connects to the
	// publisher through the link.
	nres, err := RunNative(ctx, NativeConfig{Publisher: p.pub.Conn("app"), Subscriber: p.sub.Conn("app"), PublisherFromSubscriber: viaPub,
		Payload: PayloadChar1K, Rows: 2000, RowsPerTransaction: 500, InitialRows: 1000})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("native: %.3f s, %.0f rows/s, initial sync %v", nres.Elapsed.Seconds(), nres.RowsPerSec, nres.InitialSync)
	if nres.Elapsed <= 0 || nres.InitialSync <= 0 || !nres.Verify.Equal {
		t.Errorf("native: %+v", nres)
	}

	// Remote inserts: the publisher's server inserts into the subscriber
	// through the link, one round trip per row or per batch.
	viaSub, _ := p.sub.Conn("app").Via(subLink.Addr())
	for _, bs := range []int{1, 50} {
		fres, err := RunFDW(ctx, FDWConfig{Local: p.pub.Conn("app"), Remote: viaSub, RemoteDirect: p.sub.Conn("app"),
			Payload: PayloadChar1K, Rows: 100, BatchSize: bs})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("fdw batch %d: %.3f s, %.0f rows/s", bs, fres.Elapsed.Seconds(), fres.RowsPerSec)
		// One round trip per row (20 ms) or per batch.
		if bs == 1 && fres.Elapsed < 100*wan.RTT {
			t.Errorf("fdw batch 1: %v for 100 rows, want at least 100 round trips of %v", fres.Elapsed, wan.RTT)
		}
		if bs == 50 && fres.Elapsed > 20*wan.RTT {
			t.Errorf("fdw batch 50: %v for 100 rows, want a few round trips", fres.Elapsed)
		}
	}
}
