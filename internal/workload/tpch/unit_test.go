package tpch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/workload"
)

func TestCanonicalValues(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"BUILDING  ", "BUILDING"},
		{"37734107.00", "37734107.00"},
		{"25.5220058532573370", "25.52"},
		{"25.5050", "25.51"},         // half up
		{"25.50499999", "25.50"},     // no double rounding
		{"0.04998", "0.05"},          // a carry into the units
		{"99.995", "100.00"},         // a carry into a new digit
		{"-12.345", "-12.35"},        // half up away from zero, as the spec's answers print
		{"-0.004", "0.00"},           // no negative zero
		{"1995", "1995"},             // integers stay
		{"1995-03-15", "1995-03-15"}, // dates stay
		{"Customer#000000001", "Customer#000000001"},
		{"12.", "12."}, // not a decimal with a fraction
		{"1e5", "1e5"},
	} {
		if got := canonical(tc.in); got != tc.want {
			t.Errorf("canonical(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestAnswerHashIsOrderedAndCanonical(t *testing.T) {
	t.Parallel()
	rows := func(rs ...[]string) Answer {
		h := newAnswerHash()
		for _, r := range rs {
			var row [][]byte
			for _, v := range r {
				if v == "NULL" {
					row = append(row, nil)
				} else {
					row = append(row, []byte(v))
				}
			}
			h.add(row)
		}
		return h.answer()
	}
	a := rows([]string{"A", "1.001"}, []string{"B", "2"})
	if b := rows([]string{"A ", "1.00"}, []string{"B", "2"}); a != b {
		t.Errorf("padded CHAR and extra decimals change the answer: %v vs %v", a, b)
	}
	if b := rows([]string{"B", "2"}, []string{"A", "1.00"}); a == b {
		t.Error("rows in another order give the same answer: the ORDER BY is not checked")
	}
	if b := rows([]string{"A", "NULL"}, []string{"B", "2"}); a == b {
		t.Error("NULL hashes like a value")
	}
	if b := rows([]string{"A1", ".00"}); b.Rows != 1 || a.Rows != 2 {
		t.Errorf("row counts: %d and %d", a.Rows, b.Rows)
	}
	if b := rows([]string{"A", "1.00", "B", "2"}); a == b {
		t.Error("row boundaries are not hashed")
	}
}

func TestParseSelection(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want []int
		bad  bool
	}{
		{in: "all", want: seq(1, 22)},
		{in: "", want: seq(1, 22)},
		{in: "6", want: []int{6}},
		{in: "14,1-3,q6,2", want: []int{1, 2, 3, 6, 14}},
		{in: "0", bad: true},
		{in: "23", bad: true},
		{in: "5-2", bad: true},
		{in: "one", bad: true},
	} {
		got, err := ParseSelection(tc.in)
		if tc.bad {
			if err == nil {
				t.Errorf("ParseSelection(%q) = %v, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || !equalInts(got, tc.want) {
			t.Errorf("ParseSelection(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

func seq(a, b int) []int {
	var out []int
	for i := a; i <= b; i++ {
		out = append(out, i)
	}
	return out
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestQueriesAndSchemaAreEmbedded(t *testing.T) {
	t.Parallel()
	qs, err := Queries("postgres", 0.5, seq(1, 22))
	if err != nil || len(qs) != 22 {
		t.Fatalf("Queries = %d queries, %v", len(qs), err)
	}
	for _, q := range qs {
		if strings.Contains(q.SQL, "${") || strings.HasSuffix(q.SQL, ";") {
			t.Errorf("%s is not ready to run: %q", q.Name(), q.SQL[max(0, len(q.SQL)-40):])
		}
	}
	// Q11's FRACTION is 0.0001 / SF.
	if !strings.Contains(qs[10].SQL, "* 0.0002\n") {
		t.Errorf("Q11 at scale factor 0.5 does not use FRACTION 0.0002:\n%s", qs[10].SQL)
	}
	if _, err := Queries("oracle", 1, []int{1}); err == nil {
		t.Error("a dialect that does not exist gave queries")
	}
	tables, err := schemaSQL("postgres", "")
	if err != nil || len(tables) != len(Tables) {
		t.Errorf("schema: %d statements, %v; want one per table (%d)", len(tables), err, len(Tables))
	}
	keys, err := schemaSQL("postgres", "keys")
	if err != nil || len(keys) < len(Tables) || !strings.HasPrefix(keys[len(keys)-1], "analyze") {
		t.Errorf("keys: %d statements, %v; want keys for every table and analyze last", len(keys), err)
	}
}

// TestAmdahlFit recovers the serial fraction of synthetic times, exact and
// noisy, and gives none without a parallel point.
func TestAmdahlFit(t *testing.T) {
	t.Parallel()
	ns := []float64{1, 2, 4, 8, 16}
	for _, s := range []float64{0, 0.01, 0.1, 0.5, 1, -0.05} {
		var ts []float64
		for _, n := range ns {
			ts = append(ts, Amdahl(1000, s, n))
		}
		got, ok := FitAmdahl(ns, ts, 1000)
		if !ok || math.Abs(got-s) > 1e-9 {
			t.Errorf("s = %v: fitted %v, %v", s, got, ok)
		}
	}
	// ±2 % noise, alternating: the fit stays within 3 points.
	var ts []float64
	for i, n := range ns {
		noise := 1.02
		if i%2 == 1 {
			noise = 0.98
		}
		ts = append(ts, Amdahl(1000, 0.2, n)*noise)
	}
	if got, _ := FitAmdahl(ns, ts, 1000); math.Abs(got-0.2) > 0.03 {
		t.Errorf("noisy fit: s = %v, want 0.2 ± 0.03", got)
	}
	if _, ok := FitAmdahl([]float64{1, 1}, []float64{5, 5}, 5); ok {
		t.Error("a fit without n > 1")
	}
	// The seed's totals (457, 110, 61, 39 s at MAXDOP 1, 4, 8, 16) fit s ≈ 1 %.
	if s, _ := FitAmdahl([]float64{1, 4, 8, 16}, []float64{457, 110, 61, 39}, 457); math.Abs(s-0.01) > 0.003 {
		t.Errorf("the seed's totals: s = %v, want about 0.01", s)
	}
	if sp := SpeedupAt(0.1, 2); math.Abs(sp-1/0.55) > 1e-12 {
		t.Errorf("SpeedupAt(0.1, 2) = %v", sp)
	}
}

// TestGeneratorStreamCutsTrailingBars runs a stand-in generator (a shell
// script printing the generator's format) and reads its rows as COPY does.
func TestGeneratorStreamCutsTrailingBars(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	if err := os.WriteFile(good, []byte("#!/bin/sh\nprintf '0|ALGERIA|0| haggle|\\n1|ARGENTINA|1|al foxes|\\n'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r, err := generate(context.Background(), good, 0.01, "nation")
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(r)
	r.Close()
	if err != nil || string(b) != "0|ALGERIA|0| haggle\n1|ARGENTINA|1|al foxes\n" {
		t.Errorf("read %q, %v", b, err)
	}

	bad := filepath.Join(dir, "bad")
	if err := os.WriteFile(bad, []byte("#!/bin/sh\nprintf '0|x|\\n'\necho 'error: out of space' >&2\nexit 3\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r, err = generate(context.Background(), bad, 0.01, "nation")
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(r)
	r.Close()
	if err == nil || !strings.Contains(err.Error(), "out of space") || !strings.Contains(err.Error(), "nation") {
		t.Errorf("a failing generator reads as %v, want its error and the table", err)
	}
}

// fakeGenerator writes a stand-in generator that notes each run in runs
// (a line "run", then the output directory's path) and prints
// "TABLE|row|" lines: to stdout for one table, or to DIR/TABLE.tbl for
// every table with --output-dir DIR.
func fakeGenerator(t *testing.T, dir, runs string) string {
	t.Helper()
	script := `#!/bin/sh
echo run >> '` + runs + `'
out=; table=
while [ $# -gt 0 ]; do
  case "$1" in
    --output-dir) out=$2; shift ;;
    --tables) table=$2; shift ;;
  esac
  shift
done
echo "$out" >> '` + runs + `'
if [ -z "$out" ]; then printf '%s|row|\n' "$table"; exit 0; fi
for t in ` + strings.Join(Tables, " ") + `; do printf '%s|row|\n' "$t" > "$out/$t.tbl"; done
`
	p := filepath.Join(dir, "generator")
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestOneGeneratorForEveryTableAtSmallScales: up to oneGeneratorMaxScale
// one generator process makes every table (its start is most of its cost
// there), and its directory is gone before the first row is read, so that
// a killed dbrig leaves no file; above it each table has its own process.
func TestOneGeneratorForEveryTableAtSmallScales(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		sf       float64
		wantRuns int
	}{{0.01, 1}, {oneGeneratorMaxScale, 1}, {1, len(Tables)}} {
		dir := t.TempDir()
		runs := filepath.Join(dir, "runs")
		program := fakeGenerator(t, dir, runs)
		rows, release, err := tableRows(context.Background(), program, c.sf)
		if err != nil {
			t.Fatal(err)
		}
		if out := generatorOutputDir(t, runs); out != "" {
			if _, err := os.Stat(out); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("sf %v: the generator's directory %s is still there before the load (%v)", c.sf, out, err)
			}
		}
		for _, table := range Tables {
			r, err := rows(context.Background(), table)
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(r)
			if cerr := r.Close(); err == nil {
				err = cerr
			}
			if err != nil || string(b) != table+"|row\n" {
				t.Errorf("sf %v: table %s read %q, %v; want %q", c.sf, table, b, err, table+"|row\n")
			}
		}
		release()
		b, err := os.ReadFile(runs)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(b), "run\n"); n != c.wantRuns {
			t.Errorf("sf %v: the generator ran %d times for %d tables, want %d", c.sf, n, len(Tables), c.wantRuns)
		}
	}
}

// generatorOutputDir is the output directory the last run of
// fakeGenerator noted ("" when it wrote to stdout or has not run).
func generatorOutputDir(t *testing.T, runs string) string {
	t.Helper()
	b, err := os.ReadFile(runs)
	if errors.Is(err, fs.ErrNotExist) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return lines[len(lines)-1]
}

// TestGoldenMatchesTheSpecification: at scale factor 1 the recorded
// answers of the single-row queries are the specification's published
// answers (its answer set for the validation parameters).
func TestGoldenMatchesTheSpecification(t *testing.T) {
	t.Parallel()
	want, ok := golden(1)
	if !ok {
		t.Fatal("no golden answers at scale factor 1")
	}
	for q, value := range map[string]string{"Q6": "123141078.23", "Q14": "16.38", "Q17": "348406.05", "Q19": "3083843.06"} {
		h := newAnswerHash()
		h.add([][]byte{[]byte(value)})
		if got := h.answer(); got != want[q] {
			t.Errorf("%s: the specification's answer %s hashes to %v; the golden answer is %v", q, value, got, want[q])
		}
	}
	// Row counts of the specification's answer set at scale factor 1.
	for q, rows := range map[string]int{"Q2": 100, "Q11": 1048, "Q13": 42, "Q16": 18314, "Q18": 57, "Q20": 186, "Q21": 100} {
		if want[q].Rows != rows {
			t.Errorf("%s: %d rows at scale factor 1, the specification's answer has %d", q, want[q].Rows, rows)
		}
	}
}

// TestPredictFromTheDegreesBefore: before a degree runs, its times follow
// Amdahl with the serial time and fraction of the degrees measured before
// it; with only the serial degree before and no plan probed, nothing
// gives the fraction.
func TestPredictFromTheDegreesBefore(t *testing.T) {
	t.Parallel()
	point := func(degree int, s float64) workload.Result {
		n := float64(degree + 1)
		r := workload.Result{Combo: fmt.Sprintf("degree=%d", degree), Key: fmt.Sprintf("degree=%d #1", degree), Run: 1,
			Params:    workload.Params{"degree": int64(degree), "scale_factor": 0.3, "instance": "db"},
			Instances: []engine.InstanceConfig{{Name: "db", Engine: "postgres"}},
		}
		if s >= 0 {
			r.Metrics = map[string]float64{"degree": float64(degree), "processes": n, "host_cpus": 16,
				"total_s": Amdahl(100, s, n), MetricName(1): Amdahl(5000, s, n)}
		}
		return r
	}
	before := []workload.Result{point(0, 0.1), point(1, 0.1)}
	p := Predict(point(3, -1), before)
	if want := Amdahl(5000, 0.1, 4); math.Abs(p.Metrics[MetricName(1)]-want) > 1e-9 || math.Abs(p.Metrics["total_s"]-want/1000) > 1e-9 {
		t.Errorf("degree 3: %v, want Q1 %v and the total its sum", p.Metrics, want)
	}
	if p.Reason == "" {
		t.Error("a prediction without the reason it may miss")
	}
	if p := Predict(point(1, -1), before[:1]); len(p.Metrics) != 0 || !strings.HasPrefix(p.Reason, "no prediction") {
		t.Errorf("degree 1 after the serial degree alone: %v, %q", p.Metrics, p.Reason)
	}
}

// TestStaleGeneratorDirsGo: the generator's directory of a dbrig killed
// while it wrote (its owner dead) is removed by the next generation,
// however young; a live dbrig's stays, and so does a young one without a
// record.
func TestStaleGeneratorDirsGo(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	mk := func(name, owner string) string {
		dir := filepath.Join(base, name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "lineitem.tbl"), []byte("1|2|\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		if owner != "" {
			if err := os.WriteFile(filepath.Join(dir, engine.OwnerFile), []byte(owner), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	// pid 1 runs, but was not started at tick 0: a recycled pid is no owner.
	dead := mk(generatorDirPrefix+"dead", "1 0\n")
	live := mk(generatorDirPrefix+"live", "")
	if err := engine.WriteOwner(live); err != nil {
		t.Fatal(err)
	}
	young := mk(generatorDirPrefix+"young", "")
	other := mk("dbrig-pg-dead", "1 0\n")
	removed := removeStaleGeneratorDirs(base)
	if len(removed) != 1 || removed[0] != dead {
		t.Errorf("removed %v, want only %s", removed, dead)
	}
	for _, d := range []string{live, young, other} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s: %v", d, err)
		}
	}
}
