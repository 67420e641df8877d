package workload

import (
	"strconv"
	"strings"
)

// LoadMode is what dbrig load NAME needs of a kind that also runs against
// one server outside a study file. The command's flags are made from the
// kind's Params (each one's FlagSpec); their values become the [workload]
// table of a study of one instance, "db", which is parsed, checked, run
// and reported exactly as a study file is: a kind declares its parameters
// once, and a study file and the command take the same values with the
// same bounds.
type LoadMode struct {
	// Short, Long and Example are the command's help.
	Short, Long, Example string
	// Sweep names the parameter whose flag takes a list (10,20,40), a
	// point for each value.
	Sweep string
	// Args, when set, names the parameter the command's arguments fill,
	// joined by commas (dbrig load script a.sql@2 select-only); it has no
	// flag then. ArgsUsage is how the usage line names them.
	Args, ArgsUsage string
	// ArgFlags are flags that add to the arguments, each given as often as
	// wanted, in the order given (pgbench's -f FILE and -b NAME); Name,
	// Short and Help are read.
	ArgFlags []FlagSpec
	// Fixed are the parameters the command sets itself, with no flag (the
	// instance that holds the data is the one server, "db").
	Fixed Params
	// Defaults are the command's defaults where they differ from a study
	// file's (a quick command runs fewer streams than the seed did).
	Defaults Params
	// VirtualUsers says that the kind runs on the load layer's virtual
	// users (internal/load): its command can spread them over load agents
	// and serve their metrics as they run.
	VirtualUsers bool
	// Describe says what one load is: the head of its study and the
	// settings of a server dbrig starts for it.
	Describe func(LoadValues) LoadHead
}

// LoadValues are one load's values, as Describe reads them.
type LoadValues struct {
	// Engine is the server's: the one dbrig starts, or the target's.
	Engine string
	// Target says the server is the user's: dbrig sets none of its
	// settings.
	Target bool
	// Params holds every parameter in canonical form: the flags', else
	// the command's defaults, else the declared ones (a required one the
	// user left out is missing). The swept one holds its first value.
	Params Params
	// Sweep is the swept parameter's values, one point each.
	Sweep []any
}

// LoadHead is a load's study head and the settings it asks of a server
// dbrig starts.
type LoadHead struct {
	Title, Question, Source string
	// Settings of the server dbrig starts (none on a target); a value may
	// name the swept parameter ("${degree}").
	Settings map[string]any
}

// FlagSpec is how a parameter reads as a flag of dbrig load KIND. The zero
// value is a flag named as the parameter in kebab case (warm_up:
// --warm-up), taking the parameter's kind of value, with its Doc as help.
type FlagSpec struct {
	// Name is the flag's name when it is not the parameter's in kebab
	// case (--scale for scale_factor, --runs for streams).
	Name string
	// Help replaces Doc when Doc reads wrong on a command line; a word in
	// backquotes names the value in the usage line (`N`).
	Help string
	// Want replaces what the flag's error says it takes, when the bounds
	// alone say it badly ("want the TPC-H scale factor, ...").
	Want string
	// Switch makes a String parameter's flag a boolean that, given,
	// selects this choice (--think-fixed for think_distribution =
	// "fixed").
	Switch string
	// Short is the flag's one-letter shorthand (-M for --protocol, as
	// pgbench spells it).
	Short string
	// Repeat lets a String parameter's flag be given more than once, its
	// values joined by commas (-D a=1 -D b=2 for define = "a=1,b=2").
	Repeat bool
}

// FlagName is the parameter's flag in dbrig load KIND, without dashes.
func (ps ParamSpec) FlagName() string {
	if ps.Flag.Name != "" {
		return ps.Flag.Name
	}
	return strings.ReplaceAll(ps.Name, "_", "-")
}

// FlagHelp is the flag's help.
func (ps ParamSpec) FlagHelp() string {
	if ps.Flag.Help != "" {
		return ps.Flag.Help
	}
	return ps.Doc
}

// FlagWant says what the parameter's flag takes, for its error: the
// declared Want, else a number's range and why, else "" (the error of the
// value's own check then says it).
func (ps ParamSpec) FlagWant(list bool) string {
	if ps.Flag.Want != "" {
		return ps.Flag.Want
	}
	why := ""
	if ps.Why != "" {
		why = " (" + ps.Why + ")"
	}
	least := int64(1)
	if ps.AllowZero {
		least = 0
	}
	least = max(least, ps.Min)
	switch {
	case ps.Type == IntParam && list:
		return "want whole numbers from " + strconv.FormatInt(least, 10) + " to " + strconv.FormatInt(ps.Max, 10) + why
	case ps.Type == IntParam:
		return "want " + strconv.FormatInt(least, 10) + " to " + strconv.FormatInt(ps.Max, 10) + why
	case ps.Type == FloatParam && ps.AllowZero:
		return "want a number from 0 to " + strconv.FormatFloat(ps.MaxFloat, 'f', -1, 64) + why
	case ps.Type == FloatParam:
		return "want a number above 0 and at most " + strconv.FormatFloat(ps.MaxFloat, 'f', -1, 64) + why
	}
	return ""
}
