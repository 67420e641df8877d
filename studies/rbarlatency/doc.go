// Package rbarlatency is the rbar-latency study (rbar-latency.toml): what
// network latency, link speed and the client's own speed cost work that
// handles rows one at a time, against set-based work on the server and
// rows streamed to the client, from a unix socket to a 77 ms WAN. Its seed
// is 004_b51b6fa406aa2802.txt (Rubén Garrigós, "Network latency and
// row-by-row (RBAR) processing"); the workload it runs is
// internal/workload/rbar, which measures and states the model.
//
// judges.go decides the seed's findings by their ids in the TOML:
// server-side-no-network, infiniband-stream, infiniband-resultsets,
// round-trip-per-row, slow-client, wide-rows-1g, wide-rows-consumer,
// vm-penalty and bond-one-connection.
// report.go adds to the report of every rbar run the charts of time per
// row and throughput against the link and a table per experiment.
// analysis.go groups a run's combinations by experiment, client cost and
// link, and by the values of any dimension a user's sweep adds (the engine,
// say), which both read: a finding is judged on each such value and merged
// (study.MergeFindings), and every chart and table is drawn per value.
package rbarlatency
