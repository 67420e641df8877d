package script

import (
	"errors"
	"fmt"
	"strings"

	"github.com/dbrig/dbrig/internal/engine/mariadb"
	"github.com/dbrig/dbrig/internal/load"
	"github.com/dbrig/dbrig/internal/workload"
)

// Bounds of the script's own parameters; the virtual users' are the load
// layer's (load.Params).
const (
	// MaxScale is pgbench's scale at 10 billion accounts, about 1.3 TB.
	MaxScale    = 100_000
	MaxScaleWhy = "100,000 accounts per unit: 10 billion accounts, about 1.3 TB of pgbench_accounts"
	// MaxTries bounds --max-tries.
	MaxTries    = 1_000_000
	MaxTriesWhy = "a million tries of one transaction; 0 tries until the run ends"
)

// params are the script's own parameters and the load layer's: its seed
// is pgbench's --random-seed.
func params() []workload.ParamSpec {
	own := []workload.ParamSpec{
		{Name: "script", Type: workload.StringParam, Default: "tpcb-like",
			Doc: "the scripts, FILE[@WEIGHT] separated by commas (pgbench -f), or the built-ins tpcb-like, simple-update, select-only (pgbench -b); a file is read beside the study file",
			Check: func(v any) error {
				_, err := parseList(fmt.Sprint(v))
				return err
			}},
		{Name: "define", Type: workload.StringParam, Default: "",
			Doc: "variables set before the run, NAME=VALUE separated by commas (pgbench -D); a value may hold a comma not followed by NAME=",
			Check: func(v any) error {
				_, err := ParseDefines(fmt.Sprint(v))
				return err
			},
			Flag: workload.FlagSpec{Short: "D", Repeat: true, Help: "set the script variable `NAME=VALUE` before the run (pgbench -D; repeat it for more)"}},
		{Name: "protocol", Type: workload.StringParam, Default: Simple, Choices: []string{Simple, Extended, Prepared},
			Doc:  "how statements go to the server (pgbench -M): the variables' text in the SQL, the extended protocol, or statements prepared once per connection",
			Flag: workload.FlagSpec{Short: "M", Help: "how statements go to the server, `simple|extended|prepared` (pgbench -M)"}},
		{Name: "max_tries", Type: workload.IntParam, Default: int64(1), AllowZero: true,
			Doc: "tries of a transaction that failed on a serialization failure or a deadlock (pgbench --max-tries); 0: until the run ends",
			Max: MaxTries, Why: MaxTriesWhy},
		{Name: "init", Type: workload.BoolParam, Default: false,
			Doc: "make pgbench's tables at scale before the run (pgbench -i)"},
		{Name: "scale", Type: workload.IntParam, Default: int64(1),
			Doc: "pgbench's scale: 100,000 accounts per unit, what init makes and :scale (the built-ins read it from pgbench_branches)",
			Max: MaxScale, Why: MaxScaleWhy,
			Flag: workload.FlagSpec{Help: "pgbench's scale `S`: 100,000 accounts per unit, what --init makes and :scale (pgbench -s)"}},
		{Name: "instance", Type: workload.StringParam, Default: "db", Doc: "the instance the scripts run on"},
	}
	return append(own, load.Params()...)
}

// checkFiles reads the scripts as the protocol and the definitions read
// them, and refuses, before anything starts, what pgbench would refuse or
// dbrig does not run, at the parameter that named them.
func checkFiles(p workload.Params, read workload.ReadFile) []workload.ParamError {
	if _, err := programOf(p, read, false); err != nil {
		return []workload.ParamError{{Param: "script", Err: err}}
	}
	return nil
}

// programOf reads the parameters' scripts for an engine.
func programOf(p workload.Params, read workload.ReadFile, mariaDB bool) (*Program, error) {
	sources, err := ParseFiles(p.String("script"), read)
	if err != nil {
		return nil, err
	}
	defines, err := ParseDefines(p.String("define"))
	if err != nil {
		return nil, err
	}
	return Parse(sources, Options{Protocol: p.String("protocol"), MariaDB: mariaDB, Defines: defines})
}

// ErrPipelineOnMariaDB is a script with \startpipeline meant for MariaDB,
// whose protocol answers each statement before it reads the next.
var ErrPipelineOnMariaDB = errors.New(`\startpipeline: MariaDB's protocol has no pipeline mode (each statement is answered before the next is read): run the script on PostgreSQL, or remove \startpipeline and \endpipeline`)

// CheckEngine refuses, before anything starts, what a program cannot do
// on an engine.
func (p *Program) CheckEngine(engineName string) error {
	if engineName != mariadb.Name {
		return nil
	}
	var errs []error
	for _, s := range p.Scripts {
		for _, c := range s.Commands {
			if c.Type == StartPipeline {
				errs = append(errs, &ParseError{File: s.Name, Line: c.Line, Msg: ErrPipelineOnMariaDB.Error()})
			}
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("on %s: %w", engineName, errors.Join(errs...))
	}
	return nil
}

// metricName makes a script's name into a metric prefix: the file's base
// name without its extension, lower case, other characters as _.
func metricName(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		name = name[i+1:]
	}
	if i := strings.LastIndexByte(name, '.'); i > 0 {
		name = name[:i]
	}
	b := []byte(strings.ToLower(name))
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			b[i] = '_'
		}
	}
	return string(b)
}
