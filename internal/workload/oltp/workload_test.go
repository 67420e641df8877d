package oltp

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/mariadb/mariatest"
	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
	"github.com/dbrig/dbrig/internal/load"
	"github.com/dbrig/dbrig/internal/workload"
	"github.com/dbrig/dbrig/internal/workload/workloadtest"
)

func testWorkload(t *testing.T, p workload.Params) *oltp {
	t.Helper()
	full := workload.Params{}
	for _, ps := range params() {
		if ps.Default != nil {
			v, err := ps.Normalize(ps.Default)
			if err != nil {
				t.Fatal(err)
			}
			full[ps.Name] = v
		}
	}
	for k, v := range p {
		full[k] = v
	}
	w, err := newWorkload(full)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestShopOnEachEngine prepares the shop at a small scale on a real server
// of each engine, runs the shop mix with a few users, and checks what the
// transactions did to the data: every type ran without an error, and the
// stock taken equals the quantities of the orders placed.
func TestShopOnEachEngine(t *testing.T) {
	for _, tc := range []struct {
		engine string
		start  func(t *testing.T) engine.Instance
	}{
		{"postgres", func(t *testing.T) engine.Instance { return pgtest.Start(t, "oltp", nil) }},
		{"mariadb", func(t *testing.T) engine.Instance { return mariatest.Start(t, "oltp", nil) }},
	} {
		t.Run(tc.engine, func(t *testing.T) {
			inst := tc.start(t)
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
			defer cancel()
			env := workloadtest.Env("dbrig_oltp_test", inst)
			p := workload.Params{"scale_factor": 0.01, "users": int64(4), "duration": "2s", "warm_up": "500ms", "mix": "shop"}
			if err := testWorkload(t, p).Prepare(ctx, env); err != nil {
				t.Fatalf("prepare: %v", err)
			}
			var seconds []load.Interval
			w := testWorkload(t, p)
			w.live = &Live{OnInterval: func(iv load.Interval) { seconds = append(seconds, iv) }}
			m, err := w.Run(ctx, env)
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			t.Logf("tps %.0f p50 %.2f ms p99 %.2f ms; notes %q", m.Metrics["tps"], m.Metrics["p50_ms"], m.Metrics["p99_ms"], m.Notes)
			if m.Metrics["tps"] <= 0 || m.Metrics["errors"] != 0 {
				t.Errorf("tps %v, errors %v (%q)", m.Metrics["tps"], m.Metrics["errors"], m.Notes)
			}
			for _, tx := range Mixes[0].types() {
				if m.Metrics[tx.metricName()+"_tps"] <= 0 {
					t.Errorf("%s did not run: %v", tx, m.Metrics)
				}
				if h := m.Histograms["latency/"+tx.String()]; h == nil || h.Count() == 0 {
					t.Errorf("no distribution of %s", tx)
				}
			}
			if len(seconds) < 2 || len(m.Series["tps"]) < 2 {
				t.Errorf("%d seconds seen live, %d in the series", len(seconds), len(m.Series["tps"]))
			}

			// Every order placed in the run took its quantities from stock.
			login, _ := inst.UnixLogin(env.Database)
			a, err := openAdmin(ctx, login)
			if err != nil {
				t.Fatal(err)
			}
			defer a.close()
			loaded := SizesAt(0.01).Orders
			orders, err := a.queryInt(ctx, "SELECT count(*) FROM orders WHERE id > "+strconv.FormatInt(loaded, 10))
			if err != nil {
				t.Fatal(err)
			}
			sold, err := a.queryInt(ctx, "SELECT CAST(sum(sold) AS SIGNED INTEGER) FROM stock")
			if tc.engine == "postgres" {
				sold, err = a.queryInt(ctx, "SELECT sum(sold)::bigint FROM stock")
			}
			if err != nil {
				t.Fatal(err)
			}
			ordered, err := a.queryInt(ctx, "SELECT coalesce(sum(quantity), 0) FROM order_lines WHERE order_id > "+strconv.FormatInt(loaded, 10))
			if err != nil {
				t.Fatal(err)
			}
			placed := m.Metrics["place_order_tps"] * m.Metrics["measured_s"]
			if orders == 0 || sold != ordered || float64(orders) < placed {
				t.Errorf("%d orders placed (%.0f in the measured interval), %d items sold from stock, %d ordered", orders, placed, sold, ordered)
			}

			// The reporting query runs over the same data, orders just
			// placed included, on the engine's own SQL.
			rm, err := testWorkload(t, workload.Params{"scale_factor": 0.01, "users": int64(2), "duration": "1s", "warm_up": "200ms", "mix": "reporting"}).Run(ctx, env)
			if err != nil {
				t.Fatalf("run the reporting mix: %v", err)
			}
			if rm.Metrics["report_tps"] <= 0 || rm.Metrics["errors"] != 0 || rm.Histograms["latency"].Count() == 0 {
				t.Errorf("reporting: %v (%q)", rm.Metrics, rm.Notes)
			}
			t.Logf("reporting: tps %.1f mean %.2f ms", rm.Metrics["tps"], rm.Metrics["mean_ms"])
		})
	}
}
