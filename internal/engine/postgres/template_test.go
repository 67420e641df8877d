package postgres_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/enginetest"
	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
)

// TestTemplateCopiesHaveTheirOwnPasswords: two instances copied from one
// template have different passwords, each admits only its own, and
// neither password is in any file of either instance (logs included) or
// in the template.
func TestTemplateCopiesHaveTheirOwnPasswords(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	a, b := pgtest.Start(t, "a", nil), pgtest.Start(t, "b", nil)
	pwA, pwB := a.Conn("postgres").Password(), b.Conn("postgres").Password()
	if pwA == "" || pwA == pwB {
		t.Fatalf("the two instances' passwords are empty or equal")
	}
	for _, c := range []struct {
		inst *postgres.Instance
		pw   string
		ok   bool
	}{{a, pwA, true}, {a, pwB, false}, {b, pwB, true}, {b, pwA, false}} {
		for _, ci := range []postgres.ConnInfo{c.inst.Conn("postgres"), c.inst.UnixConn("postgres")} {
			err := tryLogin(ctx, postgres.ConnInfoOf(ci.WithPassword(c.pw)))
			if (err == nil) != c.ok {
				t.Errorf("%s at %s with its own password %v: login error %v", c.inst.Name(), ci.Host, c.ok, err)
			}
		}
	}
	for _, pw := range []string{pwA, pwB} {
		for _, dir := range []string{a.Dir(), b.Dir()} {
			if file := enginetest.FileHolding(t, dir, []byte(pw)); file != "" {
				t.Errorf("a password is in %s", file)
			}
		}
		if postgres.TemplateContains(a.Binaries(), []byte(pw)) {
			t.Errorf("a password is in the template")
		}
	}
}

func tryLogin(ctx context.Context, ci postgres.ConnInfo) error {
	cfg, err := ci.ConnConfig()
	if err != nil {
		return err
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return err
	}
	return conn.Close(ctx)
}

// TestPoisonedTemplate: a template in memory whose postgresql.conf holds
// a setting initdb does not write (hba_file naming a file that trusts
// every login) never yields a server that admits a login without a
// password: a copy's postgresql.conf is the one the template's check
// rebuilt, never the image's. Not parallel: it changes the template every
// Start of the process copies, and puts it back (at its end) before the
// parallel tests run.
func TestPoisonedTemplate(t *testing.T) {
	bin := pgtest.Binaries(t)
	base := pgtest.BaseDir(t)
	trust := filepath.Join(base, "trust_hba.conf")
	if err := os.WriteFile(trust, []byte("local all all trust\nhost all all 127.0.0.1/32 trust\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	restore, err := postgres.PoisonTemplate(ctx, bin, func(img *engine.DirImage) {
		conf, _ := img.File("postgresql.conf")
		img.SetFile("postgresql.conf", append(slices.Clip(conf), "\nhba_file = '"+trust+"'\n"...))
	})
	if err != nil {
		t.Fatal(err)
	}
	// Put back even when the start fails: every later Start copies it.
	t.Cleanup(restore)
	inst, err := postgres.Start(ctx, postgres.Options{
		InstanceConfig: engine.InstanceConfig{Name: "poisoned", Settings: map[string]string{"fsync": "off"}},
		StartOptions:   engine.StartOptions{BaseDir: base}, Binaries: bin,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Stop(context.Background())
	for _, ci := range []postgres.ConnInfo{inst.Conn("postgres"), inst.UnixConn("postgres")} {
		if err := tryLogin(ctx, postgres.ConnInfoOf(ci.WithPassword(""))); err == nil {
			t.Errorf("a login without a password at %s was admitted", ci.Host)
		}
	}
}

// TestKilledDuringTemplate: a dbrig killed (SIGKILL) while initdb makes
// its template leaves no password on disk and no template in the cache,
// initdb dies with it, the next run's RemoveStale removes the template's
// directory at once, and the next process makes the template.
func TestKilledDuringTemplate(t *testing.T) {
	pgtest.Binaries(t)
	base := pgtest.BaseDir(t)
	// The helper's template goes under its instance's base directory, the
	// test's own, not under a TMPDIR that it might not reach (here one
	// that does not exist).
	// A fresh template cache: the helper runs initdb.
	cache := t.TempDir()
	env := []string{helperBaseEnv + "=" + base, "TMPDIR=" + filepath.Join(base, "none"), engine.CacheDirEnv + "=" + cache}
	tmpl := filepath.Dir(enginetest.KillWhenMade(t, env, filepath.Join(base, "dbrig-pgtmpl-*", "data"), "initdb"))
	waitNoProcessIn(t, base, 30*time.Second)
	if _, err := os.Stat(tmpl); err != nil {
		t.Skip("the template was made before the kill: nothing to judge here")
	}
	removed := postgres.RemoveStale(base)
	if len(removed) == 0 || !strings.Contains(strings.Join(removed, " "), tmpl) {
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
		t.Errorf("the process after the kill had initdb make %s templates, want 1: %s", made, out)
	}
}

// TestNoTemplateLeft: a process that makes its template (a fresh cache
// of its own) leaves no template directory on disk, and once its
// instance stops its base directory is empty.
func TestNoTemplateLeft(t *testing.T) {
	t.Parallel()
	pgtest.Binaries(t)
	base := pgtest.BaseDir(t)
	if made, out := startOnceIn(t, base, t.TempDir()); made != "1" {
		t.Fatalf("the helper had initdb make %s templates, want 1: %s", made, out)
	}
	if entries, _ := os.ReadDir(base); len(entries) != 0 {
		t.Errorf("%d entries left in %s, the first %s", len(entries), base, entries[0].Name())
	}
}
