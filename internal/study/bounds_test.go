package study

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/workload"
)

// Every count and size of a study file has a bound, named in the error at
// the key's own line, and the plan's size is computed before anything is
// expanded: runs = 9223372036854775807 once allocated 23 GB before the
// kernel's OOM killer ended dbrig without a word.
func TestCountsAndSizesBeyondTheirBoundsAreRefusedAtParse(t *testing.T) {
	t.Parallel()
	reg := NewRegistry(testEngines(), []workload.Kind{testKind()})
	list := func(n int) string {
		var vs []string
		for i := range n {
			vs = append(vs, fmt.Sprint(i))
		}
		return "[" + strings.Join(vs, ", ") + "]"
	}
	tests := []struct {
		name string
		edit func(string) string
		want string
	}{
		{"runs of int64's most", func(s string) string { return strings.Replace(s, "runs = 2", "runs = 9223372036854775807", 1) },
			"demo.toml:28: repeat.runs: runs = 9223372036854775807: at most 1,000 runs per combination"},
		{"runs one past the bound", func(s string) string { return strings.Replace(s, "runs = 2", "runs = 1001", 1) },
			"demo.toml:28: repeat.runs: runs = 1001: at most 1,000 runs per combination"},
		{"a scale's runs", func(s string) string {
			return strings.Replace(s, "set = { rows = 10 }", "set = { rows = 10 }\nrepeat = { runs = 5000 }", 1)
		}, "demo.toml:33: scale.quick.repeat.runs: runs = 5000: at most 1,000"},
		{"a sweep of 10^10 combinations", func(s string) string {
			return strings.Replace(s, "procs = [1]", "procs = [1]\na = "+list(100)+"\nb = "+list(100)+"\nc = "+list(100)+"\nd = "+list(100)+"\ne = "+list(100), 1)
		}, "demo.toml:21: sweep: the sweep's lists of 3 × 2 × 1 × 1 × 100 × 100 × 100 × 100 × 100 values make 60,000,000,000 combinations: at most 1,000,000, before rules skip any"},
		{"lists whose product overflows int64", func(s string) string {
			return strings.Replace(s, "procs = [1]", "procs = [1]\na = "+list(2000)+"\nb = "+list(2000)+"\nc = "+list(2000)+"\nd = "+list(2000)+"\ne = "+list(2000)+"\nf = "+list(2000), 1)
		}, "make more than 9,223,372,036,854,775,807 combinations: at most 1,000,000"},
		{"a scale's sweep", func(s string) string {
			return strings.Replace(strings.Replace(s, "runs = 2", "runs = 1000", 1), `sweep = { net = ["unix", "rtt-23ms"] }`, `sweep = { net = ["unix", "rtt-23ms"], mem = `+list(60)+` }`, 1)
		}, "demo.toml:31: scale.quick.sweep: the combinations no rule skips, of 1000 runs each, make more than 100,000 points: at most 100,000 points in a plan"},
		{"a set of too many instances", func(s string) string {
			return strings.Replace(s, `engine = "postgres"`, "engine = \"postgres\"\ncount = 5000", 1)
		}, "demo.toml:7: instance.0.count: count = 5000: at most 1,024 instances in a set"},
		{"threads no machine has", func(s string) string { return strings.Replace(s, "procs = [1]", "procs = [100000]", 1) },
			"demo.toml:10: client.gomaxprocs: gomaxprocs = 100000: at most 4,096 threads"},
		{"rows past the workload's bound", func(s string) string { return strings.Replace(s, "rows = 100", "rows = 99999999999", 1) },
			"demo.toml:18: workload.rows: rows = 99,999,999,999: at most 1,000,000 (the demo's table holds a million)"},
		{"a size past the workload's bound", func(s string) string { return strings.Replace(s, "rows = 100", "rows = 100\nsize = 99999999999", 1) },
			"demo.toml:19: workload.size: size = 99999999999B: at most 16MiB (one message)"},
		{"a scale's rows past the bound", func(s string) string { return strings.Replace(s, "set = { rows = 3 }", "set = { rows = 2000000 }", 1) },
			"demo.toml:35: scale.quick.when.0.set.rows: rows = 2,000,000: at most 1,000,000"},
		{"a WAN of a million hours", func(s string) string {
			return overLinksOnly(strings.Replace(s, `profile = "${net}"`, "profile = \"${net}\"\nrtt = \"1000000h\"", 1))
		}, "demo.toml:15: link.0.rtt: rtt 1000000h0m0s: at most 10s"},
		{"a WAN profile of a million hours", func(s string) string { return strings.Replace(s, `"lan-1g"`, `"rtt-1000000h"`, 1) },
			"demo.toml:14: link.0.profile: rtt 1000000h0m0s: at most 10s"},
		{"mss = 0", func(s string) string {
			return overLinksOnly(strings.Replace(s, `profile = "${net}"`, "profile = \"${net}\"\nmss = 0", 1))
		},
			"demo.toml:15: link.0.mss: mss 0: want 536 to 65495 bytes"},
		{"mss too small for IPv4", func(s string) string {
			return overLinksOnly(strings.Replace(s, `profile = "${net}"`, "profile = \"${net}\"\nmss = 100", 1))
		}, "link.0.mss: mss 100: want 536 to 65495 bytes"},
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

// The points are those of the combinations no rule skips: a sweep whose
// product is large is fine when its rules keep few, as the consolidation
// study's 20,736 combinations of which its rules keep 21.
func TestAPlanIsCountedAfterItsRulesSkipPoints(t *testing.T) {
	t.Parallel()
	reg := NewRegistry(testEngines(), []workload.Kind{testKind()})
	var values []string
	for i := range 300 {
		values = append(values, fmt.Sprint(i))
	}
	spec := strings.Replace(goodSpec, `sweep = { net = ["unix", "rtt-23ms"] }`,
		`sweep = { net = ["unix", "rtt-23ms"], mem = [`+strings.Join(values, ", ")+`], procs = [`+strings.Join(values, ", ")+`] }`, 1)
	spec += "[[scale.quick.when]]\nmatch = { procs = [" + strings.Join(values[1:], ", ") + "] }\nskip = true\n"
	s, err := Parse("demo.toml", []byte(spec), reg)
	if err != nil {
		t.Fatalf("360,000 combinations of which the rules keep 900: %v", err)
	}
	p, err := s.Plan("quick")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Combos) != 900 || len(p.Points()) != 1800 {
		t.Errorf("plan of %d combinations and %d points, want 900 and 1,800", len(p.Combos), len(p.Points()))
	}
}

// A skip rule that names a variable the sweep lacks is refused for that,
// and skips nothing: the plan is not also said to be empty.
func TestASkipRuleOfAnUnknownVariableSkipsNothing(t *testing.T) {
	t.Parallel()
	reg := NewRegistry(testEngines(), []workload.Kind{testKind()})
	spec := goodSpec + "[[scale.quick.when]]\nmatch = { colour = \"red\" }\nskip = true\n"
	_, err := Parse("demo.toml", []byte(spec), reg)
	if err == nil || !strings.Contains(err.Error(), "scale.quick.when.2.match.colour: not a sweep variable") || strings.Contains(err.Error(), "every point is skipped") {
		t.Errorf("Parse = %v\nwant only the unknown variable refused", err)
	}
}

// A parameter's own Check and a kind's CheckParams refuse at parse, at the
// key that set the value, what a workload used to find only once its
// servers ran.
func TestWorkloadChecksRunAtParse(t *testing.T) {
	t.Parallel()
	kind := testKind()
	kind.Params[2].Check = func(v any) error {
		if v == "b" {
			return errors.New(`mode "b" is not built yet`)
		}
		return nil
	}
	kind.CheckParams = func(p workload.Params) []workload.ParamError {
		if p.Int("rows") < 5 && p.Int("size") > 8000 {
			return []workload.ParamError{{Param: "rows", Err: fmt.Errorf("rows = %d: at least 5 rows of more than 8000 bytes", p.Int("rows"))}}
		}
		return nil
	}
	reg := NewRegistry(testEngines(), []workload.Kind{kind})
	_, err := Parse("demo.toml", []byte(goodSpec), reg)
	if err == nil || !strings.Contains(err.Error(), `demo.toml:19: workload.mode: mode "b" is not built yet (for`) {
		t.Errorf("a value its Check refuses: %v", err)
	}
	spec := strings.Replace(strings.Replace(goodSpec, `mode = ["a", "b"]`, `mode = ["a"]`, 1), "rows = 100", "rows = 100\nsize = 9000", 1)
	_, err = Parse("demo.toml", []byte(spec), reg)
	if err == nil || !strings.Contains(err.Error(), "demo.toml:36: scale.quick.when.0.set.rows: rows = 3: at least 5 rows of more than 8000 bytes") {
		t.Errorf("values wrong beside each other: %v", err)
	}
}

// overLinksOnly keeps the demo's points that cross an emulated link, where
// link settings apply.
func overLinksOnly(spec string) string {
	spec = strings.Replace(spec, `net = ["unix", "lan-1g", "tukwila-dublin+legacy-window"]`, `net = ["lan-1g"]`, 1)
	return strings.Replace(spec, `sweep = { net = ["unix", "rtt-23ms"] }`, `sweep = { net = ["rtt-23ms"] }`, 1)
}
