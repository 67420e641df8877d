package script

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/mariadb"
	"github.com/dbrig/dbrig/internal/engine/mariadb/mariatest"
)

// sharedMariaDB is pgtest.Shared for MariaDB: one server for the package's
// tests that each need a database of their own on MariaDB, not a server
// (a mariadb-install-db, a start and a stop each). It starts at the first
// Database call; TestMain stops it and removes its directory.
type sharedMariaDB struct {
	name  string
	once  sync.Once
	base  string
	inst  *mariadb.Instance
	err   error
	skip  string
	count atomic.Int64
}

var sharedMaria = &sharedMariaDB{name: "script"}

// Database makes a database of the test's own on the shared server,
// dropped when the test ends, and returns the server and its name.
func (s *sharedMariaDB) Database(tb testing.TB) (*mariadb.Instance, string) {
	tb.Helper()
	s.once.Do(s.start)
	if s.skip != "" {
		tb.Skip(s.skip)
	}
	if s.err != nil {
		tb.Fatalf("start shared mariadb %q: %v", s.name, s.err)
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

// start is mariatest.Start's, for a server no test owns: its base
// directory is the package's, not a test's.
func (s *sharedMariaDB) start() {
	e := mariadb.New(os.Getenv("DBRIG_MARIADB_BIN"))
	_, err := e.FindBinaries(context.Background())
	if errors.Is(err, mariadb.ErrNoServer) && os.Getenv("CI") == "" {
		s.skip = "skipped: " + err.Error()
		return
	}
	if err != nil {
		s.err = err
		return
	}
	// The server account must enter it (os.MkdirTemp makes it 0700).
	if s.base, s.err = os.MkdirTemp("", "dbrig-mt-"); s.err != nil {
		return
	}
	if s.err = os.Chmod(s.base, 0o755); s.err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cfg := engine.InstanceConfig{Name: s.name, Engine: mariadb.Name, Settings: maps.Clone(mariatest.FastSettings)}
	s.inst, s.err = e.StartInstance(ctx, cfg, engine.StartOptions{BaseDir: s.base})
}

// Stop stops the server if a test started it and removes its directory; a
// failure goes to stderr, as no test is left to report it.
func (s *sharedMariaDB) Stop() {
	if s.inst != nil {
		if err := s.inst.Stop(context.Background()); err != nil {
			fmt.Fprintf(os.Stderr, "stop shared mariadb %q: %v\n", s.name, err)
		}
	}
	if s.base != "" {
		os.RemoveAll(s.base)
	}
}
