package main

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/workload"
)

// paramFlags are the flags of dbrig load KIND made from the kind's
// parameters (cockroach's workload CLI makes its flags from each
// generator's flag set the same way): --name-in-kebab-case, typed by the
// parameter's kind, the command's default, the parameter's help. Their
// values are checked by nothing here: they become a study file's
// [workload] table, which study.Parse checks as it checks any study file,
// and flagErrors words its errors for the flags.
type paramFlags struct {
	kind workload.Kind
	fs   *pflag.FlagSet
	// args are the command's arguments, which fill the parameter
	// kind.Load.Args: the argument flags' values, in the order given, then
	// the positional ones.
	args []string
}

// argFlag is one of kind.Load.ArgFlags: each value given adds to the
// command's arguments, in the order of the command line across them.
type argFlag struct{ args *[]string }

func (a argFlag) String() string     { return "" }
func (a argFlag) Set(s string) error { *a.args = append(*a.args, s); return nil }
func (a argFlag) Type() string       { return "string" }

func addParamFlags(fs *pflag.FlagSet, k workload.Kind) *paramFlags {
	for _, p := range k.Params {
		if !hasFlag(k, p) {
			continue
		}
		def := p.Default
		if v, ok := k.Load.Defaults[p.Name]; ok {
			def = v
		}
		name, short, help := p.FlagName(), p.Flag.Short, p.FlagHelp()
		switch {
		case p.Name == k.Load.Sweep: // a list, each value a point
			fs.StringP(name, short, fmt.Sprint(def), help)
		case p.Type == workload.IntParam:
			n, _ := workload.IntOf(def)
			fs.Int64P(name, short, n, help)
		case p.Type == workload.FloatParam:
			x, _ := def.(float64)
			fs.Float64P(name, short, x, help)
		case p.Type == workload.DurationParam:
			d, _ := time.ParseDuration(fmt.Sprint(def))
			fs.DurationP(name, short, d, help)
		case p.Type == workload.BoolParam, p.Flag.Switch != "":
			b, _ := def.(bool)
			fs.BoolP(name, short, b, help)
		case p.Flag.Repeat: // each one given adds to the list
			fs.StringArrayP(name, short, nil, help)
		default: // strings, sizes, instances: as written
			str, _ := def.(string)
			fs.StringP(name, short, str, help)
		}
	}
	pf := &paramFlags{kind: k, fs: fs}
	for _, af := range k.Load.ArgFlags {
		fs.VarP(argFlag{&pf.args}, af.Name, af.Short, af.Help)
	}
	return pf
}

// hasFlag reports whether a parameter has a flag: the command sets the
// others itself, or its arguments fill them.
func hasFlag(k workload.Kind, p workload.ParamSpec) bool {
	_, fixed := k.Load.Fixed[p.Name]
	return !fixed && p.Name != k.Load.Args
}

// values are the parameters the user set, each as a study file's key
// takes it, and the swept parameter's values: what becomes the load's
// study file.
func (pf *paramFlags) values() (workload.Params, []any, error) {
	given := workload.Params{}
	if len(pf.args) > 0 {
		given[pf.kind.Load.Args] = strings.Join(pf.args, ",")
	}
	for _, p := range pf.kind.Params {
		name := p.FlagName()
		if !hasFlag(pf.kind, p) || p.Name == pf.kind.Load.Sweep || !pf.fs.Changed(name) {
			continue
		}
		var v any
		switch fl := pf.fs.Lookup(name); {
		case p.Flag.Switch != "":
			if on, _ := pf.fs.GetBool(name); on {
				v = p.Flag.Switch
			} else {
				v = p.Default
			}
		case p.Type == workload.IntParam:
			v, _ = pf.fs.GetInt64(name)
		case p.Type == workload.FloatParam:
			v, _ = pf.fs.GetFloat64(name)
		case p.Type == workload.BoolParam:
			v, _ = pf.fs.GetBool(name)
		case p.Flag.Repeat:
			list, _ := pf.fs.GetStringArray(name)
			v = strings.Join(list, ",")
		default: // a duration as it prints ("1m0s"), strings as written
			v = fl.Value.String()
		}
		given[p.Name] = v
	}
	sweep, err := pf.sweep()
	return given, sweep, err
}

// sweep reads the swept parameter's list (10,20,40): each value a point,
// none twice. Only a list's syntax is checked here; each value is the
// study's to check.
func (pf *paramFlags) sweep() ([]any, error) {
	name := pf.kind.Load.Sweep
	i := slices.IndexFunc(pf.kind.Params, func(p workload.ParamSpec) bool { return p.Name == name })
	if i < 0 || !pf.fs.Changed(pf.kind.Params[i].FlagName()) {
		return nil, nil
	}
	p := pf.kind.Params[i]
	list := pf.fs.Lookup(p.FlagName()).Value.String()
	var out []any
	for _, part := range strings.Split(list, ",") {
		part = strings.TrimSpace(part)
		var v any = part
		if p.Type == workload.IntParam {
			n, err := strconv.ParseInt(part, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("--%s %s: %s", p.FlagName(), list, p.FlagWant(true))
			}
			v = n
		}
		if slices.Contains(out, v) {
			return nil, fmt.Errorf("--%s %s: %s is given twice", p.FlagName(), list, part)
		}
		out = append(out, v)
	}
	return out, nil
}

// flagErrors words the errors of a load's study file for the flags that
// set its values: "--users 0: want whole numbers from 1 to 100000 (...)"
// where the file would say "workload.users: want a positive integer".
// Other keys' errors are worded by other, when it knows them.
func (pf *paramFlags) flagErrors(err error, other func(study.SpecError) (error, bool)) error {
	var es study.SpecErrors
	if !errors.As(err, &es) {
		return err
	}
	var out []error
	seen := map[string]bool{}
	for _, e := range es {
		fe, ok := other(e)
		if !ok {
			fe = pf.flagError(e)
		}
		if !seen[fe.Error()] {
			seen[fe.Error()] = true
			out = append(out, fe)
		}
	}
	return errors.Join(out...)
}

func (pf *paramFlags) flagError(e study.SpecError) error {
	name := study.ParamOfKey(e.Key)
	i := slices.IndexFunc(pf.kind.Params, func(p workload.ParamSpec) bool { return p.Name == name })
	if name != "" && name == pf.kind.Load.Args && e.Err != nil {
		return pf.argsError(e.Err)
	}
	if i < 0 || !hasFlag(pf.kind, pf.kind.Params[i]) {
		return e
	}
	p := pf.kind.Params[i]
	flag := "--" + p.FlagName()
	shown := pf.fs.Lookup(p.FlagName()).Value.String()
	if p.Flag.Repeat {
		list, _ := pf.fs.GetStringArray(p.FlagName())
		shown = strings.Join(list, " ")
	}
	want := p.FlagWant(name == pf.kind.Load.Sweep)
	var ve *workload.ValueError
	switch {
	case e.Err == nil && !pf.fs.Changed(p.FlagName()) && want != "":
		return fmt.Errorf("%s: %s", flag, want) // a required flag left out
	case e.Err == nil:
		return e
	case errors.As(e.Err, &ve) && want != "":
		return fmt.Errorf("%s %s: %s", flag, shown, want)
	}
	msg := pf.flagWords(e.Err.Error())
	switch {
	case strings.HasPrefix(msg, flag):
		return errors.New(msg)
	case strings.HasPrefix(msg, p.Name+" ") || strings.HasPrefix(msg, p.Name+":"):
		return errors.New(flag + strings.TrimPrefix(msg, p.Name))
	}
	return fmt.Errorf("%s %s: %s", flag, shown, msg)
}

// flagWords writes a parameter's "name = value" in a check's message as
// its flag's "--name value" (a switch's "name = choice" as "--name").
func (pf *paramFlags) flagWords(msg string) string {
	for _, p := range pf.kind.Params {
		if !hasFlag(pf.kind, p) {
			continue
		}
		if p.Flag.Switch != "" {
			msg = regexp.MustCompile(`\b`+regexp.QuoteMeta(p.Name+" = "+p.Flag.Switch)+`\b`).ReplaceAllLiteralString(msg, "--"+p.FlagName())
			continue
		}
		msg = regexp.MustCompile(`\b`+regexp.QuoteMeta(p.Name)+` = `).ReplaceAllLiteralString(msg, "--"+p.FlagName()+" ")
	}
	return msg
}

// argsError words an error of the parameter the arguments fill: as it
// is when it names an argument (a script's file:line), else after the
// arguments, or the default the command took for want of any.
func (pf *paramFlags) argsError(err error) error {
	if len(pf.args) == 0 {
		i := slices.IndexFunc(pf.kind.Params, func(p workload.ParamSpec) bool { return p.Name == pf.kind.Load.Args })
		return fmt.Errorf("%v (the default, with no argument): %w", pf.kind.Params[i].Default, err)
	}
	for _, arg := range pf.args {
		name, _, _ := strings.Cut(arg, "@")
		if strings.Contains(err.Error(), name) {
			return err
		}
	}
	return fmt.Errorf("%s: %w", strings.Join(pf.args, " "), err)
}
