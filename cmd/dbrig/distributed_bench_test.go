package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/agent/netnstest"
	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
)

// BenchmarkAgentsVsOneProcess runs the same load on the same server (in its
// own namespace, started there by an agent) from one process and spread
// over two agents in two other namespaces, alternating rounds so that a
// disturbance of the shared machine falls on both, and prints each round's
// throughput and percentiles and each side's median, and what the agents'
// control channels carried. Run with
//
//	go test -run '^$' -bench AgentsVsOneProcess -benchtime 1x ./cmd/dbrig/
func BenchmarkAgentsVsOneProcess(b *testing.B) {
	pgtest.Binaries(b)
	lab := netnstest.Start(b, 3)
	bin := dbrigBinary(b)
	dir := b.TempDir()
	agentsFile := filepath.Join(dir, "agents")
	if err := os.WriteFile(agentsFile, []byte(lab.Hosts[1].Target(lab.User)+"\n"+lab.Hosts[2].Target(lab.User)+"\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	users, dur, rounds := envOr("DBRIG_BENCH_USERS", "8"), envOr("DBRIG_BENCH_DURATION", "10s"), 3
	common := []string{"load", "oltp", "--host", "db=ssh://" + lab.Hosts[0].Target(lab.User), "--ssh-config", lab.ConfigFile,
		"--agent-bin", bin, "--scale", "0.1", "--mix", envOr("DBRIG_BENCH_MIX", "point-select"), "--users", users,
		"--warm-up", "2s", "--duration", dur, "--json"}
	type point struct{ tps, p50, p99, p999 float64 }
	results := map[string][]point{}
	for i := range b.N * rounds {
		for _, side := range []string{"one process", "two agents"} {
			args := append(append([]string{}, common...), "--out", filepath.Join(dir, fmt.Sprintf("r%d-%s", i, strings.ReplaceAll(side, " ", "-"))))
			if side == "two agents" {
				args = append(args, "--agents", agentsFile)
			}
			cmd := exec.Command(bin, args...)
			cmd.Env = append(os.Environ(), "NO_COLOR=1")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				b.Fatalf("%s: %v\n%s", side, err, stderr.String())
			}
			var sum struct {
				Points []struct {
					Overall struct {
						TPS       float64            `json:"tps"`
						LatencyMs map[string]float64 `json:"latency_ms"`
					} `json:"overall"`
				} `json:"points"`
				Agents [][]struct {
					Name      string
					Ops       int64 `json:"ops"`
					Intervals int   `json:"intervals"`
					Traffic   struct {
						In, Out  int64
						InByType map[string]int64
					} `json:"traffic"`
				} `json:"agents"`
			}
			if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil || len(sum.Points) != 1 {
				b.Fatalf("%s: %v %s", side, err, stdout.String())
			}
			o := sum.Points[0].Overall
			p := point{o.TPS, o.LatencyMs["p50"], o.LatencyMs["p99"], o.LatencyMs["p99.9"]}
			results[side] = append(results[side], p)
			if os.Getenv("DBRIG_BENCH_DEBUG") != "" {
				_ = os.WriteFile(filepath.Join(os.Getenv("DBRIG_BENCH_DEBUG"), fmt.Sprintf("%d-%s.txt", i, side)), []byte(stderr.String()+stdout.String()), 0o644)
			}
			b.Logf("round %d %-11s tps %8.0f  p50 %.3f ms  p99 %.3f ms  p99.9 %.3f ms", i+1, side, p.tps, p.p50, p.p99, p.p999)
			for _, pa := range sum.Agents {
				for _, a := range pa {
					b.Logf("    agent %s: %d ops, %d intervals, %d bytes in (intervals %d, %.0f bytes each), %d bytes out",
						a.Name, a.Ops, a.Intervals, a.Traffic.In, a.Traffic.InByType["interval"],
						float64(a.Traffic.InByType["interval"])/float64(max(a.Intervals, 1)), a.Traffic.Out)
				}
			}
		}
	}
	med := func(ps []point, f func(point) float64) float64 {
		v := make([]float64, len(ps))
		for i, p := range ps {
			v[i] = f(p)
		}
		sort.Float64s(v)
		return v[len(v)/2]
	}
	for _, side := range []string{"one process", "two agents"} {
		ps := results[side]
		b.Logf("median %-11s tps %8.0f  p50 %.3f ms  p99 %.3f ms  p99.9 %.3f ms (%d rounds, %s users, %s)", side,
			med(ps, func(p point) float64 { return p.tps }), med(ps, func(p point) float64 { return p.p50 }),
			med(ps, func(p point) float64 { return p.p99 }), med(ps, func(p point) float64 { return p.p999 }), len(ps), users, dur)
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
