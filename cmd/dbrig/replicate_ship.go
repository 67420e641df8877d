package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/dbrig/dbrig/internal/doctor"
	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/replication"
	"github.com/dbrig/dbrig/internal/units"
)

// shipConnectTimeout bounds ssh's connection to the publisher's host.
const shipConnectTimeout = 15 * time.Second

// shipper makes --ship's Shipper: the ship as a child process of this
// dbrig ("local"), or over the user's ssh ("ssh://[USER@]HOST[:PORT]"), as
// the agents are started (BatchMode, the user's config and keys, no port
// opened; the request with the publisher's login crosses on ssh's standard
// input, never its command line). Nil when --ship is not given.
func (f *replicateFlags) shipper(a *app, init replication.InitMethod) (*replication.Shipper, error) {
	if f.ship == "" {
		if f.shipBin != "" || f.sshConfig != "" {
			return nil, errors.New("--ship-bin and --ssh-config go with --ship")
		}
		return nil, nil
	}
	if init != replication.InitBackup {
		return nil, fmt.Errorf("--ship %s: goes with --init backup (--init snapshot copies each table in --streams sessions of one snapshot, each a COPY stream of its own, where the ship carries one archive)", f.ship)
	}
	s := &replication.Shipper{Where: f.ship, ProgressEvery: f.progress, Progress: shipProgress(a)}
	bin := f.shipBin
	switch {
	case f.ship == "local":
		if f.sshConfig != "" {
			return nil, errors.New("--ssh-config goes with --ship ssh://HOST")
		}
		if bin == "" {
			exe, err := os.Executable()
			if err != nil {
				return nil, fmt.Errorf("--ship local: this dbrig's path: %w", err)
			}
			bin = exe
		}
		s.Command = func() *exec.Cmd {
			cmd := exec.Command(bin, "replicate", "ship")
			cmd.Env = withoutLogins(os.Environ())
			return cmd
		}
	case strings.HasPrefix(f.ship, "ssh://"):
		target, err := doctor.ParseTarget(strings.TrimPrefix(f.ship, "ssh://"))
		if err != nil {
			return nil, fmt.Errorf("--ship %s: %w", f.ship, err)
		}
		if bin == "" {
			bin = "dbrig"
		}
		args := doctor.SSH{ConfigFile: f.sshConfig}.RemoteArgs(target, shipConnectTimeout, doctor.ShellQuote(bin)+" replicate ship")
		s.SSH = true
		s.Command = func() *exec.Cmd { return exec.Command("ssh", args...) }
	default:
		return nil, fmt.Errorf("--ship %q: want local or ssh://[USER@]HOST[:PORT]", f.ship)
	}
	return s, nil
}

// withoutLogins is an environment without the publisher's and the
// subscriber's URIs: the ship's login comes in its request, and a ship that
// knew none has no password to filter out of its archive.
func withoutLogins(env []string) []string {
	var kept []string
	for _, kv := range env {
		if !strings.HasPrefix(kv, "DBRIG_PUBLISHER=") && !strings.HasPrefix(kv, "DBRIG_SUBSCRIBER=") {
			kept = append(kept, kv)
		}
	}
	return kept
}

// shipProgress prints the shipped archive's progress on stderr.
func shipProgress(a *app) func(replication.ShipProgress) {
	return func(p replication.ShipProgress) {
		if p.Done {
			return // setup's summary says it
		}
		fmt.Fprintf(a.stderr, "%s  backup: %.1f MB of archive arrived, %.1f MB crossed compressed%s\n",
			units.FormatDuration(p.Elapsed.Round(time.Millisecond)), float64(p.Raw)/1e6, float64(p.Compressed)/1e6, ratio(p.Raw, p.Compressed))
	}
}

func ratio(raw, compressed int64) string {
	if compressed <= 0 {
		return ""
	}
	return fmt.Sprintf(" (%.2f:1)", float64(raw)/float64(compressed))
}

// replicateShip is `dbrig replicate ship`, the publisher's half of a
// shipped backup, which setup --ship starts: its request on stdin, the
// compressed archive on stdout, its errors on stderr. The archive goes to
// the process's own stdout, not through the filter that keeps passwords
// out of messages: that would rewrite compressed bytes that happened to
// spell one.
func replicateShip(ctx context.Context, f *replicateFlags) error {
	if f.publisher != "" || f.subscriber != "" || f.ship != "" {
		return usageError(errors.New("ship: takes no flags: setup --ship starts it and gives it its request on standard input"))
	}
	if err := replication.ServeShip(ctx, os.Stdin, os.Stdout, postgres.Binaries{}); err != nil {
		return failure(fmt.Errorf("ship: %w", err))
	}
	return nil
}
