package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
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
	"github.com/dbrig/dbrig/internal/study"
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
		"--ssh-config", lab.ConfigFile, "--agent-bin", bin, "--scale", "0.01", "--mix", "point-select", "--users", "4", "--warm-up", "500ms"}

	// The runs are short: every check counts or compares what the agents
	// did, which a second of four busy users gives as well as more.
	t.Run("merge", func(t *testing.T) {
		samples := filepath.Join(dir, "samples")
		args := append(append([]string{}, common...), "--duration", "1s", "--json", "--samples", samples, "--out", filepath.Join(dir, "run1"))
		stdout, stderr := runCoordinator(t, bin, dir, args...)
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

	t.Run("script", func(t *testing.T) { testScriptOverAgents(t, lab, bin, dir) })

	t.Run("link", func(t *testing.T) { testLinkOnAgents(t, lab, bin, dir, common) })

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

// runCoordinator runs dbrig in dir to its end, failing the test when it
// fails, and returns what it wrote.
func runCoordinator(t *testing.T, bin, dir string, args ...string) (stdout, stderr *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Env = dir, append(os.Environ(), "NO_COLOR=1")
	stdout, stderr = &bytes.Buffer{}, &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("dbrig %s: %v\n%s", strings.Join(args[:2], " "), err, stderr.String())
	}
	return stdout, stderr
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

// Two weighted scripts with -D, \set and \gset, the second failing at
// its division every time, named relative to the coordinator's directory
// (an agent's host, whose working directory is elsewhere, could not read
// them: the job carries their texts).
const (
	doublerScript = `\set aid random(1, :top)
SELECT :aid AS got \gset
SELECT :got * 2 AS doubled;
`
	dividerScript = `\set n random(1, :top)
SELECT :n - :n AS zero \gset
SELECT :n / :zero;
`
)

// testScriptOverAgents: dbrig load script --agents spreads the scripts
// over the two agents; the merged transactions are the agents' sum, each
// statement's merged count and failures the sums of the agents' own, and
// the failing script's failures are counted.
func testScriptOverAgents(t *testing.T, lab *netnstest.Lab, bin, dir string) {
	for name, text := range map[string]string{"doubler.sql": doublerScript, "divider.sql": dividerScript} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stdout, stderr := runCoordinator(t, bin, dir, "load", "script", "-f", "doubler.sql@3", "-f", "divider.sql@1", "-D", "top=1000",
		"--agents", "agents", "--host", "db=ssh://"+lab.Hosts[0].Target(lab.User), "--ssh-config", lab.ConfigFile, "--agent-bin", bin,
		"--users", "4", "--warm-up", "500ms", "--duration", "1s", "--json", "--out", filepath.Join(dir, "run-script"))
	var sum struct {
		Points []struct {
			Failed  int64 `json:"failed"`
			Overall struct {
				Ops int64 `json:"ops"`
			} `json:"overall"`
			Scripts []struct {
				Weight     int   `json:"weight"`
				Ops        int64 `json:"transactions"`
				Statements []struct {
					Text     string `json:"text"`
					Count    int64  `json:"count"`
					Failures int64  `json:"failures"`
				} `json:"statements"`
			} `json:"scripts"`
		} `json:"points"`
		Agents [][]struct {
			Name  string
			Ops   int64 `json:"ops"`
			Extra *struct {
				Counters   map[string]int64
				Histograms map[string]struct{ Count int64 }
			} `json:"extra"`
		} `json:"agents"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil || len(sum.Points) != 1 || len(sum.Agents) != 1 || len(sum.Agents[0]) != 2 {
		t.Fatalf("summary %v: %s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	var agentOps int64
	agentCount := map[string]int64{}
	for _, a := range sum.Agents[0] {
		if a.Ops == 0 || a.Extra == nil {
			t.Fatalf("agent %s: %d transactions, its scripts' figures %v", a.Name, a.Ops, a.Extra)
		}
		agentOps += a.Ops
		for k, n := range a.Extra.Counters {
			agentCount[k] += n
		}
		for k, h := range a.Extra.Histograms {
			agentCount[k] += h.Count
		}
	}
	p := sum.Points[0]
	if p.Overall.Ops == 0 || p.Overall.Ops != agentOps || len(p.Scripts) != 2 {
		t.Fatalf("merged %d transactions in %d scripts, the agents' sum %d", p.Overall.Ops, len(p.Scripts), agentOps)
	}
	doubler, divider := p.Scripts[0], p.Scripts[1]
	if doubler.Weight != 3 || divider.Weight != 1 || doubler.Ops != p.Overall.Ops || divider.Ops != 0 {
		t.Errorf("doubler.sql: weight %d, %d transactions; divider.sql: weight %d, %d; of %d", doubler.Weight, doubler.Ops, divider.Weight, divider.Ops, p.Overall.Ops)
	}
	for i, s := range p.Scripts {
		for j, st := range s.Statements {
			count, failures := agentCount[fmt.Sprintf("script.%d.command.%d.latency", i, j)], agentCount[fmt.Sprintf("script.%d.command.%d.failures", i, j)]
			if st.Count != count || st.Failures != failures {
				t.Errorf("script %d, %q: merged %d runs and %d failures, the agents' sums %d and %d", i, st.Text, st.Count, st.Failures, count, failures)
			}
		}
	}
	t.Logf("%d transactions merged (the agents': %d), %d failed", p.Overall.Ops, agentOps, p.Failed)
	if d := divider.Statements; len(d) != 3 || d[1].Count == 0 || d[2].Failures == 0 || p.Failed == 0 || doubler.Statements[2].Count == 0 {
		t.Errorf("divider.sql's failures not counted (%d failed): %+v", p.Failed, d)
	}
	assertOnlySSHD(t, lab)
}

// testLinkOnAgents: with --link the agents' users go through the link,
// which each agent runs on its own host in front of them (the
// coordinator's loopback is out of their reach), point by point over a
// sweep of two links: every agent's link carried bytes each way, the
// point's link reports at least their sum, and no point's median
// transaction is faster than its link's round trip.
func testLinkOnAgents(t *testing.T, lab *netnstest.Lab, bin, dir string, common []string) {
	rttMs := map[string]float64{"rtt-5ms": 5, "rtt-12ms": 12}
	out := filepath.Join(dir, "run-link")
	args := append(append([]string{}, common...), "--link", "rtt-5ms,rtt-12ms", "--duration", "2s", "--json", "--out", out)
	stdout, stderr := runCoordinator(t, bin, dir, args...)
	type dirStats struct {
		Bytes int64 `json:"bytes"`
	}
	var sum struct {
		Points []struct {
			Link    string `json:"link"`
			Overall struct {
				Ops       int64              `json:"ops"`
				LatencyMs map[string]float64 `json:"latency_ms"`
			} `json:"overall"`
		} `json:"points"`
		Agents [][]struct {
			Name string
			Link *struct{ Forward, Reverse dirStats }
		} `json:"agents"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil || len(sum.Points) != 2 || len(sum.Agents) != 2 {
		t.Fatalf("summary %v: %s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	results, err := study.ReadResults(out)
	if err != nil || len(results) != 2 {
		t.Fatalf("the run's results %v: %+v", err, results)
	}
	for i, p := range sum.Points {
		var forward, reverse int64
		for _, a := range sum.Agents[i] {
			if a.Link == nil || a.Link.Forward.Bytes == 0 || a.Link.Reverse.Bytes == 0 {
				t.Errorf("%s: agent %s: its users did not go through a link of its own: %+v", p.Link, a.Name, a.Link)
				continue
			}
			forward, reverse = forward+a.Link.Forward.Bytes, reverse+a.Link.Reverse.Bytes
		}
		// A lower bound only: a busy machine makes transactions slower,
		// never faster than the link's round trip.
		if p50 := p.Overall.LatencyMs["p50"]; rttMs[p.Link] == 0 || p.Overall.Ops == 0 || p50 < rttMs[p.Link] {
			t.Errorf("%s: %d transactions, p50 %v ms: below the link's round trip", p.Link, p.Overall.Ops, p50)
		}
		// The coordinator's own look at the data crossed its link too: at
		// least the agents' sum.
		r := results[i]
		if len(r.Links) != 1 || r.Values["link"] != p.Link || r.Links[0].ForwardBytes < forward || r.Links[0].ReverseBytes < reverse {
			t.Errorf("%s: the point's link %+v, the agents' links carried %d/%d bytes", p.Link, r.Links, forward, reverse)
		}
		t.Logf("%s: %d transactions, p50 %.2f ms; the agents' links carried %d/%d bytes", p.Link, p.Overall.Ops, p.Overall.LatencyMs["p50"], forward, reverse)
	}
	assertOnlySSHD(t, lab)
}
