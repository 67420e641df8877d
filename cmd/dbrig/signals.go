package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// interruptSignals stop dbrig the way Ctrl-C does: finished points are
// saved, servers stopped, what dbrig made on a target removed, exit code
// 130. SIGHUP is among them because a dropped terminal or ssh session
// sends it, and its default action (exit 129 at once) would leave the
// study's database on the user's target.
var interruptSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// interruptContext is cancelled by the first of interruptSignals. A later
// one does not cut the clean-up short, since that would leave servers'
// directories and a target's database behind: dbrig says so on stderr and
// goes on (SIGKILL stops it at once; the next run removes what that left
// on this machine, not on a target).
func interruptContext(stderr io.Writer) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, interruptSignals...)
	done := make(chan struct{})
	go func() { // ends with stop
		select {
		case sig := <-signals:
			// The signal that reached dbrig reached the program reading
			// its output too (a pipe to tee or less, in the same terminal),
			// and a write to a closed pipe would kill dbrig mid-clean-up:
			// from here such a write fails and the clean-up goes on.
			signal.Ignore(syscall.SIGPIPE)
			fmt.Fprintf(stderr, "dbrig: %v: stopping; a second signal does not cut the clean-up short\n", sig)
			cancel()
		case <-done:
			return
		}
		for {
			select {
			case sig := <-signals:
				fmt.Fprintf(stderr, "dbrig: %v: still stopping the servers and removing what dbrig made; this takes up to a minute (SIGKILL stops dbrig at once and leaves that behind)\n", sig)
			case <-done:
				return
			}
		}
	}()
	stop := func() {
		signal.Stop(signals)
		close(done)
		cancel()
	}
	return ctx, stop
}
