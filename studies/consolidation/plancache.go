package consolidation

import (
	"fmt"
	"math"

	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/study"
)

// planKept: a backend that keeps less than this share of the compiled
// code it kept with the fewest databases has had plans dropped, as the
// seed's shared procedure cache dropped them. Chosen before any
// measurement: a backend's plans are its functions', which do not change
// with the databases, so anything near 1 is all of them kept.
const planKept = 0.80

// judgePlanCache sets the seed's plan-cache mechanism (every database's
// plans competing for one cache, dropped and recompiled when they do not
// fit) against what the engine has instead, on the databases experiment:
// whether a backend kept all its plans as the databases grew, and what a
// recompilation would cost a call (a function's first call on a
// connection against its later calls).
func judgePlanCache(a *analysis, engine string, p study.Published) report.Finding {
	ps := sortedBy(a.points(engine, expDatabases), "databases_per_instance")
	if len(ps) < 2 {
		return study.NotMeasured(p, "Needs the experiment \"databases\" with at least two database counts on one instance.")
	}
	few, many := ps[0], ps[len(ps)-1]
	first, later := many.mean("first_call_ms"), many.mean("later_call_ms")
	if math.IsNaN(first) || math.IsNaN(later) {
		return study.NotMeasured(p, "No connection timed its functions' first and later calls: the workload ran with prime = false.")
	}
	compile, noise := first-later, many.mean("compile_noise_ms")
	if math.IsNaN(noise) {
		noise = 0 // one connection: no spread to judge by
	}
	calls := fmt.Sprintf("at %s a function's first call on a connection took %.3f ms and later calls %.3f ms: compiling cost %.3f ms a call (±%.3f)",
		many.label(), first, later, compile, noise)
	pf, pm := few.mean("plan_cache_bytes"), many.mean("plan_cache_bytes")
	if math.IsNaN(pf) || math.IsNaN(pm) {
		f := study.NotMeasured(p, planMemoryUnknown(engine))
		f.Measured = calls
		return f
	}
	fns := many.mean("functions")
	f := report.Finding{
		Published: p.Finding,
		Measured: fmt.Sprintf("%s; a backend's compiled functions and plans %s at %s and %s at %s (%s a function); the instance's %s at %s",
			calls, size(pf), few.label(), size(pm), many.label(), size(pm/fns), size(pm*many.mean("databases_per_instance")), many.label()),
		Model: fmt.Sprintf("a backend serves one database and keeps its functions' plans: %.0f functions × %.0f databases = %.0f compiled functions on the instance, none dropped",
			fns, many.mean("databases_per_instance"), fns*many.mean("databases_per_instance")),
	}
	kept := pm / pf
	switch {
	case compile <= noise:
		f.Verdict = report.WithinNoise
		f.Why = fmt.Sprintf("A first call was %.3f ms slower than a later one, within the connections' spread (±%.3f ms): what compiling a function again would cost cannot be told from the noise, so neither can the seed's recompilations.", compile, noise)
	case kept < planKept:
		f.Verdict = report.Reproduced
		f.Why = fmt.Sprintf("Each backend kept %.0f %% of the compiled code at %s that it kept at %s (less than %.0f %% counts as plans dropped): plans were dropped as the databases grew, and a call whose plan is gone pays the compile again, %.3f ms against %.3f, as the seed's recompilations did.",
			100*kept, many.label(), few.label(), 100*planKept, first, later)
	default:
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("Each backend kept %.0f %% at %s of what it kept at %s (less than %.0f %% would be plans dropped): PostgreSQL has no shared plan cache with a bound; each backend keeps the compiled functions (and their statements' plans) of the one database it serves for as long as it lives, so nothing was dropped and no call compiled again. What a recompilation would cost is measured: %.3f ms for a first call against %.3f ms later (%.1fx). The pressure shows as memory instead, growing with databases × functions: at this cost per backend the seed's 500 databases would hold %s of compiled functions and its 4,000 %s.",
			100*kept, many.label(), few.label(), 100*planKept, first, later, first/later, size(500*pm), size(4000*pm))
	}
	return f
}

// planMemoryUnknown says why a run could not tell whether plans were
// dropped.
func planMemoryUnknown(engine string) string {
	if engine == "mariadb" {
		return "MariaDB counts a connection's memory only in all (MEMORY_USED): its cache of compiled stored procedures (stored_program_cache, 256 routines a connection by default, above the 200 a database has) is not counted apart, so whether procedures were dropped cannot be read. The first and later calls are measured."
	}
	return "The login could not read pg_backend_memory_contexts (a target's login may not), so a backend's compiled functions were not counted. The first and later calls are measured."
}
