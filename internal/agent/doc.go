// Package agent spreads one load over several machines and places a study's
// sites on real hosts: `dbrig agent` is the same binary in agent mode, and
// this package is both its ends (docs/distributed.md is the user's guide).
//
// # The control channel
//
// Coordinator and agent speak one JSON line per [Message] on a byte stream:
// the agent's standard input and output under ssh ([SSH]: the user's ssh
// client, config and keys, BatchMode, no port opened on the host), a local
// process's pipes ([Pipe]: tests and a local agent), or a TCP connection
// that agents in a Kubernetes Indexed Job dial back to the coordinator
// ([Dial], [Accept], each agent saying its index and the run's token).
// [Connect] makes the handshake: each side says its build ([Hello]) and
// refuses another ([VersionError]); the coordinator measures the agent's
// clock offset from eight pings (the shortest round trip, NTP's midpoint
// rule).
//
// # A load on agents
//
// [RunLoad] gives each agent its [Share] ([Shares]: users as evenly as
// whole users go, the rate evenly, a seed each), waits until every agent
// has opened its users, sets one start instant translated into each
// agent's clock, merges each second's HDR histograms as all agents' seconds
// arrive and their whole-run results at the end (percentiles read from the
// merged distributions, never averaged). An agent lost or failed fails the
// run, naming it; Ctrl-C stops every agent and returns the partial merged
// result. The agent side ([Serve]) runs its share with the workload the
// coordinator names ([Workload], [WorkloadJob]); a workload that measures
// more than the load layer ([Reporter]: a script's statements) sends an
// [Extra] with its result, named counters and HDR histograms that
// [MergeExtras] sums and merges exactly. A point with an emulated link
// ([PathOf], [JobLink]) has each agent run the link in its own process in
// front of its users, towards the server's address as the agents reach
// it (never the coordinator's loopback); each sends what its link carried
// with its result, and the coordinator sums them ([LoadOutcome.Carried]).
//
// # Sites on hosts
//
// [Site] starts a study site's instances on an agent's host and stands for
// each in the coordinator as an engine.Instance; the server listens on that
// host's loopback as always and the agent relays it at the host's address
// for the run's length, so the network between sites is the real one.
//
// # Stopping on every path
//
// The ssh processes carry SIGKILL as their parent-death signal; an agent
// whose input ends or whose coordinator is silent for [DefaultSilence]
// stops its load and its servers and exits; [CloseAll] says goodbye to
// every agent and waits for its transport.
package agent
