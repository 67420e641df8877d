package oltp

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/dbrig/dbrig/internal/engine/mariadb"
	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/load"
	"github.com/dbrig/dbrig/internal/workload"
)

// loadMode is `dbrig load oltp`: the mix under virtual users against one
// server, as a study of one instance, so that it runs, records and reports
// exactly as a study does (and `dbrig report`, `dbrig compare` read its
// run directory).
func loadMode() *workload.LoadMode {
	return &workload.LoadMode{
		Short: "An online shop's transactions under virtual users, closed or open loop",
		Long: `load oltp makes an online shop at scale factor S (100,000 customers and 10,000
items with their stock per unit, orders with their lines, carts), then runs a
mix of transactions under N virtual users, each with its own connection and
every statement prepared. It prints a line per second and ends with each
transaction type's throughput, response-time percentiles (p50, p95, p99,
p99.9, max) and errors by class.

Mixes: shop (browse 30, search 20, view-product 35, add-to-cart 10,
place-order 5; place-order is one write transaction that takes stock from
popular items, where concurrent orders wait for each other), point-select
(one primary-key lookup per transaction: pgbench -S's work), browse-only,
orders, reporting (a sales report over every order line), or weights such as
"view-product=9,place-order=1".

Closed loop (the default): each user runs a transaction, thinks (--think,
negative-exponential unless --think-fixed), and runs the next. Open loop
(--rate R): transactions arrive R times a second whatever the server does,
and each response time runs from the transaction's intended start, so a
stalled server shows the queueing its clients would see; arrivals that could
not start are counted, never dropped silently.

The run directory (runs/load-oltp-YYYYMMDD-HHMMSS unless --out) reads like a
study's: 'dbrig report' and 'dbrig compare' read it. --users 10,20,40 sweeps
the users. With --target URI the server is yours: dbrig never starts, stops
or reconfigures it, makes one database there and removes it at the end
(unless --keep). Without --target dbrig starts its own server and stops it.

Exit codes: 0 success, 1 the load failed, 2 bad flags, 130 interrupted.`,
		Example: `  dbrig load oltp --users 16 --duration 1m                  # a PostgreSQL server dbrig starts
  dbrig load oltp --engine mariadb --users 8 --duration 30s --mix point-select
  dbrig load oltp --users 32 --rate 2000 --duration 1m       # open loop: 2,000 arrivals a second
  dbrig load oltp --target env:MY_PG_URI --users 50 --think 1s --duration 10m
  dbrig load oltp --users 8 --duration 1m --json --metrics-addr :9464 > run.json`,
		Sweep:        "users",
		Fixed:        workload.Params{"instance": "db"},
		VirtualUsers: true,
		Describe:     describeLoad,
	}
}

// describeLoad is a load's study head and, on a server dbrig starts, enough
// connection slots for every user, the preparing session and the
// monitoring connection's reserved ones.
func describeLoad(v workload.LoadValues) workload.LoadHead {
	p := v.Params
	users, most := load.SweptUsers(v.Sweep)
	loop := "a closed loop"
	if rate := p.Float("rate"); rate > 0 {
		loop = fmt.Sprintf("an open loop at %s transactions per second", strconv.FormatFloat(rate, 'f', -1, 64))
	}
	head := workload.LoadHead{
		Title:    fmt.Sprintf("OLTP, mix %s, scale factor %s", p.String("mix"), formatScale(p.Float("scale_factor"))),
		Question: fmt.Sprintf("What throughput and response times does this server give the %s mix under %s virtual users in %s?", p.String("mix"), strings.Join(users, ", "), loop),
		Source:   "dbrig's online shop (seeds 001 and 002): browse, search, view product, add to cart, place order; or one primary-key lookup per transaction",
	}
	if need := most + 10; !v.Target && need > 100 && (v.Engine == postgres.Name || v.Engine == mariadb.Name) {
		head.Settings = map[string]any{"max_connections": need}
	}
	return head
}
