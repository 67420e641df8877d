package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/report/reporttest"
	"github.com/dbrig/dbrig/internal/study"
)

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// TestMain removes the dbrig binary the tests built (23 MB) and the shared
// key-lookup run, and stops the replicate tests' shared subscriber and the
// browser checks' shared Chromium once they are done: no test owns any, so
// no t.Cleanup can.
func TestMain(m *testing.M) {
	flag.Parse()
	runMoreAtOnce()
	stopBrowser := reporttest.ShareBrowser()
	code := m.Run()
	stopBrowser()
	replSubscribers.Stop()
	if sharedKeyLookup.parent != "" {
		os.RemoveAll(sharedKeyLookup.parent)
	}
	if builtBin != "" {
		os.RemoveAll(filepath.Dir(builtBin))
	}
	os.Exit(code)
}

// testsAtOnce is how many of this package's parallel tests run at once
// unless -parallel is given. go test's default, one a core, left cores
// idle while the tests waited on emulated links, timed loads and servers'
// starts: each alone, the 15 longest used 0.3 to 0.54 of a core over
// their wall time, duplex-mismatch 0.8 (user+sys of the test and all it
// started, load average 6 to 12 from other work). Six of them
// (geo-replication, consolidation, the agents in namespaces, the
// lifecycle, load oltp, the interrupted loads) took 113 and 142 s two at
// a time, 95 and 73 s four at a time, with no more CPU (83 and 90 s
// against 77 and 87; alternating, load average 8.5 to 11.5).
const testsAtOnce = 4

// runMoreAtOnce sets -parallel to testsAtOnce where it was not given and
// the machine has fewer cores than that; not when fuzzing, where -parallel
// is the number of fuzzing processes, each as busy as a core.
func runMoreAtOnce() {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" || f.Name == "test.fuzz" })
	if !given && runtime.GOMAXPROCS(0) < testsAtOnce {
		_ = flag.Set("test.parallel", strconv.Itoa(testsAtOnce))
	}
}

// dbrigBinary builds the dbrig command once per test binary, so that tests
// use it the way a user does: as a process that gets signals.
func dbrigBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "dbrig-bin-")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "dbrig")
		out, err := exec.Command("go", "build", "-o", builtBin, ".").CombinedOutput()
		if err != nil {
			buildErr = errors.New(string(out))
		}
	})
	if buildErr != nil {
		t.Fatalf("build dbrig: %v", buildErr)
	}
	return builtBin
}

// startDbrig runs dbrig with TMPDIR=base (so its servers live there) and
// returns the process and a channel of its stderr lines.
func startDbrig(t *testing.T, base string, args ...string) (*exec.Cmd, *bytes.Buffer, <-chan string) {
	t.Helper()
	return startDbrigEnv(t, base, nil, args...)
}

// startDbrigEnv is startDbrig with env added to dbrig's environment.
func startDbrigEnv(t *testing.T, base string, env []string, args ...string) (*exec.Cmd, *bytes.Buffer, <-chan string) {
	t.Helper()
	cmd := exec.Command(dbrigBinary(t), args...)
	cmd.Env = append(append(os.Environ(), "TMPDIR="+base, "NO_COLOR=1"), env...)
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	lines := make(chan string, 1000)
	go func() { // ends when dbrig closes its stderr
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	return cmd, &stdout, lines
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		return -1
	}
	return 0
}

// rbarSmokePoints is rbar-latency's smoke scale: its six experiments over
// three paths, one run each.
const rbarSmokePoints = 18

// TestStudyEndToEnd runs the row-by-row study's smoke scale as a user
// would: interrupted by SIGINT after a few points, resumed and interrupted
// by SIGTERM after a few more (each time nothing finished is lost and no
// server is left), resumed to the end, its report rebuilt from
// results.jsonl alone and opened in a headless browser. One run serves
// both signals, where a run of the study for each cost as much again. The
// last resume prints its --json summary, which the report's checks read
// (checkRebuiltReport); TestYourServerAsItIs, which runs the same scale
// to its end in one go, checks the text summary's report path.
func TestStudyEndToEnd(t *testing.T) {
	t.Parallel()
	pgtest.Binaries(t)
	base := pgtest.BaseDir(t)
	dir := filepath.Join(t.TempDir(), "run")
	saved := interruptRun(t, base, dir, syscall.SIGINT, 0, "run", "rbar-latency", "--scale", "smoke", "--out", dir)
	saved = interruptRun(t, base, dir, syscall.SIGTERM, saved, "run", "--resume", dir)

	cmd, stdout, lines := startDbrig(t, base, "run", "--resume", dir, "--json")
	for range lines {
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("resume: %v\n%s", err, stdout)
	}
	pgtest.WaitNoServers(t, base, 10*time.Second)
	assertNoInstanceDirs(t, base)
	all, err := study.ReadResults(dir)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]int{}
	for _, r := range all {
		if !r.OK() {
			t.Errorf("point %s failed: %s", r.Key, r.Error)
		}
		keys[r.Key]++
	}
	if len(keys) != rbarSmokePoints || len(all) != rbarSmokePoints {
		t.Errorf("%d distinct points in %d results, want %d run exactly once", len(keys), len(all), rbarSmokePoints)
	}
	checkRebuiltReport(t, base, dir, stdout.Bytes(), saved)
}

// interruptRun runs dbrig with args, sends it sig once 3 more points have
// finished, and checks that it exits 130 saying how to resume, leaves no
// server, and has saved those 3 beside the before results dir held; it
// returns how many results dir holds.
func interruptRun(t *testing.T, base, dir string, sig syscall.Signal, before int, args ...string) int {
	t.Helper()
	cmd, _, lines := startDbrig(t, base, args...)
	var log []string
	finished := 0
	for line := range lines {
		log = append(log, line)
		if strings.HasPrefix(line, "[") && strings.Contains(line, "/"+strconv.Itoa(rbarSmokePoints)+"] ") {
			finished++
		}
		if finished == 3 {
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			finished++
		}
	}
	err := cmd.Wait()
	if code := exitCode(err); code != 130 {
		t.Fatalf("dbrig %s interrupted by %v exited %d, want 130; stderr:\n%s", strings.Join(args, " "), sig, code, strings.Join(log, "\n"))
	}
	if !strings.Contains(strings.Join(log, "\n"), "resume with: dbrig run --resume "+dir) {
		t.Errorf("the run interrupted by %v does not say how to resume:\n%s", sig, strings.Join(log, "\n"))
	}
	pgtest.WaitNoServers(t, base, 10*time.Second)
	assertNoInstanceDirs(t, base)
	saved, err := study.ReadResults(dir)
	if err != nil || len(saved) < before+3 {
		t.Fatalf("after %v results.jsonl holds %d results (%v), want at least the %d finished", sig, len(saved), err, before+3)
	}
	return len(saved)
}

// checkRebuiltReport reads the --json summary of a run resumed to its end
// after done points were saved, then rebuilds the run's report from the
// directory's files alone and opens it in a headless browser.
func checkRebuiltReport(t *testing.T, base, dir string, jsonSummary []byte, done int) {
	t.Helper()
	var summary struct {
		Failed   int              `json:"failed"`
		Ran      int              `json:"ran"`
		Done     int              `json:"done"`
		HTML     string           `json:"report_html"`
		Findings []report.Finding `json:"findings"`
	}
	if err := json.Unmarshal(jsonSummary, &summary); err != nil {
		t.Fatalf("--json output is not JSON: %v\n%s", err, jsonSummary)
	}
	if summary.Done != done || summary.Ran+summary.Done != rbarSmokePoints || summary.Failed != 0 || len(summary.Findings) == 0 || summary.HTML != filepath.Join(dir, "report.html") {
		t.Errorf("summary = %+v, want %d points done before and %d in all", summary, done, rbarSmokePoints)
	}

	// The report is rebuilt from the run directory's files alone.
	for _, f := range []string{"report.html", "report.md"} {
		os.Remove(filepath.Join(dir, f))
	}
	cmd, stdout, lines := startDbrig(t, base, "report", dir)
	for range lines {
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("report: %v\n%s", err, stdout)
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Row-by-row processing across a network", "client-row-by-row", "lan-1g", "model"} {
		if !bytes.Contains(md, []byte(want)) {
			t.Errorf("report.md lacks %q", want)
		}
	}

	checkInBrowser(t, filepath.Join(dir, "report.html"))
}

func TestRunRefusesBadInput(t *testing.T) {
	t.Parallel()
	base := pgtest.BaseDir(t)
	bad := filepath.Join(t.TempDir(), "bad.toml")
	spec, _ := os.ReadFile("../../studies/rbarlatency/rbar-latency.toml")
	broken := strings.Replace(string(spec), `row_bytes = 8000`, `row_bytes = -8000`, 1)
	broken = strings.Replace(broken, `"lan-10g"`, `"lan-100g"`, 1)
	if err := os.WriteFile(bad, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	misspelt := filepath.Join(t.TempDir(), "misspelt.toml")
	typo := strings.Replace(string(spec), `jit = "off"`, `jit = "off"`+"\nsynchronus_commit = \"on\"", 1)
	// The typo's line, so that the study may grow above it.
	typoLine := strings.Count(string(spec)[:strings.Index(string(spec), `jit = "off"`)], "\n") + 2
	if err := os.WriteFile(misspelt, []byte(typo), 0o644); err != nil {
		t.Fatal(err)
	}
	const marker = "Zq9MarkerPw"
	noRun := t.TempDir() // a target that refuses leaves no run directory
	tests := []struct {
		args []string
		code int
		want []string
	}{
		{[]string{"run", bad}, 2, []string{"bad.toml:", "workload.row_bytes: want a positive size, got -8000 bytes", "unknown link profile \"lan-100g\""}},
		{[]string{"run", "no-such-study"}, 2, []string{`no built-in study "no-such-study"`, "rbar-latency"}},
		{[]string{"run", "rbar-latency", "--quick", "--full"}, 2, []string{"give one"}},
		{[]string{"run", "rbar-latency", "--scale", "huge"}, 2, []string{`no scale "huge"`}},
		{[]string{"run", "--resume", t.TempDir()}, 2, []string{"not a dbrig run directory"}},
		{[]string{"report", t.TempDir()}, 2, []string{"not a dbrig run directory"}},
		{[]string{"run", "rbar-latency", "--bogus"}, 2, []string{"unknown flag: --bogus"}},
		{[]string{"run", misspelt}, 2, []string{"misspelt.toml:" + strconv.Itoa(typoLine) + ": " + `instance.0.settings.postgres.synchronus_commit: a study may vary performance settings only, and dbrig's list of PostgreSQL's has no synchronus_commit (did you mean "synchronous_commit"?)`}},
		{[]string{"run", "rbar-latency", "--engine", "oracle"}, 2, []string{"--engine oracle: want one of"}},
		{[]string{"run", "rbar-latency", "--target", "db=postgres//repl:" + marker + "@host/db"}, 2, []string{"--target db: unknown connection scheme"}},
		{[]string{"run", "rbar-latency", "--target", "db=repl:" + marker + "@host/db"}, 2, []string{"--target db:"}},
		{[]string{"run", "rbar-latency", "--target", "db=postgres://repl:" + marker + "@host:notaport/db"}, 2, []string{"--target db:"}},
		{[]string{"run", "rbar-latency", "--target", "nosuch=postgres://repl:" + marker + "@127.0.0.1/db"}, 2, []string{`--target: study rbar-latency has no instance "nosuch"`}},
		{[]string{"run", "rbar-latency", "--target", "db=env:DBRIG_NO_SUCH_VAR"}, 2, []string{"the environment variable DBRIG_NO_SUCH_VAR is empty or unset"}},
		{[]string{"run", "rbar-latency", "--scale", "smoke", "--out", filepath.Join(noRun, "run"), "--target", "db=postgres://repl:" + marker + "@127.0.0.1:1/db"}, 1, []string{`target "db"`}},
	}
	for _, tt := range tests {
		var out, errb bytes.Buffer
		code := run(t.Context(), tt.args, &app{stdout: &out, stderr: &errb, getenv: func(string) string { return "" }, version: "test"})
		if code != tt.code {
			t.Errorf("dbrig %s exited %d, want %d\n%s", strings.Join(tt.args, " "), code, tt.code, errb.String())
		}
		for _, w := range tt.want {
			if !strings.Contains(errb.String(), w) {
				t.Errorf("dbrig %s: stderr lacks %q:\n%s", strings.Join(tt.args, " "), w, errb.String())
			}
			if n := strings.Count(errb.String(), w); n > 1 && len(w) > 20 {
				t.Errorf("dbrig %s: %q printed %d times:\n%s", strings.Join(tt.args, " "), w, n, errb.String())
			}
		}
		if strings.Contains(out.String()+errb.String(), marker) {
			t.Errorf("dbrig %s printed the password:\n%s%s", strings.Join(tt.args, " "), out.String(), errb.String())
		}
	}
	if left, _ := os.ReadDir(noRun); len(left) > 0 {
		t.Errorf("a refused target left a run directory: %v", left)
	}
	assertNoInstanceDirs(t, base)
}

func assertNoInstanceDirs(t *testing.T, base string) {
	t.Helper()
	pg, _ := filepath.Glob(filepath.Join(base, "dbrig-pg-*"))
	maria, _ := filepath.Glob(filepath.Join(base, "dbrig-mariadb-*"))
	if left := append(pg, maria...); len(left) > 0 {
		t.Errorf("instance directories left behind: %v", left)
	}
}

// TestGeoReplicationStudySmoke runs the geo-replication study's smoke scale:
// every replication scenario across an emulated 77 ms link, each point
// verified equal on both sides, and its report with Table 2 and the seed's
// Figures 6 and 7.
func TestGeoReplicationStudySmoke(t *testing.T) {
	t.Parallel()
	pgtest.Binaries(t)
	base := pgtest.BaseDir(t)
	dir := filepath.Join(t.TempDir(), "run")
	cmd, stdout, lines := startDbrig(t, base, "run", "geo-replication", "--scale", "smoke", "--out", dir)
	var log []string
	for line := range lines {
		log = append(log, line)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("run: %v\n%s\n%s", err, stdout, strings.Join(log, "\n"))
	}
	pgtest.WaitNoServers(t, base, 10*time.Second)
	assertNoInstanceDirs(t, base)
	results, err := study.ReadResults(dir)
	if err != nil || len(results) != 12 {
		t.Fatalf("%d results (%v), want 12", len(results), err)
	}
	for _, r := range results {
		if !r.OK() {
			t.Errorf("%s failed: %s", r.Key, r.Error)
			continue
		}
		verified := r.Params.String("scenario") == "fdw-batch" // counted, not replicated
		for _, n := range r.Notes {
			verified = verified || strings.Contains(n, "verified")
		}
		if !verified {
			t.Errorf("%s: no verification recorded (notes %v)", r.Key, r.Notes)
		}
		if r.Links[0].ForwardBytes+r.Links[0].ReverseBytes < 300*1000 {
			t.Errorf("%s: the link carried %d+%d bytes, less than the rows", r.Key, r.Links[0].ForwardBytes, r.Links[0].ReverseBytes)
		}
		if _, ok := r.Model["seconds"]; !ok {
			t.Errorf("%s: no model prediction", r.Key)
		}
	}
	md, err := os.ReadFile(filepath.Join(dir, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Table 2, reproduced", "Figure 6", "Figure 7", "better for pull subscriptions", "push-pipelined"} {
		if !bytes.Contains(md, []byte(want)) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	checkInBrowser(t, filepath.Join(dir, "report.html"))
}
