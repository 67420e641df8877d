package study

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
	"github.com/dbrig/dbrig/internal/workload"
)

// A cpu_speed out of its bounds is refused at its own line and key before
// anything starts: no share under the kernel's least quota, none beyond
// this machine's CPUs (which would cap nothing), and a number only.
func TestCPUSpeedOutOfBoundsIsRefusedAtParse(t *testing.T) {
	t.Parallel()
	reg := NewRegistry(testEngines(), []workload.Kind{testKind()})
	onInstance := func(v string) func(string) string {
		return func(s string) string {
			return strings.Replace(s, `engine = "postgres"`, "engine = \"postgres\"\ncpu_speed = "+v, 1)
		}
	}
	onClient := func(v string) func(string) string {
		return func(s string) string {
			return strings.Replace(s, `gomaxprocs = "${procs}"`, "gomaxprocs = \"${procs}\"\ncpu_speed = "+v, 1)
		}
	}
	more := fmt.Sprint(runtime.NumCPU() + 1)
	tests := []struct {
		name string
		edit func(string) string
		want string
	}{
		{"zero", onInstance("0"), "demo.toml:7: instance.0.cpu_speed: want cores' worth of CPU time from 0.01 to this machine's"},
		{"negative", onInstance("-0.5"), "demo.toml:7: instance.0.cpu_speed: want cores' worth"},
		{"under the least quota", onInstance("0.001"), "got the number 0.001"},
		{"more CPUs than the machine has", onInstance(more), "got the integer " + more},
		{"a word", onInstance(`"fast"`), `got the string "fast"`},
		{"not a number", onInstance("nan"), "instance.0.cpu_speed: want cores' worth"},
		{"the client's", onClient("0"), "demo.toml:11: client.cpu_speed: want cores' worth of CPU time"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("demo.toml", []byte(tt.edit(goodSpec)), reg)
			var es SpecErrors
			if !errors.As(err, &es) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse = %v\nwant a SpecErrors with %q", err, tt.want)
			}
		})
	}
}

// A swept cpu_speed gives each combination its speed, "none" none; the
// client's is its own.
func TestCPUSpeedIsSweptLikeAnyAttribute(t *testing.T) {
	t.Parallel()
	reg := NewRegistry(testEngines(), []workload.Kind{testKind()})
	src := strings.Replace(goodSpec, `engine = "postgres"`, "engine = \"postgres\"\ncpu_speed = \"${speed}\"", 1)
	src = strings.Replace(src, `gomaxprocs = "${procs}"`, "gomaxprocs = \"${procs}\"\ncpu_speed = 0.75", 1)
	src = strings.Replace(src, `procs = [1]`, `procs = [1]`+"\nspeed = [\"1\", \"0.5\", \"none\"]", 1)
	p := mustPlan(t, reg, src, "")
	speeds := map[string]float64{}
	for _, c := range p.Combos {
		speeds[fmt.Sprint(c.Values["speed"])] = c.Instances[0].CPUSpeed
		if c.Client.CPUSpeed != 0.75 || !c.Client.Constrained() {
			t.Errorf("%s: client cpu_speed %v (constrained %v), want 0.75 in a process of its own", c.Key, c.Client.CPUSpeed, c.Client.Constrained())
		}
	}
	if want := map[string]float64{"1": 1, "0.5": 0.5, "none": 0}; fmt.Sprint(speeds) != fmt.Sprint(want) {
		t.Errorf("instance cpu_speed by sweep value = %v, want %v", speeds, want)
	}
}

// dbrig never changes a server it did not start: a target's CPU time is
// not its to cap. A swept cpu_speed is not refused: its points at "none"
// run on the target and the others are skipped (cpuCapUnavailable).
func TestCPUSpeedOnATargetIsRefused(t *testing.T) {
	t.Parallel()
	reg := NewRegistry(testEngines(), []workload.Kind{testKind()})
	src := strings.Replace(goodSpec, `engine = "postgres"`, "engine = \"postgres\"\ncpu_speed = 0.5", 1)
	s, err := Parse("demo.toml", []byte(src), reg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.PlanWith("", PlanOptions{Targets: map[string]string{"db": "postgres"}})
	if err == nil || !strings.Contains(err.Error(), "demo.toml:7: instance.0.cpu_speed: instance \"db\" is --target db") {
		t.Errorf("PlanWith a target with cpu_speed = %v, want a refusal at instance.0.cpu_speed", err)
	}
	src = strings.Replace(src, "cpu_speed = 0.5", `cpu_speed = "${speed}"`, 1)
	src = strings.Replace(src, `procs = [1]`, `procs = [1]`+"\nspeed = [\"none\", \"0.5\"]", 1)
	if s, err = Parse("demo.toml", []byte(src), reg); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PlanWith("", PlanOptions{Targets: map[string]string{"db": "postgres"}}); err != nil {
		t.Errorf("PlanWith a target with a swept cpu_speed = %v, want a plan whose capped points are skipped", err)
	}
}

// Without a cpu cgroup a point that caps a CPU is skipped with the
// machine's reason; one that caps nothing, or caps only a target or a
// server another host starts, runs.
func TestPointsThatCapACPUAreSkippedWithoutACPUCgroup(t *testing.T) {
	t.Parallel()
	none := func(string) (string, error) { return "", engine.NoCgroupError{Controller: "cpu"} }
	remote := map[string]SiteSpec{"far": {Host: "ssh://far"}}
	tests := []struct {
		name string
		c    Combo
		skip bool
	}{
		{"no cap", Combo{Instances: []engine.InstanceConfig{{Name: "db"}}}, false},
		{"a server's", Combo{Instances: []engine.InstanceConfig{{Name: "db", CPUSpeed: 0.5}}}, true},
		{"the client's", Combo{Client: workload.ResolvedClient{CPUSpeed: 0.5}}, true},
		{"a remote server's", Combo{Instances: []engine.InstanceConfig{{Name: "db", Site: "far", CPUSpeed: 0.5}}}, false},
	}
	target := Combo{Instances: []engine.InstanceConfig{{Name: "db", Target: "db", CPUSpeed: 0.5}}}
	if reason := cpuCapUnavailable(&target, nil, engine.CgroupSupport); !strings.Contains(reason, "instance db is --target db, the user's server, whose CPU time dbrig never caps") {
		t.Errorf("a target's cpu_speed: skipped with %q, want the reason it cannot be capped", reason)
	}
	for _, tt := range tests {
		reason := cpuCapUnavailable(&tt.c, remote, none)
		if got := reason != ""; got != tt.skip {
			t.Errorf("%s: skipped = %v (%q), want %v", tt.name, got, reason, tt.skip)
		}
		if tt.skip && !strings.Contains(reason, "cpu_speed: no writable cpu cgroup") {
			t.Errorf("%s: reason %q does not name the missing cgroup", tt.name, reason)
		}
	}
	c := Combo{Instances: []engine.InstanceConfig{{Name: "db", CPUSpeed: 0.5}}}
	if reason := cpuCapUnavailable(&c, nil, func(string) (string, error) { return "cgroup v1 cpu", nil }); reason != "" {
		t.Errorf("skipped with a cpu cgroup: %q", reason)
	}
}

// A client with a cpu_speed runs in a process of its own in a cgroup whose
// CFS quota is the speed, removed after the point.
func TestClientCPUSpeedRunsTheClientInACgroup(t *testing.T) {
	if _, err := engine.CgroupSupport("cpu"); err != nil {
		t.Skip(err)
	}
	base := pgtest.BaseDir(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	src := fmt.Sprintf(pingSpec, "0", "", "introspect", "")
	src = strings.Replace(src, "[client]\n", "[client]\ncpu_speed = 0.5\n", 1)
	s, err := Parse("ping.toml", []byte(src), testRegistry())
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Plan("")
	if err != nil {
		t.Fatal(err)
	}
	out, err := newRunner(t, p, base, t.TempDir()).Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range out.Results {
		if int(r.Metrics["pid"]) == os.Getpid() || r.Metrics["cpu_quota_us"] != 50000 {
			t.Errorf("%s: client in pid %v (test pid %d) with a CPU quota of %v us, want its own process at 50000 us",
				r.Key, r.Metrics["pid"], os.Getpid(), r.Metrics["cpu_quota_us"])
		}
		if r.Client.CPUSpeed != 0.5 {
			t.Errorf("%s: result records the client's cpu_speed as %v", r.Key, r.Client.CPUSpeed)
		}
		if dir := r.Notes[len(r.Notes)-1]; dir != "" {
			if _, err := os.Stat(dir); !os.IsNotExist(err) {
				t.Errorf("%s: the client's cgroup %s remains (%v)", r.Key, dir, err)
			}
		}
	}
	pgtest.WaitNoServers(t, base, 10*time.Second)
}

// The report's environment says at what speed each instance and the client
// ran, every value a sweep gave it.
func TestReportListsTheCPUSpeedsPointsRanAt(t *testing.T) {
	t.Parallel()
	rd := &RunData{Results: []workload.Result{
		{Instances: []engine.InstanceConfig{{Name: "db", Engine: "postgres", CPUSpeed: 1}}, Client: workload.ResolvedClient{CPUSpeed: 0.5}},
		{Instances: []engine.InstanceConfig{{Name: "db", Engine: "postgres", CPUSpeed: 0.25}}},
	}}
	rows := fmt.Sprint(instanceRows(rd))
	for _, want := range []string{
		"instance db engine = postgres; cpu_speed = 1 cores' worth of CPU time (CFS quota) | 0.25 cores' worth",
		"client cpu_speed = 0.5 cores' worth of CPU time (CFS quota)",
	} {
		if !strings.Contains(rows, want) {
			t.Errorf("instance rows %s\nwant %q", rows, want)
		}
	}
}
