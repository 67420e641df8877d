// Package enginetest holds what tests of every engine share: the registry
// of the engines dbrig has, as main builds it, for a workload's tests to
// open sessions through.
package enginetest

import (
	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/mariadb"
	"github.com/dbrig/dbrig/internal/engine/postgres"
)

// Registry is every engine, with the binaries found as dbrig finds them.
func Registry() *engine.Registry {
	return engine.NewRegistry(postgres.New(""), mariadb.New(""))
}
