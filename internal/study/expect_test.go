package study

import (
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/measure"
	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/workload"
)

// expectKind is the spec tests' workload with metrics an expectation reads.
func expectKind() workload.Kind {
	k := testKind()
	k.Metrics = []workload.MetricSpec{
		{Name: "tps", Unit: workload.PerSecond, Better: workload.Higher},
		{Name: "p99_ms", Unit: workload.Milliseconds, Better: workload.Lower},
		{Name: "errors", Unit: workload.Count, Better: workload.Lower},
		{Name: "error_pct", Unit: workload.Percent, Better: workload.Lower},
	}
	return k
}

const expectSpec = `name = "demo"
title = "A demo study"

[[instance]]
name = "db"
engine = "postgres"

[[link]]
between = ["client", "db"]
profile = "${net}"

[workload]
kind = "demo"
rows = 100
mode = "${mode}"

[sweep]
net = ["unix", "lan-1g"]
mode = ["a", "b"]

[repeat]
runs = 3
`

func parseExpect(t *testing.T, expect string) (*Spec, error) {
	t.Helper()
	reg := NewRegistry(testEngines(), []workload.Kind{expectKind()})
	return Parse("demo.toml", []byte(expectSpec+expect), reg)
}

// runData is a run of expectSpec made by hand: each combination's runs of
// one metric, in run order; a combination left out was not measured.
func runData(t *testing.T, s *Spec, metric string, runs map[string][]float64) *RunData {
	t.Helper()
	plan, err := s.Plan("")
	if err != nil {
		t.Fatal(err)
	}
	var results []workload.Result
	for _, c := range plan.Combos {
		for i, v := range runs[c.Key] {
			results = append(results, workload.Result{Key: c.Key, Combo: c.Key, Run: i + 1, Values: c.Values, Params: c.Params,
				Metrics: map[string]float64{metric: v}})
		}
	}
	return &RunData{Spec: s, Plan: plan, Results: results, Summaries: Summarize(results, plan.Repeat)}
}

// TestExpectJudgedFromTheRunsSpread: each answer of a bound from the runs'
// range, a bound inside the range never a pass.
func TestExpectJudgedFromTheRunsSpread(t *testing.T) {
	t.Parallel()
	s, err := parseExpect(t, `
[[expect]]
id = "lan-p99"
finding = "p99 on the LAN stays under 50 ms"
metric = "p99_ms"
at = { net = "lan-1g", mode = "a" }
max = "50ms"
`)
	if err != nil {
		t.Fatal(err)
	}
	const lan = "net=lan-1g mode=a"
	tests := []struct {
		name string
		runs []float64
		want report.Verdict
		why  string
	}{
		{"every run under", []float64{40, 42, 45}, report.Reproduced, "Every run holds ≤ 50ms at net=lan-1g mode=a (40ms to 45ms)."},
		{"every run over", []float64{60, 70, 80}, report.Differs, "Every run is on the wrong side of ≤ 50ms at net=lan-1g mode=a (60ms to 80ms)."},
		{"the bound inside the range", []float64{40, 55, 45}, report.WithinNoise, "falls inside the runs' range at net=lan-1g mode=a (40ms to 55ms)"},
		{"no run", nil, report.NotMeasured, "Not measured at net=lan-1g mode=a"},
	}
	for _, tt := range tests {
		runs := map[string][]float64{"net=unix mode=a": {1, 1, 1}}
		if tt.runs != nil {
			runs[lan] = tt.runs
		}
		rd := runData(t, s, "p99_ms", runs)
		o := s.Expect[0].Judge(rd)
		if o.Verdict != tt.want || !strings.Contains(o.Why, tt.why) {
			t.Errorf("%s: verdict %q (%s), want %q with %q", tt.name, o.Verdict, o.Why, tt.want, tt.why)
		}
		if o.Pass() != (tt.want == report.Reproduced) {
			t.Errorf("%s: Pass() = %v", tt.name, o.Pass())
		}
		if len(o.Points) != 1 || o.Points[0].Combo != lan {
			t.Errorf("%s: points %+v, want %s alone", tt.name, o.Points, lan)
		}
	}
}

// TestExpectRatioJudgedFromBothRanges: a ratio's worst and best case come
// from the ranges of both combinations, not only their means.
func TestExpectRatioJudgedFromBothRanges(t *testing.T) {
	t.Parallel()
	s, err := parseExpect(t, `
[[expect]]
id = "wan-vs-lan"
finding = "p99 on the link at most 3 x p99 on a unix socket"
metric = "p99_ms"
at = { net = "lan-1g" }
ratio_to = { net = "unix" }
max_ratio = 3
`)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		lan, unix []float64
		want      report.Verdict
	}{
		{"worst case under", []float64{20, 21, 22}, []float64{10, 10, 11}, report.Reproduced},
		{"best case over", []float64{40, 45, 50}, []float64{10, 11, 12}, report.Differs},
		// The means' ratio, 2.90x, holds; the worst case, 35/9, does not.
		{"the means hold, the worst case not", []float64{25, 27, 35}, []float64{9, 10, 11}, report.WithinNoise},
		{"the other side not measured", []float64{20, 21, 22}, nil, report.NotMeasured},
	}
	for _, tt := range tests {
		runs := map[string][]float64{}
		for _, mode := range []string{"a", "b"} {
			runs["net=lan-1g mode="+mode] = tt.lan
			if tt.unix != nil {
				runs["net=unix mode="+mode] = tt.unix
			}
		}
		o := s.Expect[0].Judge(runData(t, s, "p99_ms", runs))
		if o.Verdict != tt.want {
			t.Errorf("%s: verdict %q (%s), want %q", tt.name, o.Verdict, o.Why, tt.want)
		}
		if len(o.Points) != 2 {
			t.Errorf("%s: %d points, want one per mode", tt.name, len(o.Points))
		}
	}
	rd := runData(t, s, "p99_ms", map[string][]float64{
		"net=lan-1g mode=a": {20, 21, 22}, "net=unix mode=a": {10, 10, 11},
		"net=lan-1g mode=b": {20, 21, 22}, "net=unix mode=b": {10, 10, 11},
	})
	f := s.Expect[0].finding(rd)
	for _, want := range []string{"this study's own expectation, with no published source", "p99_ms at net=lan-1g ≤ 3.00x its value at net=unix"} {
		if !strings.Contains(f.Published, want) {
			t.Errorf("finding's published column %q, want %q", f.Published, want)
		}
	}
	if !strings.Contains(f.Spread, "3 runs each, the ratio's worst to best case: 1.82x to 2.20x") {
		t.Errorf("finding's spread %q", f.Spread)
	}
}

// TestExpectHoldsAtEveryCombination: without at, an expectation reads
// every combination and one that fails fails it.
func TestExpectHoldsAtEveryCombination(t *testing.T) {
	t.Parallel()
	s, err := parseExpect(t, `
[[expect]]
id = "no-errors"
finding = "no transaction fails"
metric = "errors"
max = 0
`)
	if err != nil {
		t.Fatal(err)
	}
	runs := map[string][]float64{"net=unix mode=a": {0, 0, 0}, "net=unix mode=b": {0, 0, 0}, "net=lan-1g mode=a": {0, 0, 0}, "net=lan-1g mode=b": {0, 0, 0}}
	if o := s.Expect[0].Judge(runData(t, s, "errors", runs)); o.Verdict != report.Reproduced || len(o.Points) != 4 {
		t.Errorf("no errors anywhere: %q at %d points (%s)", o.Verdict, len(o.Points), o.Why)
	}
	runs["net=lan-1g mode=b"] = []float64{2, 3, 1}
	if o := s.Expect[0].Judge(runData(t, s, "errors", runs)); o.Verdict != report.Differs || !strings.Contains(o.Why, "net=lan-1g mode=b (1 to 3)") {
		t.Errorf("errors at one combination: %q (%s)", o.Verdict, o.Why)
	}
}

// TestExpectOfADistribution: a statistic of a latency distribution the
// runs recorded, each run's figure from its own distribution.
func TestExpectOfADistribution(t *testing.T) {
	t.Parallel()
	s, err := parseExpect(t, `
[[expect]]
id = "median"
finding = "the median new order under 5 ms"
metric = "p50 of latency/new_order"
at = { net = "unix", mode = "a" }
max = "5ms"
`)
	if err != nil {
		t.Fatal(err)
	}
	rd := runData(t, s, "tps", map[string][]float64{"net=unix mode=a": {1, 1}})
	for i := range rd.Results {
		h := measure.NewHistogram()
		for range 10 {
			h.Record(time.Duration(i+2) * time.Millisecond)
		}
		rd.Results[i].Histograms = map[string]*measure.Histogram{"latency/new_order": h}
	}
	rd.Summaries = Summarize(rd.Results, rd.Plan.Repeat)
	if o := s.Expect[0].Judge(rd); o.Verdict != report.Reproduced || o.Points[0].Low != 2 || o.Points[0].High < 3 || o.Points[0].High > 3.01 {
		t.Errorf("verdict %q, points %+v (%s)", o.Verdict, o.Points, o.Why)
	}
	for i := range rd.Results {
		rd.Results[i].Histograms = map[string]*measure.Histogram{"latency": measure.NewHistogram()}
	}
	rd.Summaries = Summarize(rd.Results, rd.Plan.Repeat)
	if o := s.Expect[0].Judge(rd); o.Verdict != report.NotMeasured || !strings.Contains(o.Why, "no run recorded a distribution named latency/new_order (they recorded: latency)") {
		t.Errorf("no such distribution: %q (%s)", o.Verdict, o.Why)
	}
}

// TestExpectRefusedAtParse: a bad [[expect]] is refused at its file's line
// and key, with what was wanted, before anything starts.
func TestExpectRefusedAtParse(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, expect, want string }{
		{"unknown metric", `metric = "latency_p99"
max = "50ms"`, `demo.toml:27: expect.0.metric: workload "demo" declares no metric "latency_p99": want one it declares (tps, p99_ms, errors, error_pct)`},
		{"a value not in the sweep", `metric = "p99_ms"
at = { net = "lan-10g" }
max = "50ms"`, `demo.toml:28: expect.0.at.net: lan-10g is not a value of the sweep's net (it has: unix, lan-1g)`},
		{"a variable not in the sweep", `metric = "p99_ms"
at = { users = 10 }
max = "50ms"`, `demo.toml:28: expect.0.at.users: not a sweep variable of this study (it has: net, mode)`},
		{"two bounds", `metric = "p99_ms"
max = "50ms"
min = "1ms"`, `expect.0.min: max and min are both set: an expectation has one bound`},
		{"a bound and a ratio", `metric = "p99_ms"
at = { net = "lan-1g" }
ratio_to = { net = "unix" }
max = "50ms"`, `expect.0.max: max bounds the metric itself and ratio_to asks for a ratio`},
		{"a ratio with nothing to", `metric = "p99_ms"
max_ratio = 3`, `expect.0.max_ratio: needs ratio_to`},
		{"a ratio to itself", `metric = "p99_ms"
at = { net = "unix" }
ratio_to = { net = "unix" }
max_ratio = 3`, `expect.0.ratio_to: names the same combinations as at`},
		{"a time without its unit", `metric = "p99_ms"
max = 50`, `expect.0.max: the metric is a time: want a duration with its unit, such as "50ms"`},
		{"no bound", `metric = "tps"`, `demo.toml:24: expect.0: missing: a bound`},
		{"a key of its own", `metric = "tps"
min = 10
colour = "red"`, `demo.toml:29: expect.0.colour: unknown key`},
	}
	for _, tt := range tests {
		_, err := parseExpect(t, "\n[[expect]]\nid = \"x\"\nfinding = \"words\"\n"+tt.expect+"\n")
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Parse = %v\nwant %q", tt.name, err, tt.want)
		}
	}
	if _, err := parseExpect(t, "\n[[expect]]\nmetric = \"tps\"\nmin = \"2000/s\"\n"); err == nil ||
		!strings.Contains(err.Error(), "expect.0.id: missing") || !strings.Contains(err.Error(), "expect.0.finding: missing") {
		t.Errorf("no id and no finding: Parse = %v", err)
	}
}

// TestExpectInTheFindingsTable: a study's own expectations are rows of the
// findings table beside the seeds' findings.
func TestExpectInTheFindingsTable(t *testing.T) {
	t.Parallel()
	s, err := parseExpect(t, `
[[expect]]
id = "tps"
finding = "at least 2000 transactions a second on a unix socket"
metric = "tps"
at = { net = "unix" }
min = "2000/s"
`)
	if err != nil {
		t.Fatal(err)
	}
	rd := runData(t, s, "tps", map[string][]float64{"net=unix mode=a": {2100, 1900, 2500}, "net=unix mode=b": {2500, 2600, 2700}})
	d := BuildReport(rd)
	if len(d.Findings) != 1 {
		t.Fatalf("findings %+v, want the expectation's", d.Findings)
	}
	f := d.Findings[0]
	if f.Verdict != report.WithinNoise || !strings.HasPrefix(f.Published, "at least 2000 transactions a second on a unix socket\n") ||
		!strings.Contains(f.Measured, "at net=unix mode=a") || !strings.Contains(f.Spread, "3 runs each: 1900/s to 2500/s; 2500/s to 2700/s") {
		t.Errorf("finding %+v", f)
	}
}

// TestParseExpectThreshold: a load's thresholds in k6's words, the short
// names standing for the metrics the load workloads declare, and a bad
// one refused with what was wanted.
func TestParseExpectThreshold(t *testing.T) {
	t.Parallel()
	k := expectKind()
	good := []struct {
		expr, metric, op string
		value            float64
	}{
		{"p99<50ms", "p99_ms", "<", 50},
		{"tps >= 2000", "tps", ">=", 2000},
		{"errors=0", "errors", "=", 0},
		{"errors==0", "errors", "=", 0},
		{"errors%<1%", "error_pct", "<", 1},
		{"p99<=1s", "p99_ms", "<=", 1000},
		{"p99.9 of latency < 200ms", "latency", "<", 200},
	}
	for _, g := range good {
		e, err := ParseExpect(g.expr, k)
		if err != nil {
			t.Errorf("%s: %v", g.expr, err)
			continue
		}
		if e.metric.name != g.metric || e.bound.op != g.op || e.bound.value != g.value {
			t.Errorf("%s: metric %s, bound %+v; want %s %s %v", g.expr, e.metric.name, e.bound, g.metric, g.op, g.value)
		}
	}
	bad := []struct{ expr, want string }{
		{"p99 50ms", "want METRIC OP VALUE"},
		{"p99<", "want METRIC OP VALUE"},
		{"p99<50", `p99_ms: duration "50" has no unit`},
		{"p99<fast", "p99_ms:"},
		{"latency<50ms", `declares no metric "latency"`},
		{"p97<50ms", `declares no metric "p97"`},
	}
	for _, b := range bad {
		if _, err := ParseExpect(b.expr, k); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%s: %v, want %q", b.expr, err, b.want)
		}
	}
	noPct := k
	noPct.Metrics = k.Metrics[:3]
	if _, err := ParseExpect("errors%<1", noPct); err == nil || !strings.Contains(err.Error(), `"errors%" stands for error_pct, which workload "demo" does not declare`) {
		t.Errorf("an alias of a metric the kind lacks: %v", err)
	}
}

// TestSweepVariableNothingRefersTo: a sweep variable that changes nothing
// a point runs is refused at its line rather than multiplying the plan; one
// a scale's when rule matches on, or its set refers to, changes something.
func TestSweepVariableNothingRefersTo(t *testing.T) {
	t.Parallel()
	reg := NewRegistry(testEngines(), []workload.Kind{expectKind()})
	refused := []struct{ name, sweep, want string }{
		{"not a parameter", `users = [1, 10]`, `demo.toml:20: sweep.users: no ${users} refers to it and no scale's when rule matches it, so each of its values would run the same points again: refer to it as ${users}`},
		{"a parameter's name", `rows = [10, 100]`, `demo.toml:20: sweep.rows: no ${rows} refers to it and no scale's when rule matches it, so each of its values would run the same points again: to sweep the workload's parameter rows, write rows = "${rows}" under [workload]`},
	}
	for _, tt := range refused {
		src := strings.Replace(expectSpec, "mode = [\"a\", \"b\"]\n", "mode = [\"a\", \"b\"]\n"+tt.sweep+"\n", 1)
		if _, err := Parse("demo.toml", []byte(src), reg); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Parse = %v\nwant %q", tt.name, err, tt.want)
		}
	}
	used := strings.Replace(expectSpec, "mode = [\"a\", \"b\"]\n", "mode = [\"a\", \"b\"]\nsize = [\"1KiB\"]\nphase = [\"warm\", \"cold\"]\n", 1) + `
[scale.quick]
set = { size = "${size}" }
[[scale.quick.when]]
match = { phase = "cold" }
set = { rows = 10 }
`
	if _, err := Parse("demo.toml", []byte(used), reg); err != nil {
		t.Errorf("a variable a scale's set refers to and one a when rule matches: %v", err)
	}
}
