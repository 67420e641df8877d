package study

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/link"
	"github.com/dbrig/dbrig/internal/measure"
	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/workload"
)

// Spec is a study file: what is measured, on what, how often, and which
// published figures it reproduces.
type Spec struct {
	Name         string              `toml:"name"`
	Title        string              `toml:"title"`
	Question     string              `toml:"question"`
	DefaultScale string              `toml:"default_scale"`
	Source       Source              `toml:"source"`
	Published    []Published         `toml:"published"`
	Instances    []InstanceSpec      `toml:"instance"`
	Client       ClientSpec          `toml:"client"`
	Links        []LinkSpec          `toml:"link"`
	Sites        map[string]SiteSpec `toml:"site"`
	Workload     map[string]any      `toml:"workload"`
	Sweep        map[string]any      `toml:"sweep"`
	Repeat       RepeatSpec          `toml:"repeat"`
	Scales       map[string]Scale    `toml:"scale"`
	Limits       []string            `toml:"limits"`
	// Files are files the workload's parameters name, held in the study
	// file (a run directory's spec.toml holds every one the study read).
	Files []FileSpec `toml:"file"`

	// Expect are the study's own expectations, judged with no judge in Go.
	Expect []Expectation `toml:"expect"`

	// Filled by Parse.
	File      string        `toml:"-"`
	Text      string        `toml:"-"`
	SweepKeys []string      `toml:"-"` // sweep variables in file order
	kind      workload.Kind `toml:"-"`
	// judges and reports are what the built-in studies of its workload
	// bring (Registry.Builtin).
	judges  map[string]Judge              `toml:"-"`
	reports []func(*RunData, *report.Doc) `toml:"-"`
	lines   map[string]int
	engines *engine.Registry // whose StudySetting each setting meets
	read    map[string]fileRead
}

// Source names the document a study reproduces.
type Source struct {
	Seed  string `toml:"seed"`
	Study string `toml:"study"`
	URL   string `toml:"url"`
}

// Published is one finding of the source, set beside ours in the report.
type Published struct {
	ID      string  `toml:"id"`
	Finding string  `toml:"finding"`
	Value   float64 `toml:"value"`
	Unit    string  `toml:"unit"`
	// Figures are further published numbers a workload's report reads by
	// name (e.g. the two sides of a comparison).
	Figures map[string]float64 `toml:"figures"`
	// NotMeasured, when set, says why no run of this study can measure the
	// finding (it needs hardware this rig does not have); such a finding
	// needs no judge and is reported as not measured, with the reason.
	NotMeasured string `toml:"not_measured"`
}

// InstanceSpec is one database server of the topology, or a set of
// identical ones (Count). Every attribute but the name and the site may be
// a sweep variable ("${engine}").
type InstanceSpec struct {
	Name   string `toml:"name"`
	Engine string `toml:"engine"` // "postgres" (default), "mariadb"
	Site   string `toml:"site"`
	// Count makes a set of identical instances NAME-1 ... NAME-N.
	Count any `toml:"count"`
	// CPUs pins each server and its children: a CPU list ("0-1"), "spread"
	// (instance i on CPU i-1, round robin) or "spread:LIST".
	CPUs any `toml:"cpus"`
	// Memory caps each server's memory ("2GB"; a cgroup's limit).
	Memory any `toml:"memory"`
	// CPUSpeed caps each server's CPU time, in cores' worth (0.5 = half of
	// one core; a CFS quota), to emulate a slower or smaller processor.
	CPUSpeed any `toml:"cpu_speed"`
	// DataDir and WALDir are where the data and the WAL (or redo log) live.
	DataDir string `toml:"data_dir"`
	WALDir  string `toml:"wal_dir"`
	// Disk, DataDisk and WALDisk are emulated disks by profile
	// (blockdev.Profiles; "none" for the machine's own): Disk is every
	// disk the instance's files are on (the data's, and the WAL's own when
	// WALDir puts the WAL apart), DataDisk the data's, WALDisk the WAL's.
	Disk     string `toml:"disk"`
	DataDisk string `toml:"data_disk"`
	WALDisk  string `toml:"wal_disk"`
	// Settings are the server's own settings; a sub-table named after an
	// engine ([instance.settings.mariadb]) holds that engine's only.
	Settings map[string]any `toml:"settings"`
}

// ClientSpec is the workload's client: where it runs and how fast it may be.
type ClientSpec struct {
	Site string `toml:"site"`
	// GOMAXPROCS limits the client process's threads; 0 = no limit.
	GOMAXPROCS any `toml:"gomaxprocs"`
	// CPUs pins the client process to a CPU list ("0", "0-1"); "" = any.
	CPUs any `toml:"cpus"`
	// CPUSpeed caps the client process's CPU time as an instance's
	// cpu_speed caps a server's.
	CPUSpeed any `toml:"cpu_speed"`
	// Idle is how this machine's CPUs idle while a point runs: "halt" (as
	// they do) or "spin" (a lowest-priority busy loop on each CPU keeps it
	// from halting; package idleloop). It is here because the client and
	// the links run on this machine, targets or not.
	Idle any `toml:"idle"`
}

// SiteSpec places a site on a host: its instances run there, started by a
// dbrig agent over ssh, and the network between it and the other sites is
// the real one (a [[link]] with an emulation profile still puts the
// emulated link in front).
type SiteSpec struct {
	// Host is ssh://[user@]host[:port] or [user@]host[:port], as `dbrig
	// doctor --hosts` reads it.
	Host string `toml:"host"`
}

// LinkSpec joins two sites with an emulated link, a direct loopback
// connection ("direct") or a unix socket ("unix").
type LinkSpec struct {
	Name    string   `toml:"name"`
	Between []string `toml:"between"`
	Profile string   `toml:"profile"`
	// Settings override the profile's: a value for any key of
	// link.Params (rtt, rate, window, ...), as the file wrote it.
	Settings map[string]any `toml:"-"`
	// unknown are the keys that are neither the above nor a setting.
	unknown []string
}

// UnmarshalTOML takes a [[link]] table's settings from link.Params, so that
// a study file has every setting a flag has, read by the same parser. The
// types of name, between and profile were checked before decoding.
func (l *LinkSpec) UnmarshalTOML(data any) error {
	table, _ := data.(map[string]any)
	for k, v := range table {
		switch k {
		case "name":
			l.Name, _ = v.(string)
		case "profile":
			l.Profile, _ = v.(string)
		case "between":
			list, _ := v.([]any)
			for _, site := range list {
				name, _ := site.(string)
				l.Between = append(l.Between, name)
			}
		default:
			if p, ok := link.LookupParam(k); !ok || p.Key() != k {
				l.unknown = append(l.unknown, k)
				continue
			}
			if l.Settings == nil {
				l.Settings = map[string]any{}
			}
			l.Settings[k] = v
		}
	}
	sort.Strings(l.unknown)
	return nil
}

// RepeatSpec says how often each combination runs and how runs are combined.
type RepeatSpec struct {
	Runs         int    `toml:"runs"`
	DiscardFirst bool   `toml:"discard_first"`
	Trim         string `toml:"trim"` // "none" or "min-max"
}

// Kept are the indices, in run order, of the runs the rule keeps of one
// metric's values: the runs its mean averages.
func (rule RepeatSpec) Kept(values []float64) []int {
	return measure.KeptRuns(values, rule.DiscardFirst, rule.Trim == "min-max")
}

// Scale adjusts a study's size: sweep lists, parameters, repeats, and
// parameters for matching points only.
type Scale struct {
	Sweep  map[string]any `toml:"sweep"`
	Set    map[string]any `toml:"set"`
	Repeat *RepeatSpec    `toml:"repeat"`
	When   []ScaleRule    `toml:"when"`
}

// ScaleRule sets parameters for the points whose sweep values match, or
// leaves those points out of the plan.
type ScaleRule struct {
	Match map[string]any `toml:"match"`
	Set   map[string]any `toml:"set"`
	Skip  bool           `toml:"skip"`
}

// Special link profiles that bypass the emulated link.
const (
	ProfileUnix   = "unix"   // the instance's unix socket
	ProfileDirect = "direct" // loopback TCP straight to the server
)

// SpecError is one problem in a study file.
type SpecError struct {
	File string
	Line int
	Key  string
	Msg  string
	// Err is the check's own error, when a parameter's declaration or
	// its kind's CheckParams refused the value: a load command words it
	// for its flag.
	Err error
}

func (e SpecError) Unwrap() error { return e.Err }

func (e SpecError) Error() string {
	loc := e.File
	if e.Line > 0 {
		loc += ":" + strconv.Itoa(e.Line)
	}
	if e.Key != "" {
		return fmt.Sprintf("%s: %s: %s", loc, e.Key, e.Msg)
	}
	return fmt.Sprintf("%s: %s", loc, e.Msg)
}

// SpecErrors are all the problems found in a study file.
type SpecErrors []SpecError

func (es SpecErrors) Error() string {
	var b strings.Builder
	for i, e := range es {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(e.Error())
	}
	return b.String()
}

// LoadFile reads and validates a study file.
func LoadFile(path string, reg *Registry) (*Spec, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read study file: %w", err)
	}
	return Parse(path, b, reg)
}

var varRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// Parse decodes and validates a study. Every problem is reported at once,
// each with the file, line and key, and what was expected.
func Parse(file string, data []byte, reg *Registry) (*Spec, error) {
	s := &Spec{File: file, Text: string(data), lines: keyLines(string(data))}
	var raw map[string]any
	if _, err := toml.Decode(string(data), &raw); err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, SpecErrors{{File: file, Line: pe.Position.Line, Key: pe.LastKey, Msg: strings.TrimPrefix(pe.Message, "toml: ")}}
		}
		return nil, SpecErrors{{File: file, Msg: err.Error()}}
	}
	v := &validator{spec: s}
	s.engines = reg.engines
	typeCheck(raw, reflect.TypeOf(*s), "", func(key, msg string) { v.add(key, "%s", msg) })
	if len(v.errs) > 0 {
		sort.SliceStable(v.errs, func(i, j int) bool { return v.errs[i].Line < v.errs[j].Line })
		return nil, v.errs
	}
	md, err := toml.Decode(string(data), s)
	if err != nil {
		return nil, SpecErrors{{File: file, Msg: err.Error()}}
	}
	v.md = md
	unknown := map[string]int{} // occurrences of each unknown key so far
	for _, k := range md.Undecoded() {
		// An engine's table of settings ([instance.settings.postgres])
		// decodes into a map that the TOML library does not mark as read;
		// the engine checks its keys.
		if len(k) == 4 && k[0] == "instance" && k[1] == "settings" {
			continue
		}
		// The library names a key of an array of tables without its
		// element ("scale.full.when.foo"), once per element that has it,
		// in file order: the n-th occurrence is in the n-th such element.
		name := k.String()
		at := name
		if paths := elementPaths(raw, k); unknown[name] < len(paths) {
			at = paths[unknown[name]]
		}
		unknown[name]++
		v.add(at, "unknown key (see docs/studies.md for the keys a study file has)")
	}
	for _, k := range md.Keys() {
		if len(k) == 2 && k[0] == "sweep" {
			s.SweepKeys = append(s.SweepKeys, k[1])
		}
	}
	v.validate(reg)
	if len(v.errs) > 0 {
		sort.SliceStable(v.errs, func(i, j int) bool { return v.errs[i].Line < v.errs[j].Line })
		return nil, v.errs
	}
	return s, nil
}

type validator struct {
	spec *Spec
	errs SpecErrors
	md   toml.MetaData
}

func (v *validator) add(key, format string, args ...any) {
	v.errs = append(v.errs, SpecError{File: v.spec.File, Line: lineOf(v.spec.lines, key), Key: key, Msg: fmt.Sprintf(format, args...)})
}

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]*$`)

func (v *validator) validate(reg *Registry) {
	v.applyDefaults()
	s := v.spec
	v.checkHeader()
	before := len(v.errs)
	for _, k := range s.SweepKeys {
		v.checkSweepList("sweep."+k, s.Sweep[k])
	}
	sweepOK := len(v.errs) == before
	sites := v.checkInstances(reg)
	v.checkLinks(sites)
	v.checkSites(sites)
	v.checkRepeat("repeat", s.Repeat)
	kind, ok := v.checkWorkload(reg)
	ids := v.checkPublished(kind, ok)
	v.checkExpectations(kind, ok, ids)
	v.checkFiles()
	v.checkScales(kind, ok)
	if !ok || !sweepOK {
		return
	}
	v.checkSweepUsed()
	v.checkPoints()
}

// applyDefaults fills in what a study file may leave out, before any check
// reads it: an instance's engine and site, the client's site, a link's
// name, the runs of the study and of each scale that repeats.
func (v *validator) applyDefaults() {
	s := v.spec
	for i, in := range s.Instances {
		if in.Engine == "" {
			s.Instances[i].Engine = "postgres"
		}
		if in.Site == "" {
			s.Instances[i].Site = in.Name
		}
	}
	if s.Client.Site == "" {
		s.Client.Site = "client"
	}
	for i, l := range s.Links {
		if l.Name == "" && len(l.Between) == 2 {
			s.Links[i].Name = l.Between[0] + "-" + l.Between[1]
		}
	}
	// Three runs unless the file says otherwise (and 0 is not "unset").
	if !v.md.IsDefined("repeat", "runs") {
		s.Repeat.Runs = 3
	}
	for name, sc := range s.Scales {
		if sc.Repeat != nil && !v.scaleRunsSet(name) {
			sc.Repeat.Runs = s.Repeat.Runs
		}
	}
}

// checkHeader checks the study's name and title.
func (v *validator) checkHeader() {
	s := v.spec
	if s.Name == "" {
		v.add("name", "missing: every study needs a name (lowercase letters, digits, '-')")
	} else if !nameRE.MatchString(s.Name) {
		v.add("name", "want lowercase letters, digits, '-' or '_', got %q", s.Name)
	}
	if s.Title == "" {
		v.add("title", "missing: a one-line title for the report")
	}
}

// checkInstances checks each [[instance]] and returns the study's sites:
// the instances' and the client's.
func (v *validator) checkInstances(reg *Registry) map[string]bool {
	s := v.spec
	if len(s.Instances) == 0 {
		v.add("instance", "missing: a study needs at least one [[instance]]")
	}
	sites := map[string]bool{s.Client.Site: true}
	names := map[string]bool{}
	for i, in := range s.Instances {
		key := fmt.Sprintf("instance.%d", i)
		switch {
		case in.Name == "":
			v.add(key+".name", "missing")
		case !nameRE.MatchString(in.Name):
			v.add(key+".name", "want lowercase letters, digits, '-' or '_', got %q", in.Name)
		case names[in.Name]:
			v.add(key+".name", "instance %q is declared twice", in.Name)
		}
		names[in.Name] = true
		engineSwept := varRef.MatchString(in.Engine)
		if !engineSwept {
			v.checkEngine(key+".engine", in.Engine, reg)
		}
		sites[in.Site] = true
		v.checkInstanceSettings(key, in, engineSwept, reg)
	}
	return sites
}

// checkInstanceSettings checks an instance's settings: plain values, or
// tables of one engine's settings, which a swept engine needs.
func (v *validator) checkInstanceSettings(key string, in InstanceSpec, engineSwept bool, reg *Registry) {
	flat := 0
	for sk, sv := range in.Settings {
		switch x := sv.(type) {
		case string, int64, float64, bool:
			flat++
		case map[string]any:
			if _, known := reg.engines.Lookup(sk); !known {
				v.add(key+".settings."+sk, "want a string, number or boolean, or a table of one engine's settings named after the engine (%s)", strings.Join(reg.engines.Names(), ", "))
				continue
			}
			for ek, ev := range x {
				switch ev.(type) {
				case string, int64, float64, bool:
				default:
					v.add(key+".settings."+sk+"."+ek, "want a string, number or boolean, got %s", workload.Describe(ev))
				}
			}
		default:
			v.add(key+".settings."+sk, "want a string, number or boolean, got %s", workload.Describe(sv))
		}
	}
	if flat > 0 && engineSwept {
		v.add(key+".settings", "the engine is a sweep variable (%s), so each setting must say which engine it is for: put them under [instance.settings.ENGINE] (%s)", in.Engine, strings.Join(reg.engines.Names(), ", "))
	}
}

// checkLinks checks that each [[link]] joins two known sites, once.
func (v *validator) checkLinks(sites map[string]bool) {
	s := v.spec
	pairs := map[string]bool{}
	for i, l := range s.Links {
		key := fmt.Sprintf("link.%d", i)
		for _, k := range l.unknown {
			v.add(key+"."+k, "unknown key (see docs/studies.md for the keys a study file has)")
		}
		if len(l.Between) != 2 {
			v.add(key+".between", "want two site names, e.g. [\"client\", \"db\"]")
			continue
		}
		for _, site := range l.Between {
			if !sites[site] {
				v.add(key+".between", "unknown site %q: sites are the client's (%q) and the instances' (%s)", site, s.Client.Site, strings.Join(sortedKeys(sites), ", "))
			}
		}
		if l.Between[0] == l.Between[1] {
			v.add(key+".between", "a link joins two different sites, got %q twice", l.Between[0])
		}
		p := pairKey(l.Between[0], l.Between[1])
		if pairs[p] {
			v.add(key+".between", "sites %s and %s are already joined by another link", l.Between[0], l.Between[1])
		}
		pairs[p] = true
		if l.Profile == "" {
			v.add(key+".profile", "missing: a link profile (e.g. \"lan-1g\", \"tukwila-blueridge\", \"unix\", \"direct\")")
		}
	}
}

// checkSites checks the sites placed on hosts.
func (v *validator) checkSites(sites map[string]bool) {
	s := v.spec
	for _, name := range sortedKeys(s.Sites) {
		key := "site." + name
		switch {
		case !sites[name]:
			v.add(key, "unknown site %q: sites are the client's (%q) and the instances' (%s)", name, s.Client.Site, strings.Join(sortedKeys(sites), ", "))
		case !slices.ContainsFunc(s.Instances, func(in InstanceSpec) bool { return in.Site == name }):
			v.add(key+".host", "site %q holds only the client, which runs in dbrig's process (spread a load over hosts with load agents: dbrig load oltp --agents FILE)", name)
		}
		if _, err := ParseHost(s.Sites[name].Host); err != nil {
			v.add(key+".host", "%v", err)
		}
	}
}

// checkWorkload checks the [workload] table against its kind's parameters
// and engines, and returns the kind (ok false when there is none).
func (v *validator) checkWorkload(reg *Registry) (kind workload.Kind, ok bool) {
	s := v.spec
	kindName, _ := s.Workload["kind"].(string)
	switch {
	case s.Workload == nil:
		v.add("workload", "missing: a [workload] table with a kind")
	case kindName == "":
		v.add("workload.kind", "missing: want one of %s", strings.Join(reg.Names(), ", "))
	default:
		if kind, ok = reg.Lookup(kindName); !ok {
			v.add("workload.kind", "unknown workload %q: want one of %s", kindName, strings.Join(reg.Names(), ", "))
		}
	}
	s.kind = kind
	s.judges, s.reports = reg.judges(kind.Name), reg.reports(kind.Name)
	if !ok {
		return kind, false
	}
	if len(kind.Engines) > 0 {
		for i, in := range s.Instances {
			if !varRef.MatchString(in.Engine) && !slices.Contains(kind.Engines, in.Engine) {
				v.add(fmt.Sprintf("instance.%d.engine", i), "workload %q runs on %s only (%s), got %q", kind.Name, strings.Join(kind.Engines, ", "), kind.EnginesWhy, in.Engine)
			}
		}
	}
	for k := range s.Workload {
		if k != "kind" && !slices.ContainsFunc(kind.Params, func(p workload.ParamSpec) bool { return p.Name == k }) {
			v.add("workload."+k, "unknown parameter of workload %q (it has: %s)", kindName, paramNames(kind))
		}
	}
	for _, p := range kind.Params {
		if _, set := s.Workload[p.Name]; !set && p.Default == nil {
			v.add("workload."+p.Name, "missing: workload %q needs it (%s)", kindName, p.Type)
		}
	}
	return kind, true
}

// checkPublished checks the published findings, each judged by the
// workload, and returns their ids.
func (v *validator) checkPublished(kind workload.Kind, ok bool) map[string]bool {
	s := v.spec
	ids := map[string]bool{}
	for i, p := range s.Published {
		key := fmt.Sprintf("published.%d", i)
		if p.Finding == "" {
			v.add(key+".finding", "missing: what the source found, in its words")
		}
		if ok && s.judges != nil && p.NotMeasured == "" {
			if _, judged := s.judges[p.ID]; !judged {
				v.add(key+".id", "workload %q has no judge for finding %q (it judges: %s)", kind.Name, p.ID, strings.Join(sortedKeys(s.judges), ", "))
			}
		}
		if p.ID != "" && ids[p.ID] {
			v.add(key+".id", "id %q is used twice", p.ID)
		}
		ids[p.ID] = true
	}
	return ids
}

// checkScales checks the default scale and each scale's sweep, repeat,
// set and when rules.
func (v *validator) checkScales(kind workload.Kind, ok bool) {
	s := v.spec
	if s.DefaultScale != "" {
		if _, found := s.Scales[s.DefaultScale]; !found {
			if len(s.Scales) == 0 {
				v.add("default_scale", "no [scale.%s] in this file, which defines no scales: add one or remove default_scale", s.DefaultScale)
			} else {
				v.add("default_scale", "no [scale.%s] in this file (it has: %s)", s.DefaultScale, strings.Join(sortedKeys(s.Scales), ", "))
			}
		}
	}
	for name, sc := range s.Scales {
		key := "scale." + name
		for k, list := range sc.Sweep {
			if _, declared := s.Sweep[k]; !declared {
				v.add(key+".sweep."+k, "not a sweep variable of this study (it has: %s)", strings.Join(s.SweepKeys, ", "))
				continue
			}
			v.checkSweepList(key+".sweep."+k, list)
		}
		if sc.Repeat != nil {
			v.checkRepeat(key+".repeat", *sc.Repeat)
		}
		v.checkSet(key+".set", sc.Set, kind, ok)
		for i, r := range sc.When {
			v.checkWhen(fmt.Sprintf("%s.when.%d", key, i), r, kind, ok)
		}
	}
}

// checkWhen checks one of a scale's when rules.
func (v *validator) checkWhen(key string, r ScaleRule, kind workload.Kind, ok bool) {
	s := v.spec
	if r.Skip && len(r.Set) > 0 {
		v.add(key+".skip", "a rule either skips points or sets parameters, not both")
	}
	if len(r.Match) == 0 {
		v.add(key+".match", "missing: which sweep values the rule applies to, e.g. match = { net = \"rtt-77ms\" }")
	}
	for mk := range r.Match {
		if _, declared := s.Sweep[mk]; !declared {
			v.add(key+".match."+mk, "not a sweep variable of this study (it has: %s)", strings.Join(s.SweepKeys, ", "))
		}
	}
	v.checkSet(key+".set", r.Set, kind, ok)
}

// checkPoints resolves every point of each plan a run can make (each
// scale's, and the study's own where it has no default scale), and each
// value of the study's own sweep where no run makes its plan.
func (v *validator) checkPoints() {
	s := v.spec
	check := []func() error{}
	if s.DefaultScale == "" {
		check = append(check, func() error { _, err := s.plan("", PlanOptions{}); return err })
	} else {
		check = append(check, s.coverBase)
	}
	for _, scale := range s.ScaleNames() {
		check = append(check, func() error { _, err := s.plan(scale, PlanOptions{}); return err })
	}
	for _, c := range check {
		if err := c(); err != nil {
			var es SpecErrors
			if errors.As(err, &es) {
				// An error the checks above found is not repeated for
				// every point it is in.
				v.errs = dedupe(append(v.errs, es...))
			} else {
				v.errs = append(v.errs, SpecError{File: s.File, Msg: err.Error()})
			}
			return // one scale's errors are enough to read
		}
	}
}

func (v *validator) checkSweepList(key string, val any) {
	list, isList := val.([]any)
	switch {
	case !isList:
		v.add(key, "want a list of values, got %s", workload.Describe(val))
	case len(list) == 0:
		v.add(key, "empty: a sweep variable needs at least one value")
	default:
		for _, e := range list {
			switch e.(type) {
			case string, int64, float64, bool:
			default:
				v.add(key, "want a list of strings, numbers or booleans; it holds %s", workload.Describe(e))
			}
		}
	}
}

func (v *validator) checkRepeat(key string, r RepeatSpec) {
	if msg := runsError(r.Runs); msg != "" {
		v.add(key+".runs", "%s", msg)
	}
	switch r.Trim {
	case "", "none", "min-max":
	default:
		v.add(key+".trim", `want "none" or "min-max", got %q`, r.Trim)
	}
}

func (v *validator) checkEngine(key, name string, reg *Registry) {
	if _, ok := reg.engines.Lookup(name); !ok {
		v.add(key, "unknown engine %q: want one of %s", name, strings.Join(reg.engines.Names(), ", "))
	}
}

// scaleRunsSet reports whether a scale's repeat table sets runs itself
// (else it inherits the study's).
func (v *validator) scaleRunsSet(scale string) bool {
	return v.md.IsDefined("scale", scale, "repeat", "runs")
}

func (v *validator) checkSet(key string, set map[string]any, kind workload.Kind, ok bool) {
	if !ok {
		return
	}
	for k, val := range set {
		i := slices.IndexFunc(kind.Params, func(p workload.ParamSpec) bool { return p.Name == k })
		if i < 0 {
			v.add(key+"."+k, "unknown parameter of workload %q (it has: %s)", kind.Name, paramNames(kind))
			continue
		}
		if s, isStr := val.(string); isStr && varRef.MatchString(s) {
			continue
		}
		if _, err := kind.Params[i].Normalize(val); err != nil {
			v.add(key+"."+k, "%v", err)
		}
	}
}

func paramNames(k workload.Kind) string {
	var out []string
	for _, p := range k.Params {
		out = append(out, p.Name)
	}
	return strings.Join(out, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func pairKey(a, b string) string {
	if a > b {
		a, b = b, a
	}
	return a + "\x00" + b
}

// ScaleNames lists the study's scales, sorted.
func (s *Spec) ScaleNames() []string { return sortedKeys(s.Scales) }

// Kind is the study's workload kind.
func (s *Spec) Kind() workload.Kind { return s.kind }

// PublishedByID finds a published finding.
func (s *Spec) PublishedByID(id string) (Published, bool) {
	for _, p := range s.Published {
		if p.ID == id {
			return p, true
		}
	}
	return Published{}, false
}

// linkError is a problem with one field of a link's spec.
type linkError struct {
	field string
	err   error
}

func (e *linkError) Error() string { return e.err.Error() }

// resolveLink turns a link's spec into a mode and configuration for one
// point's sweep values. Its errors are *linkError, naming the field.
func resolveLink(l LinkSpec, subst func(string) (string, error)) (mode string, cfg link.Config, err error) {
	profile, err := subst(l.Profile)
	if err != nil {
		return "", cfg, &linkError{field: "profile", err: err}
	}
	switch profile {
	case ProfileUnix, ProfileDirect:
		mode = profile
	default:
		mode = "link"
		if cfg, err = link.ParseProfile(profile); err != nil {
			return "", cfg, &linkError{field: "profile", err: err}
		}
	}
	settings := map[string]any{}
	for _, p := range link.Params() {
		v, ok := l.Settings[p.Key()]
		if !ok || v == "" {
			continue // "" sets nothing, as when each key was a string field
		}
		if s, isText := v.(string); isText {
			if v, err = subst(s); err != nil {
				return "", cfg, &linkError{field: p.Key(), err: err}
			}
		}
		if mode != "link" {
			return "", cfg, &linkError{field: p.Key(), err: fmt.Errorf("%s is set, but profile %q bypasses the emulated link", p.Key(), profile)}
		}
		settings[p.Key()] = v
	}
	if cfg, err = link.Override(cfg, settings); err != nil {
		// The first problem names the key; all of them are said there.
		field := "profile"
		var pe *link.ParamError
		if errors.As(err, &pe) && !pe.FromBase {
			p, _ := link.LookupParam(pe.Param)
			field = p.Key()
		}
		return "", cfg, &linkError{field: field, err: err}
	}
	return mode, cfg, nil
}
