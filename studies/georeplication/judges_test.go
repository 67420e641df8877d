package georeplication

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/study"
	"github.com/dbrig/dbrig/internal/workload"
	"github.com/dbrig/dbrig/internal/workload/georep"
)

// measured is one hand-made point: a scenario's seconds on a link.
type measured struct {
	scenario, payload, wan, window string
	rows                           int64
	seconds                        float64
	extra                          map[string]float64
}

var wanRTT = map[string]float64{"tukwila-blueridge": 0.077, "tukwila-dublin": 0.150}

// quickPlan is the study's spec and its quick plan, parsed and planned
// once for the package: the judges only read them, and parsing and
// planning the study again in each runData call was 10.9 s of
// the package's 25.7 s of CPU under the race detector (resolving every
// point's link, a regular expression each). Tests running in parallel
// share them, so a judge that wrote to either would be a race the
// detector reports.
var quickPlan = sync.OnceValues(func() (parsed, error) {
	reg := study.NewRegistry(engine.NewRegistry(postgres.New("")), []workload.Kind{georep.Kind()}, Study())
	spec, err := study.Parse("geo-replication.toml", file, reg)
	if err != nil {
		return parsed{}, err
	}
	plan, err := spec.Plan("quick")
	return parsed{spec, plan}, err
})

// parsed is the study's spec and a plan of it.
type parsed struct {
	spec *study.Spec
	plan *study.Plan
}

// runData makes the RunData a run with these points would have, three runs
// each within ±1 %.
func runData(t *testing.T, pts []measured) *study.RunData {
	t.Helper()
	quick, err := quickPlan()
	if err != nil {
		t.Fatal(err)
	}
	spec, plan := quick.spec, quick.plan
	var results []workload.Result
	for _, p := range pts {
		window := int64(64 << 10)
		if p.window == autotuned {
			window = 16 << 20
		}
		combo := fmt.Sprintf("scenario=%s wan=%s window=%s payload=%s rows=%d", p.scenario, p.wan, p.window, p.payload, p.rows)
		for run, f := range []float64{0.99, 1, 1.01} {
			m := map[string]float64{"seconds": p.seconds * f, "rows": float64(p.rows), "payload_bytes": float64(p.rows) * 1000,
				"mb_per_s": float64(p.rows) * 1000 / 1e6 / (p.seconds * f)}
			for k, v := range p.extra {
				m[k] = v
			}
			results = append(results, workload.Result{
				Key: fmt.Sprintf("%s #%d", combo, run+1), Combo: combo, Run: run + 1,
				Values: map[string]any{"scenario": p.scenario, "wan": p.wan, "window": p.window, "payload": p.payload, "rows": p.rows},
				Params: workload.Params{"scenario": p.scenario, "payload": p.payload, "rows": p.rows, "buffer_size": int64(40000)},
				Links: []workload.LinkResult{{Profile: p.wan + "+" + p.window, Mode: "link", RTTSeconds: wanRTT[p.wan], RateBitsPerS: 1e9,
					WindowBytes: window, SendBufferBytes: map[string]int64{stack: 8192}[p.window], ReverseBytes: p.rows * 1100, ForwardBytes: p.rows * 1100}},
				Metrics: m,
			})
		}
	}
	return &study.RunData{Spec: spec, Plan: plan, Results: results, Summaries: study.Summarize(results, plan.Repeat)}
}

func verdictOf(t *testing.T, rd *study.RunData, id string) report.Finding {
	t.Helper()
	p, ok := rd.Spec.PublishedByID(id)
	if !ok {
		t.Fatalf("no finding %q", id)
	}
	judge, ok := Judges()[id]
	if !ok {
		t.Fatalf("no judge for finding %q", id)
	}
	return judge(rd, p)
}

// TestJudgesSayBothVerdicts: every judge of the study says "reproduced" on
// hand-made results that reproduce its finding and "differs" on results
// that do not.
func TestJudgesSayBothVerdicts(t *testing.T) {
	pair := func(scenario, payload, wan string, rows int64, legacySec, autoSec float64) []measured {
		return []measured{{scenario, payload, wan, legacy, rows, legacySec, nil}, {scenario, payload, wan, autotuned, rows, autoSec, nil}}
	}
	init := func(scenario, wan, window string, sec float64) measured {
		return measured{scenario, "char-1k", wan, window, 20000, sec, map[string]float64{"shipped_bytes": 5e5, "init_bytes": 2e7}}
	}
	cat := func(parts ...[]measured) []measured {
		var out []measured
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	tests := []struct {
		id     string
		points []measured
		want   report.Verdict
	}{
		// Gains: the seed's speed-up within a factor 1.5 either way (2.05x for push-char at 104.78 %).
		{"push-char", pair("push", "char-1k", "tukwila-blueridge", 1000, 20, 10), report.Reproduced},
		{"push-char", pair("push", "char-1k", "tukwila-blueridge", 1000, 20, 19.5), report.Differs},
		{"pull-char", pair("pull", "char-1k", "tukwila-blueridge", 1000, 13, 1), report.Reproduced},
		{"pull-char", pair("pull", "char-1k", "tukwila-blueridge", 1000, 13, 12), report.Differs},
		{"pull-char", pair("pull", "char-1k", "tukwila-blueridge", 1000, 13, 0.24), report.Differs},   // 54x against 14x: one class before
		{"pull-binary", pair("pull", "bytea-1.1k", "tukwila-blueridge", 1000, 14, 1), report.Differs}, // 14x against 114x: one class before
		{"linked-server", pair("fdw-row", "char-1k", "tukwila-blueridge", 50, 4.1, 4.2), report.Reproduced},
		{"linked-server", pair("fdw-row", "char-1k", "tukwila-blueridge", 50, 8, 1), report.Differs},
		{"linked-server", pair("fdw-row", "char-1k", "tukwila-blueridge", 50, 4, 10), report.Differs}, // 2.5x slower: "no real gain" before
		{"pull-beats-push", cat(pair("push", "char-1k", "tukwila-blueridge", 1000, 20, 20), pair("pull", "char-1k", "tukwila-blueridge", 1000, 13, 0.3)), report.Reproduced},
		{"pull-beats-push", cat(pair("push", "char-1k", "tukwila-blueridge", 1000, 20, 0.2), pair("pull", "char-1k", "tukwila-blueridge", 1000, 13, 0.3)), report.Differs},
		{"backup-fastest", []measured{init("init-snapshot", "tukwila-dublin", legacy, 48), init("init-backup", "tukwila-dublin", legacy, 1.3),
			init("init-snapshot", "tukwila-dublin", autotuned, 2.1), init("init-backup", "tukwila-dublin", autotuned, 0.4)}, report.Reproduced},
		{"backup-fastest", []measured{init("init-snapshot", "tukwila-dublin", legacy, 48), init("init-backup", "tukwila-dublin", legacy, 1.3),
			init("init-snapshot", "tukwila-dublin", autotuned, 0.3), init("init-backup", "tukwila-dublin", autotuned, 0.4)}, report.Differs},
		// 20,000 rows of 1 KB in 1 s is 20 MB/s: the seed's 11.3 GB in 9.4 min.
		{"snapshot", []measured{init("init-snapshot", "tukwila-blueridge", legacy, 9), init("init-snapshot", "tukwila-blueridge", autotuned, 1)}, report.Reproduced},
		{"snapshot", []measured{init("init-snapshot", "tukwila-blueridge", legacy, 90), init("init-snapshot", "tukwila-blueridge", autotuned, 20)}, report.Differs},
		// 0.1 s is 200 MB/s: 0.94 min, 24x faster than the seed (reproduced before).
		{"snapshot", []measured{init("init-snapshot", "tukwila-blueridge", legacy, 9), init("init-snapshot", "tukwila-blueridge", autotuned, 0.1)}, report.Differs},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s/%s", tc.id, tc.want), func(t *testing.T) {
			f := verdictOf(t, runData(t, tc.points), tc.id)
			if f.Verdict != tc.want {
				t.Errorf("verdict %s, want %s: measured %q; why %q", f.Verdict, tc.want, f.Measured, f.Why)
			}
		})
	}
}

func TestSameSpeedupOnALogScale(t *testing.T) {
	for _, tt := range []struct {
		got, published float64
		want           bool
	}{
		{104.78, 104.78, true}, {40, 104.78, true}, {2.5, 104.78, false}, // 2.05x against 1.40x and 1.03x
		{-5.28, 2, true}, {-60, -5.28, false}, // a slowdown is as far as its ratio
		{1298.96, 11345.13, false}, {927, 1298.96, true}, // 14x is not 114x; 10.3x is 14x within 1.5
	} {
		if got := sameSpeedup(tt.got, tt.published); got != tt.want {
			t.Errorf("sameSpeedup(%v, %v) = %v, want %v", tt.got, tt.published, got, tt.want)
		}
	}
}

// TestTheLegacyStackIsTheSeedsA: where a run measured the whole 2003 stack
// (window and send buffer), the gains are judged against it, not against
// the window alone.
func TestTheLegacyStackIsTheSeedsA(t *testing.T) {
	t.Parallel()
	pts := []measured{
		{"push", "char-1k", "tukwila-blueridge", legacy, 1000, 2.0, nil}, // the window alone: no gain
		{"push", "char-1k", "tukwila-blueridge", stack, 1000, 4.2, nil},  // five round trips a buffer
		{"push", "char-1k", "tukwila-blueridge", autotuned, 1000, 2.0, nil},
	}
	f := verdictOf(t, runData(t, pts), "push-char")
	if f.Verdict != report.Reproduced || !strings.Contains(f.Measured, "8 KB send buffer") {
		t.Errorf("verdict %s: measured %q; why %q", f.Verdict, f.Measured, f.Why)
	}
	f = verdictOf(t, runData(t, pts[:1:1]), "push-char")
	if f.Verdict != report.NotMeasured {
		t.Errorf("without a B point: %s", f.Verdict)
	}
	f = verdictOf(t, runData(t, []measured{pts[0], pts[2]}), "push-char")
	if f.Verdict != report.Differs || !strings.Contains(f.Measured, "a 64 KiB window") {
		t.Errorf("the window alone: verdict %s: measured %q", f.Verdict, f.Measured)
	}
}
