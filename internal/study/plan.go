package study

import (
	"errors"
	"fmt"
	"iter"
	"maps"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/dbrig/dbrig/internal/blockdev"
	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/idleloop"
	"github.com/dbrig/dbrig/internal/link"
	"github.com/dbrig/dbrig/internal/units"
	"github.com/dbrig/dbrig/internal/workload"
)

// Plan is a study expanded for one scale: every combination of the sweep's
// values, each run Repeat.Runs times.
type Plan struct {
	Spec    *Spec
	Scale   string
	Options PlanOptions
	Repeat  RepeatSpec
	Combos  []*Combo
}

// PlanOptions change where a study runs without changing the file: every
// instance on another engine (`--engine`), or some instances replaced by the
// user's own servers (`--target NAME=URI`).
type PlanOptions struct {
	// Engine, when set, puts every instance that is not a target on it.
	Engine string `json:"engine,omitempty"`
	// Targets maps an instance's name to the engine of the user's server
	// that stands in for it.
	Targets map[string]string `json:"targets,omitempty"`
}

// String describes the options as the flags that set them.
func (o PlanOptions) String() string {
	var parts []string
	if o.Engine != "" {
		parts = append(parts, "--engine "+o.Engine)
	}
	for _, name := range slices.Sorted(maps.Keys(o.Targets)) {
		parts = append(parts, "--target "+name+"=("+o.Targets[name]+")")
	}
	if len(parts) == 0 {
		return "the study's own engines and no targets"
	}
	return strings.Join(parts, " ")
}

// Combo is one combination of sweep values, resolved into what runs.
type Combo struct {
	Index     int
	Key       string // "experiment=client-stream net=lan-1g"
	Values    map[string]any
	Instances []engine.InstanceConfig
	// Sets maps each [[instance]] name to the instances it became.
	Sets   map[string][]string
	Client workload.ResolvedClient
	Links  []ResolvedLink
	Params workload.Params
	// settingKeys maps "instance/setting" to the spec key it was written at.
	settingKeys map[string]string
}

// ResolvedLink is a link for one combination.
type ResolvedLink struct {
	Name    string
	Between [2]string
	Profile string // as written after substitution
	Mode    string // "unix", "direct" or "link"
	Config  link.Config
}

// Engines lists the engines of the plan's owned instances (dbrig starts
// them), sorted.
func (p *Plan) Engines() []string {
	seen := map[string]bool{}
	for _, c := range p.Combos {
		for _, in := range c.Instances {
			if in.Target == "" {
				seen[in.Engine] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(seen))
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
func (s *Spec) Plan(scale string) (*Plan, error) { return s.PlanWith(scale, PlanOptions{}) }

// PlanWith expands the study for a scale with an engine and targets of the
// user's choosing. Its errors name the study file's keys (or the flag).
func (s *Spec) PlanWith(scale string, opts PlanOptions) (*Plan, error) {
	if scale == "" {
		scale = s.DefaultScale
	}
	if errs := s.checkOptions(opts); len(errs) > 0 {
		return nil, errs
	}
	plan, err := s.plan(scale, opts)
	if err != nil {
		return nil, err
	}
	if errs := plan.checkTargetSweeps(); len(errs) > 0 {
		return nil, errs
	}
	return plan, nil
}

// checkOptions refuses an engine or targets the study cannot take: a target
// is one server that dbrig never reconfigures, so it may not be counted,
// pinned, capped or placed, nor its engine swept (its settings' sweeps are
// refused once the plan shows which values its points take).
func (s *Spec) checkOptions(opts PlanOptions) SpecErrors {
	var errs SpecErrors
	add := func(key, format string, args ...any) {
		errs = append(errs, SpecError{File: s.File, Line: lineOf(s.lines, key), Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	if opts.Engine != "" && len(s.kind.Engines) > 0 && !slices.Contains(s.kind.Engines, opts.Engine) {
		errs = append(errs, SpecError{File: s.File, Key: "--engine", Msg: fmt.Sprintf("workload %q runs on %s only (%s), not %s", s.kind.Name, strings.Join(s.kind.Engines, ", "), s.kind.EnginesWhy, opts.Engine)})
	}
	for _, name := range slices.Sorted(maps.Keys(opts.Targets)) {
		i := slices.IndexFunc(s.Instances, func(in InstanceSpec) bool { return in.Name == name })
		if i < 0 {
			var names []string
			for _, in := range s.Instances {
				names = append(names, in.Name)
			}
			errs = append(errs, SpecError{File: s.File, Key: "--target", Msg: fmt.Sprintf("study %s has no instance %q (it has: %s)", s.Name, name, strings.Join(names, ", "))})
			continue
		}
		in := s.Instances[i]
		key := fmt.Sprintf("instance.%d", i)
		why := "a target is the user's server, which dbrig never starts, stops, restarts or reconfigures"
		eng := opts.Targets[name]
		if len(s.kind.Engines) > 0 && !slices.Contains(s.kind.Engines, eng) {
			add(key+".engine", "--target %s is a %s server, and workload %q runs on %s only (%s)", name, eng, s.kind.Name, strings.Join(s.kind.Engines, ", "), s.kind.EnginesWhy)
		}
		if varRef.MatchString(in.Engine) {
			add(key+".engine", "the engine is swept (%s), so instance %q cannot be --target %s: %s", in.Engine, name, name, why)
		}
		for attr, val := range map[string]any{"count": in.Count, "cpus": in.CPUs, "memory": in.Memory, "cpu_speed": in.CPUSpeed, "data_dir": in.DataDir, "wal_dir": in.WALDir,
			"disk": in.Disk, "data_disk": in.DataDisk, "wal_disk": in.WALDisk} {
			if val != nil && val != "" && !(attr == "cpu_speed" && varRef.MatchString(fmt.Sprint(val))) {
				add(key+"."+attr, "instance %q is --target %s: %s, so it has no %s", name, name, why, attr)
			}
		}
		// A swept cpu_speed leaves the points at "none" to the target and
		// skips the others (cpuCapUnavailable), so that a study comparing
		// speeds still runs its other points on the user's server.
	}
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Line < errs[j].Line })
	return errs
}

// plan expands the study for a scale; "" is the study without any scale.
func (s *Spec) plan(scale string, opts PlanOptions) (*Plan, error) {
	var sc Scale
	if scale != "" {
		var ok bool
		if sc, ok = s.Scales[scale]; !ok {
			return nil, SpecErrors{{File: s.File, Key: "scale", Msg: fmt.Sprintf("study %q has no scale %q (it has: %s)", s.Name, scale, strings.Join(s.ScaleNames(), ", "))}}
		}
	}
	plan := &Plan{Spec: s, Scale: scale, Options: opts, Repeat: s.Repeat}
	if sc.Repeat != nil {
		plan.Repeat = *sc.Repeat
	}
	lists := s.baseLists()
	for i, k := range s.SweepKeys {
		if o, ok := sc.Sweep[k].([]any); ok {
			lists[i] = o
		}
	}
	if errs := s.expand(plan, sc, lists); len(errs) > 0 {
		return nil, errs
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

// coverBase checks the study's own sweep where a default scale means no
// run makes its plan: each value of each variable once, beside the other
// variables' first values, rather than every combination. A sweep kept
// large for its scales to cut (consolidation's 31,104 combinations) took
// every command that reads the file seconds to resolve in full, and a bad
// value a user writes there is still refused at its line.
func (s *Spec) coverBase() error {
	lists := s.baseLists()
	if msg := sweepSizeError(lists); msg != "" {
		return SpecErrors{{File: s.File, Line: lineOf(s.lines, "sweep"), Key: "sweep", Msg: msg}}
	}
	var errs SpecErrors
	for i := range lists {
		one := make([][]any, len(lists))
		for k, l := range lists {
			if one[k] = l; k != i && len(l) > 1 {
				one[k] = l[:1]
			}
		}
		errs = append(errs, s.expand(&Plan{Spec: s, Repeat: s.Repeat}, Scale{}, one)...)
	}
	if errs = dedupe(errs); len(errs) > 0 {
		return errs
	}
	return nil
}

// baseLists are the values of each sweep variable, in SweepKeys' order.
func (s *Spec) baseLists() [][]any {
	lists := make([][]any, len(s.SweepKeys))
	for i, k := range s.SweepKeys {
		lists[i], _ = s.Sweep[k].([]any)
	}
	return lists
}

// expand resolves every combination of the sweep's lists that no rule of
// the scale skips, one at a time: the lists' product is bounded before the
// first is made, and the points of the combinations kept as they are
// counted, so that no plan beyond its bounds is ever built.
func (s *Spec) expand(plan *Plan, sc Scale, lists [][]any) SpecErrors {
	sweepKey := "sweep"
	if len(sc.Sweep) > 0 {
		sweepKey = "scale." + plan.Scale + ".sweep"
	}
	refuse := func(msg string) SpecErrors {
		return SpecErrors{{File: s.File, Line: lineOf(s.lines, sweepKey), Key: sweepKey, Msg: msg}}
	}
	if msg := sweepSizeError(lists); msg != "" {
		return refuse(msg)
	}
	runs := int64(plan.Repeat.Runs)
	if runsError(plan.Repeat.Runs) != "" {
		runs = 1 // refused on its own; the combinations must still fit
	}
	texts := make([][]string, len(lists)) // each value as a key and a rule read it
	for i, l := range lists {
		for _, v := range l {
			texts[i] = append(texts[i], fmt.Sprint(v))
		}
	}
	var skips [][][]bool // per skip rule, per variable, per value: matched
	for _, r := range sc.When {
		if r.Skip {
			skips = append(skips, matchedValues(r.Match, s.SweepKeys, texts))
		}
	}
	var errs SpecErrors
	seen := map[string]bool{}
	for at := range product(lists) {
		if slices.ContainsFunc(skips, func(rule [][]bool) bool { return allMatched(rule, at) }) {
			continue
		}
		combo := map[string]any{}
		var keyParts []string
		for i, k := range s.SweepKeys {
			combo[k] = lists[i][at[i]]
			keyParts = append(keyParts, k+"="+texts[i][at[i]])
		}
		key := strings.Join(keyParts, " ")
		if len(keyParts) == 0 {
			key = "default"
		}
		if seen[key] {
			continue // a value listed twice runs once
		}
		seen[key] = true
		if int64(len(seen))*runs > MaxPoints {
			return refuse(pointsError(runs))
		}
		c, cerrs := s.resolve(combo, sc, plan.Scale, plan.Options)
		if errs = append(errs, cerrs...); len(errs) > 20 {
			break
		}
		if c != nil {
			c.Key, c.Index = key, len(plan.Combos)
			plan.Combos = append(plan.Combos, c)
		}
	}
	return dedupe(errs)
}

// matchedValues reads a rule's match once for a plan: for each sweep
// variable, which of its values the rule matches (every value of a
// variable the rule does not name). A rule that names a variable the sweep
// lacks matches nothing (nil); the validator says so.
func matchedValues(match map[string]any, keys []string, texts [][]string) [][]bool {
	for k := range match {
		if !slices.Contains(keys, k) {
			return nil
		}
	}
	out := make([][]bool, len(keys))
	for i, k := range keys {
		want, named := match[k]
		list, isList := want.([]any)
		if !isList {
			list = []any{want}
		}
		out[i] = make([]bool, len(texts[i]))
		for j, text := range texts[i] {
			out[i][j] = !named || slices.ContainsFunc(list, func(w any) bool { return fmt.Sprint(w) == text })
		}
	}
	return out
}

// allMatched reports whether a rule matches the combination of the values
// at these positions of each list.
func allMatched(rule [][]bool, at []int) bool {
	if rule == nil {
		return false
	}
	for i, j := range at {
		if !rule[i][j] {
			return false
		}
	}
	return true
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

// product yields every combination of one value from each list, as the
// position of its value in each list, the last list varying fastest, one
// at a time: the caller bounds how many it takes. The positions are
// overwritten by the next combination.
func product(lists [][]any) iter.Seq[[]int] {
	return func(yield func([]int) bool) {
		for _, l := range lists {
			if len(l) == 0 {
				return
			}
		}
		at := make([]int, len(lists))
		for {
			if !yield(at) {
				return
			}
			i := len(lists) - 1
			for ; i >= 0; i-- {
				if at[i]++; at[i] < len(lists[i]) {
					break
				}
				at[i] = 0
			}
			if i < 0 {
				return
			}
		}
	}
}

func (s *Spec) resolve(combo map[string]any, sc Scale, scale string, opts PlanOptions) (*Combo, SpecErrors) {
	var errs SpecErrors
	where := describeCombo(combo)
	fail := func(key string, err error) {
		msg := err.Error()
		if where != "" {
			msg += " (for " + where + ")"
		}
		errs = append(errs, SpecError{File: s.File, Line: lineOf(s.lines, key), Key: key, Msg: msg, Err: err})
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

	c := &Combo{Values: combo, Sets: map[string][]string{}, settingKeys: map[string]string{}}
	for i, in := range s.Instances {
		key := fmt.Sprintf("instance.%d", i)
		set, ierrs := s.resolveInstance(i, in, substAny, opts)
		for _, e := range ierrs {
			fail(e.key, e.err)
		}
		for _, cfg := range set {
			c.Instances = append(c.Instances, cfg.InstanceConfig)
			c.Sets[in.Name] = append(c.Sets[in.Name], cfg.Name)
			for k, at := range cfg.keys {
				c.settingKeys[cfg.Name+"/"+k] = at
			}
		}
		_ = key
	}

	c.Client = s.resolveClient(substAny, fail)

	for i, l := range s.Links {
		key := fmt.Sprintf("link.%d", i)
		if len(l.Between) != 2 {
			continue // reported by the validator
		}
		mode, cfg, err := resolveLink(l, substString(key))
		if err != nil {
			field := "profile"
			var le *linkError
			if errors.As(err, &le) {
				field = le.field
			}
			fail(key+"."+field, err)
			continue
		}
		profile, _ := substString(key)(l.Profile)
		c.Links = append(c.Links, ResolvedLink{Name: l.Name, Between: [2]string{l.Between[0], l.Between[1]}, Profile: profile, Mode: mode, Config: cfg})
	}

	s.resolveParams(c, sc, scale, substAny, fail)
	if len(errs) > 0 {
		return nil, errs
	}
	return c, nil
}

// resolveClient resolves the client's site, threads and CPUs for one
// combination.
func (s *Spec) resolveClient(substAny func(string, any) any, fail func(string, error)) workload.ResolvedClient {
	var client workload.ResolvedClient
	client.Site = s.Client.Site
	if s.Client.GOMAXPROCS != nil {
		v := substAny("client.gomaxprocs", s.Client.GOMAXPROCS)
		if n, ok := workload.IntOf(v); ok && n > MaxGOMAXPROCS {
			fail("client.gomaxprocs", fmt.Errorf("gomaxprocs = %d: at most %s threads (the most CPUs a machine's CPU numbers reach)", n, units.FormatCount(MaxGOMAXPROCS)))
		} else if ok && n >= 0 {
			client.GOMAXPROCS = int(n)
		} else if str, isStr := v.(string); isStr && str == "" {
			// unset
		} else if v != nil {
			fail("client.gomaxprocs", fmt.Errorf("want a whole number of processors (0 = no limit), got %s", workload.Describe(v)))
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
				client.CPUs = x
			}
		case int64:
			client.CPUs = strconv.FormatInt(x, 10)
		case nil:
		default:
			fail("client.cpus", fmt.Errorf("want a CPU list such as \"0\" or \"0-1\", got %s", workload.Describe(v)))
		}
	}
	client.CPUSpeed = resolveCPUSpeed("client.cpu_speed", s.Client.CPUSpeed, substAny, fail)
	client.Idle = resolveIdle(s.Client.Idle, substAny, fail)
	return client
}

// resolveIdle reads the client's idle: "" for the machine as it is
// (idleloop.Halt, the default), idleloop.Spin for loops that keep its
// CPUs from halting.
func resolveIdle(written any, subst func(string, any) any, fail func(string, error)) string {
	if written == nil {
		return ""
	}
	v := subst("client.idle", written)
	mode, isText := v.(string)
	if !isText {
		if v != nil {
			fail("client.idle", fmt.Errorf("want %q or %q, got %s", idleloop.Halt, idleloop.Spin, workload.Describe(v)))
		}
		return ""
	}
	if err := idleloop.CheckMode(mode); err != nil {
		fail("client.idle", err)
		return ""
	}
	if mode == idleloop.Halt {
		return ""
	}
	return mode
}

// resolveCPUSpeed reads a cpu_speed: cores' worth of CPU time, from the
// least share the kernel's quota takes to every CPU of this machine (more
// caps nothing), as a number or a string; "none" or "" is no cap, so a
// sweep can set capped and uncapped side by side.
func resolveCPUSpeed(key string, written any, subst func(string, any) any, fail func(string, error)) float64 {
	if written == nil {
		return 0
	}
	v := subst(key, written)
	var speed float64
	switch x := v.(type) {
	case string:
		if x == "" || x == "none" {
			return 0
		}
		// A sweep's list holds one type: "none" beside "0.5".
		speed, _ = strconv.ParseFloat(x, 64)
	case int64:
		speed = float64(x)
	case float64:
		speed = x
	}
	if cpus := runtime.NumCPU(); !(speed >= engine.MinCPUSpeed && speed <= float64(cpus)) {
		fail(key, fmt.Errorf("want cores' worth of CPU time from %g to this machine's %d (0.5 = half of one core), or \"none\", got %s", engine.MinCPUSpeed, cpus, workload.Describe(v)))
		return 0
	}
	return speed
}

// resolveParams sets a combination's workload parameters: the file's, then
// the scale's, then each matching rule's, each checked against its
// declaration and, when all are good, against each other (CheckParams).
// fail gets each problem at the key that set the value.
func (s *Spec) resolveParams(c *Combo, sc Scale, scale string, substAny func(string, any) any, fail func(string, error)) {
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
		if matches(r.Match, c.Values) {
			for k, v := range r.Set {
				raw[k], origin[k] = v, fmt.Sprintf("scale.%s.when.%d.set.%s", scale, i, k)
			}
		}
	}
	c.Params = workload.Params{}
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
		if p.Type == workload.InstanceParam {
			if err := c.checkInstance(n.(string)); err != nil {
				fail(origin[p.Name], err)
			}
		}
	}
	if len(c.Params) < len(s.kind.Params) {
		return
	}
	var errs []workload.ParamError
	if s.kind.CheckParams != nil {
		errs = s.kind.CheckParams(c.Params)
	}
	if s.kind.CheckFiles != nil {
		errs = append(errs, s.kind.CheckFiles(c.Params, s.readFile)...)
	}
	for _, pe := range errs {
		at, ok := origin[pe.Param]
		if !ok {
			at = "workload." + pe.Param
		}
		fail(at, pe.Err)
	}
}

// checkInstance refuses a workload parameter that names no single instance
// of the combination: an unknown name, or a set's name (count = N makes
// NAME-1 ... NAME-N, and a workload that talks to one instance must say
// which).
func (c *Combo) checkInstance(name string) error {
	for _, in := range c.Instances {
		if in.Name == name {
			return nil
		}
	}
	if set, ok := c.Sets[name]; ok {
		return fmt.Errorf("%q is a set of %d instances (count = %d): the workload runs on one of them; name it (%s)", name, len(set), len(set), strings.Join(set, ", "))
	}
	var names []string
	for _, in := range c.Instances {
		names = append(names, in.Name)
	}
	return fmt.Errorf("the study has no instance %q (it has: %s)", name, strings.Join(names, ", "))
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
func ParseCPUList(s string) ([]int, error) { return engine.ParseCPUList(s) }

// resolvedInstance is one instance of a combination, with the spec keys
// its settings were written at (for errors about a setting's value).
type resolvedInstance struct {
	engine.InstanceConfig
	keys map[string]string
}

type keyedError struct {
	key string
	err error
}

// resolveInstance resolves one [[instance]] for a combination: its engine
// (the file's, a sweep's, --engine's or a target's), its count, CPUs,
// memory, directories and the settings for that engine.
func (s *Spec) resolveInstance(i int, in InstanceSpec, subst func(string, any) any, opts PlanOptions) ([]resolvedInstance, []keyedError) {
	r := &instanceResolver{spec: s, key: fmt.Sprintf("instance.%d", i), in: in, subst: subst}
	eng := r.engine(opts)
	if eng == "" {
		return nil, r.errs
	}
	settings, keys := r.settings(eng)
	count := r.count()
	cpus := r.cpus(count)
	base := engine.InstanceConfig{Name: in.Name, Engine: eng, Site: in.Site, Settings: settings, Memory: r.memory()}
	base.CPUSpeed = resolveCPUSpeed(r.key+".cpu_speed", in.CPUSpeed, subst, r.fail)
	base.DataDir, base.WALDir = r.dir("data_dir", in.DataDir), r.dir("wal_dir", in.WALDir)
	base.DataDisk, base.WALDisk = s.resolveDisks(r.key, in, base.WALDir != "", subst, r.fail)
	if _, isTarget := opts.Targets[in.Name]; isTarget {
		base.Target = in.Name
	}
	return r.expand(base, count, cpus, keys), r.errs
}

// instanceResolver holds what the steps resolving one [[instance]] share: its
// key in the file, the combination's substitution, and the errors found so far
// (every one is reported, not only the first).
type instanceResolver struct {
	spec  *Spec
	key   string
	in    InstanceSpec
	subst func(string, any) any
	errs  []keyedError
}

func (r *instanceResolver) fail(k string, err error) { r.errs = append(r.errs, keyedError{k, err}) }

// engine is the engine this combination runs, "" for an instance it leaves
// out; a target's engine and --engine win over the file's.
func (r *instanceResolver) engine(opts PlanOptions) string {
	eng, _ := r.subst(r.key+".engine", r.in.Engine).(string)
	target, isTarget := opts.Targets[r.in.Name]
	switch {
	case isTarget:
		eng = target
	case opts.Engine != "":
		eng = opts.Engine
	}
	if eng == "" {
		return ""
	}
	if kind := r.spec.kind; len(kind.Engines) > 0 && !slices.Contains(kind.Engines, eng) {
		r.fail(r.key+".engine", fmt.Errorf("workload %q runs on %s only (%s), got %q", kind.Name, strings.Join(kind.Engines, ", "), kind.EnginesWhy, eng))
	}
	return eng
}

// settings returns the settings for eng and the key each was written at. The
// flat ones belong to the engine the file names; a table named after an
// engine holds that engine's.
func (r *instanceResolver) settings(eng string) (settings, keys map[string]string) {
	settings, keys = map[string]string{}, map[string]string{}
	var flat []string
	for sk, sv := range r.in.Settings {
		if sub, ok := sv.(map[string]any); ok {
			if sk != eng {
				continue
			}
			for ek, ev := range sub {
				at := r.key + ".settings." + sk + "." + ek
				if v := r.subst(at, ev); v != nil {
					settings[ek], keys[ek] = fmt.Sprint(v), at
				}
			}
			continue
		}
		flat = append(flat, sk)
		at := r.key + ".settings." + sk
		if v := r.subst(at, sv); v != nil {
			settings[sk], keys[sk] = fmt.Sprint(v), at
		}
	}
	if written := r.in.Engine; len(flat) > 0 && eng != written {
		sort.Strings(flat)
		r.fail(r.key+".settings", fmt.Errorf("settings %s are for %s (engine = %q) and this point runs %s: put each engine's settings under [instance.settings.ENGINE]", strings.Join(flat, ", "), written, written, eng))
	} else {
		r.spec.checkStudySettings(eng, settings, keys, r.fail)
	}
	return settings, keys
}

// count is how many instances the set holds, 1 when the file sets none.
func (r *instanceResolver) count() int {
	if r.in.Count == nil {
		return 1
	}
	key := r.key + ".count"
	switch n, ok := workload.IntOf(r.subst(key, r.in.Count)); {
	case !ok || n < 1:
		r.fail(key, fmt.Errorf("want a whole number of instances (1 or more), got %s", workload.Describe(r.subst(key, r.in.Count))))
	case n > MaxInstances:
		r.fail(key, fmt.Errorf("count = %d: at most %s instances in a set (each is a server of its own, with its processes, port and a data directory of about 40 MB; the seeds ran at most 16)", n, units.FormatCount(MaxInstances)))
	default:
		return int(n)
	}
	return 1
}

// cpus is the CPU list of each of the count instances, none when the file
// sets no cpus or "any".
func (r *instanceResolver) cpus(count int) []string {
	if r.in.CPUs == nil {
		return nil
	}
	v := r.subst(r.key+".cpus", r.in.CPUs)
	str := fmt.Sprint(v)
	if _, isInt := v.(int64); !isInt {
		if _, isStr := v.(string); !isStr {
			r.fail(r.key+".cpus", fmt.Errorf("want a CPU list such as \"0\" or \"0-1\", or \"spread\", got %s", workload.Describe(v)))
			str = ""
		}
	}
	list, spread := strings.CutPrefix(str, "spread")
	var cpus []string
	switch {
	case str == "" || str == "any":
	case spread:
		pool := r.spreadPool(str, list)
		for n := range count {
			cpus = append(cpus, strconv.Itoa(pool[n%len(pool)]))
		}
	default:
		if _, err := engine.ParseCPUList(str); err != nil {
			r.fail(r.key+".cpus", err)
		}
		for range count {
			cpus = append(cpus, str)
		}
	}
	return cpus
}

// spreadPool is the CPUs "spread" deals the instances over, one each in
// turn: every CPU of the machine, or the list after "spread:".
func (r *instanceResolver) spreadPool(str, list string) []int {
	pool := make([]int, runtime.NumCPU())
	for c := range pool {
		pool[c] = c
	}
	if rest, ok := strings.CutPrefix(list, ":"); ok {
		var err error
		if pool, err = engine.ParseCPUList(rest); err != nil {
			r.fail(r.key+".cpus", err)
			pool = []int{0}
		}
	} else if list != "" {
		r.fail(r.key+".cpus", fmt.Errorf("want \"spread\" or \"spread:LIST\" (e.g. spread:0-3), got %q", str))
	}
	return pool
}

// memory is the memory cap in bytes, 0 for none: a sweep may compare capped
// and uncapped instances.
func (r *instanceResolver) memory() int64 {
	if r.in.Memory == nil {
		return 0
	}
	v := r.subst(r.key+".memory", r.in.Memory)
	if str, ok := v.(string); ok && (str == "" || str == "none") {
		return 0
	}
	n, err := (workload.ParamSpec{Type: workload.SizeParam}).Normalize(v)
	if err != nil {
		r.fail(r.key+".memory", fmt.Errorf("want a size such as \"2GB\", or \"none\" for no cap, got %s", workload.Describe(v)))
		return 0
	}
	return n.(int64)
}

// dir is a directory attribute after substitution, which must be absolute.
func (r *instanceResolver) dir(attr, val string) string {
	if val == "" {
		return ""
	}
	d, _ := r.subst(r.key+"."+attr, val).(string)
	if d != "" && !strings.HasPrefix(d, "/") {
		r.fail(r.key+"."+attr, fmt.Errorf("want an absolute directory, got %q", d))
	}
	return d
}

// expand makes the set's count instances from base, each with its own copy of
// the settings, its CPUs, and a numbered name when the file sets a count.
func (r *instanceResolver) expand(base engine.InstanceConfig, count int, cpus []string, keys map[string]string) []resolvedInstance {
	var out []resolvedInstance
	for n := range count {
		cfg := base
		cfg.Settings = maps.Clone(base.Settings)
		if r.in.Count != nil {
			cfg.Name = fmt.Sprintf("%s-%d", r.in.Name, n+1)
		}
		if len(cpus) > 0 {
			cfg.CPUs = cpus[n]
		}
		out = append(out, resolvedInstance{InstanceConfig: cfg, keys: keys})
	}
	return out
}

// resolveDisks reads an instance's emulated disks: disk (every disk its
// files are on: the data's, with the WAL on it unless wal_dir puts the WAL
// on a disk of its own) or data_disk, and wal_disk; "none" is the
// machine's own.
func (s *Spec) resolveDisks(key string, in InstanceSpec, walApart bool, subst func(string, any) any, fail func(string, error)) (data, wal string) {
	profile := func(attr, val string) string {
		if val == "" {
			return ""
		}
		r, _ := subst(key+"."+attr, val).(string)
		if r == "" || r == "none" {
			return ""
		}
		if _, err := blockdev.LookupProfile(r); err != nil {
			fail(key+"."+attr, fmt.Errorf("%w, or \"none\"", err))
			return ""
		}
		return r
	}
	if in.Disk != "" && in.DataDisk != "" {
		fail(key+".data_disk", errors.New("disk already names the data's disk (disk holds the data and the WAL; data_disk the data alone)"))
	}
	every := profile("disk", in.Disk)
	data = every
	if in.DataDisk != "" {
		data = profile("data_disk", in.DataDisk)
	}
	wal = profile("wal_disk", in.WALDisk)
	if in.WALDisk == "" && walApart {
		wal = every
	}
	return data, wal
}

// SettingKey is the spec key where a setting of an instance of this
// combination was written ("instance.0.settings.work_mem").
func (c *Combo) SettingKey(instance, setting string) string {
	return c.settingKeys[instance+"/"+setting]
}

// checkSweepUsed refuses a sweep variable that changes nothing a point
// runs: no ${var} of the workload's parameters, an instance, a link, the
// client or a scale's set refers to it, and no scale's when rule matches
// on it. Its values would multiply the plan with points that all run the
// same, and the report would set them side by side as if they differed.
func (v *validator) checkSweepUsed() {
	s := v.spec
	used := map[string]bool{}
	refer := func(x any) { collectRefs(x, used) }
	for _, in := range s.Instances {
		for _, x := range []any{in.Engine, in.Count, in.CPUs, in.Memory, in.CPUSpeed, in.DataDir, in.WALDir, in.Disk, in.DataDisk, in.WALDisk, in.Settings} {
			refer(x)
		}
	}
	refer(s.Client.GOMAXPROCS)
	refer(s.Client.CPUs)
	refer(s.Client.CPUSpeed)
	refer(s.Client.Idle)
	for _, l := range s.Links {
		refer(l.Profile)
		refer(l.Settings)
	}
	refer(s.Workload)
	for _, sc := range s.Scales {
		refer(sc.Set)
		for _, r := range sc.When {
			refer(r.Set)
			for name := range r.Match {
				used[name] = true
			}
		}
	}
	for _, name := range s.SweepKeys {
		if used[name] {
			continue
		}
		hint := "refer to it as ${" + name + "} in the workload's parameters, an instance, a link or the client, or remove it"
		if slices.ContainsFunc(s.kind.Params, func(p workload.ParamSpec) bool { return p.Name == name }) {
			hint = fmt.Sprintf("to sweep the workload's parameter %s, write %s = \"${%s}\" under [workload]", name, name, name)
		}
		v.add("sweep."+name, "no ${%s} refers to it and no scale's when rule matches it, so each of its values would run the same points again: %s", name, hint)
	}
}

// collectRefs marks every sweep variable a value refers to, in its
// strings, lists and tables.
func collectRefs(x any, into map[string]bool) {
	switch t := x.(type) {
	case string:
		for _, m := range varRef.FindAllStringSubmatch(t, -1) {
			into[m[1]] = true
		}
	case []any:
		for _, e := range t {
			collectRefs(e, into)
		}
	case map[string]any:
		for _, e := range t {
			collectRefs(e, into)
		}
	}
}
