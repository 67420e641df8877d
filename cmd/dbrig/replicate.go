package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/link"
	"github.com/dbrig/dbrig/internal/load"
	"github.com/dbrig/dbrig/internal/replication"
	"github.com/dbrig/dbrig/internal/units"
)

// replicateFlags are dbrig replicate's flags as typed.
type replicateFlags struct {
	publisher, subscriber  string
	publication, distDB    string
	tables                 string
	mode, init, compress   string
	bufferSize             string
	buffers, commitBatch   int
	pipeline               string
	role                   string
	untilCaughtUp, jsonOut bool
	force, verbose, binary bool
	progress, agentRetry   time.Duration
	linkProfile            string
	metricsAddr            string
	maxDiffs, streams      int
	readStreams            int
	compression            replication.Compression
	ship, shipBin          string
	sshConfig              string
}

func newReplicateCmd(a *app) *cobra.Command {
	var f replicateFlags
	cmd := &cobra.Command{
		Use:   "replicate setup|run|status|verify|teardown --publisher URI --subscriber URI [flags]",
		Short: "Transactional replication between two PostgreSQL servers: log reader, distribution database, distribution agent",
		Long: `replicate copies committed changes of a set of tables from a publisher to a
subscriber, the way the seed's SQL Server replication does:

  publisher --log reader--> distribution database --distribution agent--> subscriber

The log reader decodes the publisher's write-ahead log (logical decoding,
pgoutput) and stores each committed change, in commit order, in the
distribution database (dbrig_distribution on the publisher's server, which
several replications may share), compressed unless setup says
--compression none. The distribution agent reads every pending command as
one streaming result set (or --read-streams of them, in turn) into command
buffers (--buffers of --buffer-size)
and applies them to the subscriber (--pipeline buffers in flight),
committing every --commit-batch-size source transactions together with its
position, so each change is applied exactly once across crashes and
reconnects.

Where the agent runs is the mode: next to the distribution database (push:
its writes cross the WAN) or next to the subscriber (pull: its reads cross
the WAN). Run the agent where you want it with --role agent.

  setup     check both servers, create the distribution database (or add
            to one dbrig made), the publication, the slot and the
            subscriber's bookkeeping, and copy the tables' rows (--init
            snapshot: COPY in --streams sessions of one snapshot, creating
            missing tables as pg_dump would; backup: pg_dump/pg_restore;
            --ship runs pg_dump at the publisher's site instead, the archive
            crossing the network compressed with zstd)
  run       run the log reader and the agent (--role) until Ctrl-C or
            --until-caught-up, printing progress; a lost connection or a
            restarted server is retried, a change the subscriber refuses
            stops the agent only (--agent-retry restarts it), and
            --metrics-addr serves Prometheus metrics
  status    where each role runs and since when (or why it stopped), the
            commands stored and pending, the lag, the WAL the slot retains
  verify    compare every table on both sides (row count and checksum);
            exit 1 on any difference, listing the first differing keys
  teardown  remove what dbrig's catalog records for this replication: the
            slot, the publication, its part of the distribution database
            (the whole database when no other replication uses it) and the
            subscription (the replicated tables stay); it refuses to touch
            anything dbrig did not create

The URIs may also come from DBRIG_PUBLISHER and DBRIG_SUBSCRIBER, which keeps
passwords out of process listings. Passwords are never printed, whatever
the form of the string.

Exit codes: 0 success (verify: identical), 1 a server cannot be used, the
replication does not exist, a command failed, the agent stopped, or the
sides differ, 2 bad flags, URIs or tables, 130 interrupted.`,
		Example: `  export DBRIG_PUBLISHER='postgres://repl:secret@tukwila:5432/shop'
  export DBRIG_SUBSCRIBER='postgres://repl:secret@blueridge:5432/shop'
  dbrig replicate setup --tables orders,order_lines --init snapshot
  dbrig replicate setup --init backup --ship ssh://repl@tukwila   # pg_dump at the publisher's site
  dbrig replicate run --until-caught-up            # log reader and agent here
  dbrig replicate run --role log-reader            # on the publisher's site
  dbrig replicate run --role agent --mode pull     # on the subscriber's site
  dbrig replicate status
  dbrig replicate verify
  dbrig replicate teardown`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: []string{"setup", "run", "status", "verify", "teardown"},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReplicate(cmd.Context(), cmd, a, &f, args[0])
		},
	}
	f.register(cmd.Flags())
	return cmd
}

// register declares replicate's flags, in the order --help lists them.
func (f *replicateFlags) register(fl *pflag.FlagSet) {
	fl.SortFlags = false
	fl.StringVar(&f.publisher, "publisher", "", "publisher database: `[publisher=]URI` (postgres://user:password@host:port/db, or key=value) or [publisher=]env:VAR; default $DBRIG_PUBLISHER")
	fl.StringVar(&f.subscriber, "subscriber", "", "subscriber database: `[subscriber=]URI` or [subscriber=]env:VAR; default $DBRIG_SUBSCRIBER")
	fl.StringVar(&f.tables, "tables", "", "setup, verify: comma-separated `tables` to publish (schema.table; default every table of the publisher database)")
	fl.StringVar(&f.mode, "mode", "push", "where the agent runs: push (beside the distribution database) or pull (beside the subscriber); with --link it decides which connection crosses the emulated WAN")
	fl.StringVar(&f.init, "init", "none", "setup: how the subscriber gets the existing rows: snapshot (COPY), backup (pg_dump/pg_restore) or none")
	fl.IntVar(&f.streams, "streams", replication.DefaultInitStreams, "setup: publisher sessions of the one snapshot that --init snapshot copies each table in, a block range each (1 to 64; across a WAN each carries a window of its own)")
	fl.StringVar(&f.compress, "compression", "zstd", "setup: how the distribution database stores commands: zstd (a fraction of the bytes to write and, in pull mode, to read across the WAN) or none (as the seed's)")
	fl.StringVar(&f.ship, "ship", "", "setup --init backup: run pg_dump at the publisher's site and ship its archive compressed with zstd: ssh://[USER@]HOST[:PORT] (`dbrig replicate ship` there over your ssh) or local (a child process here)")
	fl.StringVar(&f.shipBin, "ship-bin", "", "setup --ship: dbrig's `path` at the publisher's site (default: dbrig on the remote PATH; local: this dbrig)")
	fl.StringVar(&f.sshConfig, "ssh-config", "", "setup --ship ssh://HOST: ssh client config `FILE` (ssh -F)")
	fl.BoolVar(&f.binary, "binary", false, "setup: carry column values in their binary form (bytea raw, not hex; PostgreSQL 14+, same major version on both sides)")
	fl.StringVar(&f.bufferSize, "buffer-size", "40KB", "run: size of one command buffer, the most the writer sends per round trip (a `size` such as 40KB, 1MiB)")
	fl.IntVar(&f.buffers, "buffers", replication.DefaultBuffers, "run: number of command buffers")
	fl.IntVar(&f.commitBatch, "commit-batch-size", replication.DefaultCommitBatchSize, "run: source transactions per subscriber transaction (never split)")
	fl.StringVar(&f.pipeline, "pipeline", "auto", "run: buffers the writer keeps in flight: auto (from the measured bandwidth-delay product), a `number`, or 1 (stop and wait, as the seed's agent)")
	fl.IntVar(&f.readStreams, "read-streams", 1, "run: connections the agent reads the stored commands through at once, each a share of them applied in order (1 to 16; pulling across a WAN each carries a window of its own)")
	fl.StringVar(&f.role, "role", "all", "run: what to run here: all, log-reader or agent")
	fl.BoolVar(&f.untilCaughtUp, "until-caught-up", false, "run: stop once everything committed on the publisher before the start is applied")
	fl.DurationVar(&f.progress, "progress", 2*time.Second, "run, setup: how often to print progress (0 = never); setup prints its copy's on stderr")
	fl.DurationVar(&f.agentRetry, "agent-retry", 0, "run: restart an agent stopped by an apply error (a constraint, a full disk) after this `duration`; 0 leaves it stopped until restarted by hand")
	fl.StringVar(&f.metricsAddr, "metrics-addr", "", "run: serve Prometheus metrics (lag, pending, rate, slot WAL retained, errors) at http://`HOST:PORT`/metrics")
	fl.StringVar(&f.linkProfile, "link", "", "run: put an emulated WAN link `profile` (such as tukwila-blueridge+autotuned) in front of the connection --mode sends across, for experiments")
	fl.StringVar(&f.publication, "publication", replication.DefaultPublication, "`name` of the publication, its replication slot and subscription")
	fl.StringVar(&f.distDB, "distribution-db", replication.DefaultDistributionDB, "`name` of the distribution database on the publisher's server")
	fl.BoolVar(&f.force, "force", false, "teardown: also when a log reader still holds the slot (it is terminated)")
	fl.IntVar(&f.maxDiffs, "max-differences", 10, "verify: differing keys to list per table")
	fl.BoolVar(&f.jsonOut, "json", false, "print JSON instead of text")
	fl.BoolVar(&f.verbose, "verbose", false, "log what the agents do on stderr")
}

// replicateError maps the package's errors to exit codes.
func replicateError(err error) error {
	if err == nil {
		return nil
	}
	var ue *replication.UsageError
	if errors.As(err, &ue) {
		return usageError(err)
	}
	return failure(err)
}

// config parses the flags every action needs.
func (f *replicateFlags) config(a *app, action string) (replication.Config, error) {
	var errs []error
	cfg := replication.Config{Publication: f.publication, DistributionDB: f.distDB}
	parse := func(flag, env, val string, dst *postgres.ConnInfo) {
		if val == "" && a.getenv(env) != "" {
			val = "env:" + env
		}
		if val == "" {
			errs = append(errs, fmt.Errorf("--%s is required (or $%s): the %s database's URI, such as postgres://user:password@host:5432/db, or env:VAR", flag, env, flag))
			return
		}
		arg, err := parseServerArg(flag, flag, "postgres", val, newEngines(binDirs{}), a.getenv)
		if err != nil {
			errs = append(errs, err)
			return
		}
		ci := postgres.ConnInfoOf(arg.login)
		if ci.Database == "" {
			errs = append(errs, fmt.Errorf("--%s %s: name the database (…/dbname)", flag, ci))
		}
		*dst = ci
	}
	parse("publisher", "DBRIG_PUBLISHER", f.publisher, &cfg.Publisher)
	parse("subscriber", "DBRIG_SUBSCRIBER", f.subscriber, &cfg.Subscriber)
	if f.tables != "" {
		t, err := replication.ParseTableList(f.tables)
		if err != nil {
			errs = append(errs, fmt.Errorf("--tables: %w", err))
		}
		cfg.Tables = t
	}
	return cfg, errors.Join(errs...)
}

func runReplicate(ctx context.Context, cmd *cobra.Command, a *app, f *replicateFlags, action string) error {
	switch action {
	case "setup", "run", "status", "verify", "teardown":
	case "ship":
		return replicateShip(ctx, f)
	default:
		return usageError(fmt.Errorf("unknown action %q: want setup, run, status, verify or teardown", action))
	}
	cfg, err := f.config(a, action)
	err = errors.Join(err, f.checkBounds(cmd))
	mode, merr := replication.ParseMode(f.mode)
	init, ierr := replication.ParseInitMethod(f.init)
	compression, cerr := replication.ParseCompression(f.compress)
	f.compression = compression
	var shipper *replication.Shipper
	var serr error
	if action == "setup" {
		shipper, serr = f.shipper(a, init)
	}
	if err := errors.Join(err, replFlagErr("mode", merr), replFlagErr("init", ierr), replFlagErr("compression", cerr), serr); err != nil {
		return usageError(err)
	}
	if f.verbose {
		cfg.Logger = slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	switch action {
	case "setup":
		return replicateSetup(ctx, a, f, cfg, replication.SetupOptions{Init: init, Mode: mode, Shipper: shipper})
	case "run":
		return replicateRun(ctx, a, f, cfg, mode)
	case "status":
		return replicateStatus(ctx, a, f, cfg)
	case "verify":
		return replicateVerify(ctx, a, f, cfg)
	default:
		res, err := replication.Teardown(ctx, cfg, replication.TeardownOptions{Force: f.force})
		if f.jsonOut && len(res.Removed) > 0 {
			writeReplJSON(a.stdout, res)
		}
		if err != nil {
			return replicateError(fmt.Errorf("teardown: %w", err))
		}
		if !f.jsonOut {
			fmt.Fprintf(a.stdout, "replication %q removed: %s (the replicated tables stay)\n", cfg.Publication, strings.Join(res.Removed, ", "))
			for _, k := range res.Kept {
				fmt.Fprintf(a.stdout, "kept: %s\n", k)
			}
		}
		return nil
	}
}

// maxDifferences bounds verify's differing keys per table, each kept in
// memory and printed.
const maxDifferences = 10_000

// checkBounds refuses, for every action and before any server is touched,
// the values no action can use: an empty --tables (which would mean every
// table), a command buffer of 0 bytes (which would mean the default), a
// negative --progress or --max-differences.
func (f *replicateFlags) checkBounds(cmd *cobra.Command) error {
	var errs []error
	if cmd.Flags().Changed("tables") {
		if t, err := replication.ParseTableList(f.tables); err == nil && len(t) == 0 {
			errs = append(errs, fmt.Errorf("--tables %q: name at least one table, or leave --tables out for every table (setup: every table of the publisher's database; verify: every table setup published)", f.tables))
		}
	}
	if bs, err := units.ParseSize(f.bufferSize); err == nil && (bs < replication.MinBufferSize || bs > replication.MaxBufferSize) {
		errs = append(errs, fmt.Errorf("--buffer-size %s: want %s to %s (a few commands; what the agent holds in memory per buffer)", f.bufferSize, units.Size(replication.MinBufferSize), units.Size(replication.MaxBufferSize)))
	}
	if f.progress < 0 {
		errs = append(errs, fmt.Errorf("--progress %s: want how often to print progress, or 0 for never", f.progress))
	}
	if f.streams < 1 || f.streams > replication.MaxInitStreams {
		errs = append(errs, fmt.Errorf("--streams %d: want 1 to %d publisher sessions", f.streams, replication.MaxInitStreams))
	}
	if f.maxDiffs < 1 || f.maxDiffs > maxDifferences {
		errs = append(errs, fmt.Errorf("--max-differences %d: want 1 to %d differing keys per table (each is kept and printed)", f.maxDiffs, maxDifferences))
	}
	return errors.Join(errs...)
}

func replFlagErr(flag string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("--%s: %w", flag, err)
}

func replicateSetup(ctx context.Context, a *app, f *replicateFlags, cfg replication.Config, opts replication.SetupOptions) error {
	init := opts.Init
	opts.Binary, opts.Compression, opts.Streams = f.binary, f.compression, f.streams
	opts.Progress, opts.ProgressEvery = copyProgress(a), f.progress
	res, err := replication.Setup(ctx, cfg, opts)
	if err != nil {
		return replicateError(fmt.Errorf("setup: %w", err))
	}
	if f.jsonOut {
		return writeReplJSON(a.stdout, res)
	}
	fmt.Fprintf(a.stdout, "replication %q set up: publisher %s, subscriber %s, distribution database %q\n",
		cfg.Publication, cfg.Publisher, cfg.Subscriber, cfg.DistributionDB)
	fmt.Fprintf(a.stdout, "slot %q consistent at %s; changes committed after it will be replicated\n", cfg.Publication, res.ConsistentPoint)
	if init != replication.InitNone {
		var rows int64
		for _, t := range res.Tables {
			rows += t.Rows
		}
		fmt.Fprintf(a.stdout, "initialized by %s: %d tables, %d rows, %s in %s\n", init, len(res.Tables), rows,
			units.Size(res.InitBytes), units.FormatDuration(res.InitDuration))
		if opts.Shipper != nil {
			fmt.Fprintf(a.stdout, "shipped from %s: %.1f MB crossed compressed%s\n", f.ship, float64(res.ShippedBytes)/1e6, ratio(res.InitBytes, res.ShippedBytes))
		}
	}
	fmt.Fprintln(a.stdout, "next: dbrig replicate run")
	return nil
}

// copyProgress prints how far a snapshot's copy has come, on stderr.
func copyProgress(a *app) func(replication.CopyProgress) {
	return func(p replication.CopyProgress) {
		rate := ""
		if s := p.Elapsed.Seconds(); s > 0 {
			rate = fmt.Sprintf(", %.1f MB/s", float64(p.Bytes)/1e6/s)
		}
		fmt.Fprintf(a.stderr, "%s  snapshot: %s (table %d of %d): %.1f MB copied (%.1f MB on the publisher's disk); %.1f MB in all%s\n",
			units.FormatDuration(p.Elapsed.Round(time.Millisecond)), p.Table, p.Index, p.Tables,
			float64(p.TableBytes)/1e6, float64(p.OnDisk)/1e6, float64(p.Bytes)/1e6, rate)
	}
}

func (f *replicateFlags) agentOptions() (replication.AgentOptions, error) {
	var errs []error
	opts := replication.AgentOptions{Buffers: f.buffers, CommitBatchSize: f.commitBatch, ReadStreams: f.readStreams}
	bs, err := units.ParseSize(f.bufferSize)
	if err != nil {
		errs = append(errs, fmt.Errorf("--buffer-size: %w", err))
	}
	opts.BufferSize = int(bs)
	if opts.Pipeline, err = replication.ParsePipeline(f.pipeline); err != nil {
		errs = append(errs, fmt.Errorf("--pipeline: %w", err))
	}
	if f.buffers < 1 {
		errs = append(errs, fmt.Errorf("--buffers %d: want at least 1", f.buffers))
	}
	if f.commitBatch < 1 {
		errs = append(errs, fmt.Errorf("--commit-batch-size %d: want at least 1", f.commitBatch))
	}
	if f.readStreams < 1 {
		errs = append(errs, fmt.Errorf("--read-streams %d: want 1 to %d", f.readStreams, replication.MaxReadStreams))
	}
	if err := opts.Validate(); err != nil {
		errs = append(errs, err)
	}
	return opts, errors.Join(errs...)
}

func replicateRun(ctx context.Context, a *app, f *replicateFlags, cfg replication.Config, mode replication.Mode) error {
	rc, wan, err := f.runConfig(cfg, mode)
	if err != nil {
		return usageError(err)
	}
	if rc.Logger == nil {
		rc.Logger = slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	}

	// The agent's connections, one of them through the emulated WAN.
	var proxy *link.Proxy
	if f.linkProfile != "" && rc.Agent {
		if proxy, rc.Targets, err = agentLink(ctx, a, f.linkProfile, wan, rc); err != nil {
			return err
		}
		defer proxy.Close()
	}
	rc.OnEvent = agentEvents(a, f, rc.LogReader)
	return superviseRun(ctx, a, f, rc, proxy)
}

// runConfig checks run's own flags and says what the run is.
func (f *replicateFlags) runConfig(cfg replication.Config, mode replication.Mode) (replication.RunConfig, link.Config, error) {
	opts, err := f.agentOptions()
	role := strings.ToLower(f.role)
	if role != "all" && role != "log-reader" && role != "agent" {
		err = errors.Join(err, fmt.Errorf("--role %q: want all, log-reader or agent", f.role))
	}
	var wan link.Config
	if f.linkProfile != "" {
		c, lerr := link.ParseProfile(f.linkProfile)
		err = errors.Join(err, replFlagErr("link", lerr))
		wan = c
	}
	if f.agentRetry < 0 {
		err = errors.Join(err, fmt.Errorf("--agent-retry %s: want a duration of 0 (never) or more", f.agentRetry))
	}
	rc := replication.RunConfig{Config: cfg, LogReader: role != "agent", Agent: role != "log-reader", Mode: mode, Options: opts,
		UntilCaughtUp: f.untilCaughtUp, AgentRetry: f.agentRetry}
	return rc, wan, err
}

// agentLink puts the emulated WAN in front of the connection the mode
// sends across, and returns the agent's targets, one of them through it.
func agentLink(ctx context.Context, a *app, profile string, wan link.Config, rc replication.RunConfig) (*link.Proxy, replication.Targets, error) {
	cfg := rc.Config
	up := rc.Mode.Crossing(cfg.Distribution(), cfg.Subscriber)
	proxy, err := link.Listen(ctx, "127.0.0.1:0", up.Addr(), wan)
	if err != nil {
		return nil, replication.Targets{}, failure(fmt.Errorf("--link: %w", err))
	}
	targets, err := rc.Mode.AgentTargets(cfg.Distribution(), cfg.Subscriber, proxy.Addr())
	if err != nil {
		proxy.Close()
		return nil, targets, failure(err)
	}
	fmt.Fprintf(a.stderr, "emulated WAN %s (%s) in front of %s\n", profile, wan, up)
	return proxy, targets, nil
}

// agentEvents tells the operator of the agent's stops and restarts; a run
// that ends with the agent (no log reader, or --until-caught-up) says why
// when it ends instead.
func agentEvents(a *app, f *replicateFlags, withLogReader bool) func(replication.Event) {
	return func(e replication.Event) {
		switch {
		case e.State == "restarting":
			fmt.Fprintf(a.stderr, "%s: restarting the distribution agent\n", e.At.Format(time.RFC3339))
		case e.Role == "distribution agent" && withLogReader && !f.untilCaughtUp:
			again := "remove the cause, then restart it (dbrig replicate run --role agent, or restart this run)"
			if f.agentRetry > 0 {
				again = fmt.Sprintf("it is retried every %s", f.agentRetry)
			}
			fmt.Fprintf(a.stderr, "%s: the distribution agent stopped; the log reader keeps capturing; %s\n  %v\n",
				e.At.Format(time.RFC3339), again, e.Err)
		}
	}
}

// superviseRun runs the replication, printing progress, until it ends.
func superviseRun(ctx context.Context, a *app, f *replicateFlags, rc replication.RunConfig, proxy *link.Proxy) error {
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	sup, err := replication.Supervise(runCtx, rc)
	if err != nil {
		return replicateError(fmt.Errorf("run: %w", err))
	}
	defer sup.Stop()
	if f.metricsAddr != "" {
		ms, err := load.ServeMetrics(runCtx, f.metricsAddr, replication.NewCollector(rc.Config, sup))
		if err != nil {
			return usageError(fmt.Errorf("--metrics-addr: %w", err))
		}
		fmt.Fprintf(a.stderr, "metrics at http://%s/metrics\n", ms.Addr())
	}
	watchProgress(a, f, sup, proxy)
	err = sup.Err()
	if err == nil && f.untilCaughtUp && !f.jsonOut {
		fmt.Fprintf(a.stdout, "caught up with %s in %s\n", sup.Target(), units.FormatDuration(sup.Progress().Elapsed))
	}
	switch {
	case err == nil:
		return nil
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		return ctx.Err()
	}
	var ae *replication.ApplyError
	if errors.As(err, &ae) && rc.LogReader && !f.untilCaughtUp {
		// Printed when it happened: say only how the run ends.
		return failure(errors.New("run ended with the distribution agent stopped (see above)"))
	}
	return replicateError(err)
}

// watchProgress prints the run's progress every --progress until it ends,
// then its totals.
func watchProgress(a *app, f *replicateFlags, sup *replication.Supervisor, proxy *link.Proxy) {
	report := func(final bool) {
		line := replProgress{Progress: sup.Progress(), Final: final}
		if proxy != nil {
			s := proxy.Stats()
			line.Link = &s
		}
		printProgress(a, f.jsonOut, line)
	}
	var tick <-chan time.Time
	if f.progress > 0 {
		t := time.NewTicker(f.progress)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-sup.Done():
			report(true)
			return
		case <-tick:
			report(false)
		}
	}
}

// replProgress is one line of run's progress, also its JSON form.
type replProgress struct {
	replication.Progress
	Link  *link.Stats `json:"link,omitempty"`
	Final bool        `json:"final,omitempty"`
}

func printProgress(a *app, jsonOut bool, l replProgress) {
	if jsonOut {
		b, _ := json.Marshal(l)
		fmt.Fprintln(a.stdout, string(b))
		return
	}
	var parts []string
	if s := l.LogReader; s != nil {
		parts = append(parts, fmt.Sprintf("log reader: %d transactions, %d commands stored (%s, %s compressed), slot at %s",
			s.Transactions, s.Commands, units.Size(s.Bytes), units.Size(s.StoredBytes), s.ConfirmedLSN))
	}
	if s := l.Agent; s != nil {
		if l.AgentStopped != "" {
			parts = append(parts, "agent: stopped")
		} else {
			parts = append(parts, fmt.Sprintf("agent (%s, pipeline %d): %d commands in %d transactions applied, %.0f commands/s, %d round trips, at command %d",
				s.Mode, s.Pipeline, l.Applied, s.Transactions, l.CommandsPerSecond, s.RoundTrips, s.LastCmdID))
		}
	}
	prefix := units.FormatDuration(l.Elapsed.Round(time.Millisecond))
	if l.Final {
		prefix = "total " + prefix
	}
	fmt.Fprintf(a.stdout, "%s  %s\n", prefix, strings.Join(parts, " | "))
}

func replicateStatus(ctx context.Context, a *app, f *replicateFlags, cfg replication.Config) error {
	st, err := replication.GetStatus(ctx, cfg)
	if err != nil {
		return replicateError(fmt.Errorf("status: %w", err))
	}
	if f.jsonOut {
		return writeReplJSON(a.stdout, st)
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	when := func(t time.Time) string {
		if t.IsZero() {
			return "never"
		}
		return t.Local().Format(time.RFC3339)
	}
	active := "idle (no log reader streams from it)"
	if st.Slot.Active {
		active = "active"
	}
	fmt.Fprintf(tw, "publication\t%s\n", st.Publication)
	fmt.Fprintf(tw, "slot\t%s, confirmed %s, %s of WAL behind %s, %s of WAL retained\n", active, st.Slot.ConfirmedLSN,
		units.Size(st.Slot.LagBytes), st.Slot.CurrentLSN, units.Size(st.Slot.WALRetainedBytes))
	fmt.Fprintf(tw, "log reader\t%s\n", roleLine(st.LogReader.Role, "", when))
	fmt.Fprintf(tw, "captured\t%d transactions, %d commands stored (%s; %s in the distribution database); last command %d (source commit %s)\n",
		st.LogReader.Transactions, st.LogReader.Commands, units.Size(st.LogReader.Bytes), units.Size(st.DistributionBytes),
		st.LogReader.LastCmdID, st.LogReader.LastCommitLSN)
	fmt.Fprintf(tw, "agent\t%s\n", roleLine(st.Agent.Role, st.Agent.Mode, when))
	fmt.Fprintf(tw, "subscription\tset up for %s mode; at command %d (source %s), %d transactions applied, last at %s\n",
		st.Subscription.Mode, st.Subscription.LastCmdID, st.Subscription.LastLSN, st.Subscription.Transactions, when(st.Subscription.AppliedAt))
	fmt.Fprintf(tw, "pending\t%d commands in %d transactions (%s)\n", st.Pending, st.PendingTransactions, units.Size(st.PendingBytes))
	fmt.Fprintf(tw, "lag\t%s\n", units.FormatDuration(st.Lag.Round(time.Millisecond)))
	return tw.Flush()
}

// roleLine says where a role runs, or why it does not.
func roleLine(r replication.Role, mode string, when func(time.Time) string) string {
	where := ""
	if mode != "" {
		where = mode + " mode, "
	}
	if r.Host != "" {
		where += fmt.Sprintf("on %s (pid %d)", r.Host, r.PID)
	}
	switch {
	case r.Running && r.State == "starting":
		return "starting (where it runs is not recorded yet)"
	case r.Running:
		return fmt.Sprintf("running, %s since %s", where, when(r.Since))
	case r.State == "":
		return "not running: never started"
	case r.State == "stopped" && r.Error != "":
		return fmt.Sprintf("stopped at %s (%s) on an error: %s", when(r.StoppedAt), where, r.Error)
	case r.State == "stopped":
		return fmt.Sprintf("not running: stopped by its operator at %s (%s)", when(r.StoppedAt), where)
	}
	return fmt.Sprintf("not running: it ran %s since %s and stopped without saying why (killed, or its host or connection lost)", where, when(r.Since))
}

func replicateVerify(ctx context.Context, a *app, f *replicateFlags, cfg replication.Config) error {
	res, err := replication.Verify(ctx, cfg, replication.VerifyOptions{MaxDifferences: f.maxDiffs})
	if err != nil {
		return replicateError(fmt.Errorf("verify: %w", err))
	}
	if f.jsonOut {
		if err := writeReplJSON(a.stdout, res); err != nil {
			return err
		}
	} else {
		tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "table\tpublisher rows\tsubscriber rows\tchecksums\tresult")
		for _, t := range res.Tables {
			verdict, sums := "identical", "equal"
			if !t.Equal {
				verdict = "DIFFERS"
				sums = t.PublisherChecksum + " / " + t.SubscriberChecksum
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\n", t.Table, t.PublisherRows, t.SubscriberRows, sums, verdict)
		}
		tw.Flush()
		for _, t := range res.Tables {
			for _, d := range t.Differences {
				fmt.Fprintf(a.stdout, "  %s: %s\n", t.Table, d)
			}
		}
	}
	if !res.Equal {
		return failure(fmt.Errorf("verify: publisher and subscriber differ"))
	}
	return nil
}

func writeReplJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
