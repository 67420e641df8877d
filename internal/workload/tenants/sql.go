package tenants

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/dbrig/dbrig/internal/engine"
)

// engineSQL is what the tenants workload says in one engine's SQL and how
// it builds that engine's databases. The workload runs it through the
// engine's session (engine.Session) and names no driver: an engine joins
// by its entry in sqlByEngine and its schema (schema.go).
type engineSQL struct {
	// call is the statement that calls function k of family f.
	call func(f family, k int) string
	// primeInTransaction: priming calls every function in a transaction
	// it rolls back, so that nothing it writes stays.
	primeInTransaction bool
	// memory reads the connection's memory as the server counts it: one
	// row of its total and the part holding compiled functions and their
	// plans (NULL where unknown).
	memory string
	// counters and settings read an instance's counters and settings back
	// on dbrig's own session.
	counters func(ctx context.Context, s engine.Session) (counters, error)
	settings func(ctx context.Context, s engine.Session) (serverSettings, error)
	// builder makes the tenant databases of one instance.
	builder func(b buildBase) builder
}

var sqlByEngine = map[string]engineSQL{
	"postgres": {
		call: pgCallText, primeInTransaction: true, memory: pgMemorySQL,
		counters: pgCounters, settings: pgSettings,
		builder: func(b buildBase) builder { return &pgBuilder{buildBase: b} },
	},
	"mariadb": {
		call: mariaCallText, memory: mariaMemorySQL,
		counters: mariaCounters, settings: mariaSettings,
		builder: func(b buildBase) builder { return &mariaBuilder{buildBase: b} },
	},
}

// sqlOf is an engine's entry, or why the workload cannot run on it.
func sqlOf(engineName string) (engineSQL, error) {
	sq, ok := sqlByEngine[engineName]
	if !ok {
		names := make([]string, 0, len(sqlByEngine))
		for n := range sqlByEngine {
			names = append(names, n)
		}
		sort.Strings(names)
		return engineSQL{}, fmt.Errorf("the tenants workload has SQL for %s only, not for %q", strings.Join(names, " and "), engineName)
	}
	return sq, nil
}

// pgMemorySQL sums the backend's memory contexts, and those that hold the
// compiled functions and their plans.
const pgMemorySQL = `SELECT coalesce(sum(total_bytes), 0)::bigint,
  coalesce(sum(total_bytes) FILTER (WHERE name IN ('PL/pgSQL function', 'CachedPlan', 'CachedPlanSource', 'CachedPlanQuery', 'SPI Plan', 'PLpgSQL function hash')), 0)::bigint
FROM pg_backend_memory_contexts`

// mariaMemorySQL is the connection's memory as MariaDB counts it; the
// plans' part is unknown.
const mariaMemorySQL = `SELECT MEMORY_USED, NULL FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID()`

func pgCallText(f family, k int) string {
	n := map[string]int{"balance": 1, "statement": 1, "open_invoices": 1, "post": 3, "invoice": 2, "pay": 2}[f.name]
	args := "$1"
	for i := 2; i <= n; i++ {
		args += fmt.Sprintf(", $%d", i)
	}
	return fmt.Sprintf("SELECT %s(%s)", functionName(f, k), args)
}

func mariaCallText(f family, k int) string {
	n := map[string]int{"balance": 1, "statement": 1, "open_invoices": 1, "post": 3, "invoice": 2, "pay": 2}[f.name]
	args := "?"
	for i := 2; i <= n; i++ {
		args += ", ?"
	}
	return fmt.Sprintf("CALL %s(%s)", functionName(f, k), args)
}
