package consolidation

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/units"
	"github.com/dbrig/dbrig/internal/workload/tenants"
)

// Report adds a TPM chart per experiment with the model's line, the
// memory the plans take, a table of every point's throughput and one of
// its resources, the durability mapping, the baseline measured again, and
// what two cores cannot show. The findings come from the judges.
func Report(rd *study.RunData, d *report.Doc) {
	a := analyze(rd)
	for _, eng := range a.engines {
		suffix := ""
		if len(a.engines) > 1 {
			suffix = " (" + study.EngineTitle(eng) + ")"
		}
		if ps := sortedBy(a.points(eng, expDatabases), "databases_per_instance"); len(ps) > 0 {
			d.Charts = append(d.Charts, databasesChart(ps, eng, suffix), perDatabaseChart(ps, eng, suffix), memoryChart(ps, eng, suffix))
		}
		for _, ex := range experiments[1:] {
			ps := a.points(eng, ex.name)
			if ex.name == expInstances {
				ps = sortedBy(ps, "instances")
			}
			if len(ps) > 0 {
				d.Charts = append(d.Charts, barsChart(ps, ex.name, ex.title+suffix))
			}
		}
		d.Sections = append(d.Sections, pointTables(a, eng, suffix))
		if s, ok := memorySection(a, eng, suffix); ok {
			d.Sections = append(d.Sections, s)
		}
		if s, ok := baselineSection(a, eng, suffix); ok {
			d.Sections = append(d.Sections, s)
		}
	}
	d.Sections = append(d.Sections, durabilitySection(), twoCoresSection(a))
}

// caption says what every point of a chart ran.
func caption(ps []point) string {
	p := ps[0]
	return fmt.Sprintf("%s; each database %s of ledger data with %.0f functions, one connection with %s of think time; TPM over %s measured after %s of warm-up",
		study.EngineTitle(p.engine), decimal(p.s.Params.Int("size")), p.mean("functions"), units.FormatDuration(time.Duration(p.mean("think_ms")*1e6)),
		p.s.Params.String("duration"), p.s.Params.String("warm_up"))
}

// loopCurve is the model as a curve over the database count: the closed
// loop with the sweep's lowest response time until the CPU's ceiling at
// the sweep's mean CPU per transaction and CPUs left.
func loopCurve(ps []point, perDB bool) (report.Series, string) {
	s := report.Series{Name: "model: N × 60 / (R0 + Z), capped by the CPU", Style: report.Model}
	var r0, z float64
	r0 = math.Inf(1)
	for _, p := range ps {
		if p.modeled {
			r0 = min(r0, p.model.R0)
			z += p.model.Z
		}
	}
	if math.IsInf(r0, 1) {
		return s, ""
	}
	z /= float64(len(ps))
	// The CPU per transaction falls as the load grows (the servers'
	// background work is shared by more transactions): the ceiling is the
	// busiest point's.
	last := ps[len(ps)-1]
	top := last.mean("databases")
	ceiling := math.Inf(1)
	why := fmt.Sprintf("R0 = %s (the lowest response), Z = %s (think time as kept)", tenants.Millis(r0), tenants.Millis(z))
	if d, c := last.model.D, last.model.C; d > 0 {
		ceiling = 60 * c / d
		why += fmt.Sprintf(", the CPU's ceiling 60 × %.0f CPUs / %s per transaction (at %s) = %s TPM", c, tenants.Millis(d), last.label(), tpmText(ceiling))
	}
	// The curve runs past the last point to the knee, where the CPU
	// saturates, so the chart shows how far the run was from it.
	knee := ceiling * (r0 + z) / 60
	xs := []float64{ps[0].mean("databases"), top}
	switch {
	case knee > xs[0] && knee < top:
		xs = []float64{xs[0], knee, top}
	case knee >= top && knee < 20*top:
		xs = []float64{xs[0], knee, math.Ceil(knee * 1.25)}
	}
	for _, x := range xs {
		y := min(x*60/(r0+z), ceiling)
		if perDB {
			y /= x
		}
		s.Points = append(s.Points, report.XY{X: x, Y: y, Label: fmt.Sprintf("%.0f connections", x)})
	}
	return s, why
}

func databasesChart(ps []point, eng, suffix string) report.Chart {
	c := report.Chart{
		ID:     "tpm-databases-" + eng,
		Title:  "TPM by databases on one instance" + suffix,
		XLabel: "databases (one connection each)",
		YLabel: "transactions per minute",
	}
	runs := report.Series{Name: "each run", Style: report.Points}
	line := report.Series{Name: "measured", Style: report.Line}
	for _, p := range ps {
		x := p.mean("databases")
		for _, r := range p.s.Results {
			runs.Points = append(runs.Points, report.XY{X: x, Y: r.Metrics["tpm"], Label: p.label()})
		}
		line.Points = append(line.Points, report.XY{X: x, Y: p.tpm(), Label: p.label()})
	}
	model, why := loopCurve(ps, false)
	c.Series = []report.Series{runs, line, model}
	c.Note = caption(ps) + ". Dashed: the closed loop's model, " + why + ". Where the dashed line bends the CPU saturates: more databases share the same ceiling."
	return c
}

func perDatabaseChart(ps []point, eng, suffix string) report.Chart {
	c := report.Chart{
		ID:     "tpm-per-database-" + eng,
		Title:  "TPM of one database as databases are added" + suffix,
		XLabel: "databases on the instance",
		YLabel: "transactions per minute per database",
	}
	line := report.Series{Name: "measured (mean)", Style: report.Line}
	lo := report.Series{Name: "least busy database", Style: report.Points}
	hi := report.Series{Name: "busiest database", Style: report.Points}
	for _, p := range ps {
		x := p.mean("databases")
		line.Points = append(line.Points, report.XY{X: x, Y: p.mean("tpm_per_db"), Label: p.label()})
		if v := p.mean("tpm_db_min"); !math.IsNaN(v) {
			lo.Points = append(lo.Points, report.XY{X: x, Y: v, Label: p.label()})
			hi.Points = append(hi.Points, report.XY{X: x, Y: p.mean("tpm_db_max"), Label: p.label()})
		}
	}
	model, why := loopCurve(ps, true)
	c.Series = []report.Series{line, lo, hi, model}
	c.Note = caption(ps) + ". One connection can run at most 60 / (R + Z) transactions a minute; once the CPU saturates the ceiling is shared by every database. Dashed: the model, " + why + "."
	return c
}

func memoryChart(ps []point, eng, suffix string) report.Chart {
	c := report.Chart{
		ID:     "memory-databases-" + eng,
		Title:  "Memory as databases are added" + suffix,
		XLabel: "databases on the instance",
		YLabel: "MB",
		YLog:   true,
	}
	series := []struct{ name, metric string }{
		{"instance (PSS of all its processes)", "instance_memory_bytes"},
		{"instance, private (RssAnon summed)", "instance_private_bytes"},
		{"one backend, private (RssAnon)", "backend_private_bytes"},
		{"one connection, as the server counts it", "backend_context_bytes"},
		{"one backend's compiled functions and plans", "plan_cache_bytes"},
	}
	for _, s := range series {
		out := report.Series{Name: s.name, Style: report.Line}
		for _, p := range ps {
			if v := p.mean(s.metric); !math.IsNaN(v) && v > 0 {
				out.Points = append(out.Points, report.XY{X: p.mean("databases"), Y: v / 1e6, Label: p.label()})
			}
		}
		if len(out.Points) > 0 {
			c.Series = append(c.Series, out)
		}
	}
	c.Note = caption(ps) + ". Read at the end of the measured interval, every connection open: PostgreSQL's pg_backend_memory_contexts in each connection (MariaDB: the connection's MEMORY_USED) and the processes' memory from /proc."
	return c
}

func barsChart(ps []point, exp, title string) report.Chart {
	var cats []string
	measured := report.Series{Name: "measured", Style: report.Bars}
	model := report.Series{Name: "model", Style: report.Model}
	for i, p := range ps {
		cats = append(cats, p.label())
		measured.Points = append(measured.Points, report.XY{X: float64(i), Y: p.tpm(), Label: fmt.Sprintf("%s: %s TPM, ±%.1f %%", p.label(), tpmText(p.tpm()), p.noise())})
		if p.modeled {
			model.Points = append(model.Points, report.XY{X: float64(i), Y: p.model.TPM, Label: fmt.Sprintf("%s: %s", p.label(), limitedBy(p))})
		}
	}
	c := report.Chart{
		ID:          "tpm-" + exp + "-" + ps[0].engine,
		Title:       "TPM: " + title,
		XLabel:      exp,
		YLabel:      "transactions per minute",
		XCategories: cats,
		Series:      []report.Series{measured},
		Note: caption(ps) + fmt.Sprintf(", %.0f databases in all. The model (dashed) is the closed loop capped by the CPU's ceiling at each point's own CPU per transaction on the host's CPUs; what other processes took is in the table of every point.",
			ps[0].mean("databases")),
	}
	if len(model.Points) > 0 {
		c.Series = append(c.Series, model)
	}
	return c
}

// pointTables are every point's throughput beside the model, and what it
// used.
func pointTables(a *analysis, eng, suffix string) report.Section {
	tp := report.Table{
		Title:   "Throughput",
		Columns: []string{"experiment", "configuration", "TPM", "model", "limited by", "TPM per database", "least - most busy database", "response mean", "p95", "p99", "errors", "noise"},
	}
	res := report.Table{
		Title: "Resources",
		Columns: []string{"experiment", "configuration", "CPU per tx", "CPUs: servers / client / others", "host busy", "backend private", "plans per backend",
			"instance memory (PSS)", "capped instance (cgroup)", "log flushes per tx", "buffer hits", "disk read per tx", "disk written per tx"},
	}
	for _, ex := range experiments {
		for _, p := range a.points(eng, ex.name) {
			resp := p.s.Histograms["response"]
			pc := func(q float64) string {
				if resp == nil || resp.Count() == 0 {
					return "-"
				}
				return units.FormatDuration(resp.Quantile(q))
			}
			model, limit := "-", "-"
			if p.modeled {
				model, limit = tpmText(p.model.TPM), p.model.Resource()
			}
			tp.Rows = append(tp.Rows, []string{ex.name, p.label(), tpmText(p.tpm()), model, limit, tpmText(p.mean("tpm_per_db")),
				tpmText(p.mean("tpm_db_min")) + " - " + tpmText(p.mean("tpm_db_max")),
				tenants.Millis(p.mean("response_ms") / 1000), pc(0.95), pc(0.99), fmt.Sprintf("%.0f", p.mean("errors")), fmt.Sprintf("±%.1f %%", p.noise())})
			res.Rows = append(res.Rows, []string{ex.name, p.label(), msOrDash(p.mean("cpu_ms_per_tx")),
				fmt.Sprintf("%s / %s / %s", num(p.mean("server_cpus")), num(p.mean("client_cpus")), num(p.mean("other_cpus"))), pctOrDash(hostBusy(p)),
				size(p.mean("backend_private_bytes")), size(p.mean("plan_cache_bytes")), size(p.mean("instance_memory_bytes")),
				size(p.mean("instance_cgroup_bytes")), num(p.mean("log_syncs_per_tx")), pctOrDash(p.mean("buffer_hit_pct")),
				kb(p.mean("disk_read_kb_per_tx")), kb(p.mean("disk_write_kb_per_tx"))})
		}
	}
	return report.Section{
		Title: "Every point" + suffix,
		Text: "Each experiment's points, its configuration as the server reported it back. The model is the closed loop, TPM = N × 60 / (R0 + Z), " +
			"capped by the CPU's ceiling 60 × C / D (C: the host's CPUs; D: the servers' and the client's CPU per transaction); 'host busy' adds what other processes took, which the model leaves out. " +
			"Noise is the 95 % half-width of the TPM's 5-second batches (or the runs' range). CPU, memory and I/O are dbrig's own servers' (from /proc): a target has none.",
		Tables: []report.Table{tp, res},
	}
}

func num(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.2f", v)
}

func msOrDash(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return tenants.Millis(v / 1000)
}

func pctOrDash(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.1f %%", v)
}

// size prints bytes of memory in binary units, as the servers' settings
// count them ("128.0 MiB").
func size(v float64) string {
	switch {
	case math.IsNaN(v) || v <= 0:
		return "-"
	case v < 1<<20:
		return fmt.Sprintf("%.0f KiB", v/(1<<10))
	case v < 1<<30:
		return fmt.Sprintf("%.1f MiB", v/(1<<20))
	}
	return fmt.Sprintf("%.2f GiB", v/(1<<30))
}

// decimal prints a size a study wrote in decimal units ("2MB") as such.
func decimal(v int64) string {
	if v >= 1e9 {
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(v)/1e9), ".0") + " GB"
	}
	if v >= 1e6 {
		return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(v)/1e6), ".0") + " MB"
	}
	return strings.TrimSuffix(fmt.Sprintf("%.1f", float64(v)/1e3), ".0") + " kB"
}

func kb(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.2f kB", v)
}

// memorySection says what the plans cost: per backend, per function, and
// what the seed's database counts would need.
func memorySection(a *analysis, eng, suffix string) (report.Section, bool) {
	ps := sortedBy(a.points(eng, expDatabases), "databases_per_instance")
	if len(ps) == 0 {
		return report.Section{}, false
	}
	last := ps[len(ps)-1]
	var b strings.Builder
	plans, private, ctxs := last.mean("plan_cache_bytes"), last.mean("backend_private_bytes"), last.mean("backend_context_bytes")
	fns := last.mean("functions")
	if eng == "postgres" && !math.IsNaN(plans) {
		fmt.Fprintf(&b, "Each PostgreSQL backend compiles and keeps its own copy of every function it calls: with %.0f functions a backend's compiled functions and plans took %s (%s per function) of its %s of memory contexts",
			fns, size(plans), size(plans/fns), size(ctxs))
		if !math.IsNaN(private) {
			fmt.Fprintf(&b, "; the process's private memory was %s", size(private))
		}
		fmt.Fprintf(&b, ". There is no shared plan cache to overflow, as SQL Server 2000's was, and nothing is recompiled; instead memory grows with the connections: at %.0f databases the instance's processes held %s in all (PSS, shared buffers counted once). ",
			last.mean("databases_per_instance"), size(last.mean("instance_memory_bytes")))
		per := ctxs
		if !math.IsNaN(private) {
			per = private
		}
		fmt.Fprintf(&b, "At the same cost per backend, the seed's 500 databases per instance would take %s and its 4,000 on one instance %s, before the shared buffers.",
			size(500*per), size(4000*per))
	} else if !math.IsNaN(ctxs) {
		fmt.Fprintf(&b, "Each MariaDB connection keeps its own cache of the stored procedures it calls (stored_program_cache, 256 by default): with %.0f procedures a connection counted %s (MEMORY_USED). The shared caches are the table caches: %s table definitions opened anew per transaction at %.0f databases (table_definition_cache holds 400 by default; each database has 3 tables).",
			fns, size(ctxs), num(last.mean("table_cache_misses_per_tx")), last.mean("databases_per_instance"))
	}
	if first, later := last.mean("first_call_ms"), last.mean("later_call_ms"); b.Len() > 0 && !math.IsNaN(first) && !math.IsNaN(later) {
		fmt.Fprintf(&b, " A function's first call on a connection took %.3f ms, its later calls %.3f ms: the difference is what compiling it costs, which a call would pay again if its plan were dropped.", first, later)
	}
	return report.Section{Title: "What the functions cost in memory" + suffix, Text: b.String()}, b.Len() > 0
}

// baselineSection lists the configuration every experiment starts from,
// each time it was measured: how far one configuration strays in one run.
func baselineSection(a *analysis, eng, suffix string) (report.Section, bool) {
	t := report.Table{Columns: []string{"experiment", "databases", "TPM", "response mean", "other processes' CPUs"}}
	// The baseline's database count is the one most experiments start
	// from.
	count := map[float64]int{}
	var dbs float64
	for _, ex := range experiments {
		for _, p := range a.points(eng, ex.name) {
			if isBaseline(p) {
				n := p.mean("databases")
				if count[n]++; count[n] > count[dbs] {
					dbs = n
				}
			}
		}
	}
	var tpms []float64
	for _, ex := range experiments {
		for _, p := range a.points(eng, ex.name) {
			if !isBaseline(p) || p.mean("databases") != dbs {
				continue
			}
			tpms = append(tpms, p.tpm())
			t.Rows = append(t.Rows, []string{ex.name, fmt.Sprintf("%.0f", p.mean("databases")), tpmText(p.tpm()), tenants.Millis(p.mean("response_ms") / 1000), num(p.mean("other_cpus"))})
		}
	}
	if len(tpms) < 2 {
		return report.Section{}, false
	}
	lo, hi := tpms[0], tpms[0]
	for _, v := range tpms {
		lo, hi = min(lo, v), max(hi, v)
	}
	mid := (lo + hi) / 2
	return report.Section{
		Title: "The baseline, measured again" + suffix,
		Text: fmt.Sprintf("The same configuration (one instance, unpinned, default buffers, no cap, the WAL with the data, full durability) starts several experiments and was measured %d times in this run: from %s to %s TPM, ±%.1f %% around the middle. A difference between two points smaller than this is within what the machine's own variation (other engineers' work included) does to one configuration.",
			len(tpms), tpmText(lo), tpmText(hi), (hi-lo)/2/mid*100),
		Tables: []report.Table{t},
	}, true
}

func isBaseline(p point) bool {
	return p.mean("instances") == 1 && !p.pinned() && p.mean("buffer_bytes") == defaultBuffers && p.memoryCap() == 0 &&
		p.mean("wal_apart") != 1 && p.mean("log_for_pitr") == 1 && p.mean("commit_waits_flush") == 1
}

// durabilitySection maps the seed's recovery models to the engines'
// settings.
func durabilitySection() report.Section {
	return report.Section{
		Title: "Durability: the recovery models mapped",
		Text: "SQL Server's recovery model decides what the log keeps; PostgreSQL's wal_level and MariaDB's binary log decide what can be rebuilt from the log, " +
			"synchronous_commit and innodb_flush_log_at_trx_commit whether a commit waits for its log to reach the disk. No setting of either engine is the " +
			"bulk-logged model exactly. SQL Server's bulk-logged model logs bulk operations minimally (SELECT INTO, BULK INSERT, index builds), not ordinary " +
			"inserts and updates; PostgreSQL's wal_level = minimal skips the WAL only for bulk loads into a table created or truncated in the same transaction; " +
			"MariaDB's redo log has no minimal level, so leaving the binary log out is what comes closest.",
		Tables: []report.Table{{
			Columns: []string{"level", "SQL Server 2000", "PostgreSQL", "MariaDB", "lost in a crash", "point-in-time recovery"},
			Rows: [][]string{
				{"full", "full recovery model", "wal_level = replica, synchronous_commit = on", "binary log on (sync_binlog = 1), innodb_flush_log_at_trx_commit = 1", "nothing committed", "yes (with an archive of the WAL / the binary logs)"},
				{"bulk-logged", "bulk-logged recovery model", "wal_level = minimal (max_wal_senders = 0), synchronous_commit = on", "binary log off, innodb_flush_log_at_trx_commit = 1", "nothing committed", "no: only from a full backup"},
				{"async commit", "(delayed durability, SQL Server 2014 on)", "wal_level = replica, synchronous_commit = off", "binary log on, innodb_flush_log_at_trx_commit = 0", "up to about a second of commits (3 × wal_writer_delay; MariaDB: a second)", "yes, up to the last flush"},
			},
		}},
	}
}

// twoCoresSection says plainly what this machine cannot show, with the
// run's own figures.
func twoCoresSection(a *analysis) report.Section {
	var b strings.Builder
	// The figures of the point with the most connections: its CPU per
	// transaction is the least diluted by the servers' background work.
	var top point
	found := false
	for _, eng := range a.engines {
		for _, ex := range experiments {
			for _, p := range a.points(eng, ex.name) {
				if p.modeled && p.model.D > 0 && (!found || p.mean("databases") > top.mean("databases")) {
					top, found = p, true
				}
			}
		}
	}
	cpus := 2.0
	if found {
		cpus = top.mean("host_cpus")
	}
	fmt.Fprintf(&b, "The seed ran SQL Server on 8 CPUs with up to 16 instances of 500 databases, their clients on other machines. This machine has %.0f CPUs, which the servers share with dbrig's client and with other engineers' work. ", cpus)
	if found {
		d, r0, z := top.model.D, top.model.R0, top.model.Z
		fmt.Fprintf(&b, "Here a transaction cost %s of CPU, servers and client together (at %s), so %.0f CPUs' ceiling is about %s TPM, which %.0f connections with 18 ms of think time would reach; the seed's 8 × 500 = 4,000 connections would ask for %s TPM, and 8 CPUs of the same speed would raise the ceiling to %s. ",
			tenants.Millis(d), top.label(), cpus, tpmText(60*cpus/d), math.Ceil(cpus/d*(r0+z)), tpmText(4000*60/(r0+z)), tpmText(60*8/d))
	}
	b.WriteString("So: CPU affinity cannot give 8 instances a CPU and a cache each (two instances pinned to a CPU each is the most this machine can pin, and the client still moves between them); 16 instances cannot contend for 32 GB as the seed's did; and once the CPU saturates, more instances or more memory cannot raise the TPM, which is what the seed saw at 16 instances. ")
	// A run stopped before its first point has no point to read.
	if found {
		if priv := top.mean("backend_private_bytes"); !math.IsNaN(priv) && priv > 0 {
			fmt.Fprintf(&b, "Memory would stop a single PostgreSQL instance before that: a backend's %s of private memory times the seed's 4,000 connections is %s, more than this machine's 24 GiB; about %.0f backends of that size fill it.", size(priv), size(4000*priv), math.Floor(24*(1<<30)/priv))
		}
	}
	return report.Section{Title: "What two cores cannot show", Text: b.String()}
}
