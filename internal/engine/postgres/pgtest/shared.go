package pgtest

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/enginetest"
	"github.com/dbrig/dbrig/internal/engine/postgres"
)

// Shared is one PostgreSQL server for a package's tests that each need a
// database of their own (enginetest.Shared).
type Shared = enginetest.Shared[*postgres.Instance]

// NewShared describes a shared instance; settings are Start's.
func NewShared(name string, settings map[string]string) *Shared {
	return enginetest.NewShared("postgres", name, func() (*postgres.Instance, string, func(), error) {
		bin, err := postgres.FindBinaries(context.Background(), os.Getenv("DBRIG_PG_BIN"))
		if errors.Is(err, postgres.ErrNoServer) && os.Getenv("CI") == "" {
			return nil, "skipped: " + err.Error(), nil, nil
		}
		if err != nil {
			return nil, "", nil, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		inst, err := postgres.Start(ctx, postgres.Options{InstanceConfig: engine.InstanceConfig{Name: name, Settings: fast(settings)}, Binaries: bin})
		return inst, "", nil, err
	})
}
