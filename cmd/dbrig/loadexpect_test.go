package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
)

// expectOutputJSON is the part of a load's --json the --expect tests read.
type expectOutputJSON struct {
	Dir          string `json:"dir"`
	Expectations []struct {
		Expect  string `json:"expect"`
		Metric  string `json:"metric"`
		Unit    string `json:"unit"`
		Pass    bool   `json:"pass"`
		Verdict string `json:"verdict"`
		Why     string `json:"why"`
		Points  []struct {
			Combo    string   `json:"combo"`
			Value    *float64 `json:"value"`
			Measured string   `json:"measured"`
		} `json:"points"`
	} `json:"expectations"`
}

// TestLoadExpectUsage: a threshold that does not read is refused at flag
// time, with what was wanted, before anything starts.
func TestLoadExpectUsage(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"load", "oltp", "--expect", "p99 50ms"}, `--expect "p99 50ms": want METRIC OP VALUE, such as p99<50ms`},
		{[]string{"load", "oltp", "--expect", "p99<50"}, `--expect "p99<50": p99_ms: duration "50" has no unit`},
		{[]string{"load", "oltp", "--expect", "latency<50ms"}, `--expect "latency<50ms": workload "oltp" declares no metric "latency": want one it declares (tps, mean_ms`},
		{[]string{"load", "tpch", "--expect", "tps>1"}, `--expect "tps>1": workload "tpch" declares no metric "tps"`},
	} {
		code, stdout, stderr := runDbrig(t, base, nil, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.says) {
			t.Errorf("dbrig %s: exit %d, stdout %q, stderr %q; want 2 saying %q", strings.Join(tc.args, " "), code, stdout, stderr, tc.says)
		}
	}
}

// TestLoadExpect runs `dbrig load oltp` with thresholds as a CI job would:
// each printed with what was measured and whether it held, in --json as
// the "expectations" field, and the exit 1 when one fails, 0 when every
// one holds at every point of a sweep.
func TestLoadExpect(t *testing.T) {
	t.Parallel()
	pgtest.Binaries(t)
	base := pgtest.BaseDir(t)
	// Short runs: every check is a threshold's verdict and its figure,
	// which a second of point-selects gives as well as more (and each
	// second of users without think time costs both cores).
	load := []string{"load", "oltp", "--mix", "point-select", "--duration", "1s", "--warm-up", "500ms", "--scale", "0.01"}

	dir := filepath.Join(t.TempDir(), "failing")
	code, stdout, stderr := runDbrig(t, base, nil, append(load, "--users", "2", "--json", "--out", dir,
		"--expect", "tps>0", "--expect", "errors=0", "--expect", "tps>=1000000000")...)
	if code != 1 || !strings.Contains(stderr, "1 of 3 --expect thresholds failed") {
		t.Fatalf("a failing threshold: exit %d, want 1 saying so\n%s", code, stderr)
	}
	j := decodeJSON[expectOutputJSON](t, stdout)
	if j.Dir != dir || len(j.Expectations) != 3 {
		t.Fatalf("--json = %+v", j)
	}
	for i, want := range []struct {
		expect, metric, verdict string
		pass                    bool
	}{
		{"tps>0", "tps", "reproduced", true}, {"errors=0", "errors", "reproduced", true}, {"tps>=1000000000", "tps", "differs", false},
	} {
		e := j.Expectations[i]
		if e.Expect != want.expect || e.Metric != want.metric || e.Verdict != want.verdict || e.Pass != want.pass ||
			len(e.Points) != 1 || e.Points[0].Value == nil || e.Points[0].Measured == "" {
			t.Errorf("expectation %d = %+v, want %+v with its measured value", i, e, want)
		}
	}
	if tps := j.Expectations[0].Points[0].Value; tps == nil || *tps <= 0 || j.Expectations[0].Unit != "/s" {
		t.Errorf("tps: %+v", j.Expectations[0])
	}

	code, stdout, stderr = runDbrig(t, base, nil, append(load, "--users", "1,2", "--out", filepath.Join(t.TempDir(), "holding"),
		"--expect", "errors=0", "--expect", "p99<1h")...)
	if code != 0 {
		t.Fatalf("every threshold holds: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"expectations (each must hold at every point):", "  pass  errors=0: errors 0 at users=1; 0 at users=2", "  pass  p99<1h: p99_ms "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	pgtest.WaitNoServers(t, base, 10*time.Second)
	assertNoInstanceDirs(t, base)
}
