package script

import (
	"os"
	"testing"

	"github.com/dbrig/dbrig/internal/engine/mariadb/mariatest"
	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
)

// sharedServer is the server of the tests that each need a database of
// their own rather than a server: an initdb and a start for each cost
// seconds of CPU, a database milliseconds. The tests that judge a server's
// timing or the whole process's figures keep a server of their own.
var (
	sharedServer = pgtest.NewShared("script", nil)
	sharedMaria  = mariatest.NewShared("script")
)

// TestMain stops the shared servers once every test is done: no test owns
// it, so no t.Cleanup can.
func TestMain(m *testing.M) {
	code := m.Run()
	sharedServer.Stop()
	sharedMaria.Stop()
	os.Exit(code)
}
