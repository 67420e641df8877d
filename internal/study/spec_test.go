package study

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/mariadb"
	"github.com/dbrig/dbrig/internal/engine/mariadb/mariatest"
	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
	"github.com/dbrig/dbrig/internal/workload"
)

// testKind is a workload kind for spec tests; it never runs.
func testKind() workload.Kind {
	return workload.Kind{
		Name: "demo",
		Params: []workload.ParamSpec{
			{Name: "rows", Type: workload.IntParam, Max: 1_000_000, Why: "the demo's table holds a million"},
			{Name: "size", Type: workload.SizeParam, Default: int64(8000), Max: 16 << 20, Why: "one message"},
			{Name: "mode", Type: workload.StringParam, Default: "a", Choices: []string{"a", "b"}},
			{Name: "pause", Type: workload.DurationParam, Default: "0s"},
			{Name: "instance", Type: workload.InstanceParam, Default: "db"},
		},
		New: func(workload.Params) (workload.Workload, error) { return nopWorkload{}, nil },
	}
}

func testEngines() *engine.Registry { return engine.NewRegistry(postgres.New("")) }

type nopWorkload struct{}

func (nopWorkload) Prepare(context.Context, *workload.Env) error { return nil }
func (nopWorkload) Run(context.Context, *workload.Env) (workload.Measurement, error) {
	return workload.Measurement{Metrics: map[string]float64{"seconds": 1}}, nil
}

const goodSpec = `name = "demo"
title = "A demo study"

[[instance]]
name = "db"
engine = "postgres"
settings = { work_mem = "${mem}" }

[client]
gomaxprocs = "${procs}"

[[link]]
between = ["client", "db"]
profile = "${net}"

[workload]
kind = "demo"
rows = 100
mode = "${mode}"

[sweep]
net = ["unix", "lan-1g", "tukwila-dublin+legacy-window"]
mode = ["a", "b"]
mem = ["4MB"]
procs = [1]

[repeat]
runs = 2

[scale.quick]
sweep = { net = ["unix", "rtt-23ms"] }
set = { rows = 10 }
[[scale.quick.when]]
match = { net = "rtt-23ms" }
set = { rows = 3 }
[[scale.quick.when]]
match = { net = "unix", mode = "b" }
skip = true
`

func TestParseGoodSpecAndPlan(t *testing.T) {
	reg := NewRegistry(testEngines(), []workload.Kind{testKind()})
	s, err := Parse("demo.toml", []byte(goodSpec), reg)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if got := strings.Join(s.SweepKeys, ","); got != "net,mode,mem,procs" {
		t.Errorf("sweep keys in file order = %s", got)
	}
	p, err := s.Plan("")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Combos) != 6 || len(p.Points()) != 12 {
		t.Fatalf("default plan: %d combos, %d points; want 6 and 12", len(p.Combos), len(p.Points()))
	}
	c := p.Combos[5]
	if c.Key != "net=tukwila-dublin+legacy-window mode=b mem=4MB procs=1" {
		t.Errorf("last combo key = %q", c.Key)
	}
	if c.Links[0].Mode != "link" || c.Links[0].Config.Window != 65535 || c.Links[0].Config.RTT.Milliseconds() != 150 {
		t.Errorf("link = %+v", c.Links[0])
	}
	if c.Params.String("mode") != "b" || c.Params.Int("rows") != 100 || c.Params.Int("size") != 8000 {
		t.Errorf("params = %v", c.Params)
	}
	if c.Instances[0].Settings["work_mem"] != "4MB" || c.Client.GOMAXPROCS != 1 {
		t.Errorf("instance settings %v, client %+v", c.Instances[0].Settings, c.Client)
	}

	q, err := s.Plan("quick")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, c := range q.Combos {
		keys = append(keys, c.Key+":"+strconv.FormatInt(c.Params.Int("rows"), 10))
	}
	want := "net=unix mode=a mem=4MB procs=1:10|net=rtt-23ms mode=a mem=4MB procs=1:3|net=rtt-23ms mode=b mem=4MB procs=1:3"
	if got := strings.Join(keys, "|"); got != want {
		t.Errorf("quick plan = %s\nwant         %s", got, want)
	}
	if _, err := s.Plan("huge"); err == nil || !strings.Contains(err.Error(), `no scale "huge"`) {
		t.Errorf("Plan(huge) = %v", err)
	}
}

func TestParseReportsEveryProblemWithLineAndKey(t *testing.T) {
	reg := NewRegistry(testEngines(), []workload.Kind{testKind()})
	tests := []struct {
		name string
		edit func(string) string
		want []string // fragments, each must appear in the error
	}{
		{"unknown top-level key", func(s string) string {
			return strings.Replace(s, `title = "A demo study"`, "title = \"x\"\ncolour = 3", 1)
		},
			[]string{"demo.toml:3: colour: unknown key"}},
		{"unknown workload parameter", func(s string) string { return strings.Replace(s, "rows = 100", "rows = 100\nrowz = 5", 1) },
			[]string{"demo.toml:19: workload.rowz: unknown parameter", "it has: rows, size, mode, pause, instance"}},
		{"wrong type", func(s string) string { return strings.Replace(s, "rows = 100", `rows = "many"`, 1) },
			[]string{"demo.toml:18: workload.rows: want a positive integer, got the string \"many\""}},
		{"zero size", func(s string) string { return strings.Replace(s, "rows = 100", "rows = 100\nsize = 0", 1) },
			[]string{"workload.size: want a positive size, got 0 bytes"}},
		{"negative rows", func(s string) string { return strings.Replace(s, "rows = 100", "rows = -5", 1) },
			[]string{"demo.toml:18: workload.rows: want a positive integer, got -5"}},
		{"unknown profile in sweep", func(s string) string { return strings.Replace(s, `"lan-1g"`, `"lan-2g"`, 1) },
			[]string{"demo.toml:14: link.0.profile: unknown link profile \"lan-2g\"", "net=lan-2g"}},
		{"empty sweep", func(s string) string { return strings.Replace(s, `mem = ["4MB"]`, `mem = []`, 1) },
			[]string{"demo.toml:24: sweep.mem: empty"}},
		{"sweep not a list", func(s string) string { return strings.Replace(s, `mem = ["4MB"]`, `mem = "4MB"`, 1) },
			[]string{"sweep.mem: want a list of values"}},
		{"bad choice", func(s string) string { return strings.Replace(s, `mode = ["a", "b"]`, `mode = ["a", "c"]`, 1) },
			[]string{"workload.mode: want one of a, b, got \"c\""}},
		{"unknown variable", func(s string) string { return strings.Replace(s, `"${net}"`, `"${nett}"`, 1) },
			[]string{"${nett} is not a sweep variable"}},
		{"missing kind", func(s string) string { return strings.Replace(s, `kind = "demo"`, ``, 1) },
			[]string{"workload.kind: missing"}},
		{"unknown kind", func(s string) string { return strings.Replace(s, `kind = "demo"`, `kind = "tpcc"`, 1) },
			[]string{"demo.toml:17: workload.kind: unknown workload \"tpcc\""}},
		{"bad runs", func(s string) string { return strings.Replace(s, "runs = 2", "runs = -1", 1) },
			[]string{"repeat.runs: want at least 1 run"}},
		{"unknown site", func(s string) string {
			return strings.Replace(s, `between = ["client", "db"]`, `between = ["client", "dv"]`, 1)
		},
			[]string{"demo.toml:13: link.0.between: unknown site \"dv\""}},
		{"scale sweeps unknown var", func(s string) string { return strings.Replace(s, `sweep = { net =`, `sweep = { nett =`, 1) },
			[]string{"scale.quick.sweep.nett: not a sweep variable"}},
		{"bad toml", func(s string) string { return strings.Replace(s, "runs = 2", "runs = = 2", 1) },
			[]string{"demo.toml:28: repeat.runs"}},
		{"an unknown key does not hide the plan's problems", func(s string) string {
			return strings.Replace(strings.Replace(s, `title = "A demo study"`, "title = \"x\"\ncolour = 3", 1), "rows = 100", "rows = -5", 1)
		}, []string{"colour: unknown key", "workload.rows: want a positive integer, got -5"}},
		{"two problems at once", func(s string) string {
			return strings.Replace(strings.Replace(s, "rows = 100", "rows = 0", 1), "runs = 2", "runs = 0\ntrim = \"median\"", 1)
		}, []string{"workload.rows", "repeat.runs: want at least 1 run, got 0", "repeat.trim: want \"none\" or \"min-max\""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("demo.toml", []byte(tt.edit(goodSpec)), reg)
			if err == nil {
				t.Fatal("Parse succeeded, want an error")
			}
			var es SpecErrors
			if !errors.As(err, &es) {
				t.Fatalf("error %T is not SpecErrors: %v", err, err)
			}
			if strings.Count(err.Error(), "\n") >= len(tt.want) {
				t.Errorf("more errors than problems:\n%v", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestTrim(t *testing.T) {
	tests := []struct {
		runs []float64
		rule RepeatSpec
		mean float64
		kept int
	}{
		{[]float64{1, 2, 3}, RepeatSpec{}, 2, 3},
		{[]float64{10, 2, 3, 4}, RepeatSpec{DiscardFirst: true}, 3, 3},
		{[]float64{10, 1, 2, 3, 100}, RepeatSpec{DiscardFirst: true, Trim: "min-max"}, 2.5, 2},
		{[]float64{5}, RepeatSpec{DiscardFirst: true, Trim: "min-max"}, 5, 1},
		{[]float64{1, 9}, RepeatSpec{Trim: "min-max"}, 5, 2},
	}
	for _, tt := range tests {
		st := Trim(tt.runs, tt.rule)
		if st.Mean != tt.mean || st.Kept != tt.kept {
			t.Errorf("Trim(%v, %+v) = mean %v kept %d; want %v, %d", tt.runs, tt.rule, st.Mean, st.Kept, tt.mean, tt.kept)
		}
	}
}

func TestKeyLines(t *testing.T) {
	src := `name = "x"
[[instance]]
name = "a"
settings = { work_mem = "4MB", nested = { k = 1 } }
[[instance]]
name = "b"
[sweep]
net = [
  "a",
  "b",
]
"quoted.key" = 1
[scale.quick]
set = { rows = 1 }
[[scale.quick.when]]
match = { net = "a" }
`
	lines := keyLines(src)
	for k, want := range map[string]int{
		"name": 1, "instance.0.name": 3, "instance.0.settings.work_mem": 4, "instance.0.settings.nested.k": 4,
		"instance.1.name": 6, "sweep.net": 8, "sweep.quoted.key": 12, "scale.quick.set.rows": 14,
		"scale.quick.when.0.match.net": 16,
	} {
		if got := lines[k]; got != want {
			t.Errorf("line of %s = %d, want %d", k, got, want)
		}
	}
}

func TestSpecErrorsANewUserMet(t *testing.T) {
	reg := NewRegistry(testEngines(), []workload.Kind{testKind()})
	tests := []struct {
		name string
		edit func(string) string
		want []string
	}{
		{"runs = 0 is not three runs", func(s string) string { return strings.Replace(s, "runs = 2", "runs = 0", 1) },
			[]string{"demo.toml:28: repeat.runs: want at least 1 run, got 0"}},
		{"runs as a string", func(s string) string { return strings.Replace(s, "runs = 2", `runs = "2"`, 1) },
			[]string{`demo.toml:28: repeat.runs: want a whole number, got the string "2"`}},
		{"every type error at once", func(s string) string {
			return strings.Replace(strings.Replace(s, "runs = 2", `runs = "2"`, 1), `title = "A demo study"`, "title = 5", 1)
		}, []string{"demo.toml:2: title: want a string, got the integer 5", "repeat.runs: want a whole number"}},
		{"negative rtt at its own line", func(s string) string {
			return strings.Replace(s, `profile = "${net}"`, "profile = \"${net}\"\nrtt = \"-10ms\"", 1)
		}, []string{`demo.toml:15: link.0.rtt: rtt: duration "-10ms" is negative`}},
		{"default scale with no scales", func(s string) string {
			return strings.Replace(s[:strings.Index(s, "[scale.quick]")], `title = "A demo study"`, "title = \"x\"\ndefault_scale = \"quick\"", 1)
		}, []string{"default_scale: no [scale.quick] in this file, which defines no scales"}},
		{"unknown engine", func(s string) string { return strings.Replace(s, `engine = "postgres"`, `engine = "oracle"`, 1) },
			[]string{`demo.toml:6: instance.0.engine: unknown engine "oracle": want one of postgres`}},
		{"flat settings with a swept engine", func(s string) string {
			return strings.Replace(s, `engine = "postgres"`, `engine = "${mode}"`, 1)
		}, []string{"instance.0.settings: the engine is a sweep variable"}},
		{"settings table of no engine", func(s string) string {
			return strings.Replace(s, `settings = { work_mem = "${mem}" }`, `settings = { oracle = { x = 1 } }`, 1)
		}, []string{"instance.0.settings.oracle: want a string, number or boolean, or a table of one engine's settings"}},
		{"bad count", func(s string) string {
			return strings.Replace(s, `engine = "postgres"`, "engine = \"postgres\"\ncount = 0", 1)
		}, []string{"instance.0.count: want a whole number of instances (1 or more)"}},
		{"bad cpus", func(s string) string {
			return strings.Replace(s, `engine = "postgres"`, "engine = \"postgres\"\ncpus = \"spread:x\"", 1)
		}, []string{"instance.0.cpus: CPU list \"x\""}},
		{"bad memory", func(s string) string {
			return strings.Replace(s, `engine = "postgres"`, "engine = \"postgres\"\nmemory = \"lots\"", 1)
		}, []string{"instance.0.memory: want a size"}},
		{"relative data_dir", func(s string) string {
			return strings.Replace(s, `engine = "postgres"`, "engine = \"postgres\"\ndata_dir = \"data\"", 1)
		}, []string{"instance.0.data_dir: want an absolute directory"}},
		{"workload on an instance the study lacks", func(s string) string {
			return strings.Replace(s, "rows = 100\n", "rows = 100\ninstance = \"dbb\"\n", 1)
		}, []string{`demo.toml:19: workload.instance: the study has no instance "dbb" (it has: db)`}},
		{"workload on a set's name", func(s string) string {
			return strings.Replace(s, `engine = "postgres"`, "engine = \"postgres\"\ncount = 3", 1)
		}, []string{`workload.instance: "db" is a set of 3 instances (count = 3): the workload runs on one of them; name it (db-1, db-2, db-3)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("demo.toml", []byte(tt.edit(goodSpec)), reg)
			if err == nil {
				t.Fatal("Parse succeeded, want an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not contain %q:\n%v", w, err)
				}
			}
		})
	}
}

func TestEngineOverrideAndTargetsAreCheckedAgainstTheStudy(t *testing.T) {
	reg := NewRegistry(testEngines(), []workload.Kind{testKind()})
	s, err := Parse("demo.toml", []byte(goodSpec), reg)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		opts PlanOptions
		want string
	}{
		{"flat settings on another engine", PlanOptions{Engine: "mariadb"},
			`instance.0.settings: settings work_mem are for postgres (engine = "postgres") and this point runs mariadb`},
		{"unknown instance", PlanOptions{Targets: map[string]string{"nosuch": "postgres"}}, `--target: study demo has no instance "nosuch" (it has: db)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.PlanWith("", tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("PlanWith(%+v) = %v, want %q", tt.opts, err, tt.want)
			}
		})
	}
	// A setting with one value at every point is no sweep: the target
	// runs with its own value, recorded beside the study's. One that takes
	// two values cannot be given by one server dbrig never reconfigures.
	if _, err := s.PlanWith("", PlanOptions{Targets: map[string]string{"db": "postgres"}}); err != nil {
		t.Errorf("PlanWith(target, work_mem = one value) = %v, want a plan", err)
	}
	swept, err := Parse("demo.toml", []byte(strings.Replace(goodSpec, `mem = ["4MB"]`, `mem = ["4MB", "64MB"]`, 1)), reg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = swept.PlanWith("", PlanOptions{Targets: map[string]string{"db": "postgres"}})
	if want := `demo.toml:7: instance.0.settings.work_mem: the study sweeps work_mem over 4MB, 64MB, and instance "db" is --target db: dbrig cannot reconfigure your server`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("PlanWith(target, work_mem swept) = %v, want %q", err, want)
	}
	// A target may not be counted, pinned, capped or placed.
	src := strings.Replace(strings.Replace(goodSpec, `settings = { work_mem = "${mem}" }`, "count = 2\ncpus = \"0\"", 1), "mem = [\"4MB\"]\n", "", 1)
	src = strings.Replace(src, "rows = 100\n", "rows = 100\ninstance = \"db-1\"\n", 1)
	s, err = Parse("demo.toml", []byte(src), reg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.PlanWith("", PlanOptions{Targets: map[string]string{"db": "postgres"}})
	for _, w := range []string{"instance.0.count: instance \"db\" is --target db", "instance.0.cpus"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("PlanWith(target of a set) = %v, want %q", err, w)
		}
	}
}

func TestMisspeltSettingIsRefusedBeforeAnythingStarts(t *testing.T) {
	reg := NewRegistry(testEngines(), []workload.Kind{testKind()})
	src := strings.Replace(goodSpec, `settings = { work_mem = "${mem}" }`, "[instance.settings]\nwork_mem = \"${mem}\"\nsynchronus_commit = \"off\"\nshared_buffers = \"lots\"", 1)
	// The name needs no server: it is not on PostgreSQL's list of what a
	// study may vary, once for all the points it is in.
	_, err := Parse("demo.toml", []byte(src), reg)
	want := `demo.toml:9: instance.0.settings.synchronus_commit: a study may vary performance settings only, and dbrig's list of PostgreSQL's has no synchronus_commit (did you mean "synchronous_commit"?)`
	if err == nil || !strings.Contains(err.Error(), want) || strings.Count(err.Error(), "\n") != 0 {
		t.Errorf("Parse = %v\nwant one error: %q", err, want)
	}

	// The value needs the server's own parser.
	pgtest.Binaries(t)
	s, err := Parse("demo.toml", []byte(strings.Replace(src, "synchronus_commit = \"off\"\n", "", 1)), reg)
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Plan("")
	if err != nil {
		t.Fatal(err)
	}
	err = CheckSettings(t.Context(), p, reg.Engines())
	want = `demo.toml:9: instance.0.settings.shared_buffers: invalid value for parameter "shared_buffers": "lots" (PostgreSQL)`
	if err == nil || err.Error() != want {
		t.Errorf("CheckSettings = %v\nwant %q", err, want)
	}
}

// TestMisspeltMariaDBSettingIsRefusedBeforeAnythingStarts: the same on
// MariaDB, whose values go through mariadbd's option parser, in an
// engine's own settings table, with a swept value.
func TestMisspeltMariaDBSettingIsRefusedBeforeAnythingStarts(t *testing.T) {
	reg := NewRegistry(engine.NewRegistry(mariadb.New(os.Getenv("DBRIG_MARIADB_BIN"))), []workload.Kind{testKind()})
	src := strings.Replace(goodSpec, "engine = \"postgres\"\nsettings = { work_mem = \"${mem}\" }",
		"engine = \"mariadb\"\n[instance.settings.mariadb]\ninnodb_bufer_pool_size = \"64M\"\ninnodb_flush_log_at_trx_commit = \"${mem}\"", 1)
	src = strings.Replace(src, `mem = ["4MB"]`, `mem = ["1", "maybe"]`, 1)
	_, err := Parse("demo.toml", []byte(src), reg)
	want := `demo.toml:8: instance.0.settings.mariadb.innodb_bufer_pool_size: a study may vary performance settings only, and dbrig's list of MariaDB's has no innodb_bufer_pool_size (did you mean "innodb_buffer_pool_size"?)`
	if err == nil || !strings.Contains(err.Error(), want) || strings.Count(err.Error(), "\n") != 0 {
		t.Errorf("Parse = %v\nwant one error: %q", err, want)
	}

	mariatest.Engine(t)
	s, err := Parse("demo.toml", []byte(strings.Replace(src, "innodb_bufer_pool_size", "innodb_buffer_pool_size", 1)), reg)
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Plan("")
	if err != nil {
		t.Fatal(err)
	}
	err = CheckSettings(t.Context(), p, reg.Engines())
	want = `demo.toml:9: instance.0.settings.mariadb.innodb_flush_log_at_trx_commit: setting innodb_flush_log_at_trx_commit = "maybe": want a number`
	if err == nil || !strings.Contains(err.Error(), want) || strings.Count(err.Error(), "\n") != 0 {
		t.Errorf("CheckSettings = %v\nwant one error: %q", err, want)
	}
}

// TestEngineSettingsTables: each engine's settings in a table named after
// it, with the engine swept, give each point its engine's settings; a
// table named after no engine is refused.
func TestEngineSettingsTables(t *testing.T) {
	reg := NewRegistry(engine.NewRegistry(postgres.New(""), mariadb.New("")), []workload.Kind{testKind()})
	src := strings.Replace(goodSpec, `engine = "postgres"
settings = { work_mem = "${mem}" }`, `engine = "${engine}"
[instance.settings.postgres]
work_mem = "${mem}"
[instance.settings.mariadb]
innodb_buffer_pool_size = "128M"`, 1)
	src = strings.Replace(src, "[sweep]\n", "[sweep]\nengine = [\"postgres\", \"mariadb\"]\n", 1)
	s, err := Parse("demo.toml", []byte(src), reg)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := s.Plan("")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]string{"postgres": {"work_mem": "4MB"}, "mariadb": {"innodb_buffer_pool_size": "128M"}}
	seen := map[string]bool{}
	for _, c := range plan.Combos {
		in := c.Instances[0]
		seen[in.Engine] = true
		if !maps.Equal(in.Settings, want[in.Engine]) {
			t.Errorf("%s: instance on %s has settings %v, want %v", c.Key, in.Engine, in.Settings, want[in.Engine])
		}
	}
	if !seen["postgres"] || !seen["mariadb"] {
		t.Errorf("engines planned: %v, want both", seen)
	}

	bad := strings.Replace(src, "[instance.settings.mariadb]", "[instance.settings.maria]", 1)
	_, err = Parse("demo.toml", []byte(bad), reg)
	if err == nil || !strings.Contains(err.Error(), "instance.0.settings.maria: want a string, number or boolean, or a table of one engine's settings named after the engine") {
		t.Errorf("a table named after no engine: %v", err)
	}
}

// TestEngineSettingsTableIsNotUnknown: settings in a table named after
// the engine ([instance.settings.postgres]) parse; a misspelt key among
// the study's own keys is still reported.
func TestEngineSettingsTableIsNotUnknown(t *testing.T) {
	src := strings.Replace(fmt.Sprintf(pingSpec, "0", "", "ok", ""), `settings = { fsync = "off" }`, "[instance.settings.postgres]\nfsync = \"off\"\nwork_mem = \"8MB\"", 1)
	s, err := Parse("ping.toml", []byte(src), testRegistry())
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	if p, err := s.Plan(""); err != nil || p.Combos[0].Instances[0].Settings["work_mem"] != "8MB" {
		t.Errorf("plan: %v; settings %v", err, p.Combos[0].Instances[0].Settings)
	}
	if _, err := Parse("ping.toml", []byte("colour = 1\n"+src), testRegistry()); err == nil || !strings.Contains(err.Error(), "unknown key") {
		t.Errorf("a misspelt key: %v", err)
	}
}

// TestWorkloadThatNeedsOneEngine: a workload that declares the engines it
// runs on is refused on another at the study file's engine key (once, not
// once per point), through a swept engine, --engine and --target.
func TestWorkloadThatNeedsOneEngine(t *testing.T) {
	pgOnly := testKind()
	pgOnly.Engines, pgOnly.EnginesWhy = []string{"postgres"}, "it reads PostgreSQL's logical decoding"
	reg := NewRegistry(engine.NewRegistry(postgres.New(""), mariadb.New("")), []workload.Kind{pgOnly})
	const want = `instance.0.engine: workload "demo" runs on postgres only (it reads PostgreSQL's logical decoding)`

	_, err := Parse("demo.toml", []byte(strings.Replace(goodSpec, `engine = "postgres"`, `engine = "mariadb"`, 1)), reg)
	if err == nil || !strings.Contains(err.Error(), "demo.toml:6: "+want+`, got "mariadb"`) || strings.Count(err.Error(), want) != 1 {
		t.Errorf("engine = \"mariadb\": %v\nwant once: %s", err, want)
	}

	swept := strings.Replace(goodSpec, "engine = \"postgres\"\nsettings = { work_mem = \"${mem}\" }", "engine = \"${engine}\"", 1)
	swept = strings.Replace(swept, "[sweep]\n", "[sweep]\nengine = [\"postgres\", \"mariadb\"]\n", 1)
	_, err = Parse("demo.toml", []byte(swept), reg)
	if err == nil || !strings.Contains(err.Error(), "demo.toml:6: "+want+`, got "mariadb" (for engine=mariadb`) {
		t.Errorf("engine swept over postgres and mariadb: %v\nwant %s", err, want)
	}

	s, err := Parse("demo.toml", []byte(goodSpec), reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		opts PlanOptions
		want string
	}{
		{PlanOptions{Engine: "mariadb"}, `--engine: workload "demo" runs on postgres only (it reads PostgreSQL's logical decoding), not mariadb`},
		{PlanOptions{Targets: map[string]string{"db": "mariadb"}}, `demo.toml:6: instance.0.engine: --target db is a mariadb server, and workload "demo" runs on postgres only`},
		{PlanOptions{Engine: "postgres"}, ""},
	} {
		_, err := s.PlanWith("", tt.opts)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("PlanWith(%v) = %v, want no error", tt.opts, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("PlanWith(%v) = %v\nwant %s", tt.opts, err, tt.want)
		}
	}
}

// TestHostIsCheckedBeforeAnythingStarts: an instance that asks this
// machine for a CPU it lacks or a directory that is not one is refused at
// the study's line and key, before any server starts; a target is not
// checked (dbrig starts nothing for it).
func TestHostIsCheckedBeforeAnythingStarts(t *testing.T) {
	reg := NewRegistry(testEngines(), []workload.Kind{testKind()})
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	good := t.TempDir()
	src := strings.Replace(goodSpec, `engine = "postgres"`, fmt.Sprintf("engine = \"postgres\"\ncpus = \"${cpu}\"\ndata_dir = %q\nwal_dir = %q", filepath.Join(good, "missing"), file), 1)
	src = strings.Replace(src, "[sweep]\n", fmt.Sprintf("[sweep]\ncpu = [\"0\", \"%d\"]\n", runtime.NumCPU()), 1)
	p := mustPlan(t, reg, src, "")
	err := CheckHost(p)
	for _, w := range []string{
		fmt.Sprintf("demo.toml:7: instance.0.cpus: CPU %d of list \"%d\" does not exist on this machine", runtime.NumCPU(), runtime.NumCPU()),
		"demo.toml:8: instance.0.data_dir: " + filepath.Join(good, "missing") + ": no such file or directory",
		"demo.toml:9: instance.0.wal_dir: " + file + " is not a directory",
	} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("CheckHost = %v\nwant %q", err, w)
		}
	}
	if err != nil && strings.Count(err.Error(), "\n") != 2 {
		t.Errorf("want three errors, each once:\n%v", err)
	}

	ok := strings.Replace(strings.Replace(src, filepath.Join(good, "missing"), good, 1), file, good, 1)
	ok = strings.Replace(ok, fmt.Sprintf("cpu = [\"0\", \"%d\"]", runtime.NumCPU()), `cpu = ["0"]`, 1)
	if err := CheckHost(mustPlan(t, reg, ok, "")); err != nil {
		t.Errorf("CheckHost of a plan this machine can run = %v", err)
	}
}

// TestAFindingNoJudgeDecidesIsRefused: a study may cite only the findings
// its workload judges, and is told at parse which ones those are.
func TestAFindingNoJudgeDecidesIsRefused(t *testing.T) {
	reg := NewRegistry(testEngines(), []workload.Kind{testKind()}, Builtin{Workload: "demo", Judges: map[string]Judge{"fast": nil, "slow": nil}})
	cite := func(id string) []byte {
		return []byte(strings.Replace(goodSpec, `title = "A demo study"`, "title = \"x\"\n\n[[published]]\nid = \""+id+"\"\nfinding = \"It was fast.\"\n", 1))
	}
	if _, err := Parse("demo.toml", cite("fast"), reg); err != nil {
		t.Fatalf("a judged finding: %v", err)
	}
	_, err := Parse("demo.toml", cite("fastest"), reg)
	if err == nil || !strings.Contains(err.Error(), `demo.toml:5: published.0.id: workload "demo" has no judge for finding "fastest" (it judges: fast, slow)`) {
		t.Errorf("an unjudged finding: %v", err)
	}
}

func TestSitesOnHosts(t *testing.T) {
	reg := testRegistry()
	base := "name = \"s\"\ntitle = \"t\"\n[[instance]]\nname = \"db\"\n[workload]\nkind = \"ping\"\n"
	tests := []struct {
		name, extra, wantErr string
	}{
		{"placed", "[site.db]\nhost = \"ssh://pg@db1:2222\"\n", ""},
		{"without scheme", "[site.db]\nhost = \"pg@db1\"\n", ""},
		{"unknown site", "[site.dc2]\nhost = \"db1\"\n", "site.dc2: unknown site \"dc2\""},
		{"client only", "[site.client]\nhost = \"db1\"\n", "site.client.host: site \"client\" holds only the client"},
		{"bad host", "[site.db]\nhost = \"http://db1\"\n", "site.db.host: \"http://db1\": want ssh://"},
		{"no host", "[site.db]\n", "site.db.host: missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Parse("x.toml", []byte(base+tt.extra), reg)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if h, _ := ParseHost(s.Sites["db"].Host); h.Host != "db1" {
					t.Errorf("host %+v", h)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %v, want %q", err, tt.wantErr)
			}
		})
	}
	s, err := Parse("x.toml", []byte(base), reg)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.PlaceSite("db", "ssh://root@198.18.0.2"); err != nil || s.Sites["db"].Host != "ssh://root@198.18.0.2" {
		t.Errorf("place db: %v, %+v", err, s.Sites)
	}
	for _, bad := range []string{"client", "nowhere"} {
		if err := s.PlaceSite(bad, "h"); err == nil {
			t.Errorf("placed site %q", bad)
		}
	}
}

// TestSweptMemoryCapMayBeNone compares capped and uncapped instances in one
// sweep: "none" (or "") is no cap, a size is a cap, anything else is refused.
func TestSweptMemoryCapMayBeNone(t *testing.T) {
	reg := NewRegistry(testEngines(), []workload.Kind{testKind()})
	spec := strings.Replace(goodSpec, `engine = "postgres"`, "engine = \"postgres\"\nmemory = \"${cap}\"", 1)
	spec = strings.Replace(spec, "procs = [1]", "procs = [1]\ncap = [\"none\", \"512MB\", \"\"]", 1)
	p := mustPlan(t, reg, spec, "quick")
	var caps []int64
	for _, c := range p.Combos[:3] {
		caps = append(caps, c.Instances[0].Memory)
	}
	if fmt.Sprint(caps) != "[0 512000000 0]" {
		t.Errorf("caps = %v, want none, 512MB, none", caps)
	}
	bad := strings.Replace(spec, `cap = ["none", "512MB", ""]`, `cap = ["lots"]`, 1)
	if _, err := Parse("demo.toml", []byte(bad), reg); err == nil || !strings.Contains(err.Error(), `or "none" for no cap`) {
		t.Errorf("memory = lots: %v", err)
	}
}

// mustPlan parses a study file made in a test and plans a scale of it.
func mustPlan(t *testing.T, reg *Registry, src, scale string) *Plan {
	t.Helper()
	s, err := Parse("demo.toml", []byte(src), reg)
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Plan(scale)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
