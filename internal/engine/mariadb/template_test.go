package mariadb_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/enginetest"
	"github.com/dbrig/dbrig/internal/engine/mariadb"
	"github.com/dbrig/dbrig/internal/engine/mariadb/mariatest"
)

// TestTemplateCopiesHaveTheirOwnPasswords: two instances copied from one
// template have different passwords, each admits only its own, and
// neither password is in any file of either instance (logs included) or
// in the template.
func TestTemplateCopiesHaveTheirOwnPasswords(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	a, b := mariatest.Start(t, "a", nil), mariatest.Start(t, "b", nil)
	pwA, pwB := a.Login("").Password(), b.Login("").Password()
	if pwA == "" || pwA == pwB {
		t.Fatalf("the two instances' passwords are empty or equal")
	}
	for _, c := range []struct {
		inst *mariadb.Instance
		pw   string
		ok   bool
	}{{a, pwA, true}, {a, pwB, false}, {b, pwB, true}, {b, pwA, false}} {
		unix, _ := c.inst.UnixLogin("")
		for _, login := range []engine.Conn{c.inst.Login(""), unix} {
			db, err := mariadb.Open(ctx, login.WithPassword(c.pw))
			if err == nil {
				db.Close()
			}
			if (err == nil) != c.ok {
				t.Errorf("%s at %s with its own password %v: login error %v", c.inst.Name(), login.Host, c.ok, err)
			}
		}
	}
	for _, pw := range []string{pwA, pwB} {
		for _, dir := range []string{a.Dir(), b.Dir()} {
			if file := enginetest.FileHolding(t, dir, []byte(pw)); file != "" {
				t.Errorf("a password is in %s", file)
			}
		}
		if mariadb.TemplateContains([]byte(pw)) {
			t.Errorf("a password is in the template")
		}
	}
}

// TestPoisonedTemplate: an option file written into the template reaches
// no server (mariadbd runs with --no-defaults), and the installer's root,
// which logs in through the socket without a password, is gone from every
// copy. mariadbd reads no option file from its data directory by itself:
// MYSQL_HOME, which the server inherits from dbrig, is set here to the
// data directory (relative to the server's working directory, the
// instance's), so that the poison is one mariadbd would read were it not
// for --no-defaults. Not parallel: it changes the template every Start of
// the process copies and the process's environment, and puts both back (at
// its end) before the parallel tests run.
func TestPoisonedTemplate(t *testing.T) {
	e := mariatest.Engine(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	t.Setenv("MYSQL_HOME", "data")
	restore, err := mariadb.PoisonTemplate(ctx, e, func(img *engine.DirImage) {
		img.SetFile("my.cnf", []byte("[mysqld]\nbind-address=0.0.0.0\nskip-grant-tables\n"))
	})
	if err != nil {
		t.Fatal(err)
	}
	// Put back even when the start fails: every later Start copies it.
	t.Cleanup(restore)
	inst := mariatest.Start(t, "poisoned", nil)
	if inst.DataDir() != filepath.Join(inst.Dir(), "data") {
		t.Fatalf("the data directory %s is not MYSQL_HOME, data under %s", inst.DataDir(), inst.Dir())
	}
	var bind string
	var skipGrants bool
	if err := open(t, inst.Login("")).QueryRowContext(ctx, "SELECT @@bind_address, @@skip_grant_tables").Scan(&bind, &skipGrants); err != nil || bind != "127.0.0.1" || skipGrants {
		t.Errorf("bind_address %q, skip_grant_tables %v (%v), want 127.0.0.1 and off", bind, skipGrants, err)
	}
	for _, login := range []engine.Conn{
		inst.Login("").WithPassword(""),
		engine.NewConn(mariadb.Name, inst.Socket(), 0, "root", "", ""),
		engine.NewConn(mariadb.Name, "127.0.0.1", inst.Port(), "root", "", ""),
	} {
		if db, err := mariadb.Open(ctx, login); err == nil {
			db.Close()
			t.Errorf("%s logged in without a password at %s", login.User, login.Host)
		}
	}
}

// TestPlantedAccountIsDropped: an account, a role and a proxy grant the
// server account could have planted in the installer's data directory
// before dbrig read it are gone from every copy: the planted logins, with
// no password, are refused. The planted template is a stopped instance's
// data directory where they were made. Not parallel: it changes the
// template every Start of the process copies, and puts it back (at its
// end) before the parallel tests run.
func TestPlantedAccountIsDropped(t *testing.T) {
	e := mariatest.Engine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	donor, err := e.StartInstance(ctx, engine.InstanceConfig{Name: "donor", Engine: mariadb.Name, Settings: mariatest.FastSettings},
		engine.StartOptions{BaseDir: mariatest.BaseDir(t), Keep: true})
	if err != nil {
		t.Fatal(err)
	}
	db := open(t, donor.Login(""))
	for _, stmt := range []string{
		"CREATE USER 'planted'@'127.0.0.1', 'planted'@'localhost', 'proxied'@'127.0.0.1'",
		"GRANT ALL PRIVILEGES ON *.* TO 'planted'@'127.0.0.1', 'planted'@'localhost' WITH GRANT OPTION",
		"CREATE ROLE planted_role",
		"GRANT ALL PRIVILEGES ON *.* TO planted_role",
		"GRANT planted_role TO 'proxied'@'127.0.0.1'",
		"GRANT PROXY ON '" + mariadb.SuperUser + "'@'127.0.0.1' TO 'proxied'@'127.0.0.1'",
		// A fresh installer's tree holds no dbrig login.
		"DROP USER '" + mariadb.SuperUser + "'@'localhost', '" + mariadb.SuperUser + "'@'127.0.0.1'",
	} {
		if _, err := db.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	db.Close()
	if err := donor.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	user, err := engine.FindServerUser()
	if err != nil {
		t.Fatal(err)
	}
	planted, err := engine.ReadDirImage(donor.DataDir(), user.UID)
	if err != nil {
		t.Fatal(err)
	}
	restore, err := mariadb.PoisonTemplate(ctx, e, func(img *engine.DirImage) { *img = *planted })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(restore)
	inst := mariatest.Start(t, "planted", nil)
	for _, user := range []string{"planted", "proxied"} {
		for _, login := range []engine.Conn{
			engine.NewConn(mariadb.Name, "127.0.0.1", inst.Port(), user, "", ""),
			engine.NewConn(mariadb.Name, inst.Socket(), 0, user, "", ""),
		} {
			if db, err := mariadb.Open(ctx, login); err == nil {
				db.Close()
				t.Errorf("%s logged in without a password at %s", login.User, login.Host)
			}
		}
	}
	var n int
	if err := open(t, inst.Login("")).QueryRowContext(ctx, "SELECT COUNT(*) FROM mysql.roles_mapping").Scan(&n); err != nil || n != 0 {
		t.Errorf("role grants in the copy: %d (%v), want none", n, err)
	}
}

// TestKilledDuringTemplate: a dbrig killed (SIGKILL) while
// mariadb-install-db makes its template leaves the installer dead with it
// and no template in the cache, the next run's RemoveStale removes the
// template's directory at once, and the next process makes the template.
func TestKilledDuringTemplate(t *testing.T) {
	mariatest.Engine(t)
	base := mariatest.BaseDir(t)
	// The helper's template goes under its instance's base directory, the
	// test's own, not under a TMPDIR that it might not reach (here one
	// that does not exist).
	// A fresh template cache: the helper runs mariadb-install-db.
	cache := t.TempDir()
	env := []string{helperEnv + "=wait", helperBaseEnv + "=" + base, "TMPDIR=" + filepath.Join(base, "none"), engine.CacheDirEnv + "=" + cache}
	tmpl := filepath.Dir(enginetest.KillWhenMade(t, env, filepath.Join(base, "dbrig-mariadbtmpl-*", "data"), "mariadb-install-db"))
	mariatest.WaitNoServers(t, base, 30*time.Second)
	if _, err := os.Stat(tmpl); err != nil {
		t.Skip("the template was made before the kill: nothing to judge here")
	}
	removed := mariadb.RemoveStale(base)
	if !strings.Contains(strings.Join(removed, " "), tmpl) {
		t.Errorf("RemoveStale = %v, want %s among them at once", removed, tmpl)
	}
	if entries, _ := os.ReadDir(base); len(entries) != 0 {
		t.Errorf("%d entries left in %s", len(entries), base)
	}
	// No half template is left for the next process, which makes one.
	if names, _ := filepath.Glob(filepath.Join(cache, engine.TemplatesSubdir, "*.tmpl")); len(names) != 0 {
		t.Errorf("a killed dbrig left a template: %v", names)
	}
	if made, out := startOnce(t, cache); made != "1" {
		t.Errorf("the process after the kill had mariadb-install-db make %s templates, want 1: %s", made, out)
	}
}
