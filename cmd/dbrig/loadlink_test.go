package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
	"github.com/dbrig/dbrig/internal/study"
)

// --link on a load sweeps its profiles crossed with the users, each point
// through the link, whose statistics are kept in the run as a study's are;
// with a target too, where the link's own flags make a link alone.
func TestLoadLink(t *testing.T) {
	pgtest.Binaries(t)
	t.Parallel()

	t.Run("own server, swept", func(t *testing.T) {
		t.Parallel()
		base := pgtest.BaseDir(t)
		dir := filepath.Join(t.TempDir(), "load")
		code, stdout, stderr := runDbrig(t, base, nil, "load", "script", "select-only", "--init", "--link", "lan-1g,rtt-5ms",
			"--users", "1,4", "--duration", "1s", "--warm-up", "200ms", "--json", "--out", dir)
		if code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
		}
		j := decodeJSON[struct {
			Points []struct {
				Users   int     `json:"users"`
				Link    string  `json:"link"`
				TPS     float64 `json:"tps"`
				Scripts []struct {
					Ops int64 `json:"transactions"`
				} `json:"scripts"`
			} `json:"points"`
		}](t, stdout)
		if len(j.Points) != 4 {
			t.Fatalf("--json: %d points", len(j.Points))
		}
		for _, p := range j.Points {
			if p.Link == "" || p.TPS <= 0 || len(p.Scripts) != 1 || p.Scripts[0].Ops == 0 {
				t.Errorf("--json point: %+v", p)
			}
		}
		results, err := study.ReadResults(dir)
		if err != nil || len(results) != 4 {
			t.Fatalf("results: %d, %v", len(results), err)
		}
		seen := map[string]bool{}
		for _, r := range results {
			point := fmt.Sprintf("%v users=%v", r.Values["link"], r.Values["users"])
			seen[point] = true
			if len(r.Links) != 1 || r.Links[0].Mode != "link" || r.Links[0].Profile != r.Values["link"] ||
				r.Links[0].ForwardBytes == 0 || r.Links[0].ReverseBytes == 0 || r.Metrics["tps"] <= 0 {
				t.Errorf("%s: links %+v, tps %v", point, r.Links, r.Metrics["tps"])
			}
		}
		for _, want := range []string{"lan-1g users=1", "lan-1g users=4", "rtt-5ms users=1", "rtt-5ms users=4"} {
			if !seen[want] {
				t.Errorf("no point %s: %v", want, seen)
			}
		}
		pgtest.WaitNoServers(t, base, 10*time.Second)
		assertNoInstanceDirs(t, base)
	})

	// Points of the same users through different links are each their own
	// in load oltp's document, each with its link and its figures.
	t.Run("oltp, one users through two links", func(t *testing.T) {
		t.Parallel()
		base := pgtest.BaseDir(t)
		dir := filepath.Join(t.TempDir(), "load")
		code, stdout, stderr := runDbrig(t, base, nil, "load", "oltp", "--link", "unix,lan-1g", "--users", "2", "--mix", "point-select",
			"--scale", "0.01", "--duration", "1s", "--warm-up", "200ms", "--json", "--out", dir)
		if code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
		}
		j := decodeJSON[struct {
			Points []struct {
				Users int     `json:"users"`
				Link  string  `json:"link"`
				TPS   float64 `json:"tps"`
			} `json:"points"`
		}](t, stdout)
		if len(j.Points) != 2 || j.Points[0].Link != "unix" || j.Points[1].Link != "lan-1g" || j.Points[0].TPS <= 0 || j.Points[1].TPS <= 0 {
			t.Errorf("points: %+v", j.Points)
		}
	})

	t.Run("target", func(t *testing.T) {
		t.Parallel()
		server := pgtest.Start(t, "users-link", nil)
		base := pgtest.BaseDir(t)
		dir := filepath.Join(t.TempDir(), "load")
		login := server.Conn("postgres")
		code, stdout, stderr := runDbrig(t, base, []string{"MY_PG=" + login.URI()}, "load", "script", "select-only", "--init",
			"--target", "env:MY_PG", "--rtt", "2ms", "--users", "2", "--duration", "1s", "--warm-up", "200ms", "--out", dir)
		if code != 0 {
			t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
		}
		results, err := study.ReadResults(dir)
		if err != nil || len(results) != 1 {
			t.Fatalf("results: %d, %v", len(results), err)
		}
		if l := results[0].Links; len(l) != 1 || l[0].Mode != "link" || l[0].RTTSeconds != 0.002 || l[0].ForwardBytes == 0 {
			t.Errorf("links: %+v", l)
		}
		assertNoPassword(t, dir, stdout+stderr, login.Password())
	})
}

// A link flag that is wrong is refused before anything starts, by its flag.
func TestLoadLinkUsage(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"--link", "bogus,lan-1g"}, `--link bogus,lan-1g: unknown link profile "bogus"`},
		{[]string{"--link", "lan-1g,,rtt-5ms"}, "--link lan-1g,,rtt-5ms: want profiles separated by commas"},
		{[]string{"--link", "lan-1g,lan-1g"}, "lan-1g is given twice"},
		{[]string{"--rtt", "50s"}, "--rtt 50s: at most 10s"},
		{[]string{"--link", "unix", "--rtt", "5ms"}, `--rtt is set, but profile "unix" bypasses the emulated link`},
		{[]string{"--link-rate", "1x"}, "--link-rate"},
	} {
		for _, kind := range []string{"script", "oltp"} {
			args := append([]string{"load", kind}, tc.args...)
			code, stdout, stderr := runDbrig(t, base, nil, args...)
			if code != 2 || !strings.Contains(stderr, tc.says) {
				t.Errorf("dbrig %s: exit %d, stderr %q; want 2 saying %q\n%s", strings.Join(args, " "), code, stderr, tc.says, stdout)
			}
		}
	}
}

// The users on load agents run on other hosts than the server: a path
// through the server's unix socket (--link unix, or a --target naming a
// socket) is refused before any agent or server starts, by its flag.
func TestLoadOnAgentsUsage(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	agents := filepath.Join(t.TempDir(), "agents")
	// .invalid never resolves (RFC 6761): were the refusal missing, ssh
	// would fail to reach the agent and dbrig exit 1.
	if err := os.WriteFile(agents, []byte("dbrig@agent.invalid\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tcp := "postgres://u@127.0.0.1:1/db"
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"oltp", "--target", tcp, "--link", "unix", "--agents", agents}, "--link unix: unix is the server's socket on its own host"},
		{[]string{"script", "select-only", "--target", tcp, "--link", "lan-1g,unix", "--agents", agents}, "--link lan-1g,unix: unix is the server's socket"},
		{[]string{"oltp", "--target", "postgres://u@/db?host=/run/dbrig-nowhere", "--agents", agents}, "--target: names the unix socket /run/dbrig-nowhere"},
		// Without the refusal this one waits for an agent that never dials.
		{[]string{"oltp", "--target", tcp, "--link", "unix", "--listen-agents", "127.0.0.1:0", "--agent-count", "1"}, "--link unix: unix is the server's socket"},
	} {
		args := append([]string{"load"}, tc.args...)
		code, stdout, stderr := runDbrig(t, base, nil, args...)
		if code != 2 || !strings.Contains(stderr, tc.says) {
			t.Errorf("dbrig %s: exit %d, stderr %q; want 2 saying %q\n%s", strings.Join(args, " "), code, stderr, tc.says, stdout)
		}
	}
}
