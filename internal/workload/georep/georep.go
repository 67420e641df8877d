// Package georep is the geo-replication workload of seed 000: the
// transactional replication system of internal/replication (log reader,
// distribution database, distribution agent; push, pull and a pipelined
// push) carrying rows from a publisher to a subscriber across a WAN link,
// beside PostgreSQL's native logical replication, row-by-row remote inserts
// (postgres_fdw, the linked-server analogue) and the initialization of a
// subscriber by snapshot or from a backup.
//
// Every byte between the two sites crosses the study's link: which
// connection crosses it is what the scenario decides. The rig's own
// control connections (setup, inserts, waiting, verify) stay on each site.
// Every point ends with a verification of both sides; a point whose
// subscriber differs from its publisher fails.
package georep

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/replication"
	"github.com/dbrig/dbrig/internal/workload"
)

// Scenarios, in the order the report lists them.
var Scenarios = []string{"push", "pull", "push-pipelined", "native", "fdw-row", "fdw-batch", "init-snapshot", "init-backup"}

// Kind registers the workload.
func Kind() workload.Kind {
	return workload.Kind{
		Name: "georep",
		Doc:  "replication across a WAN: push, pull, pipelined push, native, row by row, initialization (seed 000)",
		Params: []workload.ParamSpec{
			{Name: "scenario", Type: workload.StringParam, Choices: Scenarios, Doc: "what carries the rows"},
			{Name: "payload", Type: workload.StringParam, Default: "char-1k", Choices: []string{"char-1k", "bytea-1.1k", "bytea-15.5k"}, Doc: "the rows' shape"},
			{Name: "rows", Type: workload.IntParam, Doc: "rows inserted on the publisher (for init-*: rows copied)",
				Max: 100_000_000, Why: "ten times the seed's largest snapshot (10,100,000 rows, 11.3 GB), each row stored again in the distribution database"},
			{Name: "rows_per_transaction", Type: workload.IntParam, Default: int64(1000), Doc: "rows per publisher transaction",
				Max: 1_000_000, Why: "a transaction is never split: it is decoded, stored and applied whole"},
			{Name: "buffer_size", Type: workload.SizeParam, Default: int64(replication.DefaultBufferSize), Doc: "the agent's command buffer (40 KB)",
				Min: replication.MinBufferSize, MinWhy: "a few commands", Max: replication.MaxBufferSize, Why: "each buffer is in the agent's memory"},
			{Name: "buffers", Type: workload.IntParam, Default: int64(replication.DefaultBuffers), Doc: "the agent's command buffers",
				Max: replication.MaxPipeline + 1, Why: "one more than the deepest pipeline"},
			{Name: "commit_batch_size", Type: workload.IntParam, Default: int64(replication.DefaultCommitBatchSize), Doc: "source transactions per subscriber transaction",
				Max: replication.MaxCommitBatchSize, Why: "the subscriber holds a batch's locks until its commit: ten thousand times the default"},
			{Name: "pipeline", Type: workload.StringParam, Default: "auto", Doc: "buffers in flight of push-pipelined: a number or auto",
				Check: func(v any) error { _, err := replication.ParsePipeline(fmt.Sprint(v)); return err }},
			{Name: "compression", Type: workload.StringParam, Default: "none", Choices: []string{"none", "zstd"}, Doc: "how the distribution database stores commands: none (the seed's) or zstd"},
			{Name: "fdw_batch", Type: workload.IntParam, Default: int64(100), Doc: "postgres_fdw batch_size of fdw-batch (fdw-row uses 1)",
				Max: 32767, Why: "postgres_fdw sends a batch in one statement of at most 65,535 parameters, two a row"},
			{Name: "publisher", Type: workload.StringParam, Default: "pub", Doc: "the publisher's instance"},
			{Name: "subscriber", Type: workload.StringParam, Default: "sub", Doc: "the subscriber's instance"},
		},
		New:        newWorkload,
		Model:      Model,
		Predict:    Predict,
		Probe:      Probe,
		Metrics:    Metrics,
		PrepareKey: func(workload.Params) string { return "georep-v1" },
		Engines:    []string{"postgres"},
		EnginesWhy: "the replication system reads PostgreSQL's logical decoding, and its baselines are PostgreSQL's own replication and postgres_fdw",
	}
}

// localBinaries are the pg_dump and pg_restore of an instance dbrig runs
// (zero for a target: replication finds the newest installed).
func localBinaries(inst engine.Instance) postgres.Binaries {
	if pg, ok := inst.(*postgres.Instance); ok {
		return pg.Binaries()
	}
	return postgres.Binaries{}
}

type georep struct {
	p           workload.Params
	scenario    string
	payload     Payload
	compression replication.Compression
	options     replication.AgentOptions
	pub, sub    string
}

var _ workload.Workload = (*georep)(nil)

func newWorkload(p workload.Params) (workload.Workload, error) {
	payload, err := ParsePayload(p.String("payload"))
	if err != nil {
		return nil, err
	}
	w := &georep{p: p, scenario: p.String("scenario"), payload: payload, pub: p.String("publisher"), sub: p.String("subscriber")}
	if w.compression, err = replication.ParseCompression(p.String("compression")); err != nil {
		return nil, err
	}
	w.options = replication.AgentOptions{
		BufferSize:      int(p.Int("buffer_size")),
		Buffers:         int(p.Int("buffers")),
		CommitBatchSize: int(p.Int("commit_batch_size")),
		Pipeline:        1,
	}
	if w.scenario == "push-pipelined" {
		if w.options.Pipeline, err = replication.ParsePipeline(p.String("pipeline")); err != nil {
			return nil, err
		}
	}
	if err := w.options.Validate(); err != nil {
		return nil, err
	}
	return w, nil
}

// Prepare creates the database on both servers; the scenarios make their
// own tables, publications and subscriptions and remove them afterwards.
func (w *georep) Prepare(ctx context.Context, env *workload.Env) error {
	for _, name := range []string{w.pub, w.sub} {
		inst := env.Instance(name)
		if inst == nil {
			return fmt.Errorf("no instance %q", name)
		}
		if err := inst.CreateDatabase(ctx, env.Database); err != nil {
			return err
		}
	}
	return nil
}

// sites returns the publisher's and the subscriber's sites, where each
// instance's own connections are local.
type sites struct {
	pubLocal, subLocal     postgres.ConnInfo // the rig's own logins, on each site
	subFromPub, pubFromSub postgres.ConnInfo // across the link
	distLocal, distFromSub postgres.ConnInfo // the distribution database
}

func (w *georep) endpoints(env *workload.Env) (s sites, pubSite, subSite string, err error) {
	pubSite, subSite = env.SiteOf(w.pub), env.SiteOf(w.sub)
	conn := func(from, inst, db string) postgres.ConnInfo {
		var e workload.Endpoint
		if err == nil {
			e, err = env.Conn(from, inst, db)
		}
		return postgres.ConnInfoOf(e.Conn)
	}
	s.pubLocal = conn(pubSite, w.pub, env.Database)
	s.subLocal = conn(subSite, w.sub, env.Database)
	s.subFromPub = conn(pubSite, w.sub, env.Database)
	s.pubFromSub = conn(subSite, w.pub, env.Database)
	s.distLocal = conn(pubSite, w.pub, replication.DefaultDistributionDB)
	s.distFromSub = conn(subSite, w.pub, replication.DefaultDistributionDB)
	return s, pubSite, subSite, err
}

// Run replicates the point's rows and measures until the subscriber has
// caught up.
func (w *georep) Run(ctx context.Context, env *workload.Env) (workload.Measurement, error) {
	s, pubSite, subSite, err := w.endpoints(env)
	if err != nil {
		return workload.Measurement{}, err
	}
	r := &scenarioRunner{w: w, env: env, s: s, pubSite: pubSite, subSite: subSite,
		rows: int(w.p.Int("rows")), perXact: int(w.p.Int("rows_per_transaction"))}
	r.cfg = replication.Config{Publisher: s.pubLocal, Subscriber: s.subLocal, Logger: env.Log}
	r.m = workload.Measurement{Metrics: map[string]float64{"rows": float64(r.rows)}}
	switch w.scenario {
	case "push", "pull", "push-pipelined":
		err = r.replicate(ctx)
	case "native":
		err = r.native(ctx)
	case "fdw-row", "fdw-batch":
		err = r.fdw(ctx)
	case "init-snapshot", "init-backup":
		err = r.initialize(ctx)
	default:
		return r.m, fmt.Errorf("unknown scenario %q", w.scenario)
	}
	if err != nil {
		return r.m, err
	}
	r.m.Notes = append(r.m.Notes, "payload "+w.payload.String()+", "+strconv.Itoa(r.rows)+" rows")
	return r.m, nil
}

// scenarioRunner runs one point's scenario between its sites and fills its
// measurement.
type scenarioRunner struct {
	w                *georep
	env              *workload.Env
	s                sites
	pubSite, subSite string
	rows, perXact    int
	cfg              replication.Config
	m                workload.Measurement
}

func (r *scenarioRunner) record(elapsed time.Duration, bytes int64) {
	secs := elapsed.Seconds()
	r.m.Metrics["seconds"] = secs
	r.m.Metrics["payload_bytes"] = float64(bytes)
	if secs > 0 {
		r.m.Metrics["rows_per_s"] = float64(r.rows) / secs
		r.m.Metrics["mb_per_s"] = float64(bytes) / 1e6 / secs
	}
}

// replicate runs dbrig's replication, pushed or pulled.
func (r *scenarioRunner) replicate(ctx context.Context) error {
	w, s := r.w, r.s
	mode := replication.Push
	targets := replication.Targets{Distribution: s.distLocal, Subscriber: s.subFromPub}
	if w.scenario == "pull" {
		mode = replication.Pull
		targets = replication.Targets{Distribution: s.distFromSub, Subscriber: s.subLocal}
	}
	res, err := RunScenario(ctx, ScenarioConfig{
		Config: r.cfg, Agent: targets, Mode: mode, Options: w.options,
		Payload: w.payload, Rows: r.rows, RowsPerTransaction: r.perXact,
		Setup: replication.SetupOptions{Compression: w.compression},
	})
	if err != nil {
		return fmt.Errorf("%s: %w", w.scenario, err)
	}
	if res.Verify == nil || !res.Verify.Equal {
		return fmt.Errorf("%s: the subscriber was not verified equal to the publisher", w.scenario)
	}
	r.record(res.Elapsed, res.Bytes)
	a := res.Agent
	r.m.Metrics["round_trips"] = float64(a.RoundTrips)
	r.m.Metrics["sent_bytes"] = float64(a.SentBytes)
	r.m.Metrics["read_bytes"] = float64(a.ReadBytes)
	r.m.Metrics["pipeline"] = float64(a.Pipeline)
	r.m.Metrics["commits"] = float64(a.Commits)
	r.m.Notes = append(r.m.Notes, "verified: subscriber equals publisher")
	return nil
}

// native runs PostgreSQL's own logical replication, the baseline.
func (r *scenarioRunner) native(ctx context.Context) error {
	s := r.s
	res, err := RunNative(ctx, NativeConfig{
		Publisher: s.pubLocal, Subscriber: s.subLocal, PublisherFromSubscriber: s.pubFromSub,
		Payload: r.w.payload, Rows: r.rows, RowsPerTransaction: r.perXact,
	})
	if err != nil {
		return fmt.Errorf("native: %w", err)
	}
	if res.Verify == nil || !res.Verify.Equal {
		return fmt.Errorf("native: the subscriber was not verified equal to the publisher")
	}
	r.record(res.Elapsed, res.Bytes)
	r.m.Notes = append(r.m.Notes, "verified: subscriber equals publisher")
	return nil
}

// fdw inserts through postgres_fdw, a row or a batch at a time.
func (r *scenarioRunner) fdw(ctx context.Context) error {
	w, s := r.w, r.s
	batch := plannedBatch(w.p) // Predict's batch is the run's
	res, err := RunFDW(ctx, FDWConfig{
		Local: s.pubLocal, Remote: s.subFromPub, RemoteDirect: s.subLocal,
		Payload: w.payload, Rows: r.rows, BatchSize: int(batch),
	})
	if err != nil {
		return fmt.Errorf("%s: %w", w.scenario, err)
	}
	r.record(res.Elapsed, res.Bytes)
	r.m.Metrics["batch_size"] = batch
	return nil
}

// initialize times the subscriber's initialization by a snapshot or a
// backup. The snapshot's COPY crosses the link: read on the publisher's
// site, written to the subscriber from there. The backup is dumped at the
// publisher's site, shipped across the link compressed, and restored at
// the subscriber's site, as the seed's was.
func (r *scenarioRunner) initialize(ctx context.Context) error {
	w, s := r.w, r.s
	setup := replication.SetupOptions{Init: replication.InitSnapshot, InitPublisher: s.pubLocal, InitSubscriber: s.subFromPub,
		Binaries: localBinaries(r.env.Instance(w.pub))}
	var ship *shipper
	if w.scenario == "init-backup" {
		if r.env.Via == nil {
			return errors.New("init-backup: the study gives no path between the sites for the archive")
		}
		ship = &shipper{via: r.env.Via, from: r.pubSite, to: r.subSite}
		setup.Init, setup.InitSubscriber, setup.Carrier = replication.InitBackup, s.subLocal, ship.carry
	}
	res, err := RunScenario(ctx, ScenarioConfig{
		Config: r.cfg, Mode: replication.Pull, Options: w.options, Payload: w.payload,
		InitialRows: r.rows, Rows: 0,
		Agent: replication.Targets{Distribution: s.distFromSub, Subscriber: s.subLocal},
		Setup: setup,
	})
	if err != nil {
		return fmt.Errorf("%s: %w", w.scenario, err)
	}
	if res.Verify == nil || !res.Verify.Equal {
		return fmt.Errorf("%s: the subscriber was not verified equal to the publisher", w.scenario)
	}
	r.record(res.Setup.InitDuration, int64(r.rows)*int64(w.payload.RowBytes()))
	r.m.Metrics["init_bytes"] = float64(res.Setup.InitBytes)
	if ship != nil {
		r.m.Metrics["dump_seconds"] = res.Setup.DumpDuration.Seconds()
		r.m.Metrics["shipped_bytes"] = float64(ship.Shipped())
		r.m.Notes = append(r.m.Notes, fmt.Sprintf("archive %d bytes, shipped compressed as %d bytes", res.Setup.InitBytes, ship.Shipped()))
	}
	r.m.Notes = append(r.m.Notes, "verified: subscriber equals publisher")
	return nil
}

// Metrics are what the scenarios measure.
var Metrics = []workload.MetricSpec{
	{Name: "seconds", Unit: workload.Seconds, Better: workload.Lower, Headline: true, Doc: "from the first insert's commit (or the agent's start on a stored backlog, or the initialization's start) until the subscriber holds the last row"},
	{Name: "rows_per_s", Unit: workload.PerSecond, Better: workload.Higher, Headline: true, Doc: "rows replicated per second"},
	{Name: "mb_per_s", Unit: workload.Count, Better: workload.Higher, Doc: "payload megabytes (10^6) replicated per second"},
	{Name: "rows", Unit: workload.Count, Better: workload.Higher, Doc: "rows replicated"},
	{Name: "payload_bytes", Unit: workload.Bytes, Better: workload.Higher, Doc: "the rows' payload"},
	{Name: "round_trips", Unit: workload.Count, Better: workload.Lower, Doc: "buffers the agent's writer sent, one answer each"},
	{Name: "sent_bytes", Unit: workload.Bytes, Better: workload.Lower, Doc: "what the agent's writer sent to the subscriber"},
	{Name: "read_bytes", Unit: workload.Bytes, Better: workload.Lower, Doc: "what the agent's reader read from the distribution database"},
	{Name: "pipeline", Unit: workload.Count, Better: workload.Higher, Doc: "buffers the writer kept in flight"},
	{Name: "commits", Unit: workload.Count, Better: workload.Lower, Doc: "subscriber transactions"},
	{Name: "batch_size", Unit: workload.Count, Better: workload.Higher, Doc: "postgres_fdw's batch_size"},
	{Name: "init_bytes", Unit: workload.Bytes, Better: workload.Lower, Doc: "what the initialization copied: COPY's bytes, or the backup archive's"},
	{Name: "shipped_bytes", Unit: workload.Bytes, Better: workload.Lower, Doc: "the backup archive as it crossed the link, compressed"},
	{Name: "dump_seconds", Unit: workload.Seconds, Better: workload.Lower, Doc: "pg_dump's part of a backup initialization"},
}
