package study

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/report"
	"github.com/dbrig/dbrig/internal/workload"
)

func TestMergeFindings(t *testing.T) {
	p := Published{Finding: "lookups cost more"}
	ok := report.Finding{Verdict: report.Reproduced, Measured: "3x", Model: "4x", Why: "as the seed"}
	no := report.Finding{Verdict: report.Differs, Measured: "1x", Model: "1x", Why: "one page a lookup"}
	none := report.Finding{Verdict: report.NotMeasured, Measured: "-", Model: "-", Why: "no lookup ran"}
	noisy := report.Finding{Verdict: report.WithinNoise, Measured: "2x to 4x", Model: "4x", Why: "runs on both sides"}
	for _, tc := range []struct {
		name    string
		labels  []string
		each    []report.Finding
		verdict report.Verdict
		says    []string
	}{
		{"every part reproduces", []string{"PostgreSQL", "MariaDB"}, []report.Finding{ok, ok}, report.Reproduced,
			[]string{"PostgreSQL: 3x\nMariaDB: 3x", "PostgreSQL: reproduced. as the seed"}},
		{"one part differs", []string{"PostgreSQL", "MariaDB"}, []report.Finding{no, ok}, report.Differs,
			[]string{"PostgreSQL: 1x\nMariaDB: 3x", "PostgreSQL: differs. one page a lookup"}},
		{"one part did not measure", []string{"PostgreSQL", "MariaDB"}, []report.Finding{ok, none}, report.Reproduced,
			[]string{"PostgreSQL: 3x", "MariaDB: not measured. no lookup ran"}},
		{"one part within noise", []string{"PostgreSQL", "MariaDB"}, []report.Finding{ok, noisy}, report.WithinNoise,
			[]string{"MariaDB: within noise. runs on both sides"}},
		{"within noise and differs", []string{"PostgreSQL", "MariaDB"}, []report.Finding{noisy, no}, report.Differs,
			[]string{"MariaDB: differs"}},
		{"no part measured", []string{"PostgreSQL", "MariaDB"}, []report.Finding{none, none}, report.NotMeasured,
			[]string{"PostgreSQL: no lookup ran\nMariaDB: no lookup ran"}},
		{"one part", []string{"PostgreSQL"}, []report.Finding{no}, report.Differs, []string{"one page a lookup"}},
		{"nothing", nil, nil, report.NotMeasured, []string{"no point that measures it"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := MergeFindings(p, tc.labels, tc.each)
			if f.Verdict != tc.verdict {
				t.Errorf("verdict %q, want %q", f.Verdict, tc.verdict)
			}
			text := f.Measured + "\n" + f.Why
			for _, s := range tc.says {
				if !strings.Contains(text, s) {
					t.Errorf("finding %+v does not say %q", f, s)
				}
			}
		})
	}
}

// TestMergeFindingsOmitsUnmeasured: a part that measured nothing is not
// said, and a part that alone measured the finding stands as its own
// finding under its label.
func TestMergeFindingsOmitsUnmeasured(t *testing.T) {
	p := Published{Finding: "lookups cost more"}
	ok := report.Finding{Verdict: report.Reproduced, Measured: "3x", Model: "4x", Why: "as the seed", Spread: "3 runs"}
	no := report.Finding{Verdict: report.Differs, Measured: "1x", Model: "4x", Why: "one page a lookup"}
	none := report.Finding{Verdict: report.NotMeasured, Measured: "-", Model: "-", Why: "no lookup ran"}
	labels := []string{"engine=postgres", "engine=mariadb"}
	for _, tc := range []struct {
		name string
		each []report.Finding
		want report.Finding
	}{
		{"one part measured", []report.Finding{none, ok}, report.Finding{Verdict: report.Reproduced,
			Measured: "engine=mariadb: 3x", Model: "4x", Why: "engine=mariadb: as the seed", Spread: "engine=mariadb: 3 runs"}},
		{"no part measured", []report.Finding{none, none}, none},
		{"both measured", []report.Finding{no, ok}, report.Finding{Published: p.Finding, Verdict: report.Differs,
			Measured: "engine=postgres: 1x\nengine=mariadb: 3x", Model: "4x",
			Why: "engine=postgres: differs. one page a lookup\nengine=mariadb: reproduced. as the seed", Spread: "engine=mariadb: 3 runs"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := MergeFindings(p, labels, tc.each, OmitUnmeasured); got != tc.want {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
	if got := MergeFindings(p, labels, []report.Finding{ok, none}, SayUnmeasured); !strings.Contains(got.Why, "engine=mariadb: not measured. no lookup ran") {
		t.Errorf("SayUnmeasured left the part that measured nothing out: %+v", got)
	}
}

func TestFormatTimesAndWithin(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{{2.444, "2.44x"}, {9.994, "9.99x"}, {14.71, "14.7x"}, {math.NaN(), "-"}, {math.Inf(1), "-"}} {
		if got := FormatTimes(tc.v); got != tc.want {
			t.Errorf("FormatTimes(%v) = %q, want %q", tc.v, got, tc.want)
		}
	}
	for _, tc := range []struct {
		got, want, f float64
		in           bool
	}{{3, 4, 1.5, true}, {6, 4, 1.5, true}, {2.6, 4, 1.5, false}, {6.1, 4, 1.5, false}} {
		if in := Within(tc.got, tc.want, tc.f); in != tc.in {
			t.Errorf("Within(%v, %v, %v) = %v, want %v", tc.got, tc.want, tc.f, in, tc.in)
		}
	}
}

func TestEngineGroups(t *testing.T) {
	t.Parallel()
	sum := func(eng string, rows int64, path string) *Summary {
		r := workload.Result{Params: workload.Params{"instance": "db", "rows": rows, "path": path},
			Instances: []engine.InstanceConfig{{Name: "db", Engine: eng}}}
		return &Summary{Params: r.Params, Results: []workload.Result{r}}
	}
	rd := &RunData{Summaries: []*Summary{sum("mariadb", 10, "scan"), sum("postgres", 10, "scan"), sum("mariadb", 10, "lookup")}}
	gs := rd.EngineGroups()
	if len(gs) != 2 || gs[0].Label != "MariaDB" || gs[0].Engine != "mariadb" || len(gs[0].Summaries) != 2 ||
		gs[0].Summaries[1].Params.String("path") != "lookup" || gs[1].Label != "PostgreSQL" {
		t.Errorf("one size: %+v", gs)
	}
	rd.Summaries = append(rd.Summaries, sum("mariadb", 20, "scan"))
	var labels []string
	for _, g := range rd.EngineGroups() {
		labels = append(labels, g.Label)
	}
	if want := []string{"MariaDB, 10 rows", "PostgreSQL, 10 rows", "MariaDB, 20 rows"}; !slices.Equal(labels, want) {
		t.Errorf("two sizes: %q, want %q", labels, want)
	}
}

func TestJudgeEachAndUnlike(t *testing.T) {
	t.Parallel()
	p := Published{Finding: "lookups cost more"}
	parts := []string{"PostgreSQL", "MariaDB"}
	f := JudgeEach(p, parts, func(s string) string { return s }, func(s string) report.Finding {
		f := report.Finding{Verdict: report.Reproduced, Measured: "3x", Why: "as the seed"}
		if s == "MariaDB" {
			return Unlike(f, "A page was not cached.")
		}
		return Unlike(f, "")
	})
	if f.Verdict != report.Differs || !strings.Contains(f.Why, "PostgreSQL: reproduced. as the seed") ||
		!strings.Contains(f.Why, "MariaDB: differs. A page was not cached. as the seed") {
		t.Errorf("merged %+v", f)
	}
	no := report.Finding{Verdict: report.Differs, Why: "one page a lookup"}
	if got := Unlike(no, "A page was not cached."); got != no {
		t.Errorf("a finding that differs changed: %+v", got)
	}
}

func TestBandSaysWithinNoiseWhenRunsStraddleABound(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		lo, hi float64
		want   report.Verdict
	}{
		{1.2, 1.4, report.Reproduced},
		{0.5, 0.6, report.Differs},
		{2.1, 3, report.Differs},
		{0.9, 1.3, report.WithinNoise},
		{1.5, 2.5, report.WithinNoise},
	} {
		if got := Band(tc.lo, tc.hi, 1, 2); got != tc.want {
			t.Errorf("Band(%g, %g, 1, 2) = %q, want %q", tc.lo, tc.hi, got, tc.want)
		}
	}
	if lo, hi := RunRange(Stat{Runs: []float64{9, 1, 2, 3}}, true); lo != 1 || hi != 3 {
		t.Errorf("RunRange without the discarded first run = %g..%g, want 1..3", lo, hi)
	}
	// Each run of the numerator over each of the denominator: the lowest
	// over the highest, the highest over the lowest.
	if lo, hi := RatioRange(Stat{Runs: []float64{4, 6}}, Stat{Runs: []float64{2, 3}}); lo != 4.0/3 || hi != 3 {
		t.Errorf("RatioRange = %g..%g, want 1.33..3", lo, hi)
	}
}
