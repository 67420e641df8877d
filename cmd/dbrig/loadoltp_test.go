package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine/mariadb/mariatest"
	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
	"github.com/dbrig/dbrig/internal/study"
)

// oltpJSON is the part of `dbrig load oltp --json` the tests read.
type oltpJSON struct {
	Dir    string `json:"dir"`
	HTML   string `json:"report_html"`
	Engine string `json:"engine"`
	Server string `json:"server_version"`
	Target bool   `json:"target"`
	Mix    string `json:"mix"`
	Error  string `json:"error"`
	Points []struct {
		Users     int     `json:"users"`
		Mode      string  `json:"mode"`
		Rate      float64 `json:"rate"`
		MeasuredS float64 `json:"measured_s"`
		TPS       float64 `json:"tps"`
		Types     []struct {
			Name      string             `json:"name"`
			Ops       int64              `json:"ops"`
			Errors    map[string]int64   `json:"errors"`
			LatencyMs map[string]float64 `json:"latency_ms"`
			ServiceMs map[string]float64 `json:"service_ms"`
		} `json:"types"`
		NotStarted int64    `json:"not_started"`
		Notes      []string `json:"notes"`
		Error      string   `json:"error"`
		Series     []struct {
			Phase string  `json:"phase"`
			TPS   float64 `json:"tps"`
		} `json:"series"`
	} `json:"points"`
}

// TestLoadOLTP runs `dbrig load oltp` as a user would: the shop on a
// PostgreSQL server dbrig starts (JSON on stdout, a line per second on
// stderr, Prometheus metrics while it runs), point-select in an open loop
// on MariaDB, and the shop against a server the user runs; each run
// directory is read back by `dbrig report` and `dbrig compare`.
func TestLoadOLTP(t *testing.T) {
	t.Parallel()
	pgtest.Binaries(t)

	t.Run("own server", func(t *testing.T) {
		base := pgtest.BaseDir(t)
		dir := filepath.Join(t.TempDir(), "load")
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		// Two seconds: the run's lines are one a second, and its users
		// without think time keep both cores busy for every one.
		cmd := exec.CommandContext(ctx, dbrigBinary(t), "load", "oltp", "--users", "3", "--duration", "2s", "--warm-up", "500ms",
			"--scale", "0.01", "--json", "--metrics-addr", addr, "--out", dir)
		cmd.Env = append(os.Environ(), "TMPDIR="+base, "NO_COLOR=1")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		// Scrape the metrics until the run's transactions show.
		scraped := ""
		for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline) && cmd.ProcessState == nil; time.Sleep(200 * time.Millisecond) {
			resp, err := http.Get("http://" + addr + "/metrics")
			if err != nil {
				continue
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if strings.Contains(string(b), `dbrig_load_operations_total{type="place-order"}`) && !strings.Contains(string(b), `dbrig_load_operations_total{type="place-order"} 0`) {
				scraped = string(b)
				break
			}
		}
		err = cmd.Wait()
		if code := exitCode(err); code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, stdout.String(), stderr.String())
		}
		if scraped == "" {
			t.Errorf("the metrics never showed a place-order transaction")
		}
		j := decodeJSON[oltpJSON](t, stdout.String())
		if j.Dir != dir || j.Engine != "postgres" || j.Server == "" || j.Mix != "shop" || len(j.Points) != 1 {
			t.Fatalf("summary = %+v", j)
		}
		p := j.Points[0]
		if p.Users != 3 || p.Mode != "closed" || p.TPS <= 0 || p.MeasuredS < 1.9 || len(p.Types) != 5 || p.Error != "" {
			t.Errorf("point = %+v", p)
		}
		for _, ty := range p.Types {
			for _, q := range []string{"mean", "p50", "p95", "p99", "p99.9", "max"} {
				if ty.LatencyMs[q] <= 0 {
					t.Errorf("%s: no %s latency: %v", ty.Name, q, ty.LatencyMs)
				}
			}
			if _, ok := ty.Errors["deadlock"]; !ok {
				t.Errorf("%s: errors by class missing: %v", ty.Name, ty.Errors)
			}
		}
		if strings.Count(stderr.String(), " measured ") < 2 || strings.Count(stderr.String(), "warm-up") < 1 {
			t.Errorf("stderr lacks the per-second lines:\n%s", stderr.String())
		}
		if strings.Contains(stdout.String()+stderr.String(), "\x1b[") {
			t.Error("colour escapes in piped output")
		}
		pgtest.WaitNoServers(t, base, 10*time.Second)
		assertNoInstanceDirs(t, base)
		results, err := study.ReadResults(dir)
		if err != nil || len(results) != 1 || len(results[0].Monitor) != 1 || len(results[0].Monitor[0].Samples) < 2 {
			t.Fatalf("results: %+v, %v", results, err)
		}
		if code, out, errOut := runDbrig(t, base, nil, "report", dir); code != 0 || !strings.Contains(out, "report: ") {
			t.Errorf("dbrig report %s: exit %d\n%s\n%s", dir, code, out, errOut)
		}
		md, err := os.ReadFile(filepath.Join(dir, "report.md"))
		for _, want := range []string{"## Transactions", "place-order", "Servers while the points ran", "Each second"} {
			if err != nil || !strings.Contains(string(md), want) {
				t.Errorf("report.md lacks %q: %v", want, err)
			}
		}
		if code, out, errOut := runDbrig(t, base, nil, "compare", dir, dir); code != 0 || !strings.Contains(out, "users=3") {
			t.Errorf("dbrig compare: exit %d\n%s\n%s", code, out, errOut)
		}
		if code, out, errOut := runDbrig(t, base, nil, "diagnose", dir); code != 0 || !strings.Contains(out, "1 point diagnosed") {
			t.Errorf("dbrig diagnose: exit %d\n%s\n%s", code, out, errOut)
		}
	})

	t.Run("mariadb open loop", func(t *testing.T) {
		mariatest.Engine(t)
		base := pgtest.BaseDir(t)
		dir := filepath.Join(t.TempDir(), "load")
		code, stdout, stderr := runDbrig(t, base, nil, "load", "oltp", "--engine", "mariadb", "--mix", "point-select", "--users", "2",
			"--rate", "200", "--duration", "3s", "--warm-up", "1s", "--scale", "0.01", "--out", dir)
		if code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
		}
		// Without --json the lines and the table go to stdout.
		for _, want := range []string{"measured users 2", "open loop at 200/s", "point-select", "p99.9", "latency is measured from each operation's intended start", "report: "} {
			if !strings.Contains(stdout, want) {
				t.Errorf("stdout lacks %q:\n%s", want, stdout)
			}
		}
		results, err := study.ReadResults(dir)
		if err != nil || len(results) != 1 {
			t.Fatalf("results: %v", err)
		}
		// Poisson arrivals at 200/s for 3 s: 600 expected.
		if r := results[0]; r.Metrics["tps"] < 150 || r.Metrics["tps"] > 250 || r.Metrics["service_p50_ms"] <= 0 || r.Metrics["errors"] != 0 {
			t.Errorf("metrics: %v", r.Metrics)
		}
		if m := results[0].Monitor; len(m) != 1 || !strings.Contains(m[0].Via, "extra port") {
			t.Errorf("monitor: %+v", m)
		}
	})

	t.Run("target", func(t *testing.T) {
		server := pgtest.Start(t, "users-oltp", nil)
		base := pgtest.BaseDir(t)
		dir := filepath.Join(t.TempDir(), "load")
		login := server.Conn("postgres")
		code, stdout, stderr := runDbrig(t, base, []string{"MY_PG=" + login.URI()},
			"load", "oltp", "--target", "env:MY_PG", "--users", "2", "--duration", "2s", "--warm-up", "500ms", "--scale", "0.01", "--json", "--out", dir)
		if code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
		}
		j := decodeJSON[oltpJSON](t, stdout)
		if !j.Target || len(j.Points) != 1 || j.Points[0].TPS <= 0 || !strings.HasPrefix(j.Server, server.Version()) {
			t.Fatalf("summary = %+v", j)
		}
		// The users connect as the target's login, a superuser: the run says
		// what that means for monitoring.
		if !strings.Contains(strings.Join(j.Points[0].Notes, " "), "superuser") {
			t.Errorf("notes: %q", j.Points[0].Notes)
		}
		if err := server.Exec(context.Background(), "dbrig_load_oltp", "SELECT 1"); err == nil {
			t.Error("the workload's database is still on the user's server")
		}
		assertNoPassword(t, dir, stdout+stderr, login.Password())
		if code, out, errOut := runDbrig(t, base, nil, "diagnose", dir); code != 0 || !strings.Contains(out, "No retransmission-stall signature") {
			t.Errorf("dbrig diagnose on a run against a target: exit %d\n%s\n%s", code, out, errOut)
		}
	})
}

func TestLoadOLTPUsage(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"load", "oltp", "--users", "0"}, "--users 0: want whole numbers"},
		{[]string{"load", "oltp", "--users", "ten"}, "--users ten"},
		{[]string{"load", "oltp", "--mix", "checkout"}, "--mix \"checkout\": want one of shop, point-select"},
		{[]string{"load", "oltp", "--mix", "browse=x"}, "the weight of browse"},
		{[]string{"load", "oltp", "--scale", "0"}, "--scale 0"},
		{[]string{"load", "oltp", "--duration", "0s"}, "--duration 0s"},
		{[]string{"load", "oltp", "--rate", "-5"}, "--rate -5"},
		{[]string{"load", "oltp", "--rate", "100", "--think", "1s"}, "closed-loop settings"},
		{[]string{"load", "oltp", "--max-in-flight", "10"}, "an open-loop setting"},
		{[]string{"load", "oltp", "--users", "200000"}, "--users 200000: want whole numbers from 1 to 100000"},
		{[]string{"load", "oltp", "--rate", "1e9"}, "--rate 1e+09: want transactions per second up to 10000000"},
		{[]string{"load", "oltp", "--rate", "5", "--max-in-flight", "1000000000000"}, "--max-in-flight 1000000000000: want 0 to 16777216 (the queue of arrivals is allocated whole"},
		{[]string{"load", "oltp", "--duration", "1000000h"}, "--duration 1000000h0m0s: at most 168h0m0s (a week"},
		{[]string{"load", "oltp", "--think", "1000000h"}, "--think 1000000h0m0s: at most 168h0m0s"},
		{[]string{"load", "oltp", "--ramp-up", "10s", "--warm-up", "5s"}, "--ramp-up 10s"},
		{[]string{"load", "oltp", "--arrival", "bursty", "--rate", "5"}, "--arrival bursty"},
		{[]string{"load", "oltp", "--engine", "oracle"}, "--engine oracle: want one of"},
		{[]string{"load", "oltp", "--engine", "postgres", "--target", "postgres://u@127.0.0.1:1/db"}, "--target and --engine"},
		{[]string{"load", "oltp", "--target", "db2://u:sekrit@h/db"}, "unknown connection scheme"},
		{[]string{"load", "oltp", "--metrics-addr", "nowhere"}, "--metrics-addr"},
	} {
		code, stdout, stderr := runDbrig(t, base, nil, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.says) || strings.Contains(stdout+stderr, "sekrit") {
			t.Errorf("dbrig %s: exit %d, stderr %q; want 2 saying %q", strings.Join(tc.args, " "), code, stderr, tc.says)
		}
	}
}
