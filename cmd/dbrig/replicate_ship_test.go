package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/agent/netnstest"
	"github.com/dbrig/dbrig/internal/link"
	"github.com/dbrig/dbrig/internal/replication"
)

// shipTableSQL is a table whose text compresses about 2:1, as hex does.
var shipTableSQL = []string{
	"CREATE TABLE big (id bigint PRIMARY KEY, v text)",
	"INSERT INTO big SELECT g, md5('a' || g) || md5('b' || g) || md5('c' || g) || md5('d' || g) FROM generate_series(1, 20000) g",
}

// TestReplicateShipLocal initializes a subscriber with setup --init backup
// --ship local: pg_dump runs in a ship (dbrig replicate ship, a process of
// its own) and its archive arrives compressed; verify finds the tables
// identical, and no password is printed.
func TestReplicateShipLocal(t *testing.T) {
	t.Parallel()
	pub, sub, subDB := replServers(t, "logical")
	mustExec(t, pub, "shop", shipTableSQL...)
	env := map[string]string{"DBRIG_PUBLISHER": pub.Conn("shop").URI(), "DBRIG_SUBSCRIBER": sub.Conn(subDB).URI()}
	secret := pub.Conn("shop").Password()
	code, out, errs := replRun(t, env, "replicate", "setup", "--init", "backup", "--ship", "local", "--ship-bin", dbrigBinary(t), "--progress", "10ms")
	t.Logf("setup:\n%s%s", out, errs)
	if code != 0 {
		t.Fatalf("setup exit %d:\n%s%s", code, out, errs)
	}
	if !strings.Contains(out, "initialized by backup: 1 tables, 20000 rows") || !strings.Contains(out, "shipped from local: ") {
		t.Errorf("setup does not say it shipped the backup:\n%s", out)
	}
	if strings.Contains(out+errs, secret) {
		t.Fatalf("the password was printed:\n%s%s", out, errs)
	}
	code, out, errs = replRun(t, env, "replicate", "verify")
	if code != 0 || !strings.Contains(out, "identical") {
		t.Fatalf("verify exit %d:\n%s%s", code, out, errs)
	}
	if code, out, errs = replRun(t, env, "replicate", "teardown"); code != 0 {
		t.Fatalf("teardown exit %d:\n%s%s", code, out, errs)
	}
}

// TestReplicateShipRefused: --ship with the wrong --init or place is
// refused before anything starts (exit 2); a ship whose ssh cannot
// connect, or whose dbrig is missing, fails the setup (exit 1) in ssh's or
// the system's words; neither leaves anything on either side.
func TestReplicateShipRefused(t *testing.T) {
	t.Parallel()
	pub, sub, subDB := replServers(t, "logical")
	mustExec(t, pub, "shop", shipTableSQL...)
	env := map[string]string{"DBRIG_PUBLISHER": pub.Conn("shop").URI(), "DBRIG_SUBSCRIBER": sub.Conn(subDB).URI()}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"snapshot", []string{"--init", "snapshot", "--ship", "local"}, 2, "--ship local: goes with --init backup"},
		{"unknown place", []string{"--init", "backup", "--ship", "ftp:db1"}, 2, "want local or ssh://[USER@]HOST[:PORT]"},
		{"bad user", []string{"--init", "backup", "--ship", "ssh://no;body@db1"}, 2, "want letters, digits, '.', '_' or '-'"},
		{"ship-bin alone", []string{"--init", "backup", "--ship-bin", "/opt/dbrig"}, 2, "--ship-bin and --ssh-config go with --ship"},
		{"ssh refused", []string{"--init", "backup", "--ship", "ssh://nobody@127.0.0.1:1"}, 1, "ssh failed: ssh: connect to host 127.0.0.1 port 1: Connection refused"},
		{"dbrig missing", []string{"--init", "backup", "--ship", "local", "--ship-bin", "/nonexistent/dbrig"}, 1, "start the ship at local: fork/exec /nonexistent/dbrig: no such file"},
	} {
		code, out, errs := replRun(t, env, append([]string{"replicate", "setup"}, tc.args...)...)
		if code != tc.code || !strings.Contains(errs, tc.want) {
			t.Errorf("%s: exit %d, want %d saying %q:\n%s%s", tc.name, code, tc.code, tc.want, out, errs)
		}
		nothingCreated(t, pub, sub, subDB)
	}
}

// TestReplicateShipOverSSHCommand: the ssh form runs dbrig replicate ship
// in BatchMode as the user and port say, and nothing secret is on its
// command line (the publisher's login crosses on ssh's standard input).
func TestReplicateShipOverSSHCommand(t *testing.T) {
	t.Parallel()
	f := replicateFlags{ship: "ssh://repl@db1:2222", shipBin: "/opt/dbrig it's"}
	s, err := f.shipper(&app{}, replication.InitBackup)
	if err != nil {
		t.Fatal(err)
	}
	args := s.Command().Args
	want := []string{"ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=15", "-o", "LogLevel=ERROR", "-T", "-p", "2222", "-l", "repl", "--", "db1", `'/opt/dbrig it'\''s' replicate ship`}
	if !slices.Equal(args, want) || !s.SSH {
		t.Errorf("ssh command %q, want %q", args, want)
	}
}

// TestReplicateShipInterrupted interrupts setup --ship local (the built
// dbrig, as a user runs it) while the archive crosses: it exits 130,
// leaves nothing on either server, and no ship or pg_dump of its own is
// left running.
func TestReplicateShipInterrupted(t *testing.T) {
	t.Parallel()
	pub, sub, subDB := replServers(t, "logical")
	mustExec(t, pub, "shop", "CREATE TABLE big (id bigint PRIMARY KEY, v text)",
		"INSERT INTO big SELECT g, md5('a' || g) || md5('b' || g) || md5('c' || g) || md5('d' || g) FROM generate_series(1, 100000) g")
	mark := fmt.Sprintf("DBRIG_TEST_SHIP_MARK=%d-%d", os.Getpid(), time.Now().UnixNano())
	cmd, stdout, lines := startDbrigEnv(t, t.TempDir(), []string{mark, "DBRIG_PUBLISHER=" + pub.Conn("shop").URI(), "DBRIG_SUBSCRIBER=" + sub.Conn(subDB).URI()},
		"replicate", "setup", "--init", "backup", "--ship", "local", "--progress", "10ms")
	var said []string
	for l := range lines {
		said = append(said, l)
		if strings.Contains(l, "of archive arrived") && len(markedProcesses(t, mark)) > 1 {
			break
		}
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	interrupted := time.Now()
	for l := range lines {
		said = append(said, l)
	}
	code := exitCode(cmd.Wait())
	t.Logf("stopped %v after the interrupt", time.Since(interrupted).Round(time.Millisecond))
	if code != 130 {
		t.Fatalf("exit %d, want 130 (interrupted):\n%s\n%s", code, stdout, strings.Join(said, "\n"))
	}
	nothingCreated(t, pub, sub, subDB)
	if left := markedProcesses(t, mark); len(left) > 0 {
		t.Errorf("left running: %v", left)
	}
}

// markedProcesses lists the processes whose environment holds mark (what
// this test started and their children), by their command lines.
func markedProcesses(t *testing.T, mark string) []string {
	t.Helper()
	envs, _ := filepath.Glob("/proc/[0-9]*/environ")
	var found []string
	for _, e := range envs {
		b, err := os.ReadFile(e)
		if err != nil || !slices.Contains(strings.Split(string(b), "\x00"), mark) {
			continue
		}
		cl, _ := os.ReadFile(filepath.Join(filepath.Dir(e), "cmdline"))
		found = append(found, strings.ReplaceAll(strings.TrimRight(string(cl), "\x00"), "\x00", " "))
	}
	return found
}

// TestReplicateShipOverSSH ships the backup from another host (a network
// namespace with its own sshd, reached by ssh as a real one), whose dbrig
// runs pg_dump against the publisher at the address both hosts reach it
// by: the tables arrive identical and no password is printed; a host
// without dbrig fails the setup (exit 1) saying so; nothing is left
// running on the host or on either server.
func TestReplicateShipOverSSH(t *testing.T) {
	t.Parallel()
	pub, sub, subDB := replServers(t, "logical")
	lab := netnstest.Start(t, 1)
	bin := dbrigBinary(t)
	mustExec(t, pub, "shop", shipTableSQL...)
	// The publisher listens on this host's loopback; a relay with no
	// impairment gives it an address the other host reaches too.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	relay, err := link.Listen(ctx, lab.BridgeAddr+":0", pub.Conn("shop").Addr(), link.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer relay.Close()
	shared, err := pub.Conn("shop").Via(relay.Addr())
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"DBRIG_PUBLISHER": shared.URI(), "DBRIG_SUBSCRIBER": sub.Conn(subDB).URI()}
	secret := pub.Conn("shop").Password()
	host := "ssh://" + lab.Hosts[0].Target(lab.User)

	code, out, errs := replRun(t, env, "replicate", "setup", "--init", "backup", "--ship", host, "--ssh-config", lab.ConfigFile, "--ship-bin", "/nonexistent/dbrig")
	if code != 1 || !strings.Contains(errs, "dbrig was not found there") {
		t.Errorf("a host without dbrig: exit %d, want 1 saying dbrig was not found:\n%s%s", code, out, errs)
	}
	nothingCreated(t, pub, sub, subDB)

	code, out, errs = replRun(t, env, "replicate", "setup", "--init", "backup", "--ship", host, "--ssh-config", lab.ConfigFile, "--ship-bin", bin)
	t.Logf("setup:\n%s%s", out, errs)
	if code != 0 || !strings.Contains(out, "shipped from "+host+": ") {
		t.Fatalf("setup exit %d, or it does not say it shipped:\n%s%s", code, out, errs)
	}
	if strings.Contains(out+errs, secret) {
		t.Fatalf("the password was printed:\n%s%s", out, errs)
	}
	if code, out, errs = replRun(t, env, "replicate", "verify"); code != 0 {
		t.Fatalf("verify exit %d:\n%s%s", code, out, errs)
	}
	if code, out, errs = replRun(t, env, "replicate", "teardown"); code != 0 {
		t.Fatalf("teardown exit %d:\n%s%s", code, out, errs)
	}
	assertOnlySSHD(t, lab)
}
