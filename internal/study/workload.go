package study

import (
	"sort"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/workload"
)

// Registry holds the workload kinds and the engines dbrig knows, built
// explicitly in main.
type Registry struct {
	kinds    map[string]workload.Kind
	engines  *engine.Registry
	builtins []Builtin
}

// NewRegistry makes a registry of the engines, the workload kinds and the
// built-in studies.
func NewRegistry(engines *engine.Registry, kinds []workload.Kind, builtins ...Builtin) *Registry {
	r := &Registry{kinds: map[string]workload.Kind{}, engines: engines, builtins: builtins}
	for _, k := range kinds {
		r.kinds[k.Name] = k
	}
	return r
}

// Engines is the registry of engines.
func (r *Registry) Engines() *engine.Registry { return r.engines }

// Lookup finds a kind by name.
func (r *Registry) Lookup(name string) (workload.Kind, bool) {
	k, ok := r.kinds[name]
	return k, ok
}

// Names lists the kinds, sorted.
func (r *Registry) Names() []string {
	var out []string
	for n := range r.kinds {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
