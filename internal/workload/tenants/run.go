package tenants

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"gonum.org/v1/gonum/stat"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/load"
	"github.com/dbrig/dbrig/internal/measure"
	"github.com/dbrig/dbrig/internal/procstat"
	"github.com/dbrig/dbrig/internal/workload"
)

// member is one instance of the set during a run.
type member struct {
	name    string
	inst    engine.Instance // nil in a client process
	pid     int             // the server's main process when local
	stats   *statsConn      // the engine's counters and settings
	tenants int
}

func (m *member) local() bool { return m.inst != nil && m.inst.Owned() && m.pid > 0 }

// snapshot is the state of the run at one moment, to difference two of.
type snapshot struct {
	at      time.Time
	ok      []int64 // per connection
	calls   []int64
	servers []procstat.Usage // per member (zero when not local)
	self    float64
	host    float64
	engine  []counters // per member
	err     error
}

func (w *tenants) run(ctx context.Context, env *workload.Env) (workload.Measurement, error) {
	names, err := w.members(env)
	if err != nil {
		return workload.Measurement{}, err
	}
	members, tenants, err := w.openMembers(ctx, env, names)
	defer func() {
		for _, m := range members {
			if m.stats != nil {
				m.stats.close()
			}
		}
	}()
	if err != nil {
		return workload.Measurement{}, err
	}

	lw := newTenantLoad(env.Engines, tenants, w.functions, w.size, w.prime)
	runner, err := w.newRunner(env, lw)
	if err != nil {
		return workload.Measurement{}, err
	}
	sctx, stopSampler := context.WithCancel(ctx)
	defer stopSampler()
	smp := w.startSampler(ctx, sctx, lw, members)
	res, runErr := runner.Run(ctx)
	stopSampler()
	smp.wg.Wait()
	if runErr != nil {
		return workload.Measurement{}, runErr
	}
	m := w.measurement(env, res, lw, members, smp.samples, smp.memories)
	w.addNotes(ctx, members, &m, smp.err)
	return m, nil
}

// openMembers lists the tenants of every instance and opens each
// instance's connection for the engine's counters. The members it returns
// (those opened before an error too) are the caller's to close.
func (w *tenants) openMembers(ctx context.Context, env *workload.Env, names []string) ([]*member, []tenant, error) {
	var members []*member
	var tenants []tenant
	for i, name := range names {
		m := &member{name: name, tenants: share(w.databases, len(names), i)}
		if env.Instance != nil {
			m.inst = env.Instance(name)
			if m.inst != nil && m.inst.Owned() {
				m.pid = m.inst.PID()
			}
		}
		members = append(members, m)
		for j := 1; j <= m.tenants; j++ {
			db := tenantName(env.Database, j)
			ep, err := env.Conn(env.ClientSite, name, db)
			if err != nil {
				return members, nil, err
			}
			tenants = append(tenants, tenant{instance: name, db: db, conn: ep.Conn, local: m.local()})
		}
		// The engine's counters come through the first database's own
		// path (the client's link, when there is one).
		ep, err := env.Conn(env.ClientSite, name, tenantName(env.Database, 1))
		if err != nil {
			return members, nil, err
		}
		if m.stats, err = openStats(ctx, env.Engines, ep.Conn); err != nil {
			return members, nil, fmt.Errorf("instance %q: %w", name, err)
		}
	}
	return members, tenants, nil
}

// newRunner is the load of one connection per tenant, reporting its
// progress and each second (over every tenant: the dashboard draws a
// consolidation point live, as it does oltp's) to env.
func (w *tenants) newRunner(env *workload.Env, lw *tenantLoad) (*load.Runner, error) {
	total := (w.warmUp + w.duration).Seconds()
	cfg := load.Config{
		Users: len(lw.tenants), Think: load.Think{Mean: w.think},
		WarmUp: w.warmUp, Duration: w.duration, Seed: 3,
		OnInterval: func(iv load.Interval) {
			if env.Progress != nil {
				env.Progress(int64((iv.Start + iv.Length).Seconds()), int64(total))
			}
			if env.Second != nil {
				env.Second(iv.Second())
			}
		},
	}
	return load.NewRunner(cfg, lw)
}

// sampler holds what the sampling goroutine read, valid once wg is done.
type sampler struct {
	samples  [2]snapshot
	memories []instanceMemory
	err      error
	wg       sync.WaitGroup
}

// startSampler takes a snapshot when the warm-up ends and one shortly
// before the measured interval ends (then reads every instance's memory,
// while every connection is still open), timed from the first
// transaction: the load layer starts every user at once when its clock
// starts. CPU, I/O and each database's TPM are over that window. It stops
// early when sctx ends; snapshots read under ctx.
func (w *tenants) startSampler(ctx, sctx context.Context, lw *tenantLoad, members []*member) *sampler {
	smp := &sampler{}
	smp.wg.Go(func() {
		select {
		case <-lw.started:
		case <-sctx.Done():
			return
		}
		t0 := time.Now()
		early := min(time.Second, w.duration/10)
		for i, at := range []time.Duration{w.warmUp, w.warmUp + w.duration - early} {
			if !sleepUntil(sctx, t0.Add(at)) {
				return
			}
			smp.samples[i] = takeSnapshot(ctx, lw, members)
			if smp.samples[i].err != nil && smp.err == nil {
				smp.err = smp.samples[i].err
			}
		}
		smp.memories = readInstanceMemory(members)
	})
	return smp
}

// addNotes says how the instances' memory was capped, what could not be
// read, and the servers' settings as read back.
func (w *tenants) addNotes(ctx context.Context, members []*member, m *workload.Measurement, sampleErr error) {
	for _, mb := range members {
		if cg, ok := mb.inst.(interface{ Cgroup() *engine.Cgroup }); ok && mb.local() && cg.Cgroup() != nil {
			how, _ := engine.MemoryCgroupSupport()
			m.Notes = append(m.Notes, fmt.Sprintf("each instance's memory is capped by %s (%s)", how, cg.Cgroup().Path()))
			break
		}
	}
	if sampleErr != nil {
		m.Notes = append(m.Notes, "the engine's counters could not be read: "+sampleErr.Error())
	}
	if err := w.readSettings(ctx, members, m); err != nil {
		m.Notes = append(m.Notes, "the server's settings could not be read back: "+err.Error())
	}
}

func sleepUntil(ctx context.Context, at time.Time) bool {
	t := time.NewTimer(time.Until(at))
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func takeSnapshot(ctx context.Context, lw *tenantLoad, members []*member) snapshot {
	s := snapshot{at: time.Now()}
	for _, sl := range lw.slots {
		s.ok = append(s.ok, sl.ok.Load())
		s.calls = append(s.calls, sl.calls.Load())
	}
	s.host, _ = procstat.HostBusy()
	s.self, _ = procstat.SelfCPU()
	for _, m := range members {
		var u procstat.Usage
		if m.local() {
			u, _ = procstat.TreeUsage(m.pid)
		}
		s.servers = append(s.servers, u)
		c, err := m.stats.read(ctx)
		if err != nil && s.err == nil {
			s.err = err
		}
		s.engine = append(s.engine, c)
	}
	return s
}

// instanceMemory is one instance's memory at the end of the measured
// interval, every connection still open.
type instanceMemory struct {
	known     bool
	mem       procstat.Memory
	processes int
	// cgroup is the memory cgroup's own count (page cache included) when
	// the instance is capped.
	cgroup, cgroupPeak int64
}

func readInstanceMemory(members []*member) []instanceMemory {
	var out []instanceMemory
	for _, m := range members {
		var im instanceMemory
		if m.local() {
			if mem, n, err := procstat.TreeMemory(m.pid); err == nil {
				im.known, im.mem, im.processes = true, mem, n
			}
			if cg, ok := m.inst.(interface{ Cgroup() *engine.Cgroup }); ok && cg.Cgroup() != nil {
				im.cgroup, im.cgroupPeak = cg.Cgroup().Usage()
			}
		}
		out = append(out, im)
	}
	return out
}

// Metrics are what a point measures.
var Metrics = []workload.MetricSpec{
	{Name: "tpm", Unit: workload.PerMinute, Better: workload.Higher, Headline: true, Doc: "transactions per minute over every database: the seed's TPM"},
	{Name: "tpm_per_db", Unit: workload.PerMinute, Better: workload.Higher, Headline: true, Doc: "transactions per minute of one database, on average"},
	{Name: "response_ms", Unit: workload.Milliseconds, Better: workload.Lower, Headline: true, Doc: "a transaction's mean response time (the distributions are in \"response\")"},
	{Name: "tpm_db_min", Unit: workload.PerMinute, Better: workload.Higher, Doc: "the least busy database's TPM"},
	{Name: "tpm_db_max", Unit: workload.PerMinute, Doc: "the busiest database's TPM"},
	{Name: "tpm_noise_pct", Unit: workload.Percent, Better: workload.Lower, Doc: "95 % confidence half-width of the TPM from its 5-second batches, in % of the TPM: the point's own noise"},
	{Name: "errors", Unit: workload.Count, Better: workload.Lower, Doc: "failed transactions in the measured interval"},
	{Name: "databases", Unit: workload.Count, Doc: "tenant databases (and connections) in all"},
	{Name: "instances", Unit: workload.Count, Doc: "instances holding them"},
	{Name: "databases_per_instance", Unit: workload.Count, Doc: "databases per instance"},
	{Name: "functions", Unit: workload.Count, Doc: "server-side functions per database"},
	{Name: "think_ms", Unit: workload.Milliseconds, Doc: "think time"},
	{Name: "think_lag_ms", Unit: workload.Milliseconds, Doc: "how late the client's timers ended each think time, on average (a busy host wakes them late): part of each connection's cycle"},
	{Name: "primed_share", Unit: workload.Percent, Doc: "connections that had called every function before the measured interval"},
	{Name: "cpu_ms_per_tx", Unit: workload.Milliseconds, Better: workload.Lower, Doc: "CPU time of the servers and of dbrig's client per transaction: the demand on the CPUs"},
	{Name: "server_cpus", Unit: workload.Count, Doc: "CPUs' worth of work the servers did"},
	{Name: "client_cpus", Unit: workload.Count, Doc: "CPUs' worth of work dbrig (the client) did"},
	{Name: "other_cpus", Unit: workload.Count, Better: workload.Lower, Doc: "CPUs' worth of work other processes on the host did meanwhile"},
	{Name: "host_cpus", Unit: workload.Count, Doc: "CPUs online on the host"},
	{Name: "server_cpu_set", Unit: workload.Count, Doc: "CPUs each server may run on (its affinity), on average"},
	{Name: "backend_private_bytes", Unit: workload.Bytes, Doc: "a backend process's private memory (RssAnon), on average (PostgreSQL, dbrig's own servers)"},
	{Name: "backend_context_bytes", Unit: workload.Bytes, Doc: "a connection's memory as the server counts it (PostgreSQL: its memory contexts; MariaDB: MEMORY_USED), on average"},
	{Name: "first_call_ms", Unit: workload.Milliseconds, Doc: "a function's first call on a connection, on average while priming: the backend compiles it and plans its statements"},
	{Name: "later_call_ms", Unit: workload.Milliseconds, Doc: "the same functions called again on the same connection, on average: compiled, as after hours of service"},
	{Name: "compile_noise_ms", Unit: workload.Milliseconds, Doc: "95 % confidence half-width of first_call_ms less later_call_ms over the connections: the compile cost's own noise"},
	{Name: "plan_cache_bytes", Unit: workload.Bytes, Doc: "a backend's compiled functions and their plans (PostgreSQL's PL/pgSQL function, CachedPlan* and SPI Plan contexts), on average"},
	{Name: "instance_memory_bytes", Unit: workload.Bytes, Doc: "an instance's memory: the PSS of all its processes (shared buffers counted once), on average"},
	{Name: "instance_private_bytes", Unit: workload.Bytes, Doc: "an instance's private memory: its processes' RssAnon summed, on average"},
	{Name: "instance_cgroup_bytes", Unit: workload.Bytes, Doc: "a capped instance's memory as its cgroup counts it (page cache included), on average"},
	{Name: "server_processes", Unit: workload.Count, Doc: "processes of an instance, on average"},
	{Name: "disk_read_kb_per_tx", Unit: workload.Count, Better: workload.Lower, Doc: "kB the servers read from storage (not the page cache) per transaction"},
	{Name: "disk_write_kb_per_tx", Unit: workload.Count, Doc: "kB the servers wrote to storage per transaction"},
	{Name: "log_syncs_per_tx", Unit: workload.Count, Doc: "log flushes to disk per transaction (PostgreSQL pg_stat_wal.wal_sync; MariaDB: Innodb_data_fsyncs, every InnoDB fsync, its redo log's included)"},
	{Name: "buffer_hit_pct", Unit: workload.Percent, Better: workload.Higher, Doc: "reads served by the server's own buffers (shared_buffers, the buffer pool) rather than the OS"},
	{Name: "table_cache_misses_per_tx", Unit: workload.Count, Better: workload.Lower, Doc: "MariaDB: table definitions opened anew per transaction (its shared caches thrashing)"},
	{Name: "buffer_bytes", Unit: workload.Bytes, Doc: "shared_buffers or innodb_buffer_pool_size, read back from the server"},
	{Name: "log_for_pitr", Unit: workload.Count, Doc: "1 when the log keeps what point-in-time recovery needs (wal_level replica or logical; MariaDB's binary log on)"},
	{Name: "commit_waits_flush", Unit: workload.Count, Doc: "1 when a commit waits for its log to reach disk (synchronous_commit on; innodb_flush_log_at_trx_commit = 1)"},
	{Name: "wal_apart", Unit: workload.Count, Doc: "1 when the WAL (redo log) lives in a directory of its own"},
	{Name: "wal_same_device", Unit: workload.Count, Doc: "1 when that directory is on the data's device"},
	{Name: "wal_tmpfs", Unit: workload.Count, Doc: "1 when the WAL is on tmpfs: memory, not a disk"},
	{Name: "database_bytes", Unit: workload.Bytes, Doc: "one tenant database's size on disk at the end, on average"},
}

func (w *tenants) measurement(env *workload.Env, res *load.Result, lw *tenantLoad, members []*member, s [2]snapshot, mems []instanceMemory) workload.Measurement {
	mm := map[string]float64{}
	m := workload.Measurement{Metrics: mm, Series: map[string][]float64{}, SeriesInterval: 1, Histograms: map[string]*measure.Histogram{}}
	w.loadMetrics(&m, res, len(lw.tenants), len(members))
	if a, b := s[0], s[1]; !a.at.IsZero() && !b.at.IsZero() {
		w.windowMetrics(mm, a, b, members)
	}
	connectionMemory(&m, lw)
	compileCost(mm, lw)
	instanceMetrics(mm, members, mems)
	w.placement(members, &m)
	return m
}

// loadMetrics are what the load layer measured of n connections on
// instances instances: rates, response times, errors and the TPM's noise.
func (w *tenants) loadMetrics(m *workload.Measurement, res *load.Result, n, instances int) {
	mm := m.Metrics
	mm["tpm"] = res.Overall.TPS * 60
	mm["tpm_per_db"] = mm["tpm"] / float64(n)
	mm["response_ms"] = float64(res.Overall.Latency.Mean()) / 1e6
	mm["errors"] = float64(res.Overall.Errors.Total())
	mm["databases"] = float64(n)
	mm["instances"] = float64(instances)
	mm["databases_per_instance"] = float64(n) / float64(instances)
	mm["functions"] = float64(w.functions)
	mm["think_ms"] = float64(w.think) / 1e6
	if res.StartLag != nil && res.StartLag.Count() > 0 {
		mm["think_lag_ms"] = float64(res.StartLag.Mean()) / 1e6
	}
	m.Histograms["response"] = res.Overall.Latency
	for _, t := range res.Types {
		m.Histograms["response/"+t.Name] = t.Latency
	}
	if e := res.Overall.Errors; e.Total() > 0 {
		m.Notes = append(m.Notes, fmt.Sprintf("%d transactions failed: %s", e.Total(), e.String()))
	}
	var perSecond []float64
	for _, iv := range res.Series {
		if iv.Phase == load.Measured && iv.Length >= 900*time.Millisecond {
			perSecond = append(perSecond, iv.Overall.TPS(iv.Length)*60)
		}
	}
	m.Series["tpm"] = perSecond
	if ci, ok := batchNoise(perSecond, 5); ok {
		mm["tpm_noise_pct"] = ci
	}
}

// windowMetrics are what changed between the snapshots a and b: each
// database's TPM, the CPU and storage I/O per transaction, the engine's
// counters.
func (w *tenants) windowMetrics(mm map[string]float64, a, b snapshot, members []*member) {
	wall := b.at.Sub(a.at).Seconds()
	var ops int64
	var perDB []float64
	primed := 0
	for i := range b.ok {
		d := b.ok[i] - a.ok[i]
		ops += d
		perDB = append(perDB, float64(d)*60/wall)
		if a.calls[i] >= int64(w.functions) {
			primed++
		}
	}
	if len(perDB) > 0 {
		mm["tpm_db_min"], mm["tpm_db_max"] = slices.Min(perDB), slices.Max(perDB)
	}
	mm["primed_share"] = 100 * float64(primed) / float64(len(b.ok))
	serverUsage(mm, a, b, members, ops, wall)
	if cpus := procstat.OnlineCPUs(); cpus > 0 {
		mm["host_cpus"] = float64(cpus)
	}
	engineMetrics(mm, a.engine, b.engine, ops)
}

// serverUsage is the servers' and the client's CPU and the servers'
// storage I/O over ops transactions in wall seconds, when every server is
// local.
func serverUsage(mm map[string]float64, a, b snapshot, members []*member, ops int64, wall float64) {
	var server, readB, writeB float64
	allLocal, ioKnown := true, true
	for i, m := range members {
		if !m.local() {
			allLocal = false
			continue
		}
		server += b.servers[i].CPU - a.servers[i].CPU
		readB += float64(b.servers[i].ReadBytes - a.servers[i].ReadBytes)
		writeB += float64(b.servers[i].WriteBytes - a.servers[i].WriteBytes)
		ioKnown = ioKnown && a.servers[i].IOKnown && b.servers[i].IOKnown
	}
	self := b.self - a.self
	if allLocal && ops > 0 && wall > 0 {
		mm["cpu_ms_per_tx"] = (server + self) * 1000 / float64(ops)
		mm["server_cpus"] = server / wall
		mm["client_cpus"] = self / wall
		mm["other_cpus"] = max(0, (b.host-a.host)-server-self) / wall
		if ioKnown {
			mm["disk_read_kb_per_tx"] = readB / 1024 / float64(ops)
			mm["disk_write_kb_per_tx"] = writeB / 1024 / float64(ops)
		}
	}
}

// connectionMemory is a connection's memory, on average over the
// connections that read it.
func connectionMemory(m *workload.Measurement, lw *tenantLoad) {
	mm := m.Metrics
	var priv, ctxs, plans []float64
	for _, sl := range lw.slots {
		if sl.mem.private > 0 {
			priv = append(priv, float64(sl.mem.private))
		}
		if sl.mem.known {
			ctxs = append(ctxs, float64(sl.mem.contexts))
			if lw.engine == "postgres" {
				plans = append(plans, float64(sl.mem.plans))
			}
		}
	}
	setMean(mm, "backend_private_bytes", priv)
	setMean(mm, "backend_context_bytes", ctxs)
	setMean(mm, "plan_cache_bytes", plans)
	if len(ctxs) == 0 {
		for _, sl := range lw.slots {
			if sl.mem.err != "" {
				m.Notes = append(m.Notes, "a connection's memory could not be read: "+sl.mem.err)
				break
			}
		}
	}
}

// compileCost is what a call costs the first time a connection makes it
// and later, on average over the connections that primed: the cost the
// seed's recompilations paid again, and its noise from the connections'
// spread.
func compileCost(mm map[string]float64, lw *tenantLoad) {
	var first, later, diff []float64
	for _, sl := range lw.slots {
		f, l := sl.firstCalls.perCall(), sl.laterCalls.perCall()
		if math.IsNaN(f) || math.IsNaN(l) {
			continue
		}
		first, later, diff = append(first, f), append(later, l), append(diff, f-l)
	}
	setMean(mm, "first_call_ms", first)
	setMean(mm, "later_call_ms", later)
	if len(diff) >= 2 {
		mm["compile_noise_ms"] = 1.96 * stat.StdErr(stat.StdDev(diff, nil), float64(len(diff)))
	}
}

// instanceMetrics are an instance's memory, processes and CPU set, on
// average over the local instances.
func instanceMetrics(mm map[string]float64, members []*member, mems []instanceMemory) {
	var pss, anon, cg, procs, cpuSet []float64
	for i, im := range mems {
		if im.known {
			pss = append(pss, float64(im.mem.PSS))
			anon = append(anon, float64(im.mem.RSSAnon))
			procs = append(procs, float64(im.processes))
		}
		if im.cgroup > 0 {
			cg = append(cg, float64(im.cgroup))
		}
		if members[i].local() {
			var set unix.CPUSet
			if err := unix.SchedGetaffinity(members[i].pid, &set); err == nil {
				cpuSet = append(cpuSet, float64(set.Count()))
			}
		}
	}
	setMean(mm, "instance_memory_bytes", pss)
	setMean(mm, "instance_private_bytes", anon)
	setMean(mm, "instance_cgroup_bytes", cg)
	setMean(mm, "server_processes", procs)
	setMean(mm, "server_cpu_set", cpuSet)
}

func setMean(mm map[string]float64, name string, vs []float64) {
	if len(vs) == 0 {
		return
	}
	var sum float64
	for _, v := range vs {
		sum += v
	}
	mm[name] = sum / float64(len(vs))
}

// batchNoise is the 95 % confidence half-width of a series' mean from
// batches of k values (their means are nearly independent where single
// seconds are not), in % of the mean.
func batchNoise(series []float64, k int) (float64, bool) {
	b := len(series) / k
	if b < 3 {
		return 0, false
	}
	means := make([]float64, b)
	var grand float64
	for i := range means {
		for _, v := range series[i*k : (i+1)*k] {
			means[i] += v
		}
		means[i] /= float64(k)
		grand += means[i]
	}
	grand /= float64(b)
	var ss float64
	for _, x := range means {
		ss += (x - grand) * (x - grand)
	}
	sd := math.Sqrt(ss / float64(b-1))
	if grand <= 0 {
		return 0, false
	}
	return tQuantile975(b-1) * sd / math.Sqrt(float64(b)) / grand * 100, true
}

// tQuantile975 is Student's t at 97.5 % for df degrees of freedom.
func tQuantile975(df int) float64 {
	table := []float64{0, 12.71, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
		2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086}
	if df < len(table) {
		return table[df]
	}
	if df < 30 {
		return 2.05
	}
	return 1.96
}

// placement says where each local instance's WAL is: in a directory of its
// own, on the data's device, on tmpfs.
func (w *tenants) placement(members []*member, m *workload.Measurement) {
	type dirs interface {
		DataDir() string
		WALDir() string
	}
	apart, same, tmpfs, known := 0, 0, 0, 0
	for _, mb := range members {
		d, ok := mb.inst.(dirs)
		if !mb.local() || !ok {
			continue
		}
		known++
		if d.WALDir() == "" {
			continue
		}
		apart++
		var a, b syscall.Stat_t
		if syscall.Stat(d.WALDir(), &a) == nil && syscall.Stat(d.DataDir(), &b) == nil && a.Dev == b.Dev {
			same++
		}
		if onTmpfs(d.WALDir()) {
			tmpfs++
		}
	}
	if known == 0 {
		return
	}
	m.Metrics["wal_apart"] = boolMetric(apart == known)
	m.Metrics["wal_same_device"] = boolMetric(apart > 0 && same == apart)
	m.Metrics["wal_tmpfs"] = boolMetric(apart > 0 && tmpfs == apart)
	if tmpfs > 0 {
		m.Notes = append(m.Notes, "the WAL is on tmpfs: memory, not a disk (an upper bound for moving the log off the data's device)")
	}
}

func boolMetric(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// readSettings reads back what the judges need from the first instance:
// the buffer size and the durability settings.
func (w *tenants) readSettings(ctx context.Context, members []*member, m *workload.Measurement) error {
	var errs []string
	var sizes []float64
	for _, mb := range members {
		st, err := mb.stats.settings(ctx)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		sizes = append(sizes, float64(st.bufferBytes))
		m.Metrics["log_for_pitr"] = boolMetric(st.logForPITR)
		m.Metrics["commit_waits_flush"] = boolMetric(st.commitWaits)
		if st.databaseBytes > 0 {
			m.Metrics["database_bytes"] = float64(st.databaseBytes)
		}
		if st.describe != "" && !slices.Contains(m.Notes, st.describe) {
			m.Notes = append(m.Notes, st.describe)
		}
	}
	setMean(m.Metrics, "buffer_bytes", sizes)
	if len(errs) > 0 {
		sort.Strings(errs)
		return fmt.Errorf("%s", strings.Join(slices.Compact(errs), "; "))
	}
	return nil
}
