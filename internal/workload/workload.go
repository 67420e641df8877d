package workload

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/link"
	"github.com/dbrig/dbrig/internal/measure"
	"github.com/dbrig/dbrig/internal/topology"
	"github.com/dbrig/dbrig/internal/units"
)

// Workload is what a study applies to its topology. Prepare runs in dbrig's
// own process once per fresh topology (schema, data); Run measures one point
// and may run in a separate client process (see Client), so it must only use
// what Env gives it.
type Workload interface {
	Prepare(ctx context.Context, env *Env) error
	Run(ctx context.Context, env *Env) (Measurement, error)
}

// Kind describes one kind of workload: its parameters and how to make it.
type Kind struct {
	Name   string
	Doc    string
	Params []ParamSpec
	// New makes a workload for one point's resolved parameters.
	New func(p Params) (Workload, error)
	// Model, when set, fits a point's metrics on other points (per-row
	// costs on the fastest link): all never holds the point's own
	// combination, so that the figure is a held-out one and its error is
	// no in-sample residual. It may read the point's own inputs (rows,
	// bytes read), never the figures it is judged against.
	Model func(r Result, all []Result) Prediction
	// Predict, when set, predicts a point before it runs, from its
	// parameters, its links' configuration (r.Links, no traffic yet) and
	// the points measured before it; the runner stores the prediction as
	// the point's Model, so that it is never fitted on the point itself.
	Predict func(r Result, before []Result) Prediction
	// Probe, when set, measures just before a point runs (its data made,
	// its servers idle) what its prediction needs of that moment and no
	// point before it can tell: the CPUs other work leaves now, the plans
	// the server makes now. The runner stores it in Result.Probe before
	// calling Predict; a replay of stored results keeps it. An error is
	// logged and the point runs without it.
	Probe func(ctx context.Context, r Result, env *Env) (map[string]float64, error)
	// PrepareKey, when set, names the data a point needs: Prepare runs
	// again only when it changes (default: once per topology).
	PrepareKey func(p Params) string
	// Metrics declare what the workload measures (unit, direction,
	// headline), for reports and comparisons.
	Metrics []MetricSpec
	// Engines, when set, are the only engines the workload runs on (it
	// needs what only they have); EnginesWhy says what, for the error a
	// study that puts it elsewhere gets.
	Engines    []string
	EnginesWhy string
	// CheckParams, when set, refuses values that are wrong only beside
	// each other (max_in_flight without a rate), each at the parameter it
	// names: at parse, like every other value, and not once servers run.
	CheckParams func(p Params) []ParamError
	// CheckFiles, when set, reads the files a point's parameters name (a
	// script's) through read and refuses what is wrong in them, each at
	// the parameter that named it: at parse, as CheckParams. The study
	// reads a file where its file lies (a load's: in the working
	// directory), keeps the text of each in the run directory, and gives
	// the workload those texts alone (Env.ReadFile), so that a report, a
	// resume and a client process read what ran, never a file changed
	// since.
	CheckFiles func(p Params, read ReadFile) []ParamError
	// Load, when set, gives the kind a command of its own, dbrig load
	// NAME, that runs it against one server outside a study file, its
	// flags made from Params.
	Load *LoadMode
}

// ParamError is a problem with one parameter's value.
type ParamError struct {
	Param string
	Err   error
}

func (e ParamError) Error() string { return e.Param + ": " + e.Err.Error() }

// Unbounded lists the parameters that take a quantity and declare no most
// (ParamSpec.Bounded).
func (k Kind) Unbounded() []string {
	var out []string
	for _, p := range k.Params {
		if !p.Bounded() {
			out = append(out, p.Name)
		}
	}
	return out
}

// Prediction is a model's estimate of some of a point's metrics.
type Prediction struct {
	Metrics map[string]float64
	// Formula says how the figure was obtained, for the report.
	Formula string
	// Reason says why there is no figure ("no prediction: first point"),
	// or what the model leaves out where it misses, for the report's
	// summary of the predictions.
	Reason string
}

// Env is what a workload sees of its point: parameters, where to connect,
// a logger and a progress callback.
type Env struct {
	Params Params
	// Database is the name of the database the workload makes and uses on
	// every instance ("dbrig_<study>"): on a target it is the only thing
	// dbrig creates, and it removes it at the end.
	Database string
	// Conn returns how a client at site from reaches database db of an
	// instance: through the emulated link between the sites, or directly.
	Conn func(from, instance, db string) (Endpoint, error)
	// ClientSite is the site of the workload's client.
	ClientSite string
	// SiteOf names the site of an instance ("" when unknown).
	SiteOf func(instance string) string
	Log    *slog.Logger
	// Progress reports work done out of total (units are the workload's).
	Progress func(done, total int64)
	// Second, when set, receives each second of a load of virtual users
	// as it ends, for a live view of the run; it must not block. Nil in a
	// client process.
	Second func(Second)
	// Instance gives Prepare (in dbrig's own process) the running instance,
	// for work that bypasses links (loading data). Nil in a client process.
	// A workload that needs one engine's own abilities asks for them
	// (postgres.Local) and declares Kind.Engines.
	Instance func(name string) engine.Instance
	// Engines opens sessions in the driver of a login's engine
	// (Engines.OpenSession) and says what each engine's SQL and protocol
	// can do (Engines.Dialect), so that a workload names no engine.
	Engines *engine.Registry
	// Set lists the instances a study's [[instance]] NAME became for this
	// point: NAME itself, or NAME-1 ... NAME-N with count = N.
	Set func(name string) []string
	// Via returns the address through which site from reaches a listener
	// of the workload's own at site to (address upstream), across the link
	// between the sites: for byte streams that are not a database's
	// connections (a backup file shipped to a subscriber). Nil in a client
	// process.
	Via func(ctx context.Context, from, to, upstream string) (string, error)
	// Cleanup registers f to run once when the run ends, after every
	// server has stopped, on success, error, panic and interrupt alike
	// (the last registered runs first): for what Prepare makes outside
	// the servers that must outlive a point, such as a loop device under a
	// tablespace. Nil in a client process.
	Cleanup func(f func(ctx context.Context) error)
	// ReadFile reads a file the point's parameters name, as the study read
	// it when it was parsed (Kind.CheckFiles): its text, never the file
	// as it is now.
	ReadFile ReadFile
}

// ReadFile reads a file by the name a study's parameter gives it.
type ReadFile func(name string) ([]byte, error)

// Endpoint is how a client reaches one database.
type Endpoint = topology.Endpoint

// Measurement is what one run of a point measured.
type Measurement struct {
	// Metrics are named figures: "seconds", "rows_per_s", "us_per_row" ...
	Metrics map[string]float64 `json:"metrics"`
	// Series are named time series for charts (e.g. per-second progress),
	// one value per SeriesInterval seconds.
	Series         map[string][]float64 `json:"series,omitempty"`
	SeriesInterval float64              `json:"series_interval_s,omitempty"`
	// Histograms are named latency distributions ("row", "latency",
	// "latency/new_order"): a combination's runs merge them, so its
	// percentiles come from all its samples.
	Histograms map[string]*measure.Histogram `json:"histograms,omitempty"`
	Notes      []string                      `json:"notes,omitempty"`
	// Warnings qualify the figures themselves (users that found no
	// connection slot): the point's line, the report's top and the
	// terminal summary say them beside the headline figures.
	Warnings []string `json:"warnings,omitempty"`
	// Links are what the workload's own runs of a point's links carried,
	// by link name: load agents each run the link in front of their users,
	// on their own hosts, so dbrig's proxies never see that traffic.
	Links map[string]link.Stats `json:"links,omitempty"`
}

// ParamType is the type of a workload parameter.
type ParamType int

const (
	IntParam      ParamType = iota // a positive whole number
	SizeParam                      // bytes: 8000, "8KB", "40KiB"
	DurationParam                  // "77ms"
	StringParam                    // free text or one of Choices
	FloatParam                     // a number
	BoolParam                      // true/false
	// InstanceParam names one instance of the study ("db", or "db-2" of a
	// set made with count): the plan refuses a name that is not one.
	InstanceParam
)

func (k ParamType) String() string {
	return [...]string{"a positive integer", "a size (bytes, e.g. 8000 or \"40KB\")", "a duration (e.g. \"77ms\")", "a string", "a number", "true or false", "the name of one instance of the study"}[k]
}

// ParamSpec declares one workload parameter.
type ParamSpec struct {
	Name    string
	Type    ParamType
	Doc     string
	Default any // nil: required
	Choices []string
	// AllowZero permits 0 for Int, Size and Float parameters.
	AllowZero bool
	// Min raises the least value of an Int or Size parameter above 1 (or
	// 0 with AllowZero); MinWhy says why, in the error.
	Min    int64
	MinWhy string
	// Max is the most an Int or Size parameter takes, MaxFloat a Float's
	// and MaxDuration a Duration's; Why says why, in the error. Every
	// count, size, number and duration declares one, so that a typo
	// (rows = 99999999999) is refused at parse instead of exhausting the
	// machine's memory, disk or patience once servers run.
	Max         int64
	MaxFloat    float64
	MaxDuration time.Duration
	Why         string
	// Check, when set, refuses a value that the kind and bounds let
	// through (a mix naming no transaction); it gets the canonical value.
	Check func(v any) error
	// Flag is how the parameter reads as a flag of dbrig load KIND.
	Flag FlagSpec
}

// Bounded reports whether a parameter that takes a quantity declares its
// most (strings, booleans and instances take none).
func (ps ParamSpec) Bounded() bool {
	switch ps.Type {
	case IntParam, SizeParam:
		return ps.Max > 0 && ps.Why != ""
	case FloatParam:
		return ps.MaxFloat > 0 && ps.Why != ""
	case DurationParam:
		return ps.MaxDuration > 0 && ps.Why != ""
	}
	return true
}

// ValueError is a value that a parameter's kind or bounds refuse (a
// negative count, a number past its most), as opposed to one its own
// Check or the kind's CheckParams refuse: a flag says what its kind and
// bounds take instead.
type ValueError struct{ Err error }

func (e *ValueError) Error() string { return e.Err.Error() }
func (e *ValueError) Unwrap() error { return e.Err }

// Normalize checks a value against the spec and returns it in canonical
// form: int64 for Int and Size, string for Duration and String, float64,
// bool.
func (ps ParamSpec) Normalize(v any) (any, error) {
	n, err := ps.normalizeKind(v)
	if err != nil {
		return nil, &ValueError{err}
	}
	if err := ps.checkBounds(n); err != nil {
		return nil, &ValueError{err}
	}
	if ps.Check != nil {
		if err := ps.Check(n); err != nil {
			return nil, err
		}
	}
	return n, nil
}

// checkBounds refuses a canonical value beyond the declared bounds.
func (ps ParamSpec) checkBounds(v any) error {
	why := func(reason string) string {
		if reason == "" {
			return ""
		}
		return " (" + reason + ")"
	}
	switch ps.Type {
	case IntParam, SizeParam:
		n := v.(int64)
		show := units.FormatCount(n)
		if ps.Type == SizeParam {
			show = units.Size(n).String()
		}
		if ps.Min > 0 && n < ps.Min {
			return fmt.Errorf("%s = %s: at least %s%s", ps.Name, show, ps.limitText(ps.Min), why(ps.MinWhy))
		}
		if ps.Max > 0 && n > ps.Max {
			return fmt.Errorf("%s = %s: at most %s%s", ps.Name, show, ps.limitText(ps.Max), why(ps.Why))
		}
	case FloatParam:
		if x := v.(float64); ps.MaxFloat > 0 && x > ps.MaxFloat {
			return fmt.Errorf("%s = %v: at most %s%s", ps.Name, x, strconv.FormatFloat(ps.MaxFloat, 'f', -1, 64), why(ps.Why))
		}
	case DurationParam:
		d, _ := time.ParseDuration(v.(string))
		if ps.MaxDuration > 0 && d > ps.MaxDuration {
			return fmt.Errorf("%s = %s: at most %s%s", ps.Name, v, ps.MaxDuration, why(ps.Why))
		}
	}
	return nil
}

// limitText writes a bound as the parameter's values are written.
func (ps ParamSpec) limitText(n int64) string {
	if ps.Type == SizeParam {
		return units.Size(n).String()
	}
	return units.FormatCount(n)
}

// normalizeKind converts a value to the kind's canonical form and refuses
// one the kind never takes (a negative count, a word for a number).
func (ps ParamSpec) normalizeKind(v any) (any, error) {
	normalize, ok := kindNormalizers[ps.Type]
	if !ok {
		return nil, fmt.Errorf("unknown parameter kind %d", ps.Type)
	}
	return normalize(ps, v)
}

var kindNormalizers = map[ParamType]func(ParamSpec, any) (any, error){
	IntParam:      ParamSpec.normalizeInt,
	SizeParam:     ParamSpec.normalizeSize,
	DurationParam: ParamSpec.normalizeDuration,
	InstanceParam: ParamSpec.normalizeInstance,
	StringParam:   ParamSpec.normalizeString,
	FloatParam:    ParamSpec.normalizeFloat,
	BoolParam:     ParamSpec.normalizeBool,
}

// wrongKind refuses a value of another Go type than the kind's.
func (ps ParamSpec) wrongKind(v any) error {
	return fmt.Errorf("want %s, got %s", ps.Type, Describe(v))
}

func (ps ParamSpec) normalizeInt(v any) (any, error) {
	n, ok := IntOf(v)
	if !ok {
		return nil, ps.wrongKind(v)
	}
	if n < 0 || (n == 0 && !ps.AllowZero) {
		return nil, fmt.Errorf("want %s, got %d", ps.Type, n)
	}
	return n, nil
}

// normalizeSize takes a count of bytes or a size written with its unit.
func (ps ParamSpec) normalizeSize(v any) (any, error) {
	var n int64
	switch x := v.(type) {
	case string:
		z, err := units.ParseSize(x)
		if err != nil {
			return nil, err
		}
		n = int64(z)
	default:
		var ok bool
		if n, ok = IntOf(v); !ok {
			return nil, ps.wrongKind(v)
		}
	}
	if n < 0 || (n == 0 && !ps.AllowZero) {
		return nil, fmt.Errorf("want a positive size, got %d bytes", n)
	}
	return n, nil
}

func (ps ParamSpec) normalizeDuration(v any) (any, error) {
	s, ok := v.(string)
	if !ok {
		return nil, ps.wrongKind(v)
	}
	d, err := units.ParseDuration(s)
	if err != nil {
		return nil, err
	}
	return d.String(), nil
}

func (ps ParamSpec) normalizeInstance(v any) (any, error) {
	s, ok := v.(string)
	if !ok || s == "" {
		return nil, ps.wrongKind(v)
	}
	return s, nil
}

func (ps ParamSpec) normalizeString(v any) (any, error) {
	s, ok := v.(string)
	if !ok {
		return nil, ps.wrongKind(v)
	}
	if len(ps.Choices) > 0 && !slices.Contains(ps.Choices, s) {
		return nil, fmt.Errorf("want one of %s, got %q", strings.Join(ps.Choices, ", "), s)
	}
	return s, nil
}

// normalizeFloat also takes a whole number, as TOML writes 2 for 2.0.
func (ps ParamSpec) normalizeFloat(v any) (any, error) {
	var x float64
	switch y := v.(type) {
	case float64:
		x = y
	case int64:
		x = float64(y)
	default:
		return nil, ps.wrongKind(v)
	}
	switch {
	case math.IsNaN(x) || math.IsInf(x, 0) || x < 0:
		return nil, fmt.Errorf("want %s, 0 or more, got %v", ps.Type, x)
	case x == 0 && !ps.AllowZero:
		return nil, fmt.Errorf("want %s above 0, got 0", ps.Type)
	}
	return x, nil
}

func (ps ParamSpec) normalizeBool(v any) (any, error) {
	b, ok := v.(bool)
	if !ok {
		return nil, ps.wrongKind(v)
	}
	return b, nil
}

func IntOf(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int:
		return int64(x), true
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int64(x), true
		}
	}
	return 0, false
}

func Describe(v any) string {
	switch x := v.(type) {
	case string:
		return fmt.Sprintf("the string %q", x)
	case int64, int:
		return fmt.Sprintf("the integer %v", x)
	case float64:
		return fmt.Sprintf("the number %v", x)
	case bool:
		return fmt.Sprintf("the boolean %v", x)
	case []any:
		return "a list"
	case map[string]any:
		return "a table"
	case nil:
		return "nothing"
	}
	return fmt.Sprintf("%T", v)
}

// Params are a point's resolved workload parameters, in canonical form.
type Params map[string]any

// Int returns an Int or Size parameter.
func (p Params) Int(name string) int64 {
	n, _ := IntOf(p[name])
	return n
}

// String returns a String parameter.
func (p Params) String(name string) string { s, _ := p[name].(string); return s }

// Duration returns a Duration parameter.
func (p Params) Duration(name string) time.Duration {
	d, _ := time.ParseDuration(p.String(name))
	return d
}

// Float returns a Float parameter.
func (p Params) Float(name string) float64 {
	switch x := p[name].(type) {
	case float64:
		return x
	case int64:
		return float64(x)
	}
	return 0
}

// Bool returns a Bool parameter.
func (p Params) Bool(name string) bool { b, _ := p[name].(bool); return b }

// MaxDuration bounds a workload's durations (a measured interval, a
// warm-up, a think time): DurationWhy says why, in the error.
const (
	MaxDuration = 7 * 24 * time.Hour
	DurationWhy = "a week: a soak test of days fits, and a longer value is a typo for a unit"
)

// PositiveDuration is a ParamSpec.Check for a duration that must last: a
// measured interval of 0 s measures nothing.
func PositiveDuration(v any) error {
	if d, err := time.ParseDuration(fmt.Sprint(v)); err == nil && d <= 0 {
		return fmt.Errorf("want a positive duration, got %v", v)
	}
	return nil
}
