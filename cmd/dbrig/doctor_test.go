package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/dbrig/dbrig/internal/doctor/sshdtest"
	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
)

// doctorRun runs "dbrig ARGS" and returns the exit code, stdout and stderr.
func doctorRun(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	a := &app{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }, version: "test"}
	code := run(ctx, args, a)
	return code, out.String(), errb.String()
}

// doctorJSON is the part of the JSON report the tests read.
type doctorJSON struct {
	Schema   string `json:"schema"`
	Status   string `json:"status"`
	ExitCode int    `json:"exit_code"`
	Hosts    []struct {
		Host      string `json:"host"`
		Reachable bool   `json:"reachable"`
		Error     string `json:"error"`
		Status    string `json:"status"`
		Checks    []struct {
			ID       string         `json:"id"`
			Section  string         `json:"section"`
			Subject  string         `json:"subject"`
			Status   string         `json:"status"`
			Observed string         `json:"observed"`
			Fix      string         `json:"fix"`
			Values   map[string]any `json:"values"`
		} `json:"checks"`
	} `json:"hosts"`
	Fleet *struct {
		Hosts []struct {
			Host   string   `json:"host"`
			Failed []string `json:"failed"`
		} `json:"hosts"`
	} `json:"fleet"`
}

func parseDoctorJSON(t *testing.T, s string) doctorJSON {
	t.Helper()
	var rep doctorJSON
	if err := json.Unmarshal([]byte(s), &rep); err != nil {
		t.Fatalf("JSON: %v\n%s", err, s)
	}
	return rep
}

// TestDoctorLocal runs dbrig doctor on this machine, as a user would.
func TestDoctorLocal(t *testing.T) {
	t.Parallel()
	start := time.Now()
	code, out, errOut := doctorRun(t, "doctor")
	t.Logf("dbrig doctor on this machine: %s, exit %d", time.Since(start), code)
	if code != 0 && code != 1 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, s := range []string{"== local", "DISKS", "disk.alignment", "NETWORK", "net.link", "TCP BUFFERS", "tcp.buffers",
		"CPU AND CLOCK", "clock.source", "DATABASE", "not checked: give --db"} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
	if strings.Contains(out, "\x1b[") {
		t.Error("colour escapes in output to a pipe")
	}

	jcode, jout, _ := doctorRun(t, "doctor", "--json", "--link", "tukwila-dublin")
	rep := parseDoctorJSON(t, jout)
	if rep.Schema != "dbrig.doctor/v1" || len(rep.Hosts) != 1 || rep.Hosts[0].Host != "local" {
		t.Fatalf("report %+v", rep)
	}
	if rep.ExitCode != jcode {
		t.Errorf("exit code %d, the report says %d", jcode, rep.ExitCode)
	}
	failed := false
	sections := map[string]bool{}
	for _, c := range rep.Hosts[0].Checks {
		sections[c.Section] = true
		failed = failed || c.Status == "fail"
	}
	if failed != (jcode == 1) {
		t.Errorf("exit %d, a check failed: %v", jcode, failed)
	}
	for _, s := range []string{"disks", "network", "tcp", "cpu"} {
		if !sections[s] {
			t.Errorf("no %s checks", s)
		}
	}
}

func TestDoctorBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	garbage := filepath.Join(dir, "fleet.txt")
	if err := os.WriteFile(garbage, []byte("# fleet\ndb1\nthis line is garbage\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fleet := filepath.Join(dir, "good-fleet.txt")
	if err := os.WriteFile(fleet, []byte("db1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	closed := sshdtest.ClosedPort(t)
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
		stdout string
	}{
		{"missing hosts file", []string{"doctor", "--hosts", filepath.Join(dir, "nope.txt")}, 2, "--hosts: hosts file: open " + filepath.Join(dir, "nope.txt") + ": no such file or directory", ""},
		{"unreadable hosts file", []string{"doctor", "--hosts", dir}, 2, "is a directory", ""},
		{"garbage line", []string{"doctor", "--hosts", garbage}, 2, garbage + `:3: "this line is garbage": want one host per line`, ""},
		{"unknown link profile", []string{"doctor", "--link", "tukwila-mars"}, 2, `unknown link profile "tukwila-mars"`, ""},
		{"malformed link", []string{"doctor", "--link", "150ms:fast"}, 2, `--link "150ms:fast": rate "fast": want a number and a unit`, ""},
		{"link rate of unknown unit", []string{"doctor", "--link", "77ms:10gigaflops"}, 2, `unknown unit "gigaflops": want a number and a unit in bits per second`, ""},
		{"link rate in bytes without /s", []string{"doctor", "--link", "77ms:10MB"}, 2, "add /s for bytes per second", ""},
		{"link rate zero", []string{"doctor", "--link", "77ms:0"}, 2, "the rate must be above zero", ""},
		{"link RTT without unit", []string{"doctor", "--link", "77:1gbit"}, 2, `duration "77" has no unit: want a number and a unit: 77ms`, ""},
		{"link without rate", []string{"doctor", "--link", "150ms"}, 2, "needs a rate too", ""},
		{"empty link", []string{"doctor", "--link", ""}, 2, "empty --link", ""},
		{"bad parallel", []string{"doctor", "--parallel", "0"}, 2, "--parallel 0", ""},
		{"parallel not a number", []string{"doctor", "--parallel", "many"}, 2, `invalid argument "many" for "--parallel"`, ""},
		{"zero timeout", []string{"doctor", "--timeout", "0"}, 2, "--timeout 0: want a positive duration", ""},
		{"negative timeout", []string{"doctor", "--timeout", "-5s"}, 2, `"--timeout" flag: duration "-5s" is negative`, ""},
		{"timeout without unit", []string{"doctor", "--timeout", "20"}, 2, `"--timeout" flag: duration "20" has no unit`, ""},
		{"ssh config missing", []string{"doctor", "--hosts", fleet, "--ssh-config", filepath.Join(dir, "nope")}, 2, "--ssh-config: stat " + filepath.Join(dir, "nope"), ""},
		{"ssh config a directory", []string{"doctor", "--hosts", fleet, "--ssh-config", dir}, 2, "--ssh-config " + dir + " is a directory", ""},
		{"ssh config without hosts", []string{"doctor", "--ssh-config", garbage}, 2, "--ssh-config is used only with --hosts", ""},
		{"ssh option without value", []string{"doctor", "--hosts", fleet, "--ssh-option", "IdentityFile"}, 2, `--ssh-option "IdentityFile": want KEY=VALUE`, ""},
		{"ssh option without key", []string{"doctor", "--hosts", fleet, "--ssh-option", "=x"}, 2, `--ssh-option "=x": want KEY=VALUE`, ""},
		{"ssh option without hosts", []string{"doctor", "--ssh-option", "IdentityFile=/x"}, 2, "--ssh-option is used only with --hosts", ""},
		{"bad json flag", []string{"doctor", "--json=maybe"}, 2, `invalid argument "maybe" for "--json"`, ""},
		{"bad print-collector flag", []string{"doctor", "--print-collector=sure"}, 2, `invalid argument "sure" for "--print-collector"`, ""},
		{"bad flag", []string{"doctor", "--frobnicate"}, 2, "unknown flag", ""},
		{"stray argument", []string{"doctor", "db1"}, 2, "unknown command", ""},
		{"bad snapshot", []string{"doctor", "--snapshot", garbage}, 2, "not a dbrig doctor snapshot", ""},
		{"missing snapshot", []string{"doctor", "--snapshot", filepath.Join(dir, "nope.snap")}, 2, "--snapshot: ", ""},
		{"bad db URI", []string{"doctor", "--db", "postgres://u@localhost:notaport/x"}, 2, "--db", ""},
		{
			"unreachable database",
			[]string{"doctor", "--db", fmt.Sprintf("postgres://dbrig:s3cret-pw@127.0.0.1:%d/postgres?connect_timeout=5", closed)},
			1, "doctor: 1 failed check(s)", "cannot connect",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := doctorRun(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, out, errOut)
			}
			if !strings.Contains(errOut, tt.stderr) {
				t.Errorf("stderr %q lacks %q", errOut, tt.stderr)
			}
			if !strings.Contains(out, tt.stdout) {
				t.Errorf("stdout lacks %q:\n%s", tt.stdout, out)
			}
			if strings.Contains(out+errOut, "s3cret-pw") {
				t.Error("the password appears in the output")
			}
		})
	}
}

// TestDoctorLinkSpellings declares links with the rate and RTT spellings
// people write; each is read as the same 77 ms, 10 Gbit/s link.
func TestDoctorLinkSpellings(t *testing.T) {
	t.Parallel()
	spellings := []string{"77ms:10gigabit", "77 ms:10 gigabits", "77ms:10gbit", "77ms:10Gbit/s", "77ms:10 Gbps", "0.077s:10GbE", "77ms:1250MB/s"}
	args := []string{"doctor", "--snapshot", "../../internal/doctor/testdata/vm.snap", "--json"}
	for _, s := range spellings {
		args = append(args, "--link", s)
	}
	code, out, errOut := doctorRun(t, args...)
	if code != 0 && code != 1 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep struct {
		Links []struct {
			Spec  string  `json:"spec"`
			RTTMS float64 `json:"rtt_ms"`
			Rate  float64 `json:"rate_bps"`
		} `json:"links"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("JSON: %v\n%s", err, out)
	}
	if len(rep.Links) != len(spellings) {
		t.Fatalf("%d links in the report, want %d: %+v", len(rep.Links), len(spellings), rep.Links)
	}
	for i, l := range rep.Links {
		if l.Spec != spellings[i] || math.Abs(l.RTTMS-77) > 1e-9 || math.Abs(l.Rate-10e9) > 1e-3 {
			t.Errorf("--link %q read as %+v, want 77 ms at 10 Gbit/s", spellings[i], l)
		}
	}
}

// TestDoctorFleetOverSSH runs dbrig doctor --hosts against a real sshd on
// a loopback port: two lines reach it (as 127.0.0.1 and as localhost), one
// names a closed port.
func TestDoctorFleetOverSSH(t *testing.T) {
	t.Parallel()
	srv := sshdtest.Start(t)
	closed := sshdtest.ClosedPort(t)
	hosts := filepath.Join(t.TempDir(), "fleet.txt")
	content := fmt.Sprintf("# test fleet\n%[1]s@127.0.0.1:%[2]d\n%[1]s@localhost:%[2]d   # the same sshd\n\n127.0.0.1:%[3]d  # nothing listens\n",
		srv.User, srv.Port, closed)
	if err := os.WriteFile(hosts, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	reachable := []string{fmt.Sprintf("%s@127.0.0.1:%d", srv.User, srv.Port), fmt.Sprintf("%s@localhost:%d", srv.User, srv.Port)}
	unreachable := fmt.Sprintf("127.0.0.1:%d", closed)

	code, out, errOut := doctorRun(t, "doctor", "--hosts", hosts, "--ssh-config", srv.ConfigFile, "--timeout", "20s")
	if code != 1 {
		t.Fatalf("exit %d, want 1 (one host unreachable)\n%s\n%s\nsshd log:\n%s", code, out, errOut, srv.Log())
	}
	for _, s := range []string{
		"== " + reachable[0] + ": ", "== " + reachable[1] + ": ", "== " + unreachable + ": UNREACHABLE ==",
		"host.reachable", "Connection refused", "DISKS", "disk.alignment", "TCP BUFFERS",
		"== FLEET SUMMARY: 3 hosts", "UNREACHABLE", "host.reachable  fail: " + unreachable,
	} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
	if !strings.Contains(errOut, "1 host(s) unreachable") {
		t.Errorf("stderr %q", errOut)
	}

	// The same fleet in JSON, reaching the hosts with --ssh-option instead
	// of a config file.
	jcode, jout, _ := doctorRun(t, "doctor", "--hosts", hosts, "--json", "--parallel", "3",
		"--ssh-option", "IdentityFile="+srv.IdentityFile, "--ssh-option", "IdentitiesOnly=yes",
		"--ssh-option", "UserKnownHostsFile="+srv.KnownHostsFile, "--ssh-option", "StrictHostKeyChecking=yes")
	rep := parseDoctorJSON(t, jout)
	if jcode != 1 || rep.ExitCode != 1 || rep.Status != "fail" || len(rep.Hosts) != 3 || rep.Fleet == nil {
		t.Fatalf("exit %d, report %+v", jcode, rep)
	}
	for i, h := range rep.Hosts {
		if i < 2 {
			if h.Host != reachable[i] || !h.Reachable || len(h.Checks) < 8 || h.Checks[0].ID != "host.reachable" || h.Checks[0].Status != "pass" {
				t.Errorf("host %d: %+v", i, h)
			}
			continue
		}
		if h.Host != unreachable || h.Reachable || h.Status != "fail" || !strings.Contains(h.Error, "Connection refused") ||
			len(h.Checks) != 1 || h.Checks[0].ID != "host.reachable" || h.Checks[0].Status != "fail" {
			t.Errorf("unreachable host: %+v", h)
		}
	}
	if f := rep.Fleet.Hosts[2]; f.Host != unreachable || len(f.Failed) != 1 || f.Failed[0] != "host.reachable" {
		t.Errorf("fleet row %+v", f)
	}
}

// TestDoctorDatabase checks a real PostgreSQL with wal_level = replica and
// no WAL senders: the replication checks warn and fail with their fixes,
// and the data directory is placed on this host's disk.
func TestDoctorDatabase(t *testing.T) {
	t.Parallel()
	// On a disk: the check marks the disk that holds the data directory.
	inst := pgtest.StartOnDisk(t, "doctor", map[string]string{"wal_level": "replica", "max_wal_senders": "0"})
	ci := inst.Conn("postgres")
	code, out, errOut := doctorRun(t, "doctor", "--db", ci.URI(), "--json")
	if code != 1 {
		t.Errorf("exit %d, want 1 (max_wal_senders = 0 fails): %s", code, errOut)
	}
	if pw := ci.Password(); pw != "" && strings.Contains(out+errOut, pw) {
		t.Fatal("the database password appears in the output")
	}
	rep := parseDoctorJSON(t, out)
	got := map[string]int{}
	checks := rep.Hosts[0].Checks
	for i, c := range checks {
		got[c.ID] = i
	}
	row := func(id string) (string, string, string) {
		i, ok := got[id]
		if !ok {
			t.Fatalf("no %s row", id)
		}
		return checks[i].Status, checks[i].Observed, checks[i].Fix
	}
	if st, obs, _ := row("db.connect"); st != "pass" {
		t.Errorf("db.connect %s %s", st, obs)
	}
	if st, obs, fix := row("db.wal_level"); st != "warn" || obs != "wal_level = replica: physical streaming only, no logical replication" || !strings.Contains(fix, "wal_level = logical") {
		t.Errorf("db.wal_level %s %q %q", st, obs, fix)
	}
	if st, _, fix := row("db.max_wal_senders"); st != "fail" || !strings.Contains(fix, "max_wal_senders = 10") {
		t.Errorf("db.max_wal_senders %s %q", st, fix)
	}
	if st, obs, _ := row("db.data_directory"); st != "info" || !strings.Contains(obs, inst.DataDir()) {
		t.Errorf("db.data_directory %s %q (data directory %s)", st, obs, inst.DataDir())
	}
	// pg_wal lives inside the data directory: the same file system.
	if st, obs, fix := row("db.wal_device"); st != "warn" || !strings.Contains(obs, "same file system") || !strings.Contains(fix, "pg_wal") {
		t.Errorf("db.wal_device %s %q %q", st, obs, fix)
	}
	for _, id := range []string{"db.version", "db.max_replication_slots", "db.superuser_reserved_connections",
		"db.max_parallel_workers_per_gather", "db.shared_buffers", "db.effective_io_concurrency", "db.synchronous_commit", "db.tcp_keepalives"} {
		if st, obs, _ := row(id); st == "" || obs == "" {
			t.Errorf("%s: %q %q", id, st, obs)
		}
	}
	marked := false
	for _, c := range checks {
		if c.ID == "disk.alignment" && strings.Contains(c.Observed, "holds the PostgreSQL data directory and its WAL") {
			marked = true
		}
	}
	if !marked {
		t.Errorf("no disk row holds the data directory:\n%s", out)
	}

	// The text report shows the database section.
	_, text, _ := doctorRun(t, "doctor", "--db", ci.URI())
	for _, s := range []string{"DATABASE", "db.wal_level", "FINDINGS ON local", "wal_level = logical"} {
		if !strings.Contains(text, s) {
			t.Errorf("text lacks %q:\n%s", s, text)
		}
	}
}

// trackerCitation matches a reference to an issue tracker ("issue 4",
// "Issue #12"): a user has no such tracker, so what dbrig prints and
// documents cites the seed or the reason instead.
var trackerCitation = regexp.MustCompile(`(?i)\b(issue|ticket|bug)\s*#?\s*[0-9]+`)

// TestNoTrackerCitations reads every command's help and every document a
// user reads for a tracker number.
func TestNoTrackerCitations(t *testing.T) {
	t.Parallel()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		texts := map[string]string{"short": c.Short, "long": c.Long, "example": c.Example, "flags": c.Flags().FlagUsages()}
		for where, text := range texts {
			if m := trackerCitation.FindString(text); m != "" {
				t.Errorf("%s --help (%s) cites %q", c.CommandPath(), where, m)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd(&app{stdout: io.Discard, stderr: io.Discard, getenv: func(string) string { return "" }, version: "test"}))

	docs, _ := filepath.Glob("../../docs/*.md")
	more, _ := filepath.Glob("../../docs/*/*.md")
	for _, name := range append(append(docs, more...), "../../README.md") {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range trackerCitation.FindAllString(string(b), -1) {
			t.Errorf("%s cites %q: cite the seed or the reason instead", name, m)
		}
	}
}
