package tpch

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/dbrig/dbrig/internal/workload"
)

// loadMode is `dbrig load tpch`: the stream of queries against one server
// at one or more degrees, as a study of one instance, so that it runs,
// records and reports exactly as a study does.
func loadMode() *workload.LoadMode {
	return &workload.LoadMode{
		Short: "A TPC-H power test: the 22 queries, each answer checked",
		Long: `load tpch loads TPC-H data at scale factor SF (tpchgen-cli's, streamed into
COPY), adds the keys and indexes, analyzes, records each query's answer from a
serial run (checked against the answers dbrig ships for the scale factors it
has them for), then runs the stream of 22 queries --runs times at each
--degree: the first stream is dropped, then each query's fastest and slowest,
and the rest averaged (seed 002's rule). Every answer of every stream must
match the serial run's, or the load fails.

--degree is PostgreSQL's max_parallel_workers_per_gather (0 = serial); give a
list (0,2,4) to compare degrees: the report then has each query's speedup and
Amdahl serial fraction. On a server dbrig starts the degree is a server
setting; on a target, dbrig's session sets it. MariaDB has no parallel query:
it runs degree 0 only.

Needs tpchgen-cli (scripts/install-deps installs it; DBRIG_TPCHGEN names it).`,
		Example: `  dbrig load tpch --scale 0.1                        # a server dbrig starts, serial
  dbrig load tpch --scale 1 --degree 0,2 --runs 4     # serial and two workers, with speedups
  dbrig load tpch --scale 1 --target env:MY_PG_URI    # your server; no password on the command line
  dbrig load tpch --scale 0.01 --json                 # a summary for machines on stdout`,
		Sweep:    "degree",
		Fixed:    workload.Params{"instance": "db"},
		Defaults: workload.Params{"streams": int64(4)},
		Describe: describeLoad,
	}
}

// describeLoad is a power test's study head and, on a PostgreSQL server
// dbrig starts, the settings that let each degree's workers run.
func describeLoad(v workload.LoadValues) workload.LoadHead {
	degrees := make([]string, len(v.Sweep))
	for i, d := range v.Sweep {
		n, _ := workload.IntOf(d)
		degrees[i] = strconv.FormatInt(n, 10)
	}
	sf := FormatScale(v.Params.Float("scale_factor"))
	head := workload.LoadHead{
		Title:    "TPC-H power test at scale factor " + sf,
		Question: fmt.Sprintf("How long does each of the 22 TPC-H queries take on this server at scale factor %s, degree %s?", sf, strings.Join(degrees, ", ")),
		Source:   "The TPC-H power test: the stream of 22 queries with the specification's validation parameters, repeated with seed 002's rule",
	}
	if !v.Target && v.Engine == "postgres" {
		head.Settings = map[string]any{
			"shared_buffers": "4GB", "work_mem": "64MB", "jit": "off", "max_worker_processes": int64(20),
			"max_parallel_workers": "${degree}", "max_parallel_workers_per_gather": "${degree}",
			"min_parallel_table_scan_size": int64(0), "min_parallel_index_scan_size": int64(0),
		}
	}
	return head
}
