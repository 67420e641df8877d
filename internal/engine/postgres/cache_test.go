package postgres_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/enginetest"
	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
)

// helperOnceEnv makes the helper start an instance, say what the tests
// below judge, stop it and exit.
const helperOnceEnv = "DBRIG_PG_HELPER_ONCE"

// helperOnce says how many templates initdb made in this process, where
// the server listens and whether it admits the superuser without a
// password.
func helperOnce(base string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	bin, err := postgres.FindBinaries(ctx, os.Getenv("DBRIG_PG_BIN"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 1
	}
	inst, err := postgres.Start(ctx, postgres.Options{
		InstanceConfig: engine.InstanceConfig{Name: "once", Settings: map[string]string{"fsync": "off"}},
		StartOptions:   engine.StartOptions{BaseDir: base}, Binaries: bin,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 1
	}
	listen, err := inst.Setting(ctx, "listen_addresses")
	fmt.Printf("made=%d listen=%q (%v)\n", engine.TemplatesMade(), listen, err)
	for _, ci := range []postgres.ConnInfo{inst.Conn("postgres"), inst.UnixConn("postgres")} {
		if tryLogin(ctx, postgres.ConnInfoOf(ci.WithPassword(""))) == nil {
			fmt.Printf("admitted without a password at %s\n", ci.Host)
		}
	}
	if err := inst.Stop(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 1
	}
	return 0
}

var madeRE = regexp.MustCompile(`made=(\d+) listen="([^"]*)"`)

// startOnce runs a helper dbrig that starts one instance with the template
// cache dir, and returns how many templates it had initdb make.
func startOnce(t *testing.T, cacheDir string) (made string, said string) {
	t.Helper()
	return startOnceIn(t, pgtest.BaseDir(t), cacheDir)
}

// startOnceIn is startOnce with the helper's instance under base.
func startOnceIn(t *testing.T, base, cacheDir string) (made string, said string) {
	t.Helper()
	out, err := enginetest.RunHelper(t, helperBaseEnv+"="+base, helperOnceEnv+"=1", engine.CacheDirEnv+"="+cacheDir)
	m := madeRE.FindStringSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("the helper failed (%v): %s", err, out)
	}
	if m[2] != "127.0.0.1" || strings.Contains(out, "admitted") {
		t.Errorf("the helper's server: %s", out)
	}
	return m[1], out
}

// TestSecondProcessTakesTheCachedTemplate: the first process on a fresh
// template cache runs initdb, the second runs none and copies the first's
// template; the cache holds one template and no password of either.
func TestSecondProcessTakesTheCachedTemplate(t *testing.T) {
	t.Parallel()
	pgtest.Binaries(t)
	cache := enginetest.SecondProcessTakesTheCachedTemplate(t, "postgres", "initdb", startOnce)
	// initdb's superuser has no password: no SCRAM verifier is kept.
	if file := enginetest.FileHolding(t, cache, []byte("SCRAM-SHA-256$")); file != "" {
		t.Errorf("a password verifier is in %s", file)
	}
}

// TestPoisonedCachedTemplate: what the server account could plant in
// initdb's scratch directory, and so in the cached template, never
// reaches a server: a postgresql.conf with a setting initdb does not write
// (hba_file naming a file that trusts every login) or a standby.signal
// gets the template refused and made again, and no login without a
// password is admitted (startOnce); configuration files every copy gets
// from dbrig are simply not copied. The cases run in turn on one cache: a
// refused template is made again, clean, for the next case.
func TestPoisonedCachedTemplate(t *testing.T) {
	t.Parallel()
	pgtest.Binaries(t)
	trust := filepath.Join(pgtest.BaseDir(t), "trust_hba.conf")
	if err := os.WriteFile(trust, []byte("local all all trust\nhost all all 127.0.0.1/32 trust\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	startOnce(t, cache)
	for _, c := range []struct {
		name     string
		files    map[string]string
		wantMade string
	}{
		{"hba_file in postgresql.conf", map[string]string{
			"postgresql.conf": "max_connections = 100\nshared_buffers = 128MB\nhba_file = '" + trust + "'\n",
		}, "1"},
		{"standby.signal", map[string]string{"standby.signal": ""}, "1"},
		{"dbrig's own files", map[string]string{
			"postgresql.auto.conf": "hba_file = '" + trust + "'\n",
			"pg_hba.conf":          "local all all trust\nhost all all 0.0.0.0/0 trust\nhost all all 127.0.0.1/32 trust\n",
			"pg_ident.conf":        "planted postgres postgres\n",
		}, "0"},
	} {
		enginetest.PoisonTemplateFile(t, cache, "postgres", c.files)
		if made, out := startOnce(t, cache); made != c.wantMade {
			t.Errorf("%s: initdb made %s templates, want %s: %s", c.name, made, c.wantMade, out)
		}
	}
}

// TestUnsafeCacheDirIsNotUsed: a group-writable cache directory is not
// used: the start runs initdb, puts nothing there and says why.
func TestUnsafeCacheDirIsNotUsed(t *testing.T) {
	t.Parallel()
	pgtest.Binaries(t)
	cache := t.TempDir()
	if err := os.Chmod(cache, 0o770); err != nil {
		t.Fatal(err)
	}
	made, out := startOnce(t, cache)
	if made != "1" || !strings.Contains(out, "template cache is not used") {
		t.Errorf("initdb made %s templates (want 1), the helper said: %s", made, out)
	}
	if entries, _ := os.ReadDir(cache); len(entries) != 0 {
		t.Errorf("%d entries put in the refused cache directory", len(entries))
	}
}
