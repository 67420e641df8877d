package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine/mariadb"
	"github.com/dbrig/dbrig/internal/engine/mariadb/mariatest"
	"github.com/dbrig/dbrig/internal/study"
)

const targetSpec = `name = "on-yours"
title = "a study on the user's server"
[[instance]]
name = "db"
engine = "mariadb"
settings = { sort_buffer_size = "1M" }
[[link]]
between = ["client", "db"]
profile = "${net}"
[workload]
kind = "rbar"
experiment = "client-row-by-row"
rows = 50
[sweep]
net = ["unix", "lan-1g"]
[repeat]
runs = 1
`

// TestTargetFromTheEnvironment runs a study on a MariaDB server the user
// runs, named by a URI in an environment variable (so no password is on
// the command line): over TCP the unix point is skipped with the reason,
// the link still applies, nothing of dbrig's stays on the server and the
// password is nowhere; a URI naming the socket measures the unix point;
// a login that may not create dbrig's database fails before any point.
func TestTargetFromTheEnvironment(t *testing.T) {
	t.Parallel()
	server := mariatest.Start(t, "users", nil)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	const pw, readerPW = "Zq9TargetPw", "Zq9ReaderPw"
	var stmts []string
	for _, host := range []string{"127.0.0.1", "localhost"} {
		stmts = append(stmts, "CREATE USER 'app'@'"+host+"' IDENTIFIED BY '"+pw+"'", "GRANT ALL ON `dbrig\\_%`.* TO 'app'@'"+host+"'",
			"CREATE USER 'reader'@'"+host+"' IDENTIFIED BY '"+readerPW+"'", "GRANT SELECT ON *.* TO 'reader'@'"+host+"'")
	}
	if err := server.Exec(ctx, "", stmts...); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "on-yours.toml")
	if err := os.WriteFile(file, []byte(targetSpec), 0o644); err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(server.Port())
	for _, tt := range []struct {
		name, uri string
		code      int
		unix      bool // the unix point is measured, not skipped
	}{
		{"tcp", "mysql://app:" + pw + "@127.0.0.1:" + port + "/", 0, false},
		{"socket", "mariadb://app:" + pw + "@/?socket=" + server.Socket(), 0, true},
		{"no privilege", "mysql://reader:" + readerPW + "@127.0.0.1:" + port + "/", 1, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			base := mariatest.BaseDir(t)
			dir := filepath.Join(t.TempDir(), "run")
			cmd, stdout, lines := startDbrigEnv(t, base, []string{"DBRIG_TEST_TARGET=" + tt.uri}, "run", file, "--out", dir, "--target", "db=env:DBRIG_TEST_TARGET")
			var log []string
			for line := range lines {
				log = append(log, line)
			}
			err := cmd.Wait()
			all := strings.Join(log, "\n") + "\n" + stdout.String()
			if code := exitCode(err); code != tt.code {
				t.Fatalf("exit %d, want %d:\n%s", code, tt.code, all)
			}
			if strings.Contains(all, pw) || strings.Contains(all, readerPW) {
				t.Errorf("dbrig printed a password:\n%s", all)
			}
			if n := len(mariatest.Servers(base)); n != 0 {
				t.Errorf("dbrig started %d servers for a target", n)
			}
			if tt.code != 0 {
				if !strings.Contains(all, `target "db" cannot hold the workload's database dbrig_on_yours`) || !strings.Contains(all, "needs CREATE and DROP") {
					t.Errorf("the refusal does not say what is missing:\n%s", all)
				}
				if _, err := os.Stat(dir); !os.IsNotExist(err) {
					t.Errorf("a refused target left a run directory (%v)", err)
				}
				return
			}
			results, err := study.ReadResults(dir)
			if err != nil || len(results) != 2 {
				t.Fatalf("%d results (%v)", len(results), err)
			}
			for _, r := range results {
				switch {
				case r.Values["net"] == "unix" && !tt.unix:
					if !strings.Contains(r.Skipped, "no unix socket") || !strings.Contains(r.Skipped, "?socket=") {
						t.Errorf("unix point over TCP: skipped %q, error %q; want skipped with the socket form", r.Skipped, r.Error)
					}
				case !r.Measured():
					t.Errorf("%s: not measured: %s%s", r.Key, r.Error, r.Skipped)
				case r.Values["net"] == "lan-1g" && r.Links[0].ForwardBytes == 0:
					t.Errorf("%s: the link carried nothing in front of the target", r.Key)
				}
			}
			var env study.Environment
			b, err := os.ReadFile(filepath.Join(dir, study.EnvironmentFile))
			if err == nil {
				err = json.Unmarshal(b, &env)
			}
			if err != nil || len(env.Targets) != 1 || env.Targets[0].Version != server.Version() || env.Targets[0].Engine != "mariadb" {
				t.Errorf("environment.json targets = %+v (%v)", env.Targets, err)
			}
			_ = filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
				if err == nil && !info.IsDir() {
					if b, _ := os.ReadFile(path); strings.Contains(string(b), pw) {
						t.Errorf("%s holds the password", path)
					}
				}
				return nil
			})
			db, err := mariadb.Open(ctx, server.Login(""))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			var left int
			if err := db.QueryRowContext(context.Background(), "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE 'dbrig%'").Scan(&left); err != nil || left != 0 {
				t.Errorf("%d databases of dbrig's left on the target (%v)", left, err)
			}
		})
	}
}
