package study

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/mariadb"
	"github.com/dbrig/dbrig/internal/engine/mariadb/mariatest"
	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
	"github.com/dbrig/dbrig/internal/workload"
)

// probeKind reads back, in every point, what the point's instances run
// with: a setting, the rows Prepare left, the instance set and each
// server's CPUs. It counts its Prepare calls; its data key is its "data"
// parameter.
func probeKind(prepares *atomic.Int64) workload.Kind {
	return workload.Kind{
		Name: "probe",
		Params: []workload.ParamSpec{
			{Name: "setting", Type: workload.StringParam, Default: "shared_buffers"},
			{Name: "data", Type: workload.StringParam, Default: "v1"},
		},
		New: func(p workload.Params) (workload.Workload, error) {
			return &probe{setting: p.String("setting"), prepares: prepares}, nil
		},
		PrepareKey: func(p workload.Params) string { return p.String("data") },
	}
}

type probe struct {
	setting  string
	prepares *atomic.Int64
}

func (w *probe) Prepare(ctx context.Context, env *workload.Env) error {
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

func (w *probe) Run(ctx context.Context, env *workload.Env) (workload.Measurement, error) {
	m := workload.Measurement{Metrics: map[string]float64{"instances": float64(len(env.Set("db")))}}
	for _, name := range env.Set("db") {
		ep, err := env.Conn(env.ClientSite, name, env.Database)
		if err != nil {
			return m, err
		}
		// The value is read in the client's own session, through the
		// point's link: what the workload runs against.
		value, rows, err := readBack(ctx, ep.Conn, w.setting)
		if err != nil {
			return m, err
		}
		m.Notes = append(m.Notes, fmt.Sprintf("%s %s=%s rows=%d cpus=%s pid=%d", name, w.setting, value, rows, cpusOf(env.Instance(name).PID()), env.Instance(name).PID()))
		probeSecrets.Store(ep.Conn.Password(), true)
	}
	return m, nil
}

// readBack reads a server setting and the prepared rows in one session.
func readBack(ctx context.Context, c engine.Conn, setting string) (value string, rows int, err error) {
	switch c.Engine {
	case "mariadb":
		db, err := mariadb.Open(ctx, c)
		if err != nil {
			return "", 0, err
		}
		defer db.Close()
		err = db.QueryRowContext(ctx, "SELECT @@GLOBAL."+setting+", (SELECT count(*) FROM prepared)").Scan(&value, &rows)
		return value, rows, err
	default:
		cfg, err := postgres.ConnInfoOf(c).ConnConfig()
		if err != nil {
			return "", 0, err
		}
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			return "", 0, err
		}
		defer conn.Close(context.WithoutCancel(ctx))
		err = conn.QueryRow(ctx, "SELECT current_setting($1), (SELECT count(*) FROM prepared)", setting).Scan(&value, &rows)
		return value, rows, err
	}
}

// probeSecrets holds the passwords of the instances probes reached, for
// the check that none is written into a run directory.
var probeSecrets sync.Map

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
	pgtest.Binaries(t)
	return probeRunOn(t, src, prepares, engine.NewRegistry(postgres.New(os.Getenv("DBRIG_PG_BIN"))), pgtest.BaseDir(t))
}

func probeRunOn(t *testing.T, src string, prepares *atomic.Int64, engines *engine.Registry, base string) Outcome {
	t.Helper()
	reg := NewRegistry(engines, []workload.Kind{probeKind(prepares)})
	s, err := Parse("probe.toml", []byte(src), reg)
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Plan("")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	out, err := (&Runner{Plan: p, Registry: reg, Dir: dir, BaseDir: base}).Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pgtest.WaitNoServers(t, base, 10*time.Second)
	mariatest.WaitNoServers(t, base, 10*time.Second)
	assertEmpty(t, base)
	// No instance's random password is in the run directory.
	probeSecrets.Range(func(pw, _ any) bool {
		if pw.(string) == "" {
			t.Error("a probe reached an instance without a password")
		}
		assertNoSecret(t, dir, pw.(string))
		return true
	})
	return out
}

// pidOf is the server pid a probe's note records.
func pidOf(note string) string {
	_, pid, _ := strings.Cut(note, " pid=")
	return pid
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
	// shared_buffers changes only at a restart: each point's server is a
	// new process on the same data directory.
	if len(out.Results) == 3 && (pidOf(out.Results[0].Notes[0]) == pidOf(out.Results[1].Notes[0]) || pidOf(out.Results[1].Notes[0]) == pidOf(out.Results[2].Notes[0])) {
		t.Errorf("the server was not restarted between points: %v %v %v", out.Results[0].Notes, out.Results[1].Notes, out.Results[2].Notes)
	}
}

// TestMariaDBSettingSweepRestartsInPlaceOverPreparedData is the same on
// MariaDB, with a setting its server reads at start only
// (innodb_sort_buffer_size) and one it changes at run time
// (max_connections, with SET GLOBAL: the same process).
func TestMariaDBSettingSweepRestartsInPlaceOverPreparedData(t *testing.T) {
	mariatest.Engine(t)
	var prepares atomic.Int64
	spec := `name = "restart"
title = "restart in place"
[[instance]]
name = "db"
engine = "mariadb"
settings = { %s = "${v}", innodb_flush_log_at_trx_commit = 2, innodb_buffer_pool_size = "32M" }
[[link]]
between = ["client", "db"]
profile = "lan-1g"
[workload]
kind = "probe"
setting = %q
[sweep]
v = [%s]
[repeat]
runs = 1
`
	engines := engine.NewRegistry(mariadb.New(os.Getenv("DBRIG_MARIADB_BIN")))
	out := probeRunOn(t, fmt.Sprintf(spec, "innodb_sort_buffer_size", "innodb_sort_buffer_size", `"16M", "24M", "32M"`), &prepares, engines, mariatest.BaseDir(t))
	if n := prepares.Load(); n != 1 {
		t.Errorf("Prepare ran %d times over three settings, want once", n)
	}
	var pids []string
	for _, r := range out.Results {
		mb, _ := strconv.Atoi(strings.TrimSuffix(r.Values["v"].(string), "M"))
		want := fmt.Sprintf("db innodb_sort_buffer_size=%d rows=1", mb<<20)
		if len(r.Notes) != 1 || !strings.HasPrefix(r.Notes[0], want) {
			t.Fatalf("%s ran with %v, want %q (its own value, on the data prepared once)", r.Key, r.Notes, want)
		}
		pids = append(pids, pidOf(r.Notes[0]))
	}
	if pids[0] == pids[1] || pids[1] == pids[2] {
		t.Errorf("server pids %v: innodb_sort_buffer_size changed without a restart", pids)
	}

	prepares.Store(0)
	out = probeRunOn(t, fmt.Sprintf(spec, "max_connections", "max_connections", `60, 70`), &prepares, engines, mariatest.BaseDir(t))
	if n := prepares.Load(); n != 1 || len(out.Results) != 2 {
		t.Fatalf("Prepare ran %d times, %d results", n, len(out.Results))
	}
	if !strings.HasPrefix(out.Results[1].Notes[0], "db max_connections=70 rows=1") || pidOf(out.Results[0].Notes[0]) != pidOf(out.Results[1].Notes[0]) {
		t.Errorf("max_connections 60 then 70: %v then %v; want the value set at run time, in the same server", out.Results[0].Notes, out.Results[1].Notes)
	}
}

// TestPrepareRunsAgainForNewData: a point whose data key differs from the
// previous point's prepares again on the same instance; one that differs
// only in settings does not.
func TestPrepareRunsAgainForNewData(t *testing.T) {
	var prepares atomic.Int64
	out := probeRun(t, `name = "data"
title = "data keys"
[[instance]]
name = "db"
settings = { work_mem = "${wm}", fsync = "off" }
[[link]]
between = ["client", "db"]
profile = "unix"
[workload]
kind = "probe"
setting = "work_mem"
data = "${data}"
[sweep]
data = ["a", "b"]
wm = ["4MB", "8MB"]
[repeat]
runs = 1
`, &prepares)
	if n := prepares.Load(); n != 2 || len(out.Results) != 4 {
		t.Errorf("Prepare ran %d times for 2 data keys × 2 settings (%d results), want twice", n, len(out.Results))
	}
	for _, r := range out.Results {
		want := fmt.Sprintf("db work_mem=%s rows=1", r.Values["wm"])
		if len(r.Notes) != 1 || !strings.HasPrefix(r.Notes[0], want) {
			t.Errorf("%s ran with %v, want %q", r.Key, r.Notes, want)
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
			if !strings.Contains(res.Skipped, "no unix socket") || !strings.Contains(res.Skipped, "host=/var/run/postgresql") {
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

	// A server-level setting that differs runs with the target's value,
	// both recorded: dbrig never changes a target.
	spec = strings.Replace(spec, `work_mem = "7MB"`, `shared_buffers = "512MB"`, 1)
	s, err = Parse("ping.toml", []byte(spec), reg)
	if err != nil {
		t.Fatal(err)
	}
	p, _ = s.PlanWith("", opts)
	dir = t.TempDir()
	r = &Runner{Plan: p, Registry: reg, Dir: dir, Targets: map[string]engine.Conn{"db": login}, ClientCommand: []string{os.Args[0]}}
	if out, err = r.Run(ctx); err != nil || out.Ran != 6 {
		t.Errorf("Run with a differing server setting = %v (ran %d), want the 6 points run on the target's value", err, out.Ran)
	}
	env = Environment{}
	want := SettingDiff{Name: "shared_buffers", Study: "512MB", Target: "128MB"}
	if err := readJSON(filepath.Join(dir, EnvironmentFile), &env); err != nil || len(env.Targets) != 1 || !slices.Equal(env.Targets[0].Differs, []SettingDiff{want}) {
		t.Errorf("environment targets = %+v (%v), want the difference %+v", env.Targets, err, want)
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

// TestTargetWhoseLoginMayNotCreateDatabases: on a target whose login may
// not create databases, the workload's objects live in a schema of
// dbrig's own in the login's database, which the workload reaches from a
// client process of its own as well, and which is removed at the end.
func TestTargetWhoseLoginMayNotCreateDatabases(t *testing.T) {
	server := pgtest.Start(t, "users-server", nil)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	const password = "Zq9AppPassword"
	if err := server.Exec(ctx, "postgres", "CREATE ROLE app LOGIN NOCREATEDB PASSWORD '"+password+"'", "CREATE DATABASE appdb OWNER app"); err != nil {
		t.Fatal(err)
	}
	login := server.Login("appdb")
	login.User = "app"
	login = login.WithPassword(password)

	reg := testRegistry()
	s, err := Parse("ping.toml", []byte(fmt.Sprintf(pingSpec, "1", "", "ok", "")), reg)
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.PlanWith("", PlanOptions{Targets: map[string]string{"db": "postgres"}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	r := &Runner{Plan: p, Registry: reg, Dir: dir, Targets: map[string]engine.Conn{"db": login}, ClientCommand: []string{os.Args[0]}}
	out, err := r.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if out.Ran != 6 || out.Unreachable != 2 || out.Failed != 0 {
		t.Errorf("ran %d, unreachable %d, failed %d; want 6, 2 (the unix points) and 0", out.Ran, out.Unreachable, out.Failed)
	}
	for _, res := range out.Results {
		if res.Values["net"] != "unix" && !res.Measured() {
			t.Errorf("%s: %s", res.Key, res.Error)
		}
	}
	conn, err := server.Connect(ctx, "appdb")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var schemas int
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM pg_namespace WHERE nspname = 'dbrig_ping'").Scan(&schemas); err != nil || schemas != 0 {
		t.Errorf("schema dbrig_ping left on the target (%d, %v)", schemas, err)
	}
	if dbs := targetDatabases(t, server); dbs["dbrig_ping"] {
		t.Errorf("a database was made on a login that may not: %v", dbs)
	}
	assertNoSecret(t, dir, password)
}
