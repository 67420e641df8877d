package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/workload"
)

// runWith makes a run directory of rbar-latency's smoke scale holding
// three runs of two combinations with the given us_per_row values.
func runWith(t *testing.T, name string, engineVersion string, perRow map[string][3]float64) string {
	t.Helper()
	dir := emptyRun(t, name)
	env, _ := json.Marshal(study.Environment{Servers: map[string]string{"postgres": engineVersion}, DbrigVersion: "test"})
	if err := os.WriteFile(filepath.Join(dir, study.EnvironmentFile), env, 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := study.OpenResults(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for net, runs := range perRow {
		combo := "experiment=client-row-by-row net=" + net + " client_cost=0s"
		for i, v := range runs {
			r := workload.Result{Study: "rbar-latency", Key: combo + " #" + string(rune('1'+i)), Combo: combo, Run: i + 1,
				Values:  map[string]any{"experiment": "client-row-by-row", "net": net, "client_cost": "0s"},
				Params:  workload.Params{"experiment": "client-row-by-row", "client_cost": "0s"},
				Metrics: map[string]float64{"us_per_row": v, "seconds": v / 1e3}}
			if err := w.Write(r); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

func TestCompareTwoRuns(t *testing.T) {
	t.Parallel()
	a := runWith(t, "a", "15.18", map[string][3]float64{"unix": {30, 31, 32}, "lan-1g": {400, 410, 420}, "rtt-4ms": {4100, 4120, 4130}})
	b := runWith(t, "b", "16.4", map[string][3]float64{"unix": {20, 21, 22}, "lan-1g": {405, 415, 425}, "rtt-4ms": {5000, 5100, 5200}})
	compare := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := run(t.Context(), append([]string{"compare"}, args...), &app{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }, version: "test"})
		return code, out.String(), errb.String()
	}
	code, out, errs := compare(a, b)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for net, verdict := range map[string]string{"unix": "B better", "lan-1g": "no difference beyond the runs' spread", "rtt-4ms": "B worse"} {
		found := false
		for _, line := range strings.Split(out, "\n") {
			if strings.Contains(line, "net="+net+" ") {
				found = strings.Contains(line, "us_per_row") && strings.HasSuffix(line, verdict)
			}
		}
		if !found {
			t.Errorf("no line for net=%s ending %q:\n%s", net, verdict, out)
		}
	}
	for _, want := range []string{"postgres 15.18", "postgres 16.4", "1 B better, 1 B worse, 1 no difference"} {
		if !strings.Contains(out, want) {
			t.Errorf("compare output lacks %q:\n%s", want, out)
		}
	}

	html := filepath.Join(t.TempDir(), "c.html")
	code, out, errs = compare(a, b, "--json", "--html", html)
	if code != 0 {
		t.Fatalf("--json exit %d: %s", code, errs)
	}
	var c study.Comparison
	if err := json.Unmarshal([]byte(out), &c); err != nil {
		t.Fatalf("--json output: %v\n%s", err, out)
	}
	verdicts := map[string]string{}
	for _, r := range c.Rows {
		if r.Metric == "us_per_row" {
			verdicts[r.Combo] = r.Verdict
		}
	}
	if verdicts["experiment=client-row-by-row net=unix client_cost=0s"] != "B better" || len(c.Rows) != 3 {
		t.Errorf("rows %+v", c.Rows)
	}
	if st, err := os.Stat(html); err != nil || st.Size() < 1000 {
		t.Errorf("--html wrote %v, %v", st, err)
	} else if page, _ := os.ReadFile(html); strings.Contains(string(page), "0 points (0 combinations") {
		t.Errorf("the comparison's page counts a plan it has none of: %q", "0 points (0 combinations")
	}

	other := emptyRun(t, "other")
	spec := strings.Replace(mustRead(t, filepath.Join(other, study.SpecFile)), `name = "rbar-latency"`, `name = "other-study"`, 1)
	_ = os.WriteFile(filepath.Join(other, study.SpecFile), []byte(spec), 0o644)
	info, _ := json.Marshal(study.RunInfo{Study: "other-study", Scale: "smoke"})
	_ = os.WriteFile(filepath.Join(other, study.RunFile), info, 0o644)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{a, t.TempDir()}, "not a dbrig run directory"},
		{[]string{a, other}, "compare runs of the same study"},
		{[]string{a}, "accepts 2 arg(s)"},
	} {
		if code, _, errs := compare(tt.args...); code != 2 || !strings.Contains(errs, tt.want) {
			t.Errorf("compare %v: exit %d, %q; want 2 and %q", tt.args, code, errs, tt.want)
		}
	}
	checkInBrowser(t, html)
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestCompareSingleRunsClaimNoSpread: with one run on a side there is no
// spread to judge a difference against, and the verdict says so.
func TestCompareSingleRunsClaimNoSpread(t *testing.T) {
	t.Parallel()
	a := runWith(t, "a", "15.18", map[string][3]float64{"unix": {30, 31, 32}})
	b := emptyRun(t, "b")
	w, err := study.OpenResults(b)
	if err != nil {
		t.Fatal(err)
	}
	combo := "experiment=client-row-by-row net=unix client_cost=0s"
	if err := w.Write(workload.Result{Study: "rbar-latency", Key: combo + " #1", Combo: combo, Run: 1,
		Values:  map[string]any{"experiment": "client-row-by-row", "net": "unix", "client_cost": "0s"},
		Params:  workload.Params{"experiment": "client-row-by-row", "client_cost": "0s"},
		Metrics: map[string]float64{"us_per_row": 20, "seconds": 0.02}}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	var out, errb bytes.Buffer
	if code := run(t.Context(), []string{"compare", a, b}, &app{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }, version: "test"}); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "B better by a single run: no spread to judge against") || strings.Contains(out.String(), "beyond") {
		t.Errorf("compare output:\n%s", out.String())
	}
}
