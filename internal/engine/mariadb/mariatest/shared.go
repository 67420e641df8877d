package mariatest

import (
	"context"
	"errors"
	"maps"
	"os"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/enginetest"
	"github.com/dbrig/dbrig/internal/engine/mariadb"
)

// Shared is one MariaDB server for a package's tests that each need a
// database of their own (enginetest.Shared).
type Shared = enginetest.Shared[*mariadb.Instance]

// NewShared describes a shared server with FastSettings, in a base
// directory of its own (a server no test owns cannot live in a test's),
// removed after its stop.
func NewShared(name string) *Shared {
	return enginetest.NewShared("mariadb", name, func() (*mariadb.Instance, string, func(), error) {
		e := mariadb.New(os.Getenv("DBRIG_MARIADB_BIN"))
		_, err := e.FindBinaries(context.Background())
		if errors.Is(err, mariadb.ErrNoServer) && os.Getenv("CI") == "" {
			return nil, "skipped: " + err.Error(), nil, nil
		}
		if err != nil {
			return nil, "", nil, err
		}
		base, err := os.MkdirTemp("", "dbrig-mt-")
		if err != nil {
			return nil, "", nil, err
		}
		cleanup := func() { os.RemoveAll(base) }
		// The server account must enter it (os.MkdirTemp makes it 0700).
		if err := os.Chmod(base, 0o755); err != nil {
			return nil, "", cleanup, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cfg := engine.InstanceConfig{Name: name, Engine: mariadb.Name, Settings: maps.Clone(FastSettings)}
		inst, err := e.StartInstance(ctx, cfg, engine.StartOptions{BaseDir: base})
		if err != nil {
			return nil, "", cleanup, err
		}
		return inst, "", cleanup, nil
	})
}
