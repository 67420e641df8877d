package consolidation

import (
	"fmt"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/workload"
)

// hand is one hand-made point: its experiment, its metrics and what its
// instances were.
type hand struct {
	exp               string
	engine            string
	memory            int64
	dataDisk, walDisk string
	metrics           map[string]float64
}

// pt makes a point of tpm over dbs databases on instances instances, with
// the figures every point has; extra overrides them.
func pt(exp string, tpm, dbs, instances float64, extra ...any) hand {
	m := map[string]float64{"tpm": tpm, "databases": dbs, "instances": instances, "databases_per_instance": dbs / instances,
		"tpm_per_db": tpm / dbs, "think_ms": 18, "response_ms": 2, "cpu_ms_per_tx": 1, "host_cpus": 2, "other_cpus": 0.2,
		"server_cpus": 1.5, "client_cpus": 0.3, "server_cpu_set": 2, "tpm_noise_pct": 2, "log_for_pitr": 1, "commit_waits_flush": 1,
		"buffer_bytes": defaultBuffers, "buffer_hit_pct": 99, "log_syncs_per_tx": 0.3}
	h := hand{exp: exp, engine: "postgres", metrics: m}
	for i := 0; i+1 < len(extra); i += 2 {
		switch k := extra[i].(string); k {
		case "engine":
			h.engine = extra[i+1].(string)
		case "memory":
			h.memory = int64(extra[i+1].(int))
		case "data_disk":
			h.dataDisk = extra[i+1].(string)
		case "wal_disk":
			h.walDisk = extra[i+1].(string)
		default:
			m[k] = toFloat(extra[i+1])
		}
	}
	return h
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case int:
		return float64(x)
	case float64:
		return x
	}
	panic(fmt.Sprintf("%T", v))
}

func runOf(points ...hand) *study.RunData {
	var results []workload.Result
	for i, h := range points {
		combo := fmt.Sprintf("experiment=%s n=%d", h.exp, i)
		results = append(results, workload.Result{Key: combo + " #1", Combo: combo, Run: 1,
			Values:    map[string]any{"experiment": h.exp, "n": int64(i)},
			Instances: []engine.InstanceConfig{{Name: "db-1", Engine: h.engine, Memory: h.memory, DataDisk: h.dataDisk, WALDisk: h.walDisk}},
			Metrics:   h.metrics})
	}
	return &study.RunData{Results: results, Summaries: study.Summarize(results, study.RepeatSpec{Runs: 1})}
}

// publishedFindings are the findings the study's own file publishes.
// They are decoded alone: study.Parse also plans every scale's 20,736
// combinations, 27 s under the race detector, and the study's end-to-end
// test parses the whole file.
func publishedFindings(t *testing.T) []study.Published {
	t.Helper()
	var file struct {
		Published []study.Published `toml:"published"`
	}
	if _, err := toml.Decode(string(Study().File), &file); err != nil {
		t.Fatal(err)
	}
	return file.Published
}

// published is the study's finding id.
func published(t *testing.T, id string) study.Published {
	t.Helper()
	for _, p := range publishedFindings(t) {
		if p.ID == id {
			return p
		}
	}
	t.Fatalf("consolidation.toml publishes no finding %q", id)
	return study.Published{}
}

// TestEveryPublishedFindingHasAJudge names the ids of the study's file
// that no judge decides (the parser refuses the study then).
func TestEveryPublishedFindingHasAJudge(t *testing.T) {
	for _, p := range publishedFindings(t) {
		if _, ok := Judges()[p.ID]; !ok && p.NotMeasured == "" {
			t.Errorf("no judge for %q", p.ID)
		}
	}
}

func TestJudgesSayBothVerdicts(t *testing.T) {
	const mb = 1 << 20
	for _, tc := range []struct {
		id     string
		points []hand
		want   report.Verdict
		says   string
	}{
		{"instances-scale", []hand{pt("instances", 10000, 100, 1), pt("instances", 16000, 100, 2), pt("instances", 30000, 100, 4)},
			report.Reproduced, "4 instances ran +200.0 %"},
		{"instances-scale", []hand{pt("instances", 10000, 100, 1, "cpu_ms_per_tx", 2), pt("instances", 10100, 100, 2), pt("instances", 9900, 100, 4, "cpu_ms_per_tx", 2)},
			report.Differs, "every instance shares the same CPUs"},
		{"instances-scale", []hand{pt("instances", 10000, 100, 2)}, report.NotMeasured, "one instance and more"},

		{"per-database-falls", []hand{pt("databases", 30000, 10, 1), pt("databases", 60000, 50, 1), pt("databases", 70000, 100, 1)},
			report.Reproduced, "fell by 77 %"},
		{"per-database-falls", []hand{pt("databases", 30000, 10, 1), pt("databases", 295000, 100, 1)},
			report.Differs, "changed by -1.7 %"},

		{"memory-floor", []hand{pt("memory", 12500, 100, 1, "buffer_bytes", 16*mb), pt("memory", 10000, 100, 1),
			pt("memory", 12600, 100, 1, "buffer_bytes", 1024*mb), pt("memory", 5000, 100, 1, "memory", 600*mb)},
			report.Reproduced, "beat the default by +25.0 %"},
		{"memory-floor", []hand{pt("memory", 10100, 100, 1, "buffer_bytes", 16*mb), pt("memory", 10000, 100, 1),
			pt("memory", 10050, 100, 1, "buffer_bytes", 1024*mb)},
			report.Differs, "The floor ran +1.0 %"},
		{"memory-floor", []hand{pt("memory", 10100, 100, 1, "buffer_bytes", 16*mb), pt("memory", 10000, 100, 1)},
			report.NotMeasured, "three buffer sizes"},

		{"cpu-affinity", []hand{pt("affinity", 10000, 100, 2), pt("affinity", 18000, 100, 2, "server_cpu_set", 1)},
			report.Reproduced, "raised TPM by +80.0 %"},
		{"cpu-affinity", []hand{pt("affinity", 10000, 100, 2), pt("affinity", 10100, 100, 2, "server_cpu_set", 1)},
			report.Differs, "Pinning changed TPM by +1.0 %"},

		{"log-apart", []hand{pt("wal", 10000, 100, 1, "wal_apart", 0), pt("wal", 10020, 100, 1, "wal_apart", 1, "wal_same_device", 1),
			pt("wal", 11500, 100, 1, "wal_apart", 1, "wal_tmpfs", 1)},
			report.Reproduced, "not a second disk"},
		{"log-apart", []hand{pt("wal", 10000, 100, 1, "wal_apart", 0), pt("wal", 10050, 100, 1, "wal_apart", 1, "wal_tmpfs", 1)},
			report.Differs, "TPM changed by +0.5 %"},
		{"log-apart", []hand{pt("wal", 10000, 100, 1, "wal_apart", 0), pt("wal", 10050, 100, 1, "wal_apart", 1, "wal_same_device", 1)},
			report.NotMeasured, "one virtual disk"},
		// On emulated disks the judge sets the WAL on the data's throttled
		// disk against one of its own, whatever the unthrottled points say.
		{"log-apart", []hand{pt("wal", 10000, 100, 1, "wal_apart", 0), pt("wal", 10050, 100, 1, "wal_apart", 1, "wal_same_device", 1),
			pt("wal", 4000, 100, 1, "wal_apart", 0, "data_disk", "sata-hdd"),
			pt("wal", 4800, 100, 1, "wal_apart", 1, "data_disk", "sata-hdd", "wal_disk", "sata-hdd")},
			report.Reproduced, "together on sata-hdd 4000 TPM, apart, data on sata-hdd, WAL on its own sata-hdd 4800 TPM (+20.0 %)"},
		{"log-apart", []hand{pt("wal", 10000, 100, 1, "wal_apart", 0), pt("wal", 11500, 100, 1, "wal_apart", 1, "wal_tmpfs", 1),
			pt("wal", 4000, 100, 1, "wal_apart", 0, "data_disk", "sata-hdd"),
			pt("wal", 4040, 100, 1, "wal_apart", 1, "data_disk", "sata-hdd", "wal_disk", "sata-hdd")},
			report.Differs, "With the WAL on an emulated disk of its own, TPM changed by +1.0 %"},

		{"recovery-model", []hand{pt("durability", 9000, 100, 1), pt("durability", 10000, 100, 1, "log_for_pitr", 0),
			pt("durability", 13000, 100, 1, "commit_waits_flush", 0)},
			report.Reproduced, "ran at 90 %"},
		{"recovery-model", []hand{pt("durability", 9950, 100, 1), pt("durability", 10000, 100, 1, "log_for_pitr", 0)},
			report.Differs, "wal_level = minimal only skips"},
		{"recovery-model", []hand{pt("durability", 9950, 100, 1, "engine", "mariadb"), pt("durability", 10000, 100, 1, "log_for_pitr", 0, "engine", "mariadb")},
			report.Differs, "binary log's extra write"},
	} {
		judge, p := Judges()[tc.id], published(t, tc.id)
		f := judge(runOf(tc.points...), p)
		if f.Verdict != tc.want || !strings.Contains(f.Why+f.Measured, tc.says) {
			t.Errorf("%s: %s\n  measured: %s\n  why: %s\nwant %s saying %q", tc.id, f.Verdict, f.Measured, f.Why, tc.want, tc.says)
		}
		if f.Published != p.Finding || f.Measured == "" {
			t.Errorf("%s: finding %+v", tc.id, f)
		}
	}
}

// TestNoiseKeepsAGainFromCounting: a gain inside the points' own noise
// does not reproduce a finding.
func TestNoiseKeepsAGainFromCounting(t *testing.T) {
	noisy := runOf(pt("affinity", 10000, 100, 2, "tpm_noise_pct", 30), pt("affinity", 13000, 100, 2, "server_cpu_set", 1, "tpm_noise_pct", 30))
	if f := Judges()["cpu-affinity"](noisy, published(t, "cpu-affinity")); f.Verdict != report.Differs {
		t.Errorf("a +30 %% gain within ±42 %% of noise: %s (%s)", f.Verdict, f.Why)
	}
}

// TestBothEnginesMustReproduce: a run on both engines reproduces a
// finding only when both do, and shows both.
func TestBothEnginesMustReproduce(t *testing.T) {
	rd := runOf(pt("affinity", 10000, 100, 2), pt("affinity", 18000, 100, 2, "server_cpu_set", 1),
		pt("affinity", 10000, 100, 2, "engine", "mariadb"), pt("affinity", 10100, 100, 2, "server_cpu_set", 1, "engine", "mariadb"))
	f := Judges()["cpu-affinity"](rd, published(t, "cpu-affinity"))
	if f.Verdict != report.Differs || !strings.Contains(f.Measured, "PostgreSQL: ") || !strings.Contains(f.Measured, "MariaDB: ") {
		t.Errorf("%s\n%s\n%s", f.Verdict, f.Measured, f.Why)
	}
}

// TestOtherProcessesLoadIsNotTheConfiguration: when the host's CPUs were
// full and other processes took more of them during one point than the
// other, a difference of the size a finding needs, but within what their
// load could do, cannot be told from theirs: not measured, saying so. A
// larger difference counts; with CPUs to spare their load counts for
// nothing.
func TestOtherProcessesLoadIsNotTheConfiguration(t *testing.T) {
	busy := runOf(pt("affinity", 10000, 100, 2, "other_cpus", 0.2), pt("affinity", 13000, 100, 2, "server_cpu_set", 1, "other_cpus", 1.0))
	f := Judges()["cpu-affinity"](busy, published(t, "cpu-affinity"))
	if f.Verdict != report.NotMeasured || !strings.Contains(f.Why, "rerun on a quieter machine") || !strings.Contains(f.Why, "up to 44 %") {
		t.Errorf("busy host: %s (%s)", f.Verdict, f.Why)
	}
	// A change larger than the others' reach and the noise counts.
	large := runOf(pt("affinity", 10000, 100, 2, "other_cpus", 0.2), pt("affinity", 20000, 100, 2, "server_cpu_set", 1, "other_cpus", 1.0))
	if f := Judges()["cpu-affinity"](large, published(t, "cpu-affinity")); f.Verdict != report.Reproduced {
		t.Errorf("+100 %% beyond 44 %% of interference: %s (%s)", f.Verdict, f.Why)
	}
	spare := runOf(pt("affinity", 10000, 100, 2, "other_cpus", 0.2, "server_cpus", 0.5, "client_cpus", 0.1),
		pt("affinity", 18000, 100, 2, "server_cpu_set", 1, "other_cpus", 1.0, "server_cpus", 0.5, "client_cpus", 0.1))
	if f := Judges()["cpu-affinity"](spare, published(t, "cpu-affinity")); f.Verdict != report.Reproduced {
		t.Errorf("CPUs to spare: %s (%s)", f.Verdict, f.Why)
	}
}

// TestReportOfARunStoppedBeforeItsFirstPoint: a run interrupted before
// any point finished still gets its report (it panicked on the missing
// point's memory figure).
func TestReportOfARunStoppedBeforeItsFirstPoint(t *testing.T) {
	t.Parallel()
	s := twoCoresSection(analyze(runOf()))
	if !strings.Contains(s.Text, "This machine has 2 CPUs") {
		t.Errorf("the section reads %q", s.Text)
	}
}

// TestPlanCacheJudge: the seed's plans dropped and recompiled against a
// backend that keeps its plans, on hand-made databases experiments: each
// answer from the figures that decide it.
func TestPlanCacheJudge(t *testing.T) {
	t.Parallel()
	const mb = 1 << 20
	dbs := func(n float64, plans int, first, later, noise float64, extra ...any) hand {
		kv := []any{"functions", 200, "first_call_ms", first, "later_call_ms", later, "compile_noise_ms", noise}
		if plans > 0 {
			kv = append(kv, "plan_cache_bytes", plans)
		}
		return pt("databases", 1000*n, n, 1, append(kv, extra...)...)
	}
	for _, tc := range []struct {
		name   string
		points []hand
		want   report.Verdict
		says   string
	}{
		{"plans dropped as databases grow", []hand{dbs(10, 7*mb, 2, 0.3, 0.1), dbs(100, 3*mb, 2, 0.3, 0.1)},
			report.Reproduced, "kept 43 % of the compiled code at 100 databases"},
		{"every backend keeps its plans", []hand{dbs(10, 7*mb, 2, 0.3, 0.1), dbs(100, 7*mb, 2, 0.3, 0.1)},
			report.Differs, "the seed's 500 databases would hold 3.42 GiB"},
		{"compiling costs no more than the noise", []hand{dbs(10, 7*mb, 0.35, 0.3, 0.1), dbs(100, 3*mb, 0.35, 0.3, 0.1)},
			report.WithinNoise, "within the connections' spread (±0.100 ms)"},
		{"one database count", []hand{dbs(100, 7*mb, 2, 0.3, 0.1)},
			report.NotMeasured, "at least two database counts"},
		{"no priming", []hand{pt("databases", 10000, 10, 1), pt("databases", 100000, 100, 1)},
			report.NotMeasured, "prime = false"},
		{"MariaDB counts no plans apart", []hand{dbs(10, 0, 2, 0.3, 0.1, "engine", "mariadb"), dbs(100, 0, 2, 0.3, 0.1, "engine", "mariadb")},
			report.NotMeasured, "stored_program_cache"},
	} {
		f := Judges()["plan-cache"](runOf(tc.points...), published(t, "plan-cache"))
		if f.Verdict != tc.want || !strings.Contains(f.Why+f.Measured, tc.says) {
			t.Errorf("%s: %s\n  measured: %s\n  why: %s\nwant %s saying %q", tc.name, f.Verdict, f.Measured, f.Why, tc.want, tc.says)
		}
	}
}
