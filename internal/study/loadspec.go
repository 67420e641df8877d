package study

import (
	"bytes"
	"fmt"
	"maps"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/dbrig/dbrig/internal/idleloop"
	"github.com/dbrig/dbrig/internal/workload"
)

// LoadRequest is one run of dbrig load KIND: a kind's values against one
// server.
type LoadRequest struct {
	Kind workload.Kind
	// Engine is the server's: the one dbrig starts, or the target's.
	Engine string
	// Target says the server is the user's.
	Target bool
	// Params are the values the user gave (the flags set); the others are
	// the command's defaults, else the declared ones.
	Params workload.Params
	// Sweep are the swept parameter's values (Kind.Load.Sweep), a point
	// each; none: one point at its default.
	Sweep []any
	// Link, when set, puts an emulated link between the users and the
	// server.
	Link *LoadLink
	// Idle is the client's idle ("halt" or "spin"; "" is halt).
	Idle string
}

// LoadLink is a load's link: the profiles (more than one sweeps them,
// crossed with the swept parameter) and the link's settings over them, as
// a [[link]] table writes them.
type LoadLink struct {
	Profiles []string
	Settings map[string]any
}

// loadLinkSweep is the sweep key of a load's link profiles.
const loadLinkSweep = "link"

// LoadName is the study name of dbrig load KIND: its run directories are
// runs/load-KIND-<time>, its database dbrig_load_KIND.
func LoadName(kind string) string { return "load-" + kind }

// loadFile is a load's study file, in the order a person reads one.
type loadFile struct {
	Name     string `toml:"name"`
	Title    string `toml:"title"`
	Question string `toml:"question"`
	Source   struct {
		Study string `toml:"study"`
	} `toml:"source"`
	Instance []loadInstance `toml:"instance"`
	Client   struct {
		Site string `toml:"site"`
		Idle string `toml:"idle,omitempty"`
	} `toml:"client"`
	Link     []map[string]any `toml:"link,omitempty"`
	Workload map[string]any   `toml:"workload"`
	Sweep    map[string][]any `toml:"sweep"`
	Repeat   struct {
		Runs int `toml:"runs"`
	} `toml:"repeat"`
}

type loadInstance struct {
	Name     string         `toml:"name"`
	Engine   string         `toml:"engine"`
	Settings map[string]any `toml:"settings,omitempty"`
}

// LoadSpec writes a load as a study file of one instance, "db", whose
// client is on the server's site (its unix socket when dbrig can reach
// one, else the address the target's URI gives), or behind the request's
// link, with a point of one run for each value of the swept parameter
// (and of the link's profiles). The values
// are written as given: Parse checks them as it checks any study file's.
func LoadSpec(req LoadRequest) ([]byte, error) {
	mode := req.Kind.Load
	if mode == nil || mode.Describe == nil {
		return nil, fmt.Errorf("workload %q has no load mode", req.Kind.Name)
	}
	values := workload.Params{}
	for _, p := range req.Kind.Params {
		if p.Default != nil {
			values[p.Name] = p.Default
		}
	}
	maps.Copy(values, mode.Defaults)
	maps.Copy(values, req.Params)
	maps.Copy(values, mode.Fixed)
	sweep := req.Sweep
	if len(sweep) == 0 {
		if v, ok := values[mode.Sweep]; ok {
			sweep = []any{v}
		}
	}
	if len(sweep) > 0 {
		values[mode.Sweep] = sweep[0]
	}
	head := mode.Describe(workload.LoadValues{Engine: req.Engine, Target: req.Target, Params: values, Sweep: sweep})
	f := loadFile{Name: LoadName(req.Kind.Name), Title: head.Title, Question: head.Question,
		Instance: []loadInstance{{Name: "db", Engine: req.Engine}}, Workload: map[string]any{"kind": req.Kind.Name}}
	f.Source.Study, f.Client.Site, f.Repeat.Runs = head.Source, "db", 1
	if !req.Target {
		f.Instance[0].Settings = head.Settings
	}
	maps.Copy(f.Workload, values)
	if len(sweep) > 0 {
		f.Workload[mode.Sweep] = "${" + mode.Sweep + "}"
		f.Sweep = map[string][]any{mode.Sweep: sweep}
	}
	f.addLink(req.Link)
	if req.Idle != "" && req.Idle != idleloop.Halt {
		f.Client.Idle = req.Idle
	}
	var b bytes.Buffer
	b.WriteString("# Written by `dbrig load " + req.Kind.Name + "`; `dbrig report DIR` rebuilds its report.\n")
	enc := toml.NewEncoder(&b)
	enc.Indent = ""
	if err := enc.Encode(f); err != nil {
		return nil, fmt.Errorf("write the load as a study file: %w", err)
	}
	return b.Bytes(), nil
}

// addLink writes a load's link as a study's: the users on a site of their
// own, a [[link]] between it and the server's, its profile swept when
// there are several.
func (f *loadFile) addLink(l *LoadLink) {
	if l == nil {
		return
	}
	table := map[string]any{"between": []string{"client", "db"}, "profile": "loopback"}
	maps.Copy(table, l.Settings)
	switch len(l.Profiles) {
	case 0: // the settings alone: over a link that changes nothing
	case 1:
		table["profile"] = l.Profiles[0]
	default:
		table["profile"] = "${" + loadLinkSweep + "}"
		if f.Sweep == nil {
			f.Sweep = map[string][]any{}
		}
		for _, p := range l.Profiles {
			f.Sweep[loadLinkSweep] = append(f.Sweep[loadLinkSweep], p)
		}
	}
	f.Client.Site, f.Link = "client", []map[string]any{table}
}

// ParseLoad writes a load as a study file and parses it: its values are
// refused as a study file's are, each SpecError at its parameter's key
// (workload.NAME) with the check's own error.
func ParseLoad(req LoadRequest, reg *Registry) (*Spec, error) {
	text, err := LoadSpec(req)
	if err != nil {
		return nil, err
	}
	return Parse(LoadName(req.Kind.Name)+".toml", text, reg)
}

// ParamOfKey names the workload parameter a study file's key sets
// (workload.NAME, sweep.NAME), or "".
func ParamOfKey(key string) string {
	for _, prefix := range []string{"workload.", "sweep."} {
		if name, ok := strings.CutPrefix(key, prefix); ok {
			return name
		}
	}
	return ""
}
