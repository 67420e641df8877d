package script

import (
	"fmt"
	"strings"

	"github.com/dbrig/dbrig/internal/engine/mariadb"
	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/load"
	"github.com/dbrig/dbrig/internal/workload"
)

// loadMode is `dbrig load script`: pgbench's scripts under virtual users
// against one server, as a study of one instance, so that it runs,
// records and reports as a study does.
func loadMode() *workload.LoadMode {
	return &workload.LoadMode{
		Short: "pgbench-compatible scripts (yours, or pgbench's built-ins) under virtual users",
		Long: `load script runs pgbench scripts under N virtual users, each with its own
connection, on PostgreSQL or MariaDB: the files named as arguments, each
FILE[@WEIGHT] one transaction type chosen by its weight (pgbench -f), or the
built-ins tpcb-like, simple-update and select-only (pgbench -b; tpcb-like when
none is named). A file is read before anything starts, and refused with its
line when pgbench would refuse it or dbrig does not run it (\shell, \setshell,
psql's commands); the run directory keeps its text.

pgbench's flags: -D NAME=VALUE (--define), -M simple|extended|prepared
(--protocol), --max-tries, --scale with --init (pgbench -i -s: make its four
tables first), --seed (--random-seed), --users (-c), --duration (-T),
--rate (-R), --warm-up and --ramp-up.

It prints a line per second and ends as pgbench does: transactions, tps,
latency, each script's count, tps, failures and retries, and each
statement's latency (pgbench -r, from HDR histograms). A serialization
failure or a deadlock is retried up to --max-tries and counted as pgbench 15
counts it. --link puts an emulated network between the users and the server.

Exit codes: 0 success, 1 the load failed, 2 bad flags or script, 130
interrupted.`,
		Example: `  dbrig load script --init --scale 1 --users 8 --duration 1m           # tpcb-like on a server dbrig starts
  dbrig load script select-only --init --users 4 -M prepared --duration 30s
  dbrig load script orders.sql@9 report.sql@1 -D region=west --users 16 --max-tries 10
  dbrig load script select-only --init --link lan-1g,tukwila-blueridge --users 1,8
  dbrig load script tpcb-like --target env:MY_PG_URI --users 32 --json > run.json`,
		Sweep:     "users",
		Args:      "script",
		ArgsUsage: "[FILE[@WEIGHT] | tpcb-like | simple-update | select-only ...]",
		ArgFlags: []workload.FlagSpec{
			{Name: "file", Short: "f", Help: "a script `FILE[@WEIGHT]`, as an argument (pgbench -f; repeat it for more)"},
			{Name: "builtin", Short: "b", Help: "a built-in script `NAME[@WEIGHT]`: tpcb-like, simple-update, select-only, as an argument (pgbench -b; repeat it for more)"},
		},
		Fixed:        workload.Params{"instance": "db"},
		VirtualUsers: true,
		Describe:     describeLoad,
	}
}

// describeLoad is a load's study head and, on a server dbrig starts,
// enough connection slots for every user and dbrig's own sessions.
func describeLoad(v workload.LoadValues) workload.LoadHead {
	p := v.Params
	users, most := load.SweptUsers(v.Sweep)
	scripts := p.String("script")
	head := workload.LoadHead{
		Title:    "pgbench scripts: " + scripts,
		Question: fmt.Sprintf("What throughput and latency does this server give the scripts %s under %s virtual users, protocol %s?", scripts, strings.Join(users, ", "), p.String("protocol")),
		Source:   "pgbench 15's scripts and built-ins (tpcb-like, simple-update, select-only)",
	}
	if need := most + 10; !v.Target && need > 100 && (v.Engine == postgres.Name || v.Engine == mariadb.Name) {
		head.Settings = map[string]any{"max_connections": need}
	}
	return head
}
