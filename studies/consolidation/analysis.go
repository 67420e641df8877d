package consolidation

import (
	"fmt"
	"math"
	"slices"
	"sort"

	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/workload"
	"github.com/dbrig/dbrig/internal/workload/tenants"
)

// The consolidation study names each of its comparisons with the sweep
// variable "experiment"; the judges and the report read the points of each.
const (
	experimentVar = "experiment"
	expDatabases  = "databases"
	expInstances  = "instances"
	expAffinity   = "affinity"
	expMemory     = "memory"
	expWAL        = "wal"
	expDurability = "durability"
)

// experiments in the report's order, with what each compares.
var experiments = []struct{ name, title string }{
	{expDatabases, "Databases per instance"},
	{expInstances, "Instances for the same databases"},
	{expAffinity, "CPU affinity"},
	{expMemory, "Memory: floor, default, static and capped"},
	{expWAL, "WAL apart from the data"},
	{expDurability, "Durability: the recovery models' analogues"},
}

// defaultBuffers is PostgreSQL's shared_buffers and MariaDB's
// innodb_buffer_pool_size when nobody sets them: 128 MiB both.
const defaultBuffers = 128 << 20

// point is one combination of the run, as the judges read it.
type point struct {
	s      *study.Summary
	engine string
	exp    string
	// model is the closed loop of the combination's last run, with R0
	// from the results before it (as when the point ran).
	model   tenants.ClosedLoop
	modeled bool
}

func (p point) last() workload.Result { return p.s.Results[len(p.s.Results)-1] }

func (p point) mean(metric string) float64 { return p.s.Mean(metric) }

func (p point) tpm() float64 { return p.mean("tpm") }

// noise is the point's own uncertainty in % of its TPM: the larger of the
// 95 % half-width of its 5-second batches and half its runs' range; 5 %
// when neither is known.
func (p point) noise() float64 {
	n := 0.0
	if v := p.mean("tpm_noise_pct"); !math.IsNaN(v) {
		n = v
	}
	if st := p.s.Stats["tpm"]; len(st.Runs) > 1 && st.Mean > 0 {
		n = max(n, (st.Max-st.Min)/2/st.Mean*100)
	}
	if n == 0 {
		return 5
	}
	return n
}

// memoryCap is the cgroup cap of the point's instances (0: none).
func (p point) memoryCap() int64 {
	if in := p.last().Instances; len(in) > 0 {
		return in[0].Memory
	}
	return 0
}

// disk is the emulated disk of the point's data ("": the machine's own),
// and walDisk its WAL's own ("": the WAL where wal_dir puts it).
func (p point) disk() (data, wal string) {
	if in := p.last().Instances; len(in) > 0 {
		return in[0].DataDisk, in[0].WALDisk
	}
	return "", ""
}

// pinned reports whether each server ran on fewer CPUs than the host has.
func (p point) pinned() bool {
	set, host := p.mean("server_cpu_set"), p.mean("host_cpus")
	if !math.IsNaN(set) && !math.IsNaN(host) {
		return set < host
	}
	for _, in := range p.last().Instances {
		if in.CPUs != "" {
			return true
		}
	}
	return false
}

// label names the point's configuration within its experiment.
func (p point) label() string {
	switch p.exp {
	case expDatabases:
		return fmt.Sprintf("%.0f databases", p.mean("databases_per_instance"))
	case expInstances:
		return fmt.Sprintf("%.0f × %.0f databases", p.mean("instances"), p.mean("databases_per_instance"))
	case expAffinity:
		if p.pinned() {
			return fmt.Sprintf("pinned (%.0f CPU each)", p.mean("server_cpu_set"))
		}
		return "unpinned"
	case expMemory:
		s := "buffers " + compact(p.mean("buffer_bytes"))
		if math.IsNaN(p.mean("buffer_bytes")) {
			s = "buffers unknown"
		}
		if c := p.memoryCap(); c > 0 {
			s += ", cap " + decimal(c)
		}
		return s
	case expWAL:
		data, wal := p.disk()
		switch {
		case data != "" && wal != "":
			return fmt.Sprintf("apart, data on %s, WAL on its own %s", data, wal)
		case data != "" && p.mean("wal_apart") != 1:
			return "together on " + data
		case p.mean("wal_apart") != 1:
			return "together"
		case p.mean("wal_tmpfs") == 1:
			return "apart, on tmpfs (memory)"
		case p.mean("wal_same_device") == 1:
			return "apart, same disk"
		}
		return "apart, another device"
	case expDurability:
		switch {
		case p.mean("log_for_pitr") == 1 && p.mean("commit_waits_flush") == 1:
			return "full"
		case p.mean("commit_waits_flush") == 1:
			return "bulk-logged"
		}
		if p.mean("log_for_pitr") == 1 {
			return "full, async commit"
		}
		return "minimal, async commit"
	}
	return p.s.Combo
}

type analysis struct {
	rd      *study.RunData
	engines []string
	by      map[string][]point // engine + "|" + experiment -> points in plan order
}

func analyze(rd *study.RunData) *analysis {
	a := &analysis{rd: rd, by: map[string][]point{}}
	// The results in the order they ran: each point's model takes R0
	// from those before it.
	order := map[string]int{}
	for i, r := range rd.Results {
		if _, ok := order[r.Key]; !ok {
			order[r.Key] = i
		}
	}
	for _, s := range rd.Summaries {
		last := s.Results[len(s.Results)-1]
		p := point{s: s, engine: tenants.EngineOf(last), exp: fmt.Sprint(s.Values[experimentVar])}
		if _, ok := s.Values[experimentVar]; !ok {
			p.exp = ""
		}
		var before []workload.Result
		for _, r := range rd.Results {
			if order[r.Key] < order[last.Key] {
				before = append(before, r)
			}
		}
		p.model, p.modeled = tenants.LoopOf(last, before)
		k := p.engine + "|" + p.exp
		a.by[k] = append(a.by[k], p)
		if !slices.Contains(a.engines, p.engine) {
			a.engines = append(a.engines, p.engine)
		}
	}
	return a
}

func (a *analysis) points(engine, exp string) []point { return a.by[engine+"|"+exp] }

// sortedBy orders points by a metric.
func sortedBy(ps []point, metric string) []point {
	out := slices.Clone(ps)
	sort.SliceStable(out, func(i, j int) bool { return out[i].mean(metric) < out[j].mean(metric) })
	return out
}

// comparison is how a metric of point b differs from point a's, and what
// besides the configuration could explain the difference.
type comparison struct {
	a, b point
	// g is b's value over a's, less 1.
	g float64
	// noise is the two points' own noise together, as a fraction.
	noise float64
	// interference is how much other processes' different load during
	// the two points could move the TPM, as a fraction: the difference of
	// their CPUs over the CPUs this workload used, when the host's CPUs
	// were (nearly) full in either point: with CPUs to spare, others' work
	// takes nothing from the transactions; short bursts queue before the
	// average reaches 100 %.
	interference float64
}

// fullHost is how busy, in %, a host's CPUs count as full.
const fullHost = 85

func compare(a, b point, metric string) comparison {
	c := comparison{a: a, b: b, g: b.mean(metric)/a.mean(metric) - 1, noise: math.Hypot(a.noise(), b.noise()) / 100}
	if hostBusy(a) >= fullHost || hostBusy(b) >= fullHost {
		used := max(a.mean("server_cpus")+a.mean("client_cpus"), b.mean("server_cpus")+b.mean("client_cpus"), 0.1)
		if d := math.Abs(a.mean("other_cpus") - b.mean("other_cpus")); !math.IsNaN(d) && !math.IsNaN(used) {
			c.interference = d / used
		}
	}
	return c
}

// beyond reports whether the difference is larger than the noise and the
// interference together.
func (c comparison) beyond() bool { return math.Abs(c.g) > c.noise+c.interference }

// confounded reports whether other processes' load could hide or fake a
// change of the size a finding needs, and the change measured is not
// larger than that load and the noise could make it.
func (c comparison) confounded(need float64) bool { return c.interference >= need && !c.beyond() }

// busy says why a confounded comparison cannot decide a finding.
func (c comparison) busy(need float64) string {
	return fmt.Sprintf("Other processes took %.2f CPUs during %s and %.2f during %s, with the host's CPUs (nearly) full: a difference that could move this workload's TPM by up to %.0f %%, as much as the %.0f %% the finding turns on. This run cannot tell; rerun on a quieter machine.",
		c.a.mean("other_cpus"), c.a.label(), c.b.mean("other_cpus"), c.b.label(), 100*c.interference, 100*need)
}

// hostBusy is the share of the host's CPUs the servers, the client and
// other processes kept busy, in %.
func hostBusy(p point) float64 {
	return 100 * (p.mean("server_cpus") + p.mean("client_cpus") + p.mean("other_cpus")) / p.mean("host_cpus")
}

func pct(v float64) string { return study.FormatPercent(100 * v) }

func tpmText(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	switch {
	case v >= 10000:
		return fmt.Sprintf("%.0f", math.Round(v/100)*100)
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}

// compact prints a power-of-two size without decimals when it has none
// ("128 MiB", "2 GiB").
func compact(v float64) string {
	switch {
	case math.IsNaN(v) || v <= 0:
		return "-"
	case v >= 1<<30 && math.Mod(v, 1<<30) == 0:
		return fmt.Sprintf("%.0f GiB", v/(1<<30))
	case v >= 1<<20 && math.Mod(v, 1<<20) == 0:
		return fmt.Sprintf("%.0f MiB", v/(1<<20))
	}
	return size(v)
}
