package pgtest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/postgres"
)

// Shared is one instance for the tests of a package that each need a
// database of their own rather than a server of their own: an initdb and a
// start cost seconds of a busy machine's CPU per test, a database a few
// milliseconds. It starts at the first Database call; the package's
// TestMain stops it with Stop after m.Run, since no single test owns it.
type Shared struct {
	name     string
	settings map[string]string

	once  sync.Once
	inst  *postgres.Instance
	err   error
	skip  string
	count atomic.Int64
}

// NewShared describes a shared instance; settings are Start's.
func NewShared(name string, settings map[string]string) *Shared {
	return &Shared{name: name, settings: settings}
}

// Database creates a database of the test's own on the shared instance,
// dropped when the test ends, and returns the instance and its name.
func (s *Shared) Database(tb testing.TB) (*postgres.Instance, string) {
	tb.Helper()
	s.once.Do(s.start)
	if s.skip != "" {
		tb.Skip(s.skip)
	}
	if s.err != nil {
		tb.Fatalf("start shared postgres %q: %v", s.name, s.err)
	}
	db := fmt.Sprintf("%s_%d", s.name, s.count.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := s.inst.CreateDatabase(ctx, db); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := s.inst.DropDatabase(context.Background(), db); err != nil {
			tb.Errorf("drop database %s: %v", db, err)
		}
	})
	return s.inst, db
}

func (s *Shared) start() {
	bin, err := postgres.FindBinaries(context.Background(), os.Getenv("DBRIG_PG_BIN"))
	if errors.Is(err, postgres.ErrNoServer) && os.Getenv("CI") == "" {
		s.skip = "skipped: " + err.Error()
		return
	}
	if err != nil {
		s.err = err
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	s.inst, s.err = postgres.Start(ctx, postgres.Options{InstanceConfig: engine.InstanceConfig{Name: s.name, Settings: fast(s.settings)}, Binaries: bin})
}

// Stop stops the instance if a test started it; a failure goes to stderr,
// as no test is left to report it.
func (s *Shared) Stop() {
	if s.inst == nil {
		return
	}
	if err := s.inst.Stop(context.Background()); err != nil {
		fmt.Fprintf(os.Stderr, "stop shared postgres %q: %v\n", s.name, err)
	}
}
