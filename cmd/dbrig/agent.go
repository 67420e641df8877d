package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/dbrig/dbrig/internal/agent"
	"github.com/dbrig/dbrig/internal/doctor"
	"github.com/dbrig/dbrig/internal/load"
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/topology"
	"github.com/dbrig/dbrig/internal/workload"
	"github.com/dbrig/dbrig/internal/workload/oltp"
	"github.com/dbrig/dbrig/internal/workload/script"
)

// agentWorkloads are the load workloads an agent runs: the registry of
// agent shares, built here as every registry is.
func agentWorkloads() map[string]agent.Workload {
	return map[string]agent.Workload{
		"oltp": func(j agent.WorkloadJob) (load.Workload, error) { return oltp.AgentWorkload(j.Params, j.Login, j.Seed) },
		"script": func(j agent.WorkloadJob) (load.Workload, error) {
			return script.AgentWorkload(j.Params, j.Login, j.Seed, j.Users)
		},
	}
}

type agentFlags struct {
	connect string
	index   string
	address string
	silence time.Duration
	bins    binDirs
	verbose bool
}

func newAgentCmd(a *app) *cobra.Command {
	var f agentFlags
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Run as a load agent of a coordinator (started by it over ssh, or dialling it in a cluster)",
		Long: `agent runs this dbrig as a load agent: it takes work from a coordinator (a
'dbrig load oltp --agents FILE' or 'dbrig load script --agents FILE', or a
study with sites on hosts, on another machine) over its standard input and
output, so the coordinator starts it with 'ssh HOST dbrig agent' and no port
is opened on the host. It runs a share of a load (virtual users, or a share of
an arrival rate) and streams back each second's HDR histograms, or runs a
site's database servers, exposed at the address the coordinator reached the
host by.

An agent refuses a coordinator of another dbrig build (and is refused by it).
When its coordinator goes away (the ssh session ends, or it says nothing for
--silence) the agent stops its load and its servers and exits.

In a cluster (a Kubernetes Indexed Job, see 'dbrig k8s render') agents cannot
be reached by ssh: --connect HOST:PORT dials the coordinator instead, with
--index (JOB_COMPLETION_INDEX) as the agent's share and the token in
DBRIG_AGENT_TOKEN.

You do not run this by hand; the coordinator does.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runAgent(cmd.Context(), a, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.connect, "connect", "", "dial the coordinator at `HOST:PORT` instead of speaking on stdin/stdout (a cluster's agents)")
	fl.StringVar(&f.index, "index", "", "this agent's share `N` with --connect (e.g. $JOB_COMPLETION_INDEX)")
	fl.StringVar(&f.address, "address", "", "the `ADDRESS` at which other hosts reach this one's servers (default: the one the coordinator reached it by)")
	fl.DurationVar(&f.silence, "silence", agent.DefaultSilence, "stop everything when the coordinator says nothing for this long")
	f.bins.register(fl, " on this host")
	fl.BoolVar(&f.verbose, "verbose", false, "log what the agent does to stderr")
	return cmd
}

func runAgent(ctx context.Context, a *app, f agentFlags) error {
	opts := agent.ServeOptions{Version: a.version, Workloads: agentWorkloads(), Engines: newEngines(f.bins),
		Silence: f.silence, Address: f.address, Index: -1, Log: newLogger(a, f.verbose)}
	if f.connect == "" {
		if f.index != "" {
			return usageError(errors.New("--index: goes with --connect (over ssh the coordinator gives each agent its share)"))
		}
		if opts.Address == "" {
			opts.Address = agent.SSHAddress(a.getenv)
		}
		if err := agent.Serve(ctx, os.Stdin, os.Stdout, opts); err != nil {
			return failure(fmt.Errorf("agent: %w", err))
		}
		return nil
	}
	n, err := strconv.Atoi(f.index)
	if err != nil || n < 0 {
		return usageError(fmt.Errorf("--index %q: want this agent's share, a whole number from 0 (JOB_COMPLETION_INDEX)", f.index))
	}
	opts.Index, opts.Token = n, a.getenv("DBRIG_AGENT_TOKEN")
	if opts.Token == "" {
		return usageError(errors.New("--connect: DBRIG_AGENT_TOKEN is empty: the coordinator accepts only agents with its token"))
	}
	if err := agent.Dial(ctx, f.connect, opts); err != nil {
		return failure(fmt.Errorf("agent: %w", err))
	}
	return nil
}

// fleetFlags are how a coordinator reaches its agents' hosts.
type fleetFlags struct {
	agents    string   // hosts file of load agents
	hosts     []string // SITE=ssh://user@host
	install   bool
	sshConfig string
	agentBin  string
	// listen and count: agents that dial this coordinator (a cluster's).
	listen string
	count  int
}

func (f *fleetFlags) register(cmd *cobra.Command, withAgents bool) {
	fl := cmd.Flags()
	if withAgents {
		fl.StringVar(&f.agents, "agents", "", "spread the load over load agents on the hosts in `FILE` (one [user@]host[:port] per line, as doctor --hosts reads it), started with ssh HOST dbrig agent")
	}
	fl.StringArrayVar(&f.hosts, "host", nil, "run site SITE's servers on a host: `SITE=ssh://[user@]host[:port]` (repeatable; as the study's [site.SITE] host)")
	fl.BoolVar(&f.install, "install", false, "copy this dbrig to each host first (~/.cache/dbrig/dbrig-HASH; skipped where it is already)")
	fl.StringVar(&f.sshConfig, "ssh-config", "", "ssh client config `FILE` for the hosts (ssh -F)")
	fl.StringVar(&f.agentBin, "agent-bin", "", "dbrig's `PATH` on the hosts (default: dbrig on their PATH)")
	if withAgents {
		fl.StringVar(&f.listen, "listen-agents", "", "wait for --agent-count agents that dial this coordinator at `ADDR` (a cluster's: see dbrig k8s render), with DBRIG_AGENT_TOKEN")
		fl.IntVar(&f.count, "agent-count", 0, "agents to wait for with --listen-agents")
	}
}

// acceptAgents waits for the agents of a cluster to dial in.
func acceptAgents(ctx context.Context, a *app, f fleetFlags) ([]*agent.Agent, error) {
	token := a.getenv("DBRIG_AGENT_TOKEN")
	if token == "" {
		return nil, usageError(errors.New("--listen-agents: DBRIG_AGENT_TOKEN is empty: agents prove they belong to the run with it"))
	}
	if f.count < 1 {
		return nil, usageError(errors.New("--listen-agents: give --agent-count N"))
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	fmt.Fprintf(a.stderr, "dbrig: waiting for %d agents on %s\n", f.count, f.listen)
	agents, err := agent.Accept(ctx, f.listen, f.count, agent.HandshakeOptions{Version: a.version, Token: token})
	if err != nil {
		return nil, failure(err)
	}
	return agents, nil
}

func (f fleetFlags) ssh() agent.SSH {
	return agent.SSH{SSH: doctor.SSH{ConfigFile: f.sshConfig}, Binary: f.agentBin}
}

// startAgents starts `dbrig agent` on every target at once (installing this
// binary first with --install) and connects to each; on error every agent
// already started is closed.
func startAgents(ctx context.Context, a *app, f fleetFlags, targets []doctor.Target) ([]*agent.Agent, error) {
	s := f.ssh()
	var local string
	if f.install {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("--install: find this dbrig: %w", err)
		}
		local = exe
	}
	agents := make([]*agent.Agent, len(targets))
	errs := make([]error, len(targets))
	var wg sync.WaitGroup
	for i, t := range targets {
		wg.Go(func() {
			s := s
			if local != "" {
				path, err := s.Install(ctx, t, local)
				if err != nil {
					errs[i] = err
					return
				}
				s.Binary = path
			}
			tr, err := s.Start(t)
			if err != nil {
				errs[i] = fmt.Errorf("agent %s: %w", t, err)
				return
			}
			agents[i], errs[i] = agent.Connect(ctx, tr, agent.HandshakeOptions{Version: a.version})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		_ = agent.CloseAll(context.WithoutCancel(ctx), agents)
		return nil, err
	}
	return agents, nil
}

// placeSites applies --host to the spec and starts an agent on every host
// that holds a site; it returns the sites' starters and the agents to
// close.
func placeSites(ctx context.Context, a *app, f fleetFlags, spec *study.Spec) (map[string]topology.Starter, []*agent.Agent, error) {
	for _, h := range f.hosts {
		site, host, ok := strings.Cut(h, "=")
		if !ok {
			return nil, nil, usageError(fmt.Errorf("--host %s: want SITE=ssh://[user@]host[:port]", h))
		}
		if err := spec.PlaceSite(site, host); err != nil {
			return nil, nil, usageError(err)
		}
	}
	if len(spec.Sites) == 0 {
		return nil, nil, nil
	}
	var targets []doctor.Target
	index := map[string]int{}
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range spec.Sites {
			if !yield(k) {
				return
			}
		}
	})
	for _, site := range names {
		t, err := study.ParseHost(spec.Sites[site].Host)
		if err != nil {
			return nil, nil, usageError(fmt.Errorf("site %s: %w", site, err))
		}
		if _, ok := index[t.String()]; !ok {
			index[t.String()] = len(targets)
			targets = append(targets, t)
		}
	}
	fmt.Fprintf(a.stderr, "dbrig: starting agents for the sites on %d hosts\n", len(targets))
	agents, err := startAgents(ctx, a, f, targets)
	if err != nil {
		return nil, nil, failure(err)
	}
	sites := map[string]topology.Starter{}
	for _, site := range names {
		t, _ := study.ParseHost(spec.Sites[site].Host)
		ag := agents[index[t.String()]]
		sites[site] = &agent.Site{Agent: ag}
		fmt.Fprintf(a.stderr, "dbrig: site %s on %s (%s, address %s, clock offset %s, rtt %s)\n", site, ag.Name, ag.Hello.Host,
			ag.Hello.Address, ag.Offset.Round(time.Microsecond), ag.RTT.Round(time.Microsecond))
	}
	return sites, agents, nil
}

// printAgents prints each agent's part of a run.
func printAgents(w io.Writer, reps []agent.AgentReport) {
	fmt.Fprintf(w, "%-24s %-14s %6s %9s %12s %10s %12s %10s %12s\n", "agent", "host", "users", "rate", "clock offset", "rtt", "start skew", "ops", "bytes in")
	for _, r := range reps {
		rate := "-"
		if r.Share.Rate > 0 {
			rate = strconv.FormatFloat(r.Share.Rate, 'f', -1, 64)
		}
		fmt.Fprintf(w, "%-24s %-14s %6d %9s %12s %10s %12s %10d %12d\n", r.Name, r.Host, r.Share.Users, rate,
			r.Offset.Round(time.Microsecond), r.RTT.Round(time.Microsecond), r.StartSkew.Round(time.Microsecond), r.Ops, r.Traffic.In)
		if r.Error != "" {
			fmt.Fprintf(w, "  %s: %s\n", r.Name, r.Error)
		}
	}
}

// loadAgents starts the agents a load of virtual users spreads over
// (--agents), or waits for them to dial in (--listen-agents), once every
// point's users can be shared among them.
func loadAgents(ctx context.Context, a *app, f fleetFlags, users []any) ([]*agent.Agent, error) {
	var agents []*agent.Agent
	if f.listen != "" {
		var err error
		if agents, err = acceptAgents(ctx, a, f); err != nil {
			return nil, err
		}
	} else {
		targets, err := doctor.ReadHostsFile(f.agents)
		if err != nil {
			return nil, usageError(fmt.Errorf("--agents: %w", err))
		}
		for _, u := range users {
			n, _ := workload.IntOf(u)
			if _, err := agent.Shares(load.Config{Users: int(n)}, len(targets)); err != nil {
				return nil, usageError(fmt.Errorf("--users %d, --agents %s: %w", n, f.agents, err))
			}
		}
		fmt.Fprintf(a.stderr, "dbrig: starting %d load agents\n", len(targets))
		if agents, err = startAgents(ctx, a, f, targets); err != nil {
			return nil, failure(err)
		}
	}
	for _, ag := range agents {
		fmt.Fprintf(a.stderr, "dbrig: agent %s (%s, %d CPUs): clock offset %s, rtt %s\n", ag.Name, ag.Hello.Host, ag.Hello.CPUs,
			ag.Offset.Round(time.Microsecond), ag.RTT.Round(time.Microsecond))
	}
	return agents, nil
}
