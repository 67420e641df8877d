package replication

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine/postgres"
)

// shipHelper is `dbrig replicate ship` in this test binary, re-executed.
func shipHelper() int {
	if err := ServeShip(context.Background(), os.Stdin, os.Stdout, postgres.Binaries{}); err != nil {
		fmt.Fprintln(os.Stderr, "ship:", err)
		return 1
	}
	return 0
}

// shipTable is a table whose text compresses about 2:1, as hex does (no
// better than 3:1): each row's digests are of strings no other row has.
const shipTable = `CREATE TABLE big (id bigint PRIMARY KEY, v text);
INSERT INTO big SELECT g, md5('a' || g) || md5('b' || g) || md5('c' || g) || md5('d' || g) FROM generate_series(1, 20000) g`

// localShipper runs the ship as a child process, recording it and every
// progress report.
type localShipper struct {
	Shipper
	mu       sync.Mutex
	cmd      *exec.Cmd
	progress []ShipProgress
	onReport func(*exec.Cmd)
}

func newLocalShipper() *localShipper {
	l := &localShipper{}
	l.Shipper = Shipper{Where: "local", ProgressEvery: 5 * time.Millisecond,
		Command: func() *exec.Cmd {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), helperEnv+"=ship")
			l.mu.Lock()
			l.cmd = cmd
			l.mu.Unlock()
			return cmd
		},
		Progress: func(p ShipProgress) {
			l.mu.Lock()
			defer l.mu.Unlock()
			l.progress = append(l.progress, p)
			if l.onReport != nil && !p.Done && p.Compressed > 0 {
				l.onReport(l.cmd)
			}
		},
	}
	return l
}

// shipPair is a pair whose publisher holds shipTable, the configuration
// that publishes it, and a ship to carry it.
func shipPair(t *testing.T) (*pair, Config, *localShipper) {
	t.Helper()
	p := startPair(t)
	execPub(t, p, shipTable)
	cfg := p.cfg
	cfg.Tables = []TableName{{"public", "big"}}
	return p, cfg, newLocalShipper()
}

// exited fails unless the ship's process has ended and been waited for.
func (l *localShipper) exited(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cmd == nil || l.cmd.ProcessState == nil {
		t.Errorf("the ship's process was not waited for: %v", l.cmd)
	}
}

// TestShippedBackup initializes a subscriber by a backup that a ship
// (this test binary as `dbrig replicate ship`, a process of its own)
// dumps and sends compressed: the tables arrive identical, and fewer bytes
// crossed than the archive holds.
func TestShippedBackup(t *testing.T) {
	t.Parallel()
	_, cfg, ship := shipPair(t)
	ctx := testCtx(t, 3*time.Minute)
	res, err := Setup(ctx, cfg, SetupOptions{Init: InitBackup, Shipper: &ship.Shipper})
	if err != nil {
		t.Fatalf("setup: %v", err)
	}
	ship.exited(t)
	t.Logf("archive %d bytes, %d shipped (%.2f:1)", res.InitBytes, res.ShippedBytes, float64(res.InitBytes)/float64(res.ShippedBytes))
	if res.ShippedBytes <= 0 || res.InitBytes < 20000*128 || res.ShippedBytes >= res.InitBytes*2/3 {
		t.Errorf("archive %d bytes, %d shipped: want a 2.5 MB archive compressed to under 2/3", res.InitBytes, res.ShippedBytes)
	}
	last := ship.progress[len(ship.progress)-1]
	if !last.Done || last.Raw != res.InitBytes || last.Compressed != res.ShippedBytes {
		t.Errorf("the last progress report %+v is not the result's %d and %d bytes", last, res.InitBytes, res.ShippedBytes)
	}
	if len(res.Tables) != 1 || res.Tables[0].Rows != 20000 {
		t.Errorf("tables %+v, want big's 20000 rows", res.Tables)
	}
	mustVerify(t, cfg)
	if _, err := Teardown(ctx, cfg, TeardownOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestShippedBackupFailure fails the ship at the publisher's site, refused
// by the publisher or killed in the middle of its archive: setup fails
// saying why, the ship's process is gone, and neither side keeps anything.
func TestShippedBackupFailure(t *testing.T) {
	t.Parallel()
	for _, fault := range []string{"publisher-refused", "killed"} {
		t.Run(fault, func(t *testing.T) {
			t.Parallel()
			p, cfg, ship := shipPair(t)
			ctx := testCtx(t, 3*time.Minute)
			opts := SetupOptions{Init: InitBackup, Shipper: &ship.Shipper}
			want := "signal: killed"
			switch fault {
			case "publisher-refused":
				refused := p.cfg.Publisher
				refused.User = "nobody"
				opts.InitPublisher = refused
				want = `password authentication failed for user "nobody"`
			default:
				ship.onReport = func(cmd *exec.Cmd) { _ = cmd.Process.Kill() }
			}
			_, err := Setup(ctx, cfg, opts)
			if err == nil {
				t.Fatal("setup succeeded although its ship failed")
			}
			t.Logf("setup: %v", err)
			if !strings.Contains(err.Error(), "ship from local") || !strings.Contains(err.Error(), want) {
				t.Errorf("the error does not say the ship failed and why (%q): %v", want, err)
			}
			ship.exited(t)
			mustBeClean(t, ctx, p, cfg, "public.big")
		})
	}
}
