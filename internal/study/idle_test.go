package study

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
	"github.com/dbrig/dbrig/internal/idleloop"
	"github.com/dbrig/dbrig/internal/workload"
)

// client.idle sweeps like any attribute of the client; anything but halt
// or spin is refused at its own line and key before anything starts.
func TestIdleIsSweptAndRefusedAtItsKey(t *testing.T) {
	t.Parallel()
	reg := NewRegistry(testEngines(), []workload.Kind{testKind()})
	withIdle := func(value, sweep string) string {
		src := strings.Replace(goodSpec, `gomaxprocs = "${procs}"`, "gomaxprocs = \"${procs}\"\nidle = "+value, 1)
		if sweep != "" {
			src = strings.Replace(src, `procs = [1]`, "procs = [1]\nidle = "+sweep, 1)
		}
		return src
	}
	p := mustPlan(t, reg, withIdle(`"${idle}"`, `["halt", "spin"]`), "")
	modes := map[string]int{}
	for _, c := range p.Combos {
		modes[c.Client.Idle]++
	}
	if modes[""] == 0 || modes[idleloop.Spin] != modes[""] || len(modes) != 2 {
		t.Errorf("combinations by idle: %v, want as many halt (\"\") as spin", modes)
	}
	for _, tt := range []struct{ name, src, want string }{
		{"a word", withIdle(`"poll"`, ""), `demo.toml:11: client.idle: want "halt"`},
		{"a number", withIdle(`1`, ""), `client.idle: want "halt" or "spin", got the integer 1`},
		{"a swept word", withIdle(`"${idle}"`, `["halt", "Spin"]`), `client.idle: want "halt" (the machine's CPUs idle as they do) or "spin"`},
	} {
		_, err := Parse("demo.toml", []byte(tt.src), reg)
		var es SpecErrors
		if !errors.As(err, &es) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Parse = %v\nwant a SpecErrors with %q", tt.name, err, tt.want)
		}
	}
}

// A point with idle = "spin" runs with a loop on each CPU and records
// them; a halt point runs without; no loop outlives its point.
func TestSpinningPointsRunWithTheirLoops(t *testing.T) {
	base := pgtest.BaseDir(t)
	dir := t.TempDir()
	src := strings.Replace(pingSpec, "[client]\n", "[client]\nidle = \"${idle}\"\n", 1)
	src = strings.Replace(src, `net = ["unix", "direct", "lan-1g"]`, "net = [\"direct\"]\nidle = [\"halt\", \"spin\"]", 1)
	src = strings.Replace(src, "runs = 2", "runs = 1", 1)
	s, err := Parse("ping.toml", []byte(strings.Replace(strings.Replace(strings.Replace(strings.Replace(src, "%s", "0", 1), "%q", `""`, 1), "%q", `"ok"`, 1), "%q", `""`, 1)), testRegistry())
	if err != nil {
		t.Fatal(err)
	}
	p, err := s.Plan("")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if _, err := newRunner(t, p, base, dir).Run(ctx); err != nil {
		t.Fatal(err)
	}
	pgtest.WaitNoServers(t, base, 10*time.Second)
	if n := loopChildren(t); n > 0 {
		t.Errorf("%d idle loops outlived their point", n)
	}
	res, err := ReadResults(dir)
	if err != nil || len(res) != 2 {
		t.Fatalf("results: %d, %v", len(res), err)
	}
	cpus, _ := idleloop.AllowedCPUs()
	for _, r := range res {
		switch r.Values["idle"] {
		case "spin":
			if l := r.IdleLoops; l == nil || l.Count != len(cpus) || l.CPUs != idleloop.FormatCPUs(cpus) || r.Client.Idle != "spin" {
				t.Errorf("%s: loops %+v client %+v, want one on each of CPUs %v", r.Key, l, r.Client, cpus)
			}
		default:
			if r.IdleLoops != nil || r.Client.Idle != "" {
				t.Errorf("%s: loops %+v client %+v on a halt point", r.Key, r.IdleLoops, r.Client)
			}
		}
	}
	row, ok := idleRow(res)
	if !ok || !strings.Contains(row[1], "spin on 1 of 2 measured points (net=direct idle=spin)") {
		t.Errorf("environment row %q, want the spinning point named", row[1])
	}
}

// loopChildren counts this process's children that are shells, as an
// idle loop is.
func loopChildren(t *testing.T) int {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	n, self := 0, strconv.Itoa(os.Getpid())
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		text := string(b)
		i := strings.LastIndexByte(text, ')')
		f := strings.Fields(text[i+1:])
		if strings.Contains(text[:i], "(sh") && len(f) > 1 && f[1] == self {
			n++
		}
	}
	return n
}

// dbrig load --idle spin is a study's client.idle; halt writes nothing.
func TestALoadsIdleIsTheClients(t *testing.T) {
	t.Parallel()
	reg := NewRegistry(testEngines(), []workload.Kind{loadKind()})
	for mode, want := range map[string]string{idleloop.Spin: idleloop.Spin, idleloop.Halt: "", "": ""} {
		spec, err := ParseLoad(LoadRequest{Kind: loadKind(), Engine: "postgres", Sweep: []any{int64(10)}, Idle: mode}, reg)
		if err != nil {
			t.Fatal(err)
		}
		plan, err := spec.Plan("")
		if err != nil {
			t.Fatal(err)
		}
		if got := plan.Combos[0].Client.Idle; got != want {
			t.Errorf("--idle %q: client idle %q, want %q", mode, got, want)
		}
		if mode == idleloop.Halt && strings.Contains(spec.Text, "idle") {
			t.Errorf("--idle halt wrote the machine's default into the study file:\n%s", spec.Text)
		}
	}
}
