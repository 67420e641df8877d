package loadoltp

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/mariadb"
	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/measure"
	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/workload"
	"github.com/dbrig/dbrig/internal/workload/oltp"
)

// sweptRun is hand-made run data of `dbrig load oltp --users 10,20` with a
// second swept dimension, net, as a study over transports has: each point
// one run of the shop, with its distributions.
func sweptRun(t *testing.T) *study.RunData {
	t.Helper()
	reg := study.NewRegistry(engine.NewRegistry(postgres.New(""), mariadb.New("")), []workload.Kind{oltp.Kind()}, Study())
	spec, err := study.ParseLoad(study.LoadRequest{Kind: oltp.Kind(), Engine: "postgres",
		Params: workload.Params{"scale_factor": 0.01, "duration": "1s"}, Sweep: []any{int64(10), int64(20)}}, reg)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := spec.Plan("")
	if err != nil {
		t.Fatal(err)
	}
	spec.SweepKeys = append(spec.SweepKeys, "net")
	var results []workload.Result
	for _, net := range []string{"unix", "lan-1g"} {
		for _, users := range []int{10, 20} {
			tps := float64(users) * 100
			if net == "lan-1g" {
				tps /= 2
			}
			m := map[string]float64{"tps": tps, "errors": 1, "over_limit": 0}
			hist := map[string]*measure.Histogram{"latency": measure.NewHistogram()}
			for _, tx := range oltp.Mixes[0].TxTypes() {
				m[oltp.TxMetricName(tx.Name)+"_tps"] = tps / 5
				m[oltp.TxMetricName(tx.Name)+"_errors"] = 0
				h := measure.NewHistogram()
				h.Record(time.Duration(users) * time.Millisecond)
				hist["latency/"+tx.Name] = h
				hist["latency"].Merge(h)
			}
			combo := fmt.Sprintf("users=%d net=%s", users, net)
			results = append(results, workload.Result{Key: combo + " #1", Combo: combo, Run: 1,
				Values: map[string]any{"users": int64(users), "net": net},
				Params: workload.Params{"users": int64(users), "mix": "shop"}, Metrics: m, Histograms: hist,
				Series: map[string][]float64{"tps": {tps, tps}, "p50_ms": {1, 1}, "p99_ms": {2, 2}, "max_ms": {3, 3}}, SeriesInterval: 1})
		}
	}
	return &study.RunData{Spec: spec, Plan: plan, Results: results, Summaries: study.Summarize(results, plan.Repeat)}
}

func TestReportKeepsEverySweptDimension(t *testing.T) {
	rd := sweptRun(t)
	d := &report.Doc{}
	Report(rd, d)
	var users *report.Chart
	for i := range d.Charts {
		if d.Charts[i].ID == "oltp-users" {
			users = &d.Charts[i]
		}
	}
	if users == nil {
		t.Fatalf("no throughput-against-users chart: %+v", d.Charts)
	}
	var lines []string
	for _, s := range users.Series {
		if s.Style == report.Line {
			lines = append(lines, s.Name)
			if len(s.Points) != 2 {
				t.Errorf("line %s has %d points, want one per users value", s.Name, len(s.Points))
			}
		}
	}
	if strings.Join(lines, ";") != "net=unix;net=lan-1g" {
		t.Errorf("lines %q: want one per net", lines)
	}
	var titles []string
	for _, sec := range d.Sections {
		titles = append(titles, sec.Title)
	}
	if strings.Join(titles, "; ") != "Transactions; Peak throughput and the knee; Retransmission stalls (dbrig diagnose)" {
		t.Fatalf("sections %q", titles)
	}
	rows := d.Sections[0].Tables[0].Rows
	if len(rows) != 4*6 { // 4 combinations, all and 5 types each
		t.Fatalf("%d rows in the transactions table, want 24", len(rows))
	}
	for _, r := range rows {
		if r[2] == "place-order" && r[0] == "20" && r[1] == "lan-1g" && (r[3] != "200" || !strings.HasPrefix(r[7], "20.0")) {
			t.Errorf("place-order at users=20 net=lan-1g: %q", r)
		}
	}
	// Four combinations: each one's seconds charted, the rate and the
	// response times on charts of their own, one unit per axis.
	seconds := 0
	for _, c := range d.Charts {
		if !strings.HasPrefix(c.ID, "oltp-seconds-") {
			continue
		}
		seconds++
		var names []string
		for _, sr := range c.Series {
			names = append(names, sr.Name)
		}
		if got := strings.Join(names, ","); got != "tps" && got != "p50,p99,max" {
			t.Errorf("chart %s draws %s: the rate and the response times share an axis", c.ID, got)
		}
	}
	if seconds != 8 {
		t.Errorf("%d per-second charts, want 8 (two per combination)", seconds)
	}
}

// TestRegisteredForTheWorkload: the sections are registered under the
// workload kind's own name (there is no study file to say it), or no run
// draws them.
func TestRegisteredForTheWorkload(t *testing.T) {
	if got, want := Study().Workload, oltp.Kind().Name; got != want {
		t.Errorf("registered for workload %q; the kind is %q", got, want)
	}
}

// TestResponseLegendNamesTheResponse: with one curve (no facet) the
// response chart's lines are the mean response and its model, not "tps".
func TestResponseLegendNamesTheResponse(t *testing.T) {
	rd := sweptRun(t)
	rd.Spec.SweepKeys = slices.DeleteFunc(slices.Clone(rd.Spec.SweepKeys), func(k string) bool { return k == "net" })
	var kept []workload.Result
	for _, r := range rd.Results {
		if r.Values["net"] == "unix" {
			r.Values = map[string]any{"users": r.Values["users"]}
			r.Combo = fmt.Sprintf("users=%d", r.Params.Int("users"))
			kept = append(kept, r)
		}
	}
	rd.Results, rd.Summaries = kept, study.Summarize(kept, rd.Plan.Repeat)
	found := false
	for _, c := range study.BuildReport(rd).Charts {
		if !strings.HasPrefix(c.ID, "oltp-response") {
			continue
		}
		found = true
		for _, sr := range c.Series {
			if strings.HasPrefix(sr.Name, "tps") {
				t.Errorf("response chart %s has a line named %q", c.ID, sr.Name)
			}
		}
	}
	if !found {
		t.Fatal("no response chart")
	}
}
