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
// message of a committed transaction (Begin, Relation, Insert, Update,
// Delete, Truncate, Commit), in commit order, as consecutive commands of the
// publication's command stream in the distribution database on the
// publisher's server: the analogue of msrepl_commands. Commands are stored
// together in chunks (chunk.go), compressed with zstd unless the
// publication says [CompressNone]. It commits whole source transactions
// only, each distribution commit synchronous (flushed before it returns and
// before an agent can read it, whatever the server's synchronous_commit),
// and confirms a position to the slot only after the distribution database
// has committed everything before it; after a restart it skips
// transactions it stored already. So every committed source transaction is
// stored exactly once, across crashes of the publisher's server too.
//
// The [DistributionAgent] has a reader, command buffers and a writer. The
// reader reads every pending chunk as one streaming result set and renders
// commands into a buffer (default 40 KB); the writer applies buffers to the
// subscriber (one Sync group of the extended protocol each: prepared
// statements with the values as pgoutput sent them as parameters, in text
// form or, with SetupOptions.Binary, binary; a run of inserts into one table
// as one multi-row INSERT) and releases a buffer when the subscriber has
// answered. AgentOptions.Pipeline buffers are in flight: [PipelineAuto], the
// default, sizes it from the measured bandwidth-delay product; 1 is the
// seed's stop-and-wait writer. Every CommitBatchSize source transactions
// (default 100, never splitting one) the writer commits, and the same
// subscriber transaction records the last command applied
// (dbrig_repl.advance on the subscriber), so a restarted agent continues
// exactly after it: no command is lost or applied twice, whatever crashes
// or reconnects. Pipelined buffers that continue a transaction start with a
// guard that fails unless that transaction still stands. The agent reports
// to the distribution database, and the log reader's cleanup deletes, only
// the commits the subscriber has flushed (durable.go): a subscriber that
// commits asynchronously loses its last commits in a crash, and must then
// find their commands still there.
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
// publication, the slot, the publication's part of the distribution
// database (the database itself the first time, marked as dbrig's; several
// replications share one) and the subscriber's bookkeeping, and initializes
// the subscriber from the slot's exported snapshot: by COPY
// ([InitSnapshot], creating missing tables as pg_dump --schema-only would)
// or by pg_dump streamed into pg_restore through a [Carrier]
// ([InitBackup]). Run from the subscriber's site, each of its round trips
// to the publisher crosses the WAN: it reads in batches, sends its
// CREATE statements in one pipeline, makes the slot while the server makes
// the database, and opens the sessions it needs later while it checks
// (preflight.go, pending.go; TestSetupRoundTripsToThePublisher counts
// them). [Verify] compares both sides per table (row count and an
// order-independent checksum) and lists the first differing keys;
// [GetStatus] reports where each role runs, pending commands and lag;
// [Teardown] removes what the catalog records for one replication and
// nothing else.
//
// # Running it
//
// [Supervise] runs a replication's roles (the log reader, the agent, or
// both) the way `dbrig replicate run` and the geo-replication study both
// do: a transient failure is retried inside the role, a change the
// subscriber refuses stops the agent only while the log reader keeps
// capturing, and [Progress] and [Event]s tell what happens. Each role
// records in the distribution database where it runs and why it stopped;
// status tells a running role by the advisory lock it holds. [Collector]
// publishes a run in Prometheus form.
//
// The study's own measurements (payloads, scenarios, baselines) live beside
// its workload in internal/workload/georep.
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
