// Package replication is transactional replication between two PostgreSQL
// servers, built the way seed 000's SQL Server replication is built, so
// that dbrig can measure it across an emulated WAN:
//
//	publisher ──log reader──▶ distribution database ──distribution agent──▶ subscriber
//
// # The parts
//
// The [LogReader] streams the publisher's logical replication slot with the
// pgoutput plugin over the streaming replication protocol and stores every
// message of a committed transaction (Relation, Insert, Update, Delete,
// Truncate, Commit), in commit order, as one row each in the commands table
// of the distribution database on the publisher's server: the analogue of
// msrepl_commands. It commits whole source transactions only, and confirms a
// position to the slot only after the distribution database has committed
// everything before it; after a restart it skips transactions it stored
// already. So every committed source transaction is stored exactly once.
//
// The [DistributionAgent] has a reader, command buffers and a writer. The
// reader reads every pending command as one streaming result set and renders
// commands into a buffer (default 40 KB); the writer applies one buffer per
// round trip to the subscriber (one Sync group of the extended protocol:
// prepared statements with the values as pgoutput sent them as parameters,
// in text form or, with SetupOptions.Binary, binary; a run of inserts into
// one table as one multi-row INSERT) and releases the buffer
// when the subscriber has answered. With AgentOptions.Pipeline above 1 (or
// [PipelineAuto], sized from the measured bandwidth-delay product) the
// writer keeps that many buffers in flight. Every CommitBatchSize source
// transactions (default 100, never splitting one) the writer commits, and
// the same subscriber transaction records the last command applied
// (dbrig_repl.advance on the subscriber), so a restarted agent continues
// exactly after it: no command is lost or applied twice, whatever crashes
// or reconnects. Pipelined buffers that continue a transaction start with a
// guard that fails unless that transaction still stands.
//
// The agent's two connections decide the [Mode]: run next to the
// distribution database its writer's round trips cross the WAN ([Push]);
// run next to the subscriber its reader's stream does ([Pull]). The agent
// only takes two connection targets; [Mode.Crossing] names the one to put a
// link proxy in front of and [Mode.AgentTargets] re-targets it at the proxy.
//
// [Setup] checks both servers first (wal_level, privileges, primary keys,
// column types, the subscriber's tables; it changes nothing when a check
// fails and returns a [UsageError] or a [ServerError]), then creates the
// distribution database, the publication, the subscriber's bookkeeping and
// the slot, and initializes the subscriber from the slot's exported
// snapshot: by COPY ([InitSnapshot]) or pg_dump/pg_restore ([InitBackup]),
// through connections that may cross the link. [Verify] compares both sides
// per table (row count and an order-independent checksum) and lists the
// first differing keys; [GetStatus] reports pending commands and lag;
// [Teardown] removes everything but the replicated tables.
//
// # What a study calls
//
// One measurement of the replication system is [RunScenario]: it prepares a
// table of a [Payload] (1 KB char rows, bytea rows of 1.1 KB or 15.5 KB) on
// both servers, sets the replication up, runs the log reader and the agent,
// inserts ScenarioConfig.Rows rows (RowsPerTransaction per transaction),
// waits until the subscriber has caught up, verifies, and tears down. Its
// [ScenarioResult] holds the elapsed time from the first insert's commit
// (with Preload: from the moment the connected agent may read a stored
// backlog), rows/s and MB/s, and both agents' statistics. The caller
// decides where the WAN is by the connections it passes:
//
//	proxy, _ := link.Listen(ctx, "127.0.0.1:0", mode.Crossing(cfg.Distribution(), cfg.Subscriber).Addr(), wan)
//	targets, _ := mode.AgentTargets(cfg.Distribution(), cfg.Subscriber, proxy.Addr())
//	res, err := replication.RunScenario(ctx, replication.ScenarioConfig{
//		Config: replication.Config{Publisher: pub, Subscriber: sub},
//		Agent:  targets, Mode: mode, Payload: replication.PayloadChar1K,
//		Rows:   100_000, RowsPerTransaction: 1000,
//		Options: replication.AgentOptions{Pipeline: replication.PipelineAuto},
//	})
//
// In a study's topology the endpoints come from the sites: the agent's
// Distribution target is the publisher instance's distribution database as
// seen from the agent's site, its Subscriber target the subscriber's
// database as seen from there.
//
// The baselines are [RunNative] (PostgreSQL's own publication and
// subscription; NativeConfig.PublisherFromSubscriber is how the
// subscriber's server reaches the publisher, through the link, and
// InitialRows measures its initial COPY) and [RunFDW] (rows inserted
// through a postgres_fdw foreign table with batch_size 1, the linked-server
// analogue, or larger). Initialization is measured by RunScenario with
// InitialRows and SetupOptions.Init ([SetupResult.InitDuration]).
//
// The building blocks are public too: [PrepareTable], [InsertRows],
// [Setup], [NewLogReader], [NewDistributionAgent] (AgentConfig.Ready and
// Gate let a caller time the agent without its connection set-up),
// [NewWaiter] and [Waiter.CaughtUp], [Verify], [Teardown].
//
// # Types
//
// Every column's value travels as its type's text form, written by the
// publisher's output function and read by the subscriber's input function
// with the same session settings (DateStyle ISO, IntervalStyle postgres,
// extra_float_digits 3, bytea_output hex, UTF8). The supported types are
// those [SupportedTypes] lists; setup refuses others, and tables without a
// primary key, before changing anything.
package replication
