package study

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"golang.org/x/sys/unix"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
	"github.com/dbrig/dbrig/internal/workload"
)

// The test binary doubles as a client process and as a crashing dbrig.
func TestMain(m *testing.M) {
	switch {
	case os.Getenv(ClientEnvVar) != "":
		os.Exit(ClientMain(context.Background(), testRegistry(), os.Stdin, os.Stdout, os.Stderr))
	case os.Getenv("DBRIG_TEST_CRASH_DIR") != "":
		crashingRun(os.Getenv("DBRIG_TEST_CRASH_DIR"), os.Getenv("DBRIG_TEST_CRASH_RUN_DIR"))
		os.Exit(3) // not reached: the workload's goroutine panics
	}
	os.Exit(m.Run())
}

// pingKind connects to the instance (through its link) and runs a query;
// its behaviour param makes it fail, panic, crash or hang on purpose.
func pingKind() workload.Kind {
	return workload.Kind{
		Name: "ping",
		Params: []workload.ParamSpec{
			{Name: "behaviour", Type: workload.StringParam, Default: "ok", Choices: []string{"ok", "fail", "panic", "crash", "hang", "introspect"}},
			{Name: "fail_on", Type: workload.StringParam, Default: ""},
			{Name: "base", Type: workload.StringParam, Default: "", Doc: "where Prepare leaves a file for the runner to remove"},
		},
		New: func(p workload.Params) (workload.Workload, error) { return &ping{p: p}, nil },
		Model: func(r workload.Result, all []workload.Result) workload.Prediction {
			return workload.Prediction{Metrics: map[string]float64{"queries": 1}, Formula: "one query"}
		},
	}
}

type ping struct{ p workload.Params }

// Prepare also leaves a file beside the instances, as a workload that
// makes something outside the servers does, and registers its removal:
// the runner must remove it once the server has stopped, on every exit
// path (the tests find the base directory empty).
func (w *ping) Prepare(ctx context.Context, env *workload.Env) error {
	inst := env.Instance("db")
	if err := inst.CreateDatabase(ctx, env.Database); err != nil {
		return err
	}
	if base := w.p.String("base"); base != "" {
		marker, err := os.CreateTemp(base, "workload-made-")
		if err != nil {
			return err
		}
		marker.Close()
		env.Cleanup(func(context.Context) error {
			select {
			case <-inst.Exited():
				return os.Remove(marker.Name())
			default:
				return errors.New("cleanup ran while the server was running")
			}
		})
	}
	return inst.Exec(ctx, env.Database, "CREATE TABLE pinged (at timestamptz)")
}

func (w *ping) Run(ctx context.Context, env *workload.Env) (workload.Measurement, error) {
	ep, err := env.Conn(env.ClientSite, "db", env.Database)
	if err != nil {
		return workload.Measurement{}, err
	}
	cfg, err := postgres.ConnInfoOf(ep.Conn).ConnConfig()
	if err != nil {
		return workload.Measurement{}, err
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return workload.Measurement{}, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "INSERT INTO pinged VALUES (now())"); err != nil {
		return workload.Measurement{}, err
	}
	m := workload.Measurement{Metrics: map[string]float64{"queries": 1}}
	var workMem string
	if err := conn.QueryRow(ctx, "SELECT current_setting('work_mem')").Scan(&workMem); err != nil {
		return m, err
	}
	m.Notes = append(m.Notes, "work_mem="+workMem)
	switch w.p.String("behaviour") {
	case "fail":
		if w.p.String("fail_on") == "" || w.p.String("fail_on") == ep.Transport {
			return m, errors.New("failed on purpose")
		}
	case "panic":
		panic("panicked on purpose")
	case "crash":
		go func() { panic("crashed on purpose in a worker goroutine") }()
		time.Sleep(time.Minute)
	case "hang":
		if env.Progress != nil {
			env.Progress(0, 1) // it hangs from here: a test may interrupt it now
		}
		<-ctx.Done()
		return m, ctx.Err()
	case "introspect":
		var set unix.CPUSet
		if err := unix.SchedGetaffinity(0, &set); err != nil {
			return m, err
		}
		m.Metrics["gomaxprocs"] = float64(runtime.GOMAXPROCS(0))
		m.Metrics["cpus"] = float64(set.Count())
		m.Metrics["pid"] = float64(os.Getpid())
		quota, dir := ownCPUQuota()
		m.Metrics["cpu_quota_us"] = float64(quota)
		m.Notes = append(m.Notes, ep.Transport, dir)
	}
	return m, nil
}

func testRegistry() *Registry {
	return NewRegistry(engine.NewRegistry(postgres.New(os.Getenv("DBRIG_PG_BIN"))), []workload.Kind{pingKind()})
}

const pingSpec = `name = "ping"
title = "ping"
[[instance]]
name = "db"
engine = "postgres"
settings = { fsync = "off" }
[client]
gomaxprocs = %s
cpus = %q
[[link]]
between = ["client", "db"]
profile = "${net}"
[workload]
kind = "ping"
behaviour = %q
fail_on = %q
[sweep]
net = ["unix", "direct", "lan-1g"]
[repeat]
runs = 2
`

func pingPlan(t *testing.T, behaviour, failOn string, gomaxprocs int, cpus string) *Plan {
	t.Helper()
	src := fmt.Sprintf(pingSpec, fmt.Sprint(gomaxprocs), cpus, behaviour, failOn)
	s, err := Parse("ping.toml", []byte(src), testRegistry())
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Plan("")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func newRunner(t *testing.T, p *Plan, base, dir string) *Runner {
	pgtest.Binaries(t)
	return &Runner{Plan: p, Registry: testRegistry(), Dir: dir, BaseDir: base,
		ClientCommand: []string{os.Args[0]}, Version: "test"}
}

func TestRunnerRecordsResumesAndStopsServers(t *testing.T) {
	base := pgtest.BaseDir(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	out, err := newRunner(t, pingPlan(t, "ok", "", 0, ""), base, dir).Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if out.Ran != 6 || out.Failed != 0 {
		t.Fatalf("ran %d, failed %d; want 6 and 0", out.Ran, out.Failed)
	}
	pgtest.WaitNoServers(t, base, 10*time.Second)
	assertEmpty(t, base)

	res, err := ReadResults(dir)
	if err != nil || len(res) != 6 {
		t.Fatalf("results: %d, %v", len(res), err)
	}
	transports := map[string]bool{}
	for _, r := range res {
		if r.Model["queries"] != 1 || r.Formula != workload.FitFormulaPrefix+"one query" || r.Metrics["queries"] != 1 {
			t.Errorf("result %s: metrics %v model %v", r.Key, r.Metrics, r.Model)
		}
		transports[r.Links[0].Mode] = true
		if r.Links[0].Mode == "link" && (r.Links[0].ForwardBytes == 0 || r.Links[0].ReverseBytes == 0) {
			t.Errorf("result %s: the link carried nothing: %+v", r.Key, r.Links[0])
		}
	}
	if len(transports) != 3 {
		t.Errorf("links used: %v, want unix, direct and link", transports)
	}
	for _, f := range []string{SpecFile, RunFile, EnvironmentFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("run directory lacks %s: %v", f, err)
		}
	}

	// Resume with everything done runs nothing; with a point lost, that one.
	out, err = newRunner(t, pingPlan(t, "ok", "", 0, ""), base, dir).Run(ctx)
	if err != nil || out.Ran != 0 || out.Done != 6 {
		t.Fatalf("resume of a finished run: ran %d skipped %d err %v", out.Ran, out.Done, err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, ResultsFile))
	lines := bytes.SplitAfter(b, []byte("\n"))
	// Drop the third point and leave a torn line behind, as a crash would.
	torn := append(append(bytes.Join(lines[:2], nil), bytes.Join(lines[3:6], nil)...), []byte(`{"study":"ping","key":"net=`)...)
	if err := os.WriteFile(filepath.Join(dir, ResultsFile), torn, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = newRunner(t, pingPlan(t, "ok", "", 0, ""), base, dir).Run(ctx)
	if err != nil || out.Ran != 1 || out.Done != 5 {
		t.Fatalf("resume after a lost point: ran %d skipped %d err %v", out.Ran, out.Done, err)
	}
	pgtest.WaitNoServers(t, base, 10*time.Second)
}

func TestRunnerStopsServersOnFailurePanicAndCancel(t *testing.T) {
	tests := []struct {
		name      string
		behaviour string
		failOn    string
		keepGoing bool
		cancelAt  time.Duration
		want      string
		ran       int
	}{
		{name: "failure", behaviour: "fail", failOn: "tcp", want: "net=direct #1: failed on purpose", ran: 3},
		{name: "failure keep going", behaviour: "fail", failOn: "tcp", keepGoing: true, want: "2 of 6 points failed", ran: 6},
		{name: "panic", behaviour: "panic", want: "panic in workload: panicked on purpose", ran: 1},
		{name: "cancel", behaviour: "hang", cancelAt: 3 * time.Second, want: context.Canceled.Error(), ran: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base := pgtest.BaseDir(t)
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			if tt.cancelAt > 0 {
				time.AfterFunc(tt.cancelAt, cancel)
			}
			plan := pingPlan(t, tt.behaviour, tt.failOn, 0, "")
			for _, c := range plan.Combos {
				c.Params["base"] = base
			}
			r := newRunner(t, plan, base, t.TempDir())
			r.KeepGoing = tt.keepGoing
			out, err := r.Run(ctx)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Run = %v, want an error containing %q", err, tt.want)
			}
			if out.Ran != tt.ran {
				t.Errorf("ran %d points, want %d", out.Ran, tt.ran)
			}
			pgtest.WaitNoServers(t, base, 10*time.Second)
			assertEmpty(t, base)
		})
	}
}

// cancelOnUpdate interrupts the run at a workload's first progress report.
type cancelOnUpdate struct {
	nopProgress
	cancel context.CancelFunc
}

func (p cancelOnUpdate) Update(int64, int64) { p.cancel() }

// TestInterruptedPointIsLabelledAndRunAgain: a point an interrupt cuts
// short is recorded with what it measured, labelled interrupted; it is no
// result (not measured, counted or reported as one), and --resume runs it
// again, after which the report no longer lists it.
func TestInterruptedPointIsLabelledAndRunAgain(t *testing.T) {
	base := pgtest.BaseDir(t)
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	runCtx, interrupt := context.WithCancel(ctx)
	defer interrupt()
	r := newRunner(t, pingPlan(t, "hang", "", 0, ""), base, dir)
	r.Progress = cancelOnUpdate{cancel: interrupt}
	out, err := r.Run(runCtx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v, want it interrupted", err)
	}
	if len(out.Interrupted) != 1 || out.Ran != 0 || len(out.Results) != 0 {
		t.Fatalf("outcome: %d interrupted, %d ran, %d results; want 1, 0, 0", len(out.Interrupted), out.Ran, len(out.Results))
	}
	pgtest.WaitNoServers(t, base, 10*time.Second)
	saved, err := ReadResults(dir)
	if err != nil || len(saved) != 1 {
		t.Fatalf("results.jsonl: %d lines (%v), want the interrupted point's", len(saved), err)
	}
	if p := saved[0]; p.Status != workload.StatusInterrupted || p.Metrics["queries"] != 1 || p.OK() || p.Measured() {
		t.Errorf("the interrupted point is saved as status %q, metrics %v, ok %v", p.Status, p.Metrics, p.OK())
	}
	rd, err := LoadRun(dir, testRegistry())
	if err != nil {
		t.Fatal(err)
	}
	doc := BuildReport(rd)
	if len(rd.Results) != 0 || len(rd.Summaries) != 0 || doc.Counts.Measured != 0 || len(doc.Interrupted) != 1 || len(doc.Points.Rows) != 0 {
		t.Errorf("the report takes the interrupted point for a result: %d results, %d summaries, %d measured, %d rows; %d listed as interrupted",
			len(rd.Results), len(rd.Summaries), doc.Counts.Measured, len(doc.Points.Rows), len(doc.Interrupted))
	}

	out, err = newRunner(t, pingPlan(t, "ok", "", 0, ""), base, dir).Run(ctx)
	if err != nil || out.Ran != 6 || out.Done != 0 {
		t.Fatalf("resume: ran %d, done %d, %v; want the interrupted point run again with the rest", out.Ran, out.Done, err)
	}
	if rd, err = LoadRun(dir, testRegistry()); err != nil {
		t.Fatal(err)
	}
	if doc := BuildReport(rd); doc.Counts.Measured != 6 || len(doc.Interrupted) != 0 {
		t.Errorf("after the resume: %d measured, interrupted %v", doc.Counts.Measured, doc.Interrupted)
	}
	pgtest.WaitNoServers(t, base, 10*time.Second)
	assertEmpty(t, base)
}

// crashingRun is the child of TestCrashLeavesNoServerRunning: a run whose
// workload crashes the process from a goroutine of its own. Its run
// directory is the parent's, which removes it: the crash cannot.
func crashingRun(base, dir string) {
	s, err := Parse("ping.toml", []byte(fmt.Sprintf(pingSpec, "0", "", "crash", "")), testRegistry())
	if err != nil {
		panic(err)
	}
	p, _ := s.Plan("")
	r := &Runner{Plan: p, Registry: testRegistry(), Dir: dir, BaseDir: base}
	_, _ = r.Run(context.Background())
}

func TestCrashLeavesNoServerRunning(t *testing.T) {
	pgtest.Binaries(t)
	base := pgtest.BaseDir(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "DBRIG_TEST_CRASH_DIR="+base, "DBRIG_TEST_CRASH_RUN_DIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "crashed on purpose") {
		t.Fatalf("the crashing run ended with %v:\n%s", err, out)
	}
	// The kernel stops the server when its parent dies ...
	pgtest.WaitNoServers(t, base, 15*time.Second)
	// ... and the next dbrig removes what it left on disk.
	if removed := postgres.RemoveStale(base); len(removed) != 1 {
		t.Errorf("RemoveStale removed %v, want the crashed instance's directory", removed)
	}
	assertEmpty(t, base)
}

func TestConstrainedClientRunsInItsOwnProcess(t *testing.T) {
	base := pgtest.BaseDir(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	out, err := newRunner(t, pingPlan(t, "introspect", "", 1, "0"), base, t.TempDir()).Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range out.Results {
		if r.Metrics["gomaxprocs"] != 1 || r.Metrics["cpus"] != 1 || int(r.Metrics["pid"]) == os.Getpid() {
			t.Errorf("%s: client ran with gomaxprocs %v on %v CPUs in pid %v (test pid %d)",
				r.Key, r.Metrics["gomaxprocs"], r.Metrics["cpus"], r.Metrics["pid"], os.Getpid())
		}
	}
	pgtest.WaitNoServers(t, base, 10*time.Second)
}

func assertEmpty(t *testing.T, dir string) {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		t.Errorf("left behind in %s: %s", dir, e.Name())
	}
}

// ownCPUQuota is the CFS quota of this process's cpu cgroup in
// microseconds (-1 or 0 when none) and the cgroup's directory.
func ownCPUQuota() (int64, string) {
	own, _ := os.ReadFile("/proc/self/cgroup")
	var dir, unified string
	for _, line := range strings.Split(strings.TrimSpace(string(own)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		switch {
		case len(parts) < 3:
		case parts[1] == "":
			unified = filepath.Join("/sys/fs/cgroup", parts[2])
		case strings.Contains(","+parts[1]+",", ",cpu,"):
			dir = filepath.Join("/sys/fs/cgroup", parts[1], parts[2])
		}
	}
	if dir == "" {
		dir = unified
	}
	b, err := os.ReadFile(filepath.Join(dir, "cpu.cfs_quota_us"))
	if err != nil {
		b, _ = os.ReadFile(filepath.Join(dir, "cpu.max"))
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, dir
	}
	n, _ := strconv.ParseInt(f[0], 10, 64)
	return n, dir
}
