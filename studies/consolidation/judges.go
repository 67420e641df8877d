package consolidation

import (
	"fmt"
	"math"
	"strings"

	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/workload/tenants"
)

// The tolerances of the judges, chosen before any measurement and said in
// each verdict. Every gain must also be larger than the two points' own
// noise (their 5-second batches' 95 % half-widths, or their runs' range).
const (
	// instancesGain: more instances for the same databases must raise TPM
	// by at least a quarter to count as the seed's gain from instances
	// (it had 8x; two cores cannot give more than 2x).
	instancesGain = 0.25
	// perDBFall: per-database TPM must fall by at least 10 % from the
	// fewest databases to the most.
	perDBFall = 0.10
	// floorGain: the floor must beat the default by at least 10 % (the
	// seed: +25 %) and come within floorMatch of the best static size.
	floorGain  = 0.10
	floorMatch = 0.10
	// affinityGain: pinning must gain at least 20 % (the seed: +80 %).
	affinityGain = 0.20
	// logGain: the log apart must gain at least 5 % (the seed: +10 %).
	logGain = 0.05
	// fullLow, fullHigh: full over bulk-logged between 80 % and 95 % (the
	// seed: 90 %).
	fullLow, fullHigh = 0.80, 0.95
)

type judgeFunc func(a *analysis, engine string, p study.Published) report.Finding

// Judges decide the seed's findings by the ids of consolidation.toml.
// A run on both engines is judged on each: the finding shows both and is
// reproduced only when both reproduce it.
func Judges() map[string]study.Judge {
	wrap := func(f judgeFunc) study.Judge {
		return func(rd *study.RunData, p study.Published) report.Finding {
			a := analyze(rd)
			var each []report.Finding
			for _, e := range a.engines {
				each = append(each, f(a, e, p))
			}
			return merge(p, a.engines, each)
		}
	}
	return map[string]study.Judge{
		"instances-scale":    wrap(judgeInstances),
		"per-database-falls": wrap(judgePerDatabase),
		"memory-floor":       wrap(judgeMemoryFloor),
		"cpu-affinity":       wrap(judgeAffinity),
		"log-apart":          wrap(judgeLogApart),
		"recovery-model":     wrap(judgeRecoveryModel),
		"plan-cache":         wrap(judgePlanCache),
	}
}

// noiseNote says when a change large enough for a finding is within the
// points' noise and other processes' reach, so it does not count.
func (c comparison) noiseNote(meets bool) string {
	if !meets || c.beyond() {
		return ""
	}
	return fmt.Sprintf(" The change is within the points' noise and other processes' reach (±%.0f %%), so it does not count.", 100*(c.noise+c.interference))
}

// merge makes one finding of one judged per engine. Unlike
// study.MergeFindings it shows every engine's figures in the engines'
// order, "-" where one measured nothing, each engine's model even when
// they agree, and a finding no engine measured with every engine's
// reason: a reader compares the engines line by line.
func merge(p study.Published, engines []string, each []report.Finding) report.Finding {
	switch len(each) {
	case 0:
		return study.NotMeasured(p, "No point of this run was measured.")
	case 1:
		return each[0]
	}
	out := report.Finding{Published: p.Finding, Verdict: report.Reproduced}
	var ms, models, whys, spreads []string
	measured := 0
	for i, f := range each {
		label := study.EngineTitle(engines[i]) + ": "
		ms = append(ms, label+f.Measured)
		models = append(models, label+f.Model)
		whys = append(whys, label+string(f.Verdict)+". "+f.Why)
		if f.Spread != "" {
			spreads = append(spreads, label+f.Spread)
		}
		switch f.Verdict {
		case report.NotMeasured:
		case report.Reproduced:
			measured++
		default:
			measured++
			out.Verdict = report.Differs
		}
	}
	if measured == 0 {
		out.Verdict = report.NotMeasured
	}
	out.Measured, out.Model = strings.Join(ms, "\n"), strings.Join(models, "\n")
	out.Why, out.Spread = strings.Join(whys, "\n"), strings.Join(spreads, "; ")
	return out
}

// spread lists the points' noise for the verdict's reader.
func spread(ps ...point) string {
	var parts []string
	for _, p := range ps {
		parts = append(parts, fmt.Sprintf("%s ±%.1f %%", p.label(), p.noise()))
	}
	return "TPM noise (95 % of 5-second batches, or the runs' range): " + strings.Join(parts, ", ")
}

// modelText says what the model predicts for the points.
func modelText(ps ...point) string {
	var parts []string
	for _, p := range ps {
		if !p.modeled {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %s TPM (%s)", p.label(), tpmText(p.model.TPM), limitedBy(p)))
	}
	if len(parts) == 0 {
		return "-"
	}
	return "closed loop capped by the host's CPUs: " + strings.Join(parts, ", ")
}

func limitedBy(p point) string {
	if p.model.Saturated {
		return fmt.Sprintf("CPU-bound at %.2f CPUs, %s per transaction", p.model.C, tenants.Millis(p.model.D))
	}
	return "think-time bound"
}

// cpuBusy says how busy the CPUs were at a point.
func cpuBusy(p point) string {
	host := p.mean("host_cpus")
	used := p.mean("server_cpus") + p.mean("client_cpus")
	other := p.mean("other_cpus")
	if math.IsNaN(host) || math.IsNaN(used) {
		return ""
	}
	s := fmt.Sprintf(" At %s the servers and the client used %.2f of the %.0f CPUs and other processes %.2f", p.label(), used, host, other)
	if 100*(used+other) >= fullHost*host {
		s += ": the host's CPUs were (nearly) full, and other engineers' work competed with the transactions"
	}
	return s + "."
}

func judgeInstances(a *analysis, engine string, p study.Published) report.Finding {
	ps := sortedBy(a.points(engine, expInstances), "instances")
	if len(ps) < 2 || ps[0].mean("instances") != 1 {
		return study.NotMeasured(p, "Needs the experiment \"instances\" with one instance and more, holding the same databases.")
	}
	one, most := ps[0], ps[len(ps)-1]
	var parts []string
	for _, q := range ps {
		parts = append(parts, fmt.Sprintf("%s %s TPM (%.2fx)", q.label(), tpmText(q.tpm()), q.tpm()/one.tpm()))
	}
	c := compare(one, most, "tpm")
	g := c.g
	f := report.Finding{
		Published: p.Finding,
		Measured:  fmt.Sprintf("%.0f databases in all: %s", one.mean("databases"), strings.Join(parts, ", ")),
		Model:     modelText(ps...),
		Spread:    spread(ps...),
	}
	k := most.mean("instances")
	if c.confounded(instancesGain) {
		f.Verdict, f.Why = report.NotMeasured, c.busy(instancesGain)
	} else if g >= instancesGain && c.beyond() {
		f.Verdict = report.Reproduced
		f.Why = fmt.Sprintf("%.0f instances ran %s more transactions than one instance holding the same databases (at least %s needed, beyond the noise): spreading databases over instances raised throughput, as the seed found.", k, pct(g), pct(instancesGain))
	} else {
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("%.0f instances ran %s against one instance holding the same databases (%s needed for the seed's gain).", k, pct(g), pct(instancesGain)) + c.noiseNote(g >= instancesGain)
		if most.model.Saturated || one.model.Saturated {
			f.Why += " The CPU limits here, and every instance shares the same CPUs: more instances cannot raise that ceiling (the seed's 16 instances added nothing for the same reason)."
		}
		f.Why += " The seed's gain came from SQL Server 2000's procedure cache, which one 32-bit instance could not grow to hold 200 plans for thousands of databases; PostgreSQL keeps each connection's plans in its own backend and MariaDB each connection's procedures in its own cache, so one instance has no shared plan cache to outgrow." + cpuBusy(most)
	}
	return f
}

func judgePerDatabase(a *analysis, engine string, p study.Published) report.Finding {
	ps := sortedBy(a.points(engine, expDatabases), "databases_per_instance")
	if len(ps) < 2 {
		return study.NotMeasured(p, "Needs the experiment \"databases\" with at least two database counts on one instance.")
	}
	few, many := ps[0], ps[len(ps)-1]
	var parts []string
	for _, q := range ps {
		parts = append(parts, fmt.Sprintf("%s: %s TPM per database (%s in all)", q.label(), tpmText(q.mean("tpm_per_db")), tpmText(q.tpm())))
	}
	// Per-database TPM falls when total TPM grows less than the count:
	// the noise is the total's.
	c := compare(few, many, "tpm_per_db")
	fall := -c.g
	f := report.Finding{
		Published: p.Finding,
		Measured:  strings.Join(parts, "; "),
		Model:     modelText(ps...),
		Spread:    spread(ps...),
	}
	if c.confounded(perDBFall) {
		f.Verdict, f.Why = report.NotMeasured, c.busy(perDBFall)
	} else if fall >= perDBFall && c.beyond() {
		f.Verdict = report.Reproduced
		f.Why = fmt.Sprintf("From %s to %s each database's TPM fell by %.0f %% (at least %.0f %% needed, beyond the noise).", few.label(), many.label(), 100*fall, 100*perDBFall)
		switch {
		case many.model.Saturated:
			f.Why += fmt.Sprintf(" The model says why: with %s the CPU saturates (%s per transaction), so every database added shares the same ceiling.", many.label(), tenants.Millis(many.model.D))
		case hostBusy(many) >= fullHost:
			f.Why += fmt.Sprintf(" The model, which leaves other processes out, puts the knee where the CPU saturates beyond %s; here other processes' work (%.2f CPUs) filled the host's CPUs, so the ceiling came sooner.", many.label(), many.mean("other_cpus"))
		}
	} else {
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("From %s to %s each database's TPM changed by %s (a fall of %.0f %% needed).", few.label(), many.label(), pct(-fall), 100*perDBFall) + c.noiseNote(fall >= perDBFall)
		if !many.model.Saturated {
			f.Why += fmt.Sprintf(" The model puts the knee, where the CPU saturates, beyond %s: below it each connection keeps its pace, 60 / (R + Z) transactions a minute, whatever the others do.", many.label())
		}
	}
	f.Why += cpuBusy(many)
	return f
}

func judgeMemoryFloor(a *analysis, engine string, p study.Published) report.Finding {
	var open []point
	for _, q := range a.points(engine, expMemory) {
		if q.memoryCap() == 0 && !math.IsNaN(q.mean("buffer_bytes")) {
			open = append(open, q)
		}
	}
	open = sortedBy(open, "buffer_bytes")
	if len(open) < 3 {
		return study.NotMeasured(p, "Needs the experiment \"memory\" with three buffer sizes and no cap: a small floor, the default and a large static size.")
	}
	floor, static := open[0], open[len(open)-1]
	def := open[len(open)/2]
	for _, q := range open {
		if q.mean("buffer_bytes") == defaultBuffers {
			def = q
		}
	}
	c := compare(def, floor, "tpm")
	gf := c.g
	gs := floor.tpm()/static.tpm() - 1
	f := report.Finding{
		Published: p.Finding,
		Measured: fmt.Sprintf("floor (%s) %s TPM, default (%s) %s, static (%s) %s: the floor %s over the default, %s against the static size",
			compact(floor.mean("buffer_bytes")), tpmText(floor.tpm()), compact(def.mean("buffer_bytes")), tpmText(def.tpm()),
			compact(static.mean("buffer_bytes")), tpmText(static.tpm()), pct(gf), pct(gs)),
		Model:  modelText(floor, def, static),
		Spread: spread(floor, def, static),
	}
	hits := fmt.Sprintf(" The server's own buffers served %.1f %%, %.1f %% and %.1f %% of the reads; the rest came from the OS's page cache, which holds the data here.",
		floor.mean("buffer_hit_pct"), def.mean("buffer_hit_pct"), static.mean("buffer_hit_pct"))
	if cs := compare(static, floor, "tpm"); c.confounded(floorGain) || cs.confounded(floorMatch) {
		f.Verdict = report.NotMeasured
		if c.confounded(floorGain) {
			f.Why = c.busy(floorGain)
		} else {
			f.Why = cs.busy(floorMatch)
		}
	} else if gf >= floorGain && c.beyond() && math.Abs(gs) <= floorMatch {
		f.Verdict = report.Reproduced
		f.Why = fmt.Sprintf("A small floor with the OS's cache free beat the default by %s (at least %s needed, beyond the noise) and came within %.0f %% of the static size, as the seed's 1 GB floor did.", pct(gf), pct(floorGain), 100*floorMatch) + hits
	} else {
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("The floor ran %s against the default (at least %s needed, beyond the noise, and within %.0f %% of the static size).", pct(gf), pct(floorGain), 100*floorMatch) + c.noiseNote(gf >= floorGain) + fmt.Sprint(" SQL Server's gain came from instances settling their dynamic memory; PostgreSQL and MariaDB size their buffers once at start, and what they do not hold the OS caches, so the size of the buffers matters little while the data fits in memory.") + hits
	}
	return f
}

func judgeAffinity(a *analysis, engine string, p study.Published) report.Finding {
	var pinned, free *point
	for _, q := range a.points(engine, expAffinity) {
		q := q
		if q.pinned() {
			pinned = &q
		} else {
			free = &q
		}
	}
	if pinned == nil || free == nil {
		return study.NotMeasured(p, "Needs the experiment \"affinity\" with the instances pinned and unpinned.")
	}
	c := compare(*free, *pinned, "tpm")
	g := c.g
	f := report.Finding{
		Published: p.Finding,
		Measured: fmt.Sprintf("%.0f instances × %.0f databases: unpinned %s TPM, pinned %s TPM (%s); context switches are not counted, the CPU per transaction was %s unpinned and %s pinned",
			pinned.mean("instances"), pinned.mean("databases_per_instance"), tpmText(free.tpm()), tpmText(pinned.tpm()), pct(g),
			tenants.Millis(free.mean("cpu_ms_per_tx")/1000), tenants.Millis(pinned.mean("cpu_ms_per_tx")/1000)),
		Model:  modelText(*free, *pinned),
		Spread: spread(*free, *pinned),
	}
	if c.confounded(affinityGain) {
		f.Verdict, f.Why = report.NotMeasured, c.busy(affinityGain)
	} else if g >= affinityGain && c.beyond() {
		f.Verdict = report.Reproduced
		f.Why = fmt.Sprintf("Pinning each instance to its own CPUs raised TPM by %s (at least %s needed, beyond the noise).", pct(g), pct(affinityGain))
	} else {
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("Pinning changed TPM by %s (at least %s needed, beyond the noise).", pct(g), pct(affinityGain)) + c.noiseNote(g >= affinityGain) + fmt.Sprint(" With two CPUs shared by the instances and by dbrig's client (which stays unpinned), pinning cannot give each instance a processor and its cache of its own as the seed's eight did; it only stops the scheduler from moving work to a CPU that is free.")
	}
	f.Why += cpuBusy(*pinned)
	return f
}

func judgeLogApart(a *analysis, engine string, p study.Published) report.Finding {
	if f, ok := judgeLogApartOnDisks(a, engine, p); ok {
		return f
	}
	var together, sameDisk, device *point
	for _, q := range a.points(engine, expWAL) {
		q := q
		if data, _ := q.disk(); data != "" {
			continue // judged on its own, against its own disk's together
		}
		switch {
		case q.mean("wal_apart") != 1:
			together = &q
		case q.mean("wal_same_device") == 1:
			sameDisk = &q
		default:
			if device == nil || q.mean("wal_tmpfs") != 1 { // a real device over tmpfs
				device = &q
			}
		}
	}
	if together == nil || (sameDisk == nil && device == nil) {
		return study.NotMeasured(p, "Needs the experiment \"wal\" with the WAL together with the data and apart.")
	}
	var parts []string
	parts = append(parts, fmt.Sprintf("together %s TPM", tpmText(together.tpm())))
	shown := []point{*together}
	if sameDisk != nil {
		g := compare(*together, *sameDisk, "tpm").g
		parts = append(parts, fmt.Sprintf("apart on the same disk %s (%s)", tpmText(sameDisk.tpm()), pct(g)))
		shown = append(shown, *sameDisk)
	}
	if device != nil {
		g := compare(*together, *device, "tpm").g
		parts = append(parts, fmt.Sprintf("%s %s (%s)", device.label(), tpmText(device.tpm()), pct(g)))
		shown = append(shown, *device)
	}
	f := report.Finding{Published: p.Finding, Measured: strings.Join(parts, ", ") +
		fmt.Sprintf("; %.2f log flushes per transaction", together.mean("log_syncs_per_tx")),
		Model: modelText(shown...), Spread: spread(shown...)}
	if device == nil {
		f.Verdict = report.NotMeasured
		f.Why = "The WAL was only moved to another directory of the same disk: the seed compared separate physical disks, which this machine does not have (one virtual disk). Moving the directory alone changes nothing the disk sees."
		return f
	}
	c := compare(*together, *device, "tpm")
	g := c.g
	what, caveat := "another device", ""
	if device.mean("wal_tmpfs") == 1 {
		what, caveat = "tmpfs", " tmpfs is memory, not a second disk: the figure bounds from above what a separate log device could give."
	}
	if c.confounded(logGain) {
		f.Verdict, f.Why = report.NotMeasured, c.busy(logGain)
		return f
	}
	if g >= logGain && c.beyond() {
		f.Verdict = report.Reproduced
		f.Why = fmt.Sprintf("With the WAL on %s, TPM rose by %s (at least %s needed, beyond the noise): the log's writes and flushes are on the transactions' path, so taking them off the data's device pays.", what, pct(g), pct(logGain))
	} else {
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("With the WAL on %s, TPM changed by %s (at least %s needed, beyond the noise).", what, pct(g), pct(logGain)) + c.noiseNote(g >= logGain)
		if g < logGain {
			f.Why += " The log's writes and flushes were not what limited the transactions here."
		}
	}
	f.Why += caveat
	if sameDisk != nil {
		f.Why += " The WAL in another directory of the same disk changes nothing the disk sees: one virtual disk cannot show the seed's separate spindles."
	}
	return f
}

// judgeLogApartOnDisks judges the log apart on emulated disks, the seed's
// separate spindles: the WAL on the data's throttled disk against the WAL
// on a throttled disk of its own. ok is false when the run has no such
// pair.
func judgeLogApartOnDisks(a *analysis, engine string, p study.Published) (report.Finding, bool) {
	var together, apart *point
	for _, q := range a.points(engine, expWAL) {
		q := q
		switch data, wal := q.disk(); {
		case data == "":
		case wal != "":
			apart = &q
		case q.mean("wal_apart") != 1:
			together = &q
		}
	}
	if together == nil || apart == nil {
		return report.Finding{}, false
	}
	c := compare(*together, *apart, "tpm")
	g := c.g
	f := report.Finding{Published: p.Finding,
		Measured: fmt.Sprintf("%s %s TPM, %s %s TPM (%s); %.2f log flushes per transaction",
			together.label(), tpmText(together.tpm()), apart.label(), tpmText(apart.tpm()), pct(g), together.mean("log_syncs_per_tx")),
		Model: modelText(*together, *apart), Spread: spread(*together, *apart)}
	switch {
	case c.confounded(logGain):
		f.Verdict, f.Why = report.NotMeasured, c.busy(logGain)
	case g >= logGain && c.beyond():
		f.Verdict = report.Reproduced
		f.Why = fmt.Sprintf("With the WAL on an emulated disk of its own, TPM rose by %s (at least %s needed, beyond the noise): the commits' log flushes no longer wait behind the data's writes for the same disk's requests.", pct(g), pct(logGain))
	default:
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("With the WAL on an emulated disk of its own, TPM changed by %s (at least %s needed, beyond the noise).", pct(g), pct(logGain)) + c.noiseNote(g >= logGain)
		if g < logGain {
			f.Why += " The log's flushes were not what limited the transactions on the shared disk."
		}
	}
	f.Why += " Each disk is a dbrig loop device throttled by the server's blkio cgroup; on cgroup v1 the throttle holds the server's own writes (the WAL's flushes at commit, a checkpoint's sync), not the kernel's background writeback of the data."
	return f, true
}

func judgeRecoveryModel(a *analysis, engine string, p study.Published) report.Finding {
	var full, bulk *point
	var others []point
	for _, q := range a.points(engine, expDurability) {
		q := q
		waits, pitr := q.mean("commit_waits_flush") == 1, q.mean("log_for_pitr") == 1
		switch {
		case waits && pitr:
			full = &q
		case waits:
			bulk = &q
		default:
			others = append(others, q)
		}
	}
	if full == nil || bulk == nil {
		return study.NotMeasured(p, "Needs the experiment \"durability\" with the full recovery model's analogue (the log kept for point-in-time recovery, commits waiting for the disk) and the bulk-logged one (minimal log, commits waiting).")
	}
	ratio := full.tpm() / bulk.tpm()
	c := compare(*bulk, *full, "tpm")
	need := 1 - 0.9 // the seed's cost of full logging
	parts := []string{fmt.Sprintf("full %s TPM, bulk-logged %s TPM: full runs at %.0f %% of bulk-logged", tpmText(full.tpm()), tpmText(bulk.tpm()), 100*ratio)}
	for _, o := range others {
		parts = append(parts, fmt.Sprintf("%s %s TPM", o.label(), tpmText(o.tpm())))
	}
	parts = append(parts, fmt.Sprintf("log flushes per transaction %.2f (full) and %.2f (bulk-logged)", full.mean("log_syncs_per_tx"), bulk.mean("log_syncs_per_tx")))
	f := report.Finding{Published: p.Finding, Measured: strings.Join(parts, "; "),
		Model: modelText(append([]point{*full, *bulk}, others...)...), Spread: spread(*full, *bulk)}
	if c.confounded(need) {
		f.Verdict, f.Why = report.NotMeasured, c.busy(need)
	} else if ratio >= fullLow && ratio <= fullHigh && c.beyond() {
		f.Verdict = report.Reproduced
		f.Why = fmt.Sprintf("Full logging ran at %.0f %% of minimal logging (between %.0f %% and %.0f %% needed, beyond the noise), as the seed's full recovery model did at 90 %% of bulk-logged.", 100*ratio, 100*fullLow, 100*fullHigh)
	} else {
		f.Verdict = report.Differs
		f.Why = fmt.Sprintf("Full logging ran at %.0f %% of minimal logging (between %.0f %% and %.0f %% needed, beyond the noise).", 100*ratio, 100*fullLow, 100*fullHigh) + c.noiseNote(ratio >= fullLow && ratio <= fullHigh)
		switch {
		case engine == "mariadb" && ratio < fullLow && c.beyond():
			f.Why += " With the binary log on, every commit writes it and (sync_binlog = 1) flushes it beside the redo log: more than the seed's full recovery cost."
		case engine == "mariadb":
			f.Why += " The binary log's extra write and flush per commit cost little here: group commit shares the flushes among the connections, and the redo log, the same at both levels, is the larger part."
		case ratio < fullLow && c.beyond():
			f.Why += " wal_level = replica adds to every transaction's WAL what a standby or an archive needs; here that cost more than the seed's 10 %."
		case ratio < fullLow:
			f.Why += c.noiseNote(true)
		default:
			f.Why += " The ledger's transactions are small inserts and updates, which PostgreSQL logs in full at every wal_level; wal_level = minimal only skips the WAL for bulk loads into tables made or truncated in the same transaction, which these transactions never do. The seed's 10 % came from its procedures' bulk operations, which SQL Server's bulk-logged model logs minimally."
		}
	}
	return f
}
