package tenants

import (
	"context"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine/mariadb/mariatest"
	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
	"github.com/dbrig/dbrig/internal/workload"
	"github.com/dbrig/dbrig/internal/workload/workloadtest"
)

func params(databases int, extra map[string]any) workload.Params {
	p := workload.Params{"databases": int64(databases), "functions": int64(12), "size": int64(200_000),
		"think": "5ms", "warm_up": "1s", "duration": "3s", "set": "db", "parallel": int64(3), "prime": true}
	for k, v := range extra {
		p[k] = v
	}
	return p
}

func newTest(t *testing.T, p workload.Params) *tenants {
	t.Helper()
	w, err := newWorkload(p)
	if err != nil {
		t.Fatal(err)
	}
	return w.(*tenants)
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// TestPostgresTenants prepares databases from a template on a server dbrig
// owns, keeps them for a smaller count, runs the mix through the
// functions, and records throughput, memory per backend and per instance.
func TestPostgresTenants(t *testing.T) {
	inst := pgtest.Start(t, "db", map[string]string{"shared_buffers": "32MB"})
	ctx := ctxFor(t, 3*time.Minute)
	env := workloadtest.Env("dbrig_tenants_test", inst)
	var progress []int64
	env.Progress = func(done, total int64) { progress = append(progress, done) }
	w := newTest(t, params(5, nil))
	if err := w.Prepare(ctx, env); err != nil {
		t.Fatal(err)
	}
	if len(progress) != 5 || progress[4] != 5 {
		t.Errorf("progress while preparing 5 databases: %v", progress)
	}
	// Fewer databases: the extra ones are dropped, the rest kept.
	w3 := newTest(t, params(3, nil))
	if err := w3.Prepare(ctx, env); err != nil {
		t.Fatal(err)
	}
	var names []string
	conn, err := inst.Connect(ctx, "postgres")
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := conn.Query(ctx, "SELECT datname FROM pg_database WHERE datname LIKE 'dbrig_tenants_test_t%' ORDER BY 1")
	for rows.Next() {
		var n string
		rows.Scan(&n)
		names = append(names, n)
	}
	var fns int
	conn.Close(ctx)
	tc, err := inst.Connect(ctx, "dbrig_tenants_test_t0002")
	if err != nil {
		t.Fatal(err)
	}
	tc.QueryRow(ctx, "SELECT count(*) FROM pg_proc WHERE pronamespace = 'public'::regnamespace").Scan(&fns)
	tc.Close(ctx)
	if strings.Join(names, ",") != "dbrig_tenants_test_t0001,dbrig_tenants_test_t0002,dbrig_tenants_test_t0003" || fns != 12 {
		t.Fatalf("after preparing 3: databases %v, %d functions in one", names, fns)
	}

	seconds := recordSeconds(env)
	m, err := w3.Run(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	checkSeconds(t, seconds(), m, 3)
	mm := m.Metrics
	for _, k := range []string{"tpm", "tpm_per_db", "response_ms", "cpu_ms_per_tx", "backend_private_bytes", "backend_context_bytes",
		"plan_cache_bytes", "instance_memory_bytes", "buffer_hit_pct", "buffer_bytes", "tpm_db_min",
		"first_call_ms", "later_call_ms", "compile_noise_ms"} {
		if mm[k] <= 0 {
			t.Errorf("%s = %v; metrics %v", k, mm[k], mm)
		}
	}
	// pgtest's servers do not fsync: there is a count, and it is zero.
	if v, ok := mm["log_syncs_per_tx"]; !ok || v != 0 {
		t.Errorf("log_syncs_per_tx = %v, %v", v, ok)
	}
	// A closed loop of 3 connections with 5 ms think time: at most
	// 3 × 60 / 5 ms = 36,000 per minute.
	if mm["tpm"] > 36000 || mm["databases"] != 3 || mm["primed_share"] != 100 {
		t.Errorf("tpm %v, databases %v, primed %v", mm["tpm"], mm["databases"], mm["primed_share"])
	}
	if mm["buffer_bytes"] != 32<<20 || mm["log_for_pitr"] != 1 || mm["commit_waits_flush"] != 0 {
		t.Errorf("settings read back: buffers %v, pitr %v, commit waits %v", mm["buffer_bytes"], mm["log_for_pitr"], mm["commit_waits_flush"])
	}
	if m.Histograms["response"].Count() == 0 || m.Histograms["response/post"].Count() == 0 {
		t.Errorf("histograms: %v", m.Histograms)
	}
	t.Logf("metrics: %v\nnotes: %v", mm, m.Notes)
}

// TestMariaDBTenants builds each database in its own session and runs the
// mix through stored procedures.
func TestMariaDBTenants(t *testing.T) {
	inst := mariatest.Start(t, "db", nil)
	ctx := ctxFor(t, 3*time.Minute)
	env := workloadtest.Env("dbrig_tenants_test", inst)
	w := newTest(t, params(3, nil))
	if err := w.Prepare(ctx, env); err != nil {
		t.Fatal(err)
	}
	seconds := recordSeconds(env)
	m, err := w.Run(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	checkSeconds(t, seconds(), m, 3)
	mm := m.Metrics
	for _, k := range []string{"tpm", "response_ms", "cpu_ms_per_tx", "backend_context_bytes", "instance_memory_bytes", "buffer_bytes",
		"first_call_ms", "later_call_ms"} {
		if mm[k] <= 0 {
			t.Errorf("%s = %v; metrics %v", k, mm[k], mm)
		}
	}
	if mm["errors"] != 0 || len(m.Notes) != 1 {
		t.Errorf("errors %v, notes %v", mm["errors"], m.Notes)
	}
	if _, ok := mm["log_syncs_per_tx"]; !ok {
		t.Errorf("no log flushes counted: %v", mm)
	}
	t.Logf("metrics: %v\nnotes: %v", mm, m.Notes)
}

// recordSeconds keeps the seconds the run sends env (the dashboard's live
// feed), to read once the run has returned.
func recordSeconds(env *workload.Env) func() []workload.Second {
	var mu sync.Mutex
	var seconds []workload.Second
	env.Second = func(s workload.Second) {
		mu.Lock()
		defer mu.Unlock()
		seconds = append(seconds, s)
	}
	return func() []workload.Second {
		mu.Lock()
		defer mu.Unlock()
		return seconds
	}
}

// checkSeconds: the run sent its seconds over every tenant (the
// consolidation study's live view), warm-up and measured, each with its
// users, and the measured ones hold exactly the point's transactions and
// errors, with the percentiles of the seconds that had any.
func checkSeconds(t *testing.T, seconds []workload.Second, m workload.Measurement, users int) {
	t.Helper()
	phases := map[string]int{}
	var ops, failed float64
	lastEnd := 0.0
	for _, s := range seconds {
		phases[s.Phase]++
		length := s.EndS - lastEnd
		// A second ends when the load layer's ticker runs: on a busy
		// machine a little after the whole second (1.001 s once, at load
		// average 4), so only its order is judged, never its length.
		if s.Users != users || length <= 0 {
			t.Errorf("second %+v (%.3f s long), want %d users and an end after the last one's", s, length, users)
		}
		lastEnd = s.EndS
		if s.Phase != "measured" {
			continue
		}
		ops += math.Round(s.TPS * length)
		failed += float64(s.Errors)
		if s.TPS > 0 && (s.P50Ms <= 0 || s.P99Ms < s.P50Ms) {
			t.Errorf("measured second %+v: percentiles missing or out of order", s)
		}
	}
	if phases["warm-up"] < 1 || phases["measured"] < 3 {
		t.Errorf("seconds by phase = %v, want the warm-up's and the measured interval's (3 s)", phases)
	}
	if want := float64(m.Histograms["response"].Count()); ops != want || want == 0 {
		t.Errorf("the measured seconds count %v transactions, the point %v", ops, want)
	}
	if failed != m.Metrics["errors"] {
		t.Errorf("the measured seconds count %v errors, the point %v", failed, m.Metrics["errors"])
	}
}
