package enginetest

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// DatabaseServer is what a shared server gives the tests that use it: a
// database of each test's own, and a stop once they are done.
type DatabaseServer interface {
	CreateDatabase(ctx context.Context, name string) error
	DropDatabase(ctx context.Context, name string) error
	Stop(ctx context.Context) error
}

// Shared is one server for the tests of a package that each need a
// database of their own rather than a server of their own: making and
// starting a server costs seconds of a busy machine's CPU per test, a
// database a few milliseconds. It starts at the first Database call; the
// package's TestMain stops it with Stop after m.Run, since no single test
// owns it. pgtest.NewShared and mariatest.NewShared make one per engine.
type Shared[S DatabaseServer] struct {
	engine, name string
	// start starts the server; skip non-empty skips the tests (no server
	// installed outside CI); cleanup, if any, runs after its stop.
	start func() (server S, skip string, cleanup func(), err error)

	once    sync.Once
	server  S
	started bool
	skip    string
	cleanup func()
	err     error
	count   atomic.Int64
}

// NewShared describes a shared server of engine, its databases named
// name_1, name_2 ...
func NewShared[S DatabaseServer](engine, name string, start func() (S, string, func(), error)) *Shared[S] {
	return &Shared[S]{engine: engine, name: name, start: start}
}

// Database creates a database of the test's own on the shared server,
// dropped when the test ends, and returns the server and its name.
func (s *Shared[S]) Database(tb testing.TB) (S, string) {
	tb.Helper()
	s.once.Do(func() {
		s.server, s.skip, s.cleanup, s.err = s.start()
		s.started = s.err == nil && s.skip == ""
	})
	if s.skip != "" {
		tb.Skip(s.skip)
	}
	if s.err != nil {
		tb.Fatalf("start shared %s %q: %v", s.engine, s.name, s.err)
	}
	db := fmt.Sprintf("%s_%d", s.name, s.count.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.server.CreateDatabase(ctx, db); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := s.server.DropDatabase(context.Background(), db); err != nil {
			tb.Errorf("drop database %s: %v", db, err)
		}
	})
	return s.server, db
}

// Stop stops the server if a test started it, then runs its cleanup; a
// failure goes to stderr, as no test is left to report it.
func (s *Shared[S]) Stop() {
	if s.started {
		if err := s.server.Stop(context.Background()); err != nil {
			fmt.Fprintf(os.Stderr, "stop shared %s %q: %v\n", s.engine, s.name, err)
		}
	}
	if s.cleanup != nil {
		s.cleanup()
	}
}
