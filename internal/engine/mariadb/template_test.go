package mariadb_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
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
// copy. Not parallel: it changes the template every Start of the process
// copies, and puts it back before the parallel tests run.
func TestPoisonedTemplate(t *testing.T) {
	e := mariatest.Engine(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	restore, err := mariadb.PoisonTemplate(ctx, e, func(img *engine.DirImage) {
		img.SetFile("my.cnf", []byte("[mysqld]\nbind-address=0.0.0.0\nskip-grant-tables\n"))
		img.SetFile("mysql/my.cnf", []byte("[mysqld]\nbind-address=0.0.0.0\nskip-grant-tables\n"))
	})
	if err != nil {
		t.Fatal(err)
	}
	inst := mariatest.Start(t, "poisoned", nil)
	restore()
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

// TestKilledDuringTemplate: a dbrig killed (SIGKILL) while
// mariadb-install-db makes its template leaves the installer dead with it,
// and the next run's RemoveStale removes the template's directory at once.
func TestKilledDuringTemplate(t *testing.T) {
	mariatest.Engine(t)
	base := mariatest.BaseDir(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	// The helper's template goes under its TMPDIR: base, the test's own.
	cmd.Env = append(os.Environ(), helperEnv+"=wait", helperBaseEnv+"="+base, "TMPDIR="+base)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := engine.Start(cmd); err != nil { // dies with the test binary
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }() // owned by the child; collected below
	defer func() {
		_ = cmd.Process.Kill()
		<-done
	}()
	tmpl := waitForTemplate(t, base, done, &out)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	done <- <-done
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
}

// waitForTemplate returns the child's template directory once the
// installer has begun to make the template's data directory.
func waitForTemplate(t *testing.T, base string, done chan error, out *strings.Builder) string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		if data, _ := filepath.Glob(filepath.Join(base, "dbrig-mariadbtmpl-*", "data")); len(data) == 1 {
			return filepath.Dir(data[0])
		}
		select {
		case err := <-done:
			done <- err
			t.Fatalf("the helper ended before the installer (%v): %s", err, out.String())
		case <-time.After(time.Millisecond):
		}
	}
	t.Fatal("mariadb-install-db did not begin in 60 s")
	return ""
}
