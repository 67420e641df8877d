package study

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/units"
	"github.com/dbrig/dbrig/internal/workload"
)

// Expectation is a figure a study expects of its own runs, with no judge in
// Go: a metric, the combinations it is read at, and a bound on it or on its
// ratio to other combinations. A study file declares it ([[expect]]); a
// load's command line gives it as a threshold (--expect 'p99<50ms', see
// ParseExpect). Judge decides it from the runs' spread, as the built-in
// judges decide the seeds' findings.
type Expectation struct {
	ID string `toml:"id"`
	// Finding is what is expected, in words, for the findings table.
	Finding string `toml:"finding"`
	// Metric is a metric the workload declares ("p99_ms"), an alias of
	// one ("p99", "errors%"), or a statistic of a latency distribution
	// the workload records ("p99 of latency/new_order").
	Metric string `toml:"metric"`
	// At selects the combinations by their sweep values (a list matches
	// any of its values); none selects every combination.
	At map[string]any `toml:"at"`
	// Max and Min bound the metric at every selected combination, in the
	// metric's unit ("50ms", 2000, "1MB/s").
	Max any `toml:"max"`
	Min any `toml:"min"`
	// RatioTo names, for each combination At selects, the one whose sweep
	// values differ only in RatioTo's: MaxRatio or MinRatio bound the
	// metric's ratio between the two (p99 on a WAN link at most 3 x on a
	// LAN link).
	RatioTo  map[string]any `toml:"ratio_to"`
	MaxRatio any            `toml:"max_ratio"`
	MinRatio any            `toml:"min_ratio"`

	// Expr is the threshold as a load's command line gave it ("" for a
	// study file's).
	Expr   string `toml:"-"`
	metric metricRef
	bound  bound
}

// metricRef is what an expectation reads at a combination.
type metricRef struct {
	// name is the declared metric, or the distribution whose statistic
	// q (0: the mean, 1: the maximum) dist reads.
	name  string
	dist  bool
	q     float64
	label string              // as the findings and the command line show it
	spec  workload.MetricSpec // its unit, for bounds and figures
}

// distStats are the statistics of a latency distribution an expectation
// may read, by the words that name them.
var distStats = map[string]float64{"p50": 0.5, "p95": 0.95, "p99": 0.99, "p99.9": 0.999, "max": 1, "mean": 0}

// metricAliases are the short names of a load's thresholds (k6's words)
// for the metrics the load workloads declare.
var metricAliases = map[string]string{
	"p50": "p50_ms", "p95": "p95_ms", "p99": "p99_ms", "p99.9": "p999_ms", "max": "max_ms", "mean": "mean_ms", "errors%": "error_pct",
}

// resolveMetric finds the metric an expectation names in the workload's
// declarations; a distribution's name cannot be checked before a run, as
// workloads name them as they record them (latency/TYPE).
func resolveMetric(name string, k workload.Kind) (metricRef, error) {
	name = strings.TrimSpace(name)
	if m, ok := k.Metric(name); ok {
		return metricRef{name: name, label: name, spec: m}, nil
	}
	if stat, dist, ok := strings.Cut(name, " of "); ok {
		stat, dist = strings.TrimSpace(stat), strings.TrimSpace(dist)
		q, known := distStats[stat]
		if !known || dist == "" {
			return metricRef{}, fmt.Errorf("%q: want p50, p95, p99, p99.9, max or mean of a latency distribution the workload records, such as \"p99 of latency\"", name)
		}
		label := stat + " of " + dist
		return metricRef{name: dist, dist: true, q: q, label: label,
			spec: workload.MetricSpec{Name: label, Unit: workload.Milliseconds, Better: workload.Lower}}, nil
	}
	declared := make([]string, 0, len(k.Metrics))
	for _, m := range k.Metrics {
		declared = append(declared, m.Name)
	}
	list := strings.Join(declared, ", ")
	if list == "" {
		list = "none"
	}
	if target, ok := metricAliases[name]; ok {
		if m, ok := k.Metric(target); ok {
			return metricRef{name: target, label: target, spec: m}, nil
		}
		return metricRef{}, fmt.Errorf("%q stands for %s, which workload %q does not declare (for a distribution it records, write \"%s of NAME\"); it declares: %s", name, target, k.Name, name, list)
	}
	return metricRef{}, fmt.Errorf("workload %q declares no metric %q: want one it declares (%s), p50, p95, p99, p99.9, max, mean or errors%% for the load workloads' latency and error figures, or \"p99 of NAME\" for a latency distribution it records", k.Name, name, list)
}

// format prints a figure of the metric in its unit.
func (m metricRef) format(v float64) string { return m.spec.Format(v) }

// bound is one side of a threshold.
type bound struct {
	op    string  // "<", "<=", ">", ">=" or "="
	value float64 // in the metric's unit, or a factor for a ratio
}

// holds reports whether one figure is on the bound's right side.
func (b bound) holds(x float64) bool {
	switch b.op {
	case "<":
		return x < b.value
	case "<=":
		return x <= b.value
	case ">":
		return x > b.value
	case ">=":
		return x >= b.value
	}
	return x == b.value
}

// verdict judges the runs' range [lo, hi] against the bound: reproduced
// only when every run holds it, differs when none does, and within noise
// when the bound falls inside the range.
func (b bound) verdict(lo, hi float64) report.Verdict {
	switch {
	case b.holds(lo) && b.holds(hi):
		return report.Reproduced
	case b.op == "=" && lo <= b.value && b.value <= hi:
		return report.WithinNoise
	case !b.holds(lo) && !b.holds(hi):
		return report.Differs
	}
	return report.WithinNoise
}

// symbol is the operator as the findings table writes it.
func (b bound) symbol() string {
	return map[string]string{"<": "<", "<=": "≤", ">": ">", ">=": "≥", "=": "="}[b.op]
}

// parseQuantity reads a bound in a metric's unit: a duration for a time
// ("50ms"), a rate or a size with its unit ("1gbit", "125MB/s", "64KiB"),
// a percentage with or without its sign, else a number (with its unit's
// "/s", "/min" or "x" if written).
func parseQuantity(v any, unit workload.Unit) (float64, error) {
	if n, isNumber := numberOf(v); isNumber {
		switch unit {
		case workload.Seconds, workload.Milliseconds, workload.Microseconds:
			if n != 0 {
				return 0, fmt.Errorf("the metric is a time: want a duration with its unit, such as \"%vms\", got the number %v", n, n)
			}
		}
		return n, nil
	}
	s, isText := v.(string)
	if !isText {
		return 0, fmt.Errorf("want a number or a quantity with its unit, got %s", workload.Describe(v))
	}
	switch unit {
	case workload.Seconds, workload.Milliseconds, workload.Microseconds:
		d, err := units.ParseDuration(s)
		if err != nil {
			return 0, err
		}
		per := map[workload.Unit]time.Duration{workload.Seconds: time.Second, workload.Milliseconds: time.Millisecond, workload.Microseconds: time.Microsecond}[unit]
		return float64(d) / float64(per), nil
	case workload.BitsPerSecond:
		r, err := units.ParseRate(s)
		return float64(r), err
	case workload.Bytes:
		z, err := units.ParseSize(s)
		return float64(z), err
	}
	text := strings.TrimSpace(s)
	if suffix := map[workload.Unit]string{workload.Percent: "%", workload.PerSecond: "/s", workload.PerMinute: "/min", workload.Ratio: "x"}[unit]; suffix != "" {
		text = strings.TrimSpace(strings.TrimSuffix(text, suffix))
	}
	n, err := strconv.ParseFloat(text, 64)
	if err != nil || math.IsNaN(n) || math.IsInf(n, 0) {
		return 0, fmt.Errorf("want a number%s, got %q", unitHint(unit), s)
	}
	return n, nil
}

func unitHint(unit workload.Unit) string {
	switch unit {
	case workload.Percent:
		return " of percent (1 or \"1%\")"
	case workload.PerSecond:
		return " per second (2000 or \"2000/s\")"
	case workload.Ratio:
		return ", a factor (3 or \"3x\")"
	}
	return ""
}

func numberOf(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, !math.IsNaN(x) && !math.IsInf(x, 0)
	}
	return 0, false
}

var thresholdRE = regexp.MustCompile(`^\s*([^<>=]*?)\s*(<=|>=|==|<|>|=)\s*(.*?)\s*$`)

// ParseExpect reads a load's threshold as k6 writes them, METRIC OP VALUE
// ("p99<50ms", "tps>=2000", "errors=0"), against the metrics the workload
// declares. It holds at every point of the load.
func ParseExpect(expr string, k workload.Kind) (*Expectation, error) {
	m := thresholdRE.FindStringSubmatch(expr)
	if m == nil || m[1] == "" || m[3] == "" {
		return nil, fmt.Errorf("want METRIC OP VALUE, such as p99<50ms, tps>=2000 or errors=0 (OP: <, <=, >, >=, =)")
	}
	metric, err := resolveMetric(m[1], k)
	if err != nil {
		return nil, err
	}
	op := m[2]
	if op == "==" {
		op = "="
	}
	v, err := parseQuantity(m[3], metric.spec.Unit)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", metric.label, err)
	}
	return &Expectation{ID: expr, Finding: expr, Metric: m[1], Expr: expr, metric: metric, bound: bound{op: op, value: v}}, nil
}

// Label is the metric the expectation reads, as the findings show it.
func (e *Expectation) Label() string { return e.metric.label }

// Unit is the unit of the metric's figures (none for a ratio's).
func (e *Expectation) Unit() workload.Unit {
	if e.RatioTo != nil {
		return workload.Ratio
	}
	return e.metric.spec.Unit
}

// Format prints a figure as the expectation reads it: in the metric's
// unit, or a ratio as a factor.
func (e *Expectation) Format(v float64) string {
	if e.RatioTo != nil {
		return FormatTimes(v)
	}
	return e.metric.format(v)
}

// Condition says the expectation as a formula: "p99_ms ≤ 50ms at
// link=lan-1g", "p99_ms at link=wan ≤ 3.00x its value at link=lan-1g".
func (e *Expectation) Condition() string {
	at := ""
	if len(e.At) > 0 {
		at = " at " + describeMatch(e.At)
	}
	if e.RatioTo != nil {
		return fmt.Sprintf("%s%s %s %s its value at %s", e.metric.label, at, e.bound.symbol(), FormatTimes(e.bound.value), describeMatch(e.RatioTo))
	}
	return fmt.Sprintf("%s %s %s%s", e.metric.label, e.bound.symbol(), e.metric.format(e.bound.value), at)
}

// describeMatch writes a table of sweep values as the plan's keys do.
func describeMatch(m map[string]any) string {
	var parts []string
	for _, k := range sortedKeys(m) {
		v := m[k]
		if list, ok := v.([]any); ok {
			var vs []string
			for _, x := range list {
				vs = append(vs, fmt.Sprint(x))
			}
			parts = append(parts, k+"="+strings.Join(vs, "|"))
			continue
		}
		parts = append(parts, fmt.Sprintf("%s=%v", k, v))
	}
	return strings.Join(parts, " ")
}

// checkExpectations validates each [[expect]] of the file: its words, its
// metric against the workload's, its combinations against the sweep, and
// exactly one bound, read in the metric's unit.
func (v *validator) checkExpectations(kind workload.Kind, kindOK bool, ids map[string]bool) {
	for i := range v.spec.Expect {
		e := &v.spec.Expect[i]
		key := fmt.Sprintf("expect.%d", i)
		switch {
		case e.ID == "":
			v.add(key+".id", "missing: an id for the expectation (lowercase letters, digits, '-')")
		case ids[e.ID]:
			v.add(key+".id", "id %q is used twice", e.ID)
		}
		ids[e.ID] = true
		if e.Finding == "" {
			v.add(key+".finding", "missing: what the study expects, in words, for the findings table")
		}
		metricOK := false
		if e.Metric == "" {
			v.add(key+".metric", "missing: the metric the expectation reads (a metric the workload declares, or \"p99 of latency\")")
		} else if kindOK {
			var err error
			if e.metric, err = resolveMetric(e.Metric, kind); err != nil {
				v.add(key+".metric", "%v", err)
			} else {
				metricOK = true
			}
		}
		v.checkAt(key+".at", e.At)
		v.checkRatioTo(key, e)
		v.checkBound(key, e, metricOK)
	}
}

// checkAt refuses a selection that names a variable the sweep lacks or a
// value no list of it holds (the study's or a scale's).
func (v *validator) checkAt(key string, at map[string]any) {
	s := v.spec
	for _, name := range sortedKeys(at) {
		if _, declared := s.Sweep[name]; !declared {
			v.add(key+"."+name, "not a sweep variable of this study (it has: %s)", strings.Join(s.SweepKeys, ", "))
			continue
		}
		want, isList := at[name].([]any)
		if !isList {
			want = []any{at[name]}
		}
		for _, w := range want {
			if !s.sweepHolds(name, w) {
				v.add(key+"."+name, "%v is not a value of the sweep's %s (it has: %s)", w, name, strings.Join(s.sweepValues(name), ", "))
			}
		}
	}
}

// checkRatioTo refuses a ratio_to that does not name one combination for
// each one at selects.
func (v *validator) checkRatioTo(key string, e *Expectation) {
	if e.RatioTo == nil {
		return
	}
	if len(e.RatioTo) == 0 {
		v.add(key+".ratio_to", "empty: name the sweep value(s) of the combination the ratio is to, e.g. ratio_to = { link = \"lan-1g\" }")
	}
	v.checkAt(key+".ratio_to", e.RatioTo)
	same := len(e.RatioTo) > 0
	for _, name := range sortedKeys(e.RatioTo) {
		if _, isList := e.RatioTo[name].([]any); isList {
			v.add(key+".ratio_to."+name, "want one value: ratio_to names the one combination each of at's is set beside")
		}
		atValue, named := e.At[name]
		if !named {
			v.add(key+".ratio_to."+name, "at must name %s too: ratio_to sets each combination at selects beside the one with %s = %v", name, name, e.RatioTo[name])
		}
		same = same && named && fmt.Sprint(atValue) == fmt.Sprint(e.RatioTo[name])
	}
	if same {
		v.add(key+".ratio_to", "names the same combinations as at: the ratio would be 1")
	}
}

// checkBound takes the one bound of an expectation: max or min on the
// metric, or max_ratio or min_ratio with ratio_to.
func (v *validator) checkBound(key string, e *Expectation, metricOK bool) {
	type side struct {
		name string
		val  any
		op   string
	}
	var given []side
	for _, s := range []side{{"max", e.Max, "<="}, {"min", e.Min, ">="}, {"max_ratio", e.MaxRatio, "<="}, {"min_ratio", e.MinRatio, ">="}} {
		if s.val != nil {
			given = append(given, s)
		}
	}
	switch {
	case len(given) == 0:
		v.add(key, "missing: a bound, max or min on the metric, or ratio_to with max_ratio or min_ratio")
		return
	case len(given) > 1:
		v.add(key+"."+given[1].name, "%s and %s are both set: an expectation has one bound (write another [[expect]] for the other)", given[0].name, given[1].name)
		return
	}
	b := given[0]
	ratio := strings.HasSuffix(b.name, "_ratio")
	switch {
	case ratio && e.RatioTo == nil:
		v.add(key+"."+b.name, "needs ratio_to: the combination the ratio is to, e.g. ratio_to = { link = \"lan-1g\" }")
		return
	case !ratio && e.RatioTo != nil:
		v.add(key+"."+b.name, "%s bounds the metric itself and ratio_to asks for a ratio: give max_ratio or min_ratio with ratio_to, or drop ratio_to", b.name)
		return
	case !ratio && !metricOK:
		return // the metric's unit reads the bound
	}
	unit := e.metric.spec.Unit
	if ratio {
		unit = workload.Ratio
	}
	n, err := parseQuantity(b.val, unit)
	switch {
	case err != nil:
		v.add(key+"."+b.name, "%v", err)
	case ratio && n <= 0:
		v.add(key+"."+b.name, "want a factor above 0, got %v", b.val)
	default:
		e.bound = bound{op: b.op, value: n}
	}
}

// sweepValues lists a variable's values in the study's sweep and every
// scale's, as text, each once.
func (s *Spec) sweepValues(name string) []string {
	var out []string
	add := func(list any) {
		vals, _ := list.([]any)
		for _, x := range vals {
			if t := fmt.Sprint(x); !slices.Contains(out, t) {
				out = append(out, t)
			}
		}
	}
	add(s.Sweep[name])
	for _, sc := range s.ScaleNames() {
		add(s.Scales[sc].Sweep[name])
	}
	return out
}

func (s *Spec) sweepHolds(name string, v any) bool {
	return slices.Contains(s.sweepValues(name), fmt.Sprint(v))
}
