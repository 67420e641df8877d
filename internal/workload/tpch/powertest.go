package tpch

import (
	"fmt"
	"strconv"
	"strings"
)

// PowerTest is what `dbrig load tpch` runs: the stream of queries against
// one server at one or more degrees, as a study of one instance, so that it
// runs, records and reports exactly as a study does.
type PowerTest struct {
	Engine  string  // "postgres"
	Scale   float64 // the TPC-H scale factor
	Degrees []int   // each a point
	Streams int
	Queries string
	// Target: the server is the user's: dbrig sets no server setting (the
	// workload's session sets the degree).
	Target bool
}

// StudyName is the power test's study name (its run directories are
// runs/load-tpch-<time>).
const StudyName = "load-tpch"

// Spec writes the power test as a study file.
func (p PowerTest) Spec() []byte {
	var b strings.Builder
	degrees := make([]string, len(p.Degrees))
	for i, d := range p.Degrees {
		degrees[i] = strconv.Itoa(d)
	}
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("# A TPC-H power test written by `dbrig load tpch`; `dbrig report DIR` rebuilds its report.\n")
	w("name = %q\n", StudyName)
	w("title = %q\n", "TPC-H power test at scale factor "+FormatScale(p.Scale))
	w("question = %q\n", fmt.Sprintf("How long does each of the 22 TPC-H queries take on this server at scale factor %s, degree %s?", FormatScale(p.Scale), strings.Join(degrees, ", ")))
	w("\n[source]\nstudy = %q\n", "The TPC-H power test: the stream of 22 queries with the specification's validation parameters, repeated with seed 002's rule")
	w("\n[[instance]]\nname = \"db\"\nengine = %q\n", p.Engine)
	if !p.Target && p.Engine == "postgres" {
		w(`[instance.settings]
shared_buffers = "4GB"
work_mem = "64MB"
jit = "off"
max_worker_processes = 20
max_parallel_workers = "${degree}"
max_parallel_workers_per_gather = "${degree}"
min_parallel_table_scan_size = 0
min_parallel_index_scan_size = 0
`)
	}
	// The client on the server's site: its unix socket when dbrig can reach
	// one, else the address the target's URI gives; no emulated link.
	w("\n[client]\nsite = \"db\"\n")
	w("\n[workload]\nkind = \"tpch\"\nscale_factor = %s\ndegree = \"${degree}\"\nstreams = %d\nqueries = %q\n", FormatScale(p.Scale), p.Streams, p.Queries)
	w("\n[sweep]\ndegree = [%s]\n\n[repeat]\nruns = 1\n", strings.Join(degrees, ", "))
	return []byte(b.String())
}
