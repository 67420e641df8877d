package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/agent/netnstest"
	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
	"github.com/dbrig/dbrig/internal/measure"
)

// TestLoadOverAgentsInNamespaces runs dbrig's distributed mode on three
// hosts built on this machine (network namespaces joined by a bridge, each
// with its own sshd): PostgreSQL on one, started there by an agent (the
// shop's site placed with --host), and the load spread over agents on the
// two others, all reached by ssh as on a real fleet. The merged result must
// equal the sum of the agents' counts and its p99 the p99 of every sample
// the agents recorded; a second run, whose agent loses its ssh connection
// in the middle, must stop that agent and fail saying so; and no process
// may be left in any namespace.
func TestLoadOverAgentsInNamespaces(t *testing.T) {
	t.Parallel()
	pgtest.Binaries(t)
	lab := netnstest.Start(t, 3)
	bin := dbrigBinary(t)
	dir := t.TempDir()
	agentsFile := filepath.Join(dir, "agents")
	if err := os.WriteFile(agentsFile, []byte(lab.Hosts[1].Target(lab.User)+"\n"+lab.Hosts[2].Target(lab.User)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	common := []string{"load", "oltp", "--agents", agentsFile, "--host", "db=ssh://" + lab.Hosts[0].Target(lab.User),
		"--ssh-config", lab.ConfigFile, "--agent-bin", bin, "--scale", "0.01", "--mix", "point-select", "--users", "4", "--warm-up", "1s"}

	t.Run("merge", func(t *testing.T) {
		samples := filepath.Join(dir, "samples")
		args := append(append([]string{}, common...), "--duration", "3s", "--json", "--samples", samples, "--out", filepath.Join(dir, "run1"))
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "NO_COLOR=1")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("dbrig load oltp over agents: %v\n%s", err, stderr.String())
		}
		var sum struct {
			Points []struct {
				Overall struct {
					Ops       int64              `json:"ops"`
					LatencyMs map[string]float64 `json:"latency_ms"`
				} `json:"overall"`
			} `json:"points"`
			Agents [][]struct {
				Name, Host string
				Ops        int64 `json:"ops"`
				Share      struct{ Users int }
				Traffic    struct{ In int64 }
			} `json:"agents"`
		}
		if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil || len(sum.Points) != 1 || len(sum.Agents) != 1 || len(sum.Agents[0]) != 2 {
			t.Fatalf("summary %v: %s\nstderr:\n%s", err, stdout.String(), stderr.String())
		}
		var agentOps int64
		for _, a := range sum.Agents[0] {
			if a.Ops == 0 || a.Share.Users != 2 || a.Traffic.In == 0 {
				t.Errorf("agent %s: %d ops from %d users, %d bytes", a.Name, a.Ops, a.Share.Users, a.Traffic.In)
			}
			agentOps += a.Ops
		}
		merged := sum.Points[0].Overall
		if merged.Ops == 0 || merged.Ops != agentOps {
			t.Errorf("merged ops %d, the agents' sum %d", merged.Ops, agentOps)
		}
		b, err := os.ReadFile(samples)
		if err != nil {
			t.Fatal(err)
		}
		all := measure.NewHistogram()
		n := int64(0)
		for f := range strings.FieldsSeq(string(b)) {
			v, err := strconv.ParseInt(f, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			all.Record(time.Duration(v) * time.Microsecond)
			n++
		}
		if n != merged.Ops {
			t.Errorf("%d samples, %d merged ops", n, merged.Ops)
		}
		for _, q := range []struct {
			key string
			q   float64
		}{{"p50", 0.5}, {"p99", 0.99}, {"max", 1}} {
			want := float64(all.Quantile(q.q)) / float64(time.Millisecond)
			if got := merged.LatencyMs[q.key]; got != want {
				t.Errorf("merged %s %v ms, all samples' %v ms", q.key, got, want)
			}
		}
		assertOnlySSHD(t, lab)
	})

	t.Run("lost agent", func(t *testing.T) {
		args := append(append([]string{}, common...), "--duration", "20s", "--out", filepath.Join(dir, "run2"))
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "NO_COLOR=1")
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill() })
		lines := bufio.NewScanner(stdout)
		var out []string
		victim := lab.Hosts[2]
		killed, agentPid := false, 0
		var killedAt time.Time
		for lines.Scan() {
			out = append(out, lines.Text())
			if !killed && strings.Contains(lines.Text(), "measured") {
				for pid, cl := range victim.Others() {
					if strings.Contains(cl, " agent") && strings.HasPrefix(cl, bin) {
						agentPid = pid
					}
				}
				session := netnstest.Parent(agentPid)
				if agentPid == 0 || session == 0 {
					t.Fatalf("no agent in %s: %v", victim.Netns, victim.Others())
				}
				// The agent's ssh session dies: its connection is lost.
				if err := syscall.Kill(session, syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				killed, killedAt = true, time.Now()
				go func() { // the agent must stop within seconds
					deadline := time.Now().Add(5 * time.Second)
					for time.Now().Before(deadline) {
						if syscall.Kill(agentPid, 0) != nil {
							return
						}
						time.Sleep(50 * time.Millisecond)
					}
					t.Errorf("the agent whose connection was lost still runs after 5 s")
				}()
			}
		}
		err = cmd.Wait()
		if !killed {
			t.Fatalf("the run never reached its measured seconds: %v\n%s\n%s", err, strings.Join(out, "\n"), stderr.String())
		}
		if code := exitCode(err); code != 1 {
			t.Errorf("exit %d, want 1", code)
		}
		msg := stderr.String()
		if !strings.Contains(msg, victim.Target(lab.User)) || !strings.Contains(msg, "connection was lost") || !strings.Contains(msg, "run failed") {
			t.Errorf("the failure does not name the lost agent and say the run failed:\n%s", msg)
		}
		// Judged against the run's own 20 s, not a busy machine's speed: a
		// run that noticed the loss only at its end took all of them.
		if d := time.Since(killedAt); d >= 20*time.Second {
			t.Errorf("the run took %v to fail after losing an agent: as long as its whole measured duration", d)
		}
		time.Sleep(200 * time.Millisecond) // the watcher above gets its last look
		assertOnlySSHD(t, lab)
	})
}

// assertOnlySSHD checks that nothing but the listening sshd is left in any
// host (an ssh session ends a moment after its client: a short wait).
func assertOnlySSHD(t *testing.T, lab *netnstest.Lab) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := map[string]map[int]string{}
		for _, h := range lab.Hosts {
			if o := h.Others(); len(o) > 0 {
				left[h.Netns] = o
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("processes left in the hosts: %v", left)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}
