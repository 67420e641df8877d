package study

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
)

// probeKind reads back, in every point, what the point's instances run
// with: a setting, the rows Prepare left, the instance set and each
// server's CPUs. It counts its Prepare calls.
func probeKind(prepares *atomic.Int64) Kind {
	return Kind{
		Name:   "probe",
		Params: []ParamSpec{{Name: "setting", Kind: StringParam, Default: "shared_buffers"}},
		New: func(p Params) (Workload, error) {
			return &probe{setting: p.String("setting"), prepares: prepares}, nil
		},
	}
}

type probe struct {
	setting  string
	prepares *atomic.Int64
}

func (w *probe) Prepare(ctx context.Context, env *Env) error {
	w.prepares.Add(1)
	for _, name := range env.Set("db") {
		inst := env.Instance(name)
		if err := inst.CreateDatabase(ctx, env.Database); err != nil {
			return err
		}
		if err := inst.Exec(ctx, env.Database, "CREATE TABLE prepared (n int)", "INSERT INTO prepared VALUES (1)"); err != nil {
			return err
		}
	}
	return nil
}

func (w *probe) Run(ctx context.Context, env *Env) (Measurement, error) {
	m := Measurement{Metrics: map[string]float64{"instances": float64(len(env.Set("db")))}}
	for _, name := range env.Set("db") {
		ep, err := env.Conn(env.ClientSite, name, env.Database)
		if err != nil {
			return m, err
		}
		cfg, err := postgres.ConnInfoOf(ep.Conn).ConnConfig()
		if err != nil {
			return m, err
		}
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			return m, err
		}
		var value string
		var rows int
		err = conn.QueryRow(ctx, "SELECT current_setting($1), (SELECT count(*) FROM prepared)", w.setting).Scan(&value, &rows)
		conn.Close(ctx)
		if err != nil {
			return m, err
		}
		m.Notes = append(m.Notes, fmt.Sprintf("%s %s=%s rows=%d cpus=%s", name, w.setting, value, rows, cpusOf(env.Instance(name).PID())))
	}
	return m, nil
}

func cpusOf(pid int) string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

func probeRun(t *testing.T, src string, prepares *atomic.Int64) Outcome {
	t.Helper()
	reg := NewRegistry(engine.NewRegistry(postgres.New(os.Getenv("DBRIG_PG_BIN"))), probeKind(prepares))
	s, err := Parse("probe.toml", []byte(src), reg)
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Plan("")
	if err != nil {
		t.Fatal(err)
	}
	pgtest.Binaries(t)
	base := pgtest.BaseDir(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	out, err := (&Runner{Plan: p, Registry: reg, Dir: t.TempDir(), BaseDir: base}).Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pgtest.WaitNoServers(t, base, 10*time.Second)
	assertEmpty(t, base)
	return out
}

func TestSettingSweepRestartsInPlaceOverPreparedData(t *testing.T) {
	var prepares atomic.Int64
	out := probeRun(t, `name = "restart"
title = "restart in place"
[[instance]]
name = "db"
settings = { shared_buffers = "${sb}", fsync = "off" }
[[link]]
between = ["client", "db"]
profile = "unix"
[workload]
kind = "probe"
[sweep]
sb = ["32MB", "48MB", "64MB"]
[repeat]
runs = 1
`, &prepares)
	if n := prepares.Load(); n != 1 {
		t.Errorf("Prepare ran %d times over three settings, want once", n)
	}
	for _, r := range out.Results {
		want := fmt.Sprintf("db shared_buffers=%s rows=1", r.Values["sb"])
		if len(r.Notes) != 1 || !strings.HasPrefix(r.Notes[0], want) {
			t.Errorf("%s ran with %v, want %q (its own value, on the data prepared once)", r.Key, r.Notes, want)
		}
	}
}

func TestInstanceSetsCountAndSpreadCPUs(t *testing.T) {
	var prepares atomic.Int64
	out := probeRun(t, `name = "sets"
title = "instance sets"
[[instance]]
name = "db"
count = "${n}"
cpus = "spread"
settings = { fsync = "off" }
[[link]]
between = ["client", "db"]
profile = "direct"
[workload]
kind = "probe"
setting = "fsync"
[sweep]
n = [1, 2]
[repeat]
runs = 1
`, &prepares)
	if len(out.Results) != 2 {
		t.Fatalf("%d results, want 2", len(out.Results))
	}
	one, two := out.Results[0], out.Results[1]
	if one.Metrics["instances"] != 1 || two.Metrics["instances"] != 2 {
		t.Fatalf("instances = %v and %v, want 1 and 2", one.Metrics["instances"], two.Metrics["instances"])
	}
	if !strings.HasPrefix(one.Notes[0], "db-1 fsync=off rows=1 cpus=0") {
		t.Errorf("count 1: %v", one.Notes)
	}
	// db-1 was kept from the first point; db-2 is new and on the next CPU.
	next := strconv.Itoa(1 % runtime.NumCPU())
	if len(two.Notes) != 2 || !strings.HasPrefix(two.Notes[0], "db-1 fsync=off rows=1 cpus=0") ||
		!strings.HasPrefix(two.Notes[1], "db-2 fsync=off rows=1 cpus="+next) {
		t.Errorf("count 2: %v (want db-1 on CPU 0, db-2 on CPU %s)", two.Notes, next)
	}
	if two.Instances[1].Name != "db-2" || two.Instances[1].CPUs == "" {
		t.Errorf("recorded instances %+v", two.Instances)
	}
}

func TestTargetRunsTheStudyOnTheUsersServer(t *testing.T) {
	server := pgtest.Start(t, "users-server", nil)
	reg := testRegistry()
	spec := fmt.Sprintf(pingSpec, "0", "", "ok", "")
	spec = strings.Replace(spec, `settings = { fsync = "off" }`, `settings = { fsync = "off", work_mem = "7MB" }`, 1)
	s, err := Parse("ping.toml", []byte(spec), reg)
	if err != nil {
		t.Fatal(err)
	}
	opts := PlanOptions{Targets: map[string]string{"db": "postgres"}}
	p, err := s.PlanWith("", opts)
	if err != nil {
		t.Fatal(err)
	}
	login := server.Login("postgres")
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	r := &Runner{Plan: p, Registry: reg, Dir: dir, Targets: map[string]engine.Conn{"db": login}, ClientCommand: []string{os.Args[0]}}
	out, err := r.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if out.Unreachable != 2 || out.Failed != 0 || out.Ran != 6 {
		t.Errorf("ran %d, unreachable %d, failed %d; want 6, 2 (the unix points) and 0", out.Ran, out.Unreachable, out.Failed)
	}
	for _, res := range out.Results {
		switch res.Values["net"] {
		case "unix":
			if !strings.Contains(res.Skipped, "no unix socket") {
				t.Errorf("%s: skipped %q, want the reason", res.Key, res.Skipped)
			}
		default:
			if !res.Measured() || !strings.Contains(strings.Join(res.Notes, " "), "work_mem=7MB") {
				t.Errorf("%s: %+v; want measured with the study's session setting work_mem=7MB", res.Key, res)
			}
		}
	}
	// Nothing of dbrig's is left on the user's server, which still runs.
	if dbs := targetDatabases(t, server); dbs["dbrig_ping"] || server.PID() == 0 {
		t.Errorf("after the run the server holds %v", dbs)
	}
	var env Environment
	if err := readJSON(filepath.Join(dir, EnvironmentFile), &env); err != nil {
		t.Fatal(err)
	}
	if len(env.Targets) != 1 || env.Targets[0].Version == "" || env.Targets[0].Settings["fsync"] != "off" {
		t.Errorf("environment targets = %+v", env.Targets)
	}
	assertNoSecret(t, dir, login.Password())

	// A server-level setting that differs is refused before the first point.
	spec = strings.Replace(spec, `work_mem = "7MB"`, `shared_buffers = "512MB"`, 1)
	s, err = Parse("ping.toml", []byte(spec), reg)
	if err != nil {
		t.Fatal(err)
	}
	p, _ = s.PlanWith("", opts)
	r = &Runner{Plan: p, Registry: reg, Dir: t.TempDir(), Targets: map[string]engine.Conn{"db": login}}
	out, err = r.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "shared_buffers") || !strings.Contains(err.Error(), "never changes") || out.Ran != 0 {
		t.Errorf("Run with a differing server setting = %v (ran %d), want a refusal before any point", err, out.Ran)
	}
}

func targetDatabases(t *testing.T, inst *postgres.Instance) map[string]bool {
	t.Helper()
	conn, err := inst.Connect(context.Background(), "postgres")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(context.Background(), "SELECT datname FROM pg_database")
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, n := range names {
		out[n] = true
	}
	return out
}

// assertNoSecret fails when any file under dir contains the password.
func assertNoSecret(t *testing.T, dir, secret string) {
	t.Helper()
	_ = filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return nil
		}
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), secret) {
			t.Errorf("%s contains the password", path)
		}
		return nil
	})
}
