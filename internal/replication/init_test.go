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
	t.Parallel()
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
			if _, err := Teardown(ctx, cfg, TeardownOptions{}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestScenarioAndBaselines runs the study's building blocks on a small
// scale through a link: the replication system in both modes, native
// logical replication, remote inserts through postgres_fdw with batch
// sizes 1 and 50, and snapshot against backup initialization.
