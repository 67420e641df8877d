package study

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/dbrig/dbrig/internal/link"
)

// Plan is a study expanded for one scale: every combination of the sweep's
// values, each run Repeat.Runs times.
type Plan struct {
	Spec   *Spec
	Scale  string
	Repeat RepeatSpec
	Combos []*Combo
}

// Combo is one combination of sweep values, resolved into what runs.
type Combo struct {
	Index     int
	Key       string // "experiment=client-stream net=lan-1g"
	Values    map[string]any
	Instances []ResolvedInstance
	Client    ResolvedClient
	Links     []ResolvedLink
	Params    Params
}

// ResolvedInstance is an instance with its settings for one combination.
type ResolvedInstance struct {
	Name     string
	Engine   string
	Site     string
	Settings map[string]string
}

// ResolvedClient is the client's constraints for one combination.
type ResolvedClient struct {
	Site       string
	GOMAXPROCS int
	CPUs       string
}

// Constrained reports whether the client must run in a process of its own.
func (c ResolvedClient) Constrained() bool { return c.GOMAXPROCS > 0 || c.CPUs != "" }

// ResolvedLink is a link for one combination.
type ResolvedLink struct {
	Name    string
	Between [2]string
	Profile string // as written after substitution
	Mode    string // "unix", "direct" or "link"
	Config  link.Config
}

// Point is one run of one combination.
type Point struct {
	Combo *Combo
	Run   int // 1-based
}

// Key identifies the point in results.jsonl, stable across runs of dbrig.
func (p Point) Key() string { return p.Combo.Key + " #" + strconv.Itoa(p.Run) }

// Points lists every point in the order they run: each combination's runs
// one after another, so a topology serves all of them.
func (p *Plan) Points() []Point {
	var out []Point
	for _, c := range p.Combos {
		for r := 1; r <= p.Repeat.Runs; r++ {
			out = append(out, Point{Combo: c, Run: r})
		}
	}
	return out
}

// Plan expands the study for a scale ("" = the default scale, if any).
func (s *Spec) Plan(scale string) (*Plan, error) {
	if scale == "" {
		scale = s.DefaultScale
	}
	return s.plan(scale)
}

// plan expands the study for a scale; "" is the study without any scale.
func (s *Spec) plan(scale string) (*Plan, error) {
	var sc Scale
	if scale != "" {
		var ok bool
		if sc, ok = s.Scales[scale]; !ok {
			return nil, SpecErrors{{File: s.File, Key: "scale", Msg: fmt.Sprintf("study %q has no scale %q (it has: %s)", s.Name, scale, strings.Join(s.ScaleNames(), ", "))}}
		}
	}
	plan := &Plan{Spec: s, Scale: scale, Repeat: s.Repeat}
	if sc.Repeat != nil {
		plan.Repeat = *sc.Repeat
	}
	lists := make([][]any, len(s.SweepKeys))
	for i, k := range s.SweepKeys {
		lists[i], _ = s.Sweep[k].([]any)
		if o, ok := sc.Sweep[k].([]any); ok {
			lists[i] = o
		}
	}
	var errs SpecErrors
	seen := map[string]bool{}
	for _, values := range product(lists) {
		combo := map[string]any{}
		var keyParts []string
		for i, k := range s.SweepKeys {
			combo[k] = values[i]
			keyParts = append(keyParts, k+"="+fmt.Sprint(values[i]))
		}
		if skipped(sc, combo) {
			continue
		}
		c, cerrs := s.resolve(combo, sc, scale)
		errs = append(errs, cerrs...)
		if c == nil {
			continue
		}
		c.Key = strings.Join(keyParts, " ")
		if len(keyParts) == 0 {
			c.Key = "default"
		}
		if seen[c.Key] {
			continue // a value listed twice runs once
		}
		seen[c.Key] = true
		c.Index = len(plan.Combos)
		plan.Combos = append(plan.Combos, c)
		if len(errs) > 20 {
			break
		}
	}
	if len(errs) > 0 {
		return nil, dedupe(errs)
	}
	if len(plan.Combos) == 0 {
		key := "scale." + scale
		if scale == "" {
			key = "sweep"
		}
		return nil, SpecErrors{{File: s.File, Line: lineOf(s.lines, key), Key: key, Msg: "every point is skipped: the plan is empty"}}
	}
	return plan, nil
}

func skipped(sc Scale, combo map[string]any) bool {
	for _, r := range sc.When {
		if r.Skip && matches(r.Match, combo) {
			return true
		}
	}
	return false
}

// dedupe keeps the first of the errors that differ only in the point they
// were found for: one bad sweep value fails every combination it is in.
func dedupe(errs SpecErrors) SpecErrors {
	var out SpecErrors
	seen := map[string]bool{}
	for _, e := range errs {
		base := e
		if i := strings.LastIndex(base.Msg, " (for "); i >= 0 {
			base.Msg = base.Msg[:i]
		}
		if !seen[base.Error()] {
			seen[base.Error()] = true
			out = append(out, e)
		}
	}
	return out
}

// product lists every combination of one value from each list, the last
// list varying fastest.
func product(lists [][]any) [][]any {
	out := [][]any{{}}
	for _, l := range lists {
		var next [][]any
		for _, prefix := range out {
			for _, v := range l {
				next = append(next, append(slices.Clone(prefix), v))
			}
		}
		out = next
	}
	return out
}

func (s *Spec) resolve(combo map[string]any, sc Scale, scale string) (*Combo, SpecErrors) {
	var errs SpecErrors
	where := describeCombo(combo)
	fail := func(key string, err error) {
		msg := err.Error()
		if where != "" {
			msg += " (for " + where + ")"
		}
		errs = append(errs, SpecError{File: s.File, Line: lineOf(s.lines, key), Key: key, Msg: msg})
	}
	substAny := func(key string, v any) any {
		str, ok := v.(string)
		if !ok {
			return v
		}
		out, err := substitute(str, combo)
		if err != nil {
			fail(key, err)
			return nil
		}
		return out
	}
	substString := func(key string) func(string) (string, error) {
		return func(x string) (string, error) {
			v, err := substitute(x, combo)
			if err != nil {
				return "", err
			}
			return fmt.Sprint(v), nil
		}
	}

	c := &Combo{Values: combo}
	for i, in := range s.Instances {
		ri := ResolvedInstance{Name: in.Name, Engine: in.Engine, Site: in.Site, Settings: map[string]string{}}
		for k, v := range in.Settings {
			key := fmt.Sprintf("instance.%d.settings.%s", i, k)
			if r := substAny(key, v); r != nil {
				ri.Settings[k] = fmt.Sprint(r)
			}
		}
		c.Instances = append(c.Instances, ri)
	}

	c.Client.Site = s.Client.Site
	if s.Client.GOMAXPROCS != nil {
		v := substAny("client.gomaxprocs", s.Client.GOMAXPROCS)
		if n, ok := asInt(v); ok && n >= 0 {
			c.Client.GOMAXPROCS = int(n)
		} else if str, isStr := v.(string); isStr && str == "" {
			// unset
		} else if v != nil {
			fail("client.gomaxprocs", fmt.Errorf("want a whole number of processors (0 = no limit), got %s", describe(v)))
		}
	}
	if s.Client.CPUs != nil {
		v := substAny("client.cpus", s.Client.CPUs)
		switch x := v.(type) {
		case string:
			if x != "" && x != "any" {
				if _, err := ParseCPUList(x); err != nil {
					fail("client.cpus", err)
				}
				c.Client.CPUs = x
			}
		case int64:
			c.Client.CPUs = strconv.FormatInt(x, 10)
		case nil:
		default:
			fail("client.cpus", fmt.Errorf("want a CPU list such as \"0\" or \"0-1\", got %s", describe(v)))
		}
	}

	for i, l := range s.Links {
		key := fmt.Sprintf("link.%d", i)
		if len(l.Between) != 2 {
			continue // reported by the validator
		}
		mode, cfg, err := resolveLink(l, substString(key))
		if err != nil {
			fail(key+".profile", err)
			continue
		}
		profile, _ := substString(key)(l.Profile)
		c.Links = append(c.Links, ResolvedLink{Name: l.Name, Between: [2]string{l.Between[0], l.Between[1]}, Profile: profile, Mode: mode, Config: cfg})
	}

	// Workload parameters: the file's, then the scale's, then matching rules.
	raw := map[string]any{}
	origin := map[string]string{}
	for k, v := range s.Workload {
		if k != "kind" {
			raw[k], origin[k] = v, "workload."+k
		}
	}
	for k, v := range sc.Set {
		raw[k], origin[k] = v, "scale."+scale+".set."+k
	}
	for i, r := range sc.When {
		if matches(r.Match, combo) {
			for k, v := range r.Set {
				raw[k], origin[k] = v, fmt.Sprintf("scale.%s.when.%d.set.%s", scale, i, k)
			}
		}
	}
	c.Params = Params{}
	for _, p := range s.kind.Params {
		v, set := raw[p.Name]
		if !set {
			if p.Default == nil {
				continue // reported by the validator
			}
			v, origin[p.Name] = p.Default, "workload."+p.Name
		}
		v = substAny(origin[p.Name], v)
		if v == nil {
			continue
		}
		n, err := p.Normalize(v)
		if err != nil {
			fail(origin[p.Name], err)
			continue
		}
		c.Params[p.Name] = n
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return c, nil
}

func describeCombo(combo map[string]any) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(combo)) {
		parts = append(parts, fmt.Sprintf("%s=%v", k, combo[k]))
	}
	return strings.Join(parts, " ")
}

func matches(match map[string]any, combo map[string]any) bool {
	for k, want := range match {
		got := combo[k]
		if list, ok := want.([]any); ok {
			if !slices.ContainsFunc(list, func(w any) bool { return fmt.Sprint(w) == fmt.Sprint(got) }) {
				return false
			}
		} else if fmt.Sprint(want) != fmt.Sprint(got) {
			return false
		}
	}
	return true
}

// substitute replaces ${var} references with sweep values. A string that is
// exactly one reference takes the value's own type (so rows = "${rows}"
// stays an integer).
func substitute(s string, combo map[string]any) (any, error) {
	if m := varRef.FindStringSubmatch(s); m != nil && m[0] == s {
		v, ok := combo[m[1]]
		if !ok {
			return nil, fmt.Errorf("${%s} is not a sweep variable of this study", m[1])
		}
		return v, nil
	}
	var err error
	out := varRef.ReplaceAllStringFunc(s, func(ref string) string {
		name := varRef.FindStringSubmatch(ref)[1]
		v, ok := combo[name]
		if !ok {
			err = fmt.Errorf("${%s} is not a sweep variable of this study", name)
			return ref
		}
		return fmt.Sprint(v)
	})
	return out, err
}

// ParseCPUList reads a Linux CPU list such as "0", "0-1" or "0,2-3".
func ParseCPUList(s string) ([]int, error) {
	var cpus []int
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(lo)
		b := a
		var err2 error
		if isRange {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || a < 0 || b < a || b > 4095 {
			return nil, fmt.Errorf("CPU list %q: want numbers and ranges such as \"0\", \"0-1\" or \"0,2-3\"", s)
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}
