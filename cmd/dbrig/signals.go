package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
)

// interruptSignals stop dbrig the way Ctrl-C does: finished points are
// saved, servers stopped, what dbrig made on a target removed, exit code
// 130. SIGHUP is among them because a dropped terminal or ssh session
// sends it, and its default action (exit 129 at once) would leave the
// study's database on the user's target.
var interruptSignals = []os.Signal{os.Interrupt, syscall.SIGTERM, syscall.SIGHUP}

// exitReaderGone is the status a shell reports for a process SIGPIPE
// killed (128+13): `dbrig ... | head` ends as the shell says such a
// pipeline ends, but only after dbrig has cleaned up as on Ctrl-C.
const exitReaderGone = 128 + int(syscall.SIGPIPE)

// interruption is what stops dbrig before its command ends: the first of
// interruptSignals, or the program reading its output quitting (a write
// to stdout or stderr failing with EPIPE). The first cause cancels ctx; a
// later one does not cut the clean-up short.
type interruption struct {
	ctx    context.Context
	cancel context.CancelFunc
	stderr io.Writer
	begun  atomic.Bool
	// readerGone: the first cause was a closed output pipe (exit 141).
	readerGone atomic.Bool
}

// interruptContext starts watching the signals; stop ends the watch. The
// returned interruption's ctx is cancelled by the first cause.
//
// SIGPIPE is delivered to a channel nobody reads rather than left at its
// default, which kills dbrig at a write to a closed stdout before it has
// stopped its servers (the Go runtime then fails the write with EPIPE
// instead, which guardOutput turns into a stop). The signal itself is not
// a cause: a write to any broken socket raises it too (a proxied
// connection the server closed), and it does not say which file broke.
func interruptContext(stderr *os.File) (*interruption, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	in := &interruption{ctx: ctx, cancel: cancel}
	in.stderr = in.guardOutput(stderr)
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, interruptSignals...)
	done := make(chan struct{})
	go func() { // ends with stop
		for {
			select {
			case sig := <-signals:
				if in.begin() {
					fmt.Fprintf(in.stderr, "dbrig: %v: stopping; a second signal does not cut the clean-up short\n", sig)
				} else {
					fmt.Fprintf(in.stderr, "dbrig: %v: still stopping the servers and removing what dbrig made; this takes up to a minute (SIGKILL stops dbrig at once and leaves that behind)\n", sig)
				}
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
	return in, stop
}

// begin cancels the context if nothing has yet, and says whether it did.
func (in *interruption) begin() bool {
	if !in.begun.CompareAndSwap(false, true) {
		return false
	}
	in.cancel()
	return true
}

// readerQuit stops dbrig as Ctrl-C does when a write to its output finds
// the reading end closed.
func (in *interruption) readerQuit() {
	if in.begin() {
		in.readerGone.Store(true)
		fmt.Fprintln(in.stderr, "dbrig: the program reading dbrig's output quit (broken pipe): stopping as on Ctrl-C")
	}
}

// exitCode is code, or 141 when a closed output pipe stopped dbrig first.
func (in *interruption) exitCode(code int) int {
	if in.readerGone.Load() {
		return exitReaderGone
	}
	return code
}

// guardOutput wraps stdout or stderr so that a write finding the reader
// gone stops dbrig, and nothing more is written to that file.
func (in *interruption) guardOutput(f *os.File) io.Writer {
	return &pipeGuard{f: f, in: in}
}

// pipeGuard is an output file whose reader may quit (`dbrig ... | head`).
type pipeGuard struct {
	f      *os.File
	in     *interruption
	closed atomic.Bool
}

// Write reports success once the reader is gone, so a command goes on to
// see its cancelled context and cleans up rather than failing on output
// nobody reads.
func (g *pipeGuard) Write(p []byte) (int, error) {
	if g.closed.Load() {
		return len(p), nil
	}
	n, err := g.f.Write(p)
	if errors.Is(err, syscall.EPIPE) {
		g.closed.Store(true)
		g.in.readerQuit()
		return len(p), nil
	}
	return n, err
}

// Fd lets the terminal checks see the file (colour, width).
func (g *pipeGuard) Fd() uintptr { return g.f.Fd() }
