package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
)

// A value beyond its bound is refused before anything starts, with exit 2
// and the bound named: runs = 9223372036854775807 once allocated 23 GB
// until the kernel's OOM killer ended dbrig (exit 137, no message), and
// rtt = "1000000h" was accepted and hung. Each command runs as the user
// runs it, a process of its own, with TMPDIR where a server would be made.
func TestRunRefusesValuesBeyondTheirBoundsBeforeAnythingStarts(t *testing.T) {
	t.Parallel()
	rbar, err := os.ReadFile("../../studies/rbarlatency/rbar-latency.toml")
	if err != nil {
		t.Fatal(err)
	}
	files := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(files, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	replace := func(old, new string) string {
		if !strings.Contains(string(rbar), old) {
			t.Fatalf("rbar-latency.toml has no %q", old)
		}
		return strings.Replace(string(rbar), old, new, 1)
	}
	// line is the line of the study file old is on, so that the study may
	// grow above it.
	line := func(old string) int {
		return strings.Count(string(rbar)[:strings.Index(string(rbar), old)], "\n") + 1
	}
	lacks := runtime.NumCPU() + 75
	wan := `name = "wan"
title = "A WAN beyond the Moon"

[[instance]]
name = "db"

[[link]]
between = ["client", "db"]
profile = "lan-1g"
rtt = "1000000h"

[workload]
kind = "rbar"
experiment = "client-stream"
rows = 1000
`
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"runs of int64's most", []string{"run", write("runs.toml", replace("runs = 3", "runs = 9223372036854775807"))},
			fmt.Sprintf("runs.toml:%d: repeat.runs: runs = 9223372036854775807: at most 1,000 runs per combination", line("runs = 3"))},
		{"a WAN of a million hours", []string{"run", write("wan.toml", wan)},
			"wan.toml:10: link.0.rtt: rtt 1000000h0m0s: at most 10s"},
		{"a client on a CPU this machine lacks", []string{"run", write("cpus.toml", replace("gomaxprocs = 1\n", fmt.Sprintf("gomaxprocs = 1\ncpus = \"%d\"\n", lacks)))},
			fmt.Sprintf("cpus.toml:%d: client.cpus: CPU %d of list \"%d\" does not exist on this machine (it has %d: 0-%d)", line("gomaxprocs = 1\n")+1, lacks, lacks, runtime.NumCPU(), runtime.NumCPU()-1)},
		{"rows wider than a server returns", []string{"run", write("wide.toml", replace("row_bytes = 8000", "row_bytes = 99999999999"))},
			fmt.Sprintf("wide.toml:%d: workload.row_bytes: row_bytes = 99999999999B: at most 16MiB", line("row_bytes = 8000"))},
		{"server programs that are not there", []string{"run", "rbar-latency", "--pg-bin", filepath.Join(files, "nonexistent")},
			"--pg-bin " + filepath.Join(files, "nonexistent") + ": no postgres program in"},
		{"an arrival queue of 8 TB", []string{"load", "oltp", "--rate", "5", "--max-in-flight", "1000000000000"},
			"--max-in-flight 1000000000000: want 0 to 16777216"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			base, out := pgtest.BaseDir(t), filepath.Join(t.TempDir(), "run")
			code, stdout, stderr := runDbrig(t, base, nil, append(tt.args, "--out", out)...)
			if code != 2 || !strings.Contains(stderr, tt.want) {
				t.Errorf("dbrig %s: exit %d, stderr:\n%s\nwant exit 2 saying %q", strings.Join(tt.args, " "), code, stderr+stdout, tt.want)
			}
			if strings.Contains(stderr, "running") || strings.Contains(stderr, "dbrig: load") {
				t.Errorf("dbrig %s started the run:\n%s", strings.Join(tt.args, " "), stderr)
			}
			if pids := pgtest.ServersUnder(base); len(pids) > 0 {
				t.Errorf("dbrig %s left servers running: %v", strings.Join(tt.args, " "), pids)
			}
			if left, _ := os.ReadDir(base); len(left) > 0 {
				t.Errorf("dbrig %s made %d entries in TMPDIR, where servers live: %v", strings.Join(tt.args, " "), len(left), left)
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("dbrig %s made its run directory %s", strings.Join(tt.args, " "), out)
			}
		})
	}
}
