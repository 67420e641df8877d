package mariadb_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/enginetest"
	"github.com/dbrig/dbrig/internal/engine/mariadb"
	"github.com/dbrig/dbrig/internal/engine/mariadb/mariatest"
)

// helperOnce (helper mode "once") starts an instance, says how many
// templates mariadb-install-db made in this process, where the server
// listens, whether it skips the grant tables and which logins it admits
// without a password, stops it and exits.
func helperOnce(base string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	inst, err := mariadb.New(os.Getenv("DBRIG_MARIADB_BIN")).StartInstance(ctx,
		engine.InstanceConfig{Name: "once", Settings: mariatest.FastSettings}, engine.StartOptions{BaseDir: base})
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 1
	}
	mi := inst
	var bind string
	var skipGrants bool
	db, err := mariadb.Open(ctx, mi.Login(""))
	if err == nil {
		err = db.QueryRowContext(ctx, "SELECT @@bind_address, @@skip_grant_tables").Scan(&bind, &skipGrants)
		db.Close()
	}
	fmt.Printf("made=%d bind=%q skip_grant_tables=%v (%v)\n", engine.TemplatesMade(), bind, skipGrants, err)
	for _, login := range []engine.Conn{
		mi.Login("").WithPassword(""),
		engine.NewConn(mariadb.Name, mi.Socket(), 0, "root", "", ""),
		engine.NewConn(mariadb.Name, "127.0.0.1", mi.Port(), "root", "", ""),
	} {
		if db, err := mariadb.Open(ctx, login); err == nil {
			db.Close()
			fmt.Printf("admitted %s without a password at %s\n", login.User, login.Host)
		}
	}
	if err := inst.Stop(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 1
	}
	return 0
}

var madeRE = regexp.MustCompile(`made=(\d+) bind="([^"]*)" skip_grant_tables=(\w+) \(<nil>\)`)

// startOnce runs a helper dbrig that starts one instance with the template
// cache dir, and returns how many templates it had mariadb-install-db
// make. MYSQL_HOME is the instance's data directory (relative to the
// server's working directory, the instance's), so that a my.cnf there is
// one mariadbd would read were it not for --no-defaults.
func startOnce(t *testing.T, cacheDir string) (made string, said string) {
	t.Helper()
	out, err := enginetest.RunHelper(t, helperEnv+"=once", helperBaseEnv+"="+mariatest.BaseDir(t),
		engine.CacheDirEnv+"="+cacheDir, "MYSQL_HOME=data")
	m := madeRE.FindStringSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("the helper failed (%v): %s", err, out)
	}
	if m[2] != "127.0.0.1" || m[3] != "false" || strings.Contains(out, "admitted") {
		t.Errorf("the helper's server: %s", out)
	}
	return m[1], out
}

// TestSecondProcessTakesTheCachedTemplate: the first process on a fresh
// template cache runs mariadb-install-db, the second runs none and copies
// the first's template; the cache holds one template.
func TestSecondProcessTakesTheCachedTemplate(t *testing.T) {
	t.Parallel()
	mariatest.Engine(t)
	enginetest.SecondProcessTakesTheCachedTemplate(t, "mariadb", "mariadb-install-db", startOnce)
}

// TestPoisonedCachedTemplate: a my.cnf in a cached template, which
// mariadbd would read from MYSQL_HOME, does not reach the server
// (--no-defaults): it listens on loopback only, checks grants and admits
// no login without a password.
func TestPoisonedCachedTemplate(t *testing.T) {
	t.Parallel()
	mariatest.Engine(t)
	cache := t.TempDir()
	startOnce(t, cache)
	enginetest.PoisonTemplateFile(t, cache, "mariadb", map[string]string{
		"my.cnf": "[mysqld]\nbind-address=0.0.0.0\nskip-grant-tables\n",
	})
	if made, out := startOnce(t, cache); made != "0" {
		t.Errorf("the poisoned template was not the one copied (mariadb-install-db made %s): %s", made, out)
	}
}

// TestUnsafeCacheDirIsNotUsed: a cache directory owned by another uid is
// not used (as root; as another user, one that is world-writable): the
// start runs mariadb-install-db, puts nothing there and says why.
func TestUnsafeCacheDirIsNotUsed(t *testing.T) {
	t.Parallel()
	mariatest.Engine(t)
	cache := t.TempDir()
	var err error
	if os.Geteuid() == 0 {
		err = os.Chown(cache, 65534, 65534)
	} else {
		err = os.Chmod(cache, 0o777)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chown(cache, os.Getuid(), os.Getgid()) })
	made, out := startOnce(t, cache)
	if made != "1" || !strings.Contains(out, "template cache is not used") {
		t.Errorf("mariadb-install-db made %s templates (want 1), the helper said: %s", made, out)
	}
	if entries, _ := os.ReadDir(cache); len(entries) != 0 {
		t.Errorf("%d entries put in the refused cache directory", len(entries))
	}
}
