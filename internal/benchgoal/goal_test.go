package benchgoal

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestVerdictsAreComputedFromTheRatio(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		goal Goal
		want string
	}{
		{AtLeast("rate-met", "10MB/s", "10MB/s", 1.0, 1.0), "GOAL rate-met 10MB/s 10MB/s 1.00 >=1.00 met"},
		{AtLeast("rate-missed", "8MB/s", "10MB/s", 0.8, 0.9), "GOAL rate-missed 8MB/s 10MB/s 0.80 >=0.90 MISSED"},
		{AtMost("time-met", "1.2s", "1.0s", 1.2, 1.2), "GOAL time-met 1.2s 1.0s 1.20 <=1.20 met"},
		{AtMost("time-missed", "1.5s", "1.0s", 1.5, 1.2), "GOAL time-missed 1.5s 1.0s 1.50 <=1.20 MISSED"},
		{Within("p99-met", "105us", "100us", 1.05, 0.1), "GOAL p99-met 105us 100us +5% within+-10% met"},
		{Within("p99-missed-low", "70us", "100us", 0.7, 0.1), "GOAL p99-missed-low 70us 100us -30% within+-10% MISSED"},
		{Within("p99-missed-high", "143us", "100us", 1.43, 0.1), "GOAL p99-missed-high 143us 100us +43% within+-10% MISSED"},
		{Retired("apply-vs-native", "0.768s", "0.671s", 0.87), "GOAL apply-vs-native 0.768s 0.671s 0.87 - retired"},
	} {
		got, err := tt.goal.Line()
		if err != nil || got != tt.want {
			t.Errorf("Line() = %q, %v; want %q", got, err, tt.want)
		}
	}
}

func TestAFieldThatWouldBreakTheColumnsIsRefused(t *testing.T) {
	t.Parallel()
	for _, g := range []Goal{
		AtLeast("two words", "1", "1", 1, 1),
		AtLeast("name", "1 MB/s", "1", 1, 1),
		AtLeast("name", "1", "", 1, 1),
	} {
		if line, err := g.Line(); err == nil {
			t.Errorf("%+v: got %q, want an error", g, line)
		}
	}
}

// goalLines is a benchmark's output with a met and a missed goal of each
// kind the benchmarks print: a rate or a time against the peer's (AtLeast,
// AtMost), a percentile that must agree (Within), the link's own (an added
// round trip, a delivered rate against min(rate, direct)), and a retired
// comparison (Retired).
func goalLines(t *testing.T) []string {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("goos: linux\n")
	for _, g := range []Goal{
		AtLeast("oltp-pgbench-1-clients", "15501tps", "10852tps", 1.43, 1.0),
		AtLeast("oltp-pgbench-2-clients", "68443tps", "76805tps", 0.89, 1.0),
		AtLeast("rbar-vs-sysbench", "5200rt/s", "8286tps", 0.63, 1.0),
		AtMost("repl-pull-vs-loopback", "1.185s", "1.005s", 1.18, 1.2),
		AtMost("repl-cold-pull", "1.597s", "1.087s", 1.47, 1.2),
		Within("oltp-open-loop-p50", "233us", "195us", 1.19, 0.1),
		Within("oltp-open-loop-p99.9", "2.1ms", "2.0ms", 1.05, 0.1),
		Retired("repl-agent-vs-native", "0.768s", "0.671s", 0.87),
	} {
		if err := Fprint(&b, g); err != nil {
			t.Fatal(err)
		}
	}
	b.WriteString("BenchmarkProxyVsDirect-2 1 1407554056 ns/op\n")
	b.WriteString("GOAL link-unimpaired-rtt 34.9us 18.0us +17.7us <=+5us MISSED\n")
	b.WriteString("GOAL link-1gbit 125MB/s 2130MB/s 1.00 >=0.90*min(125MB/s,direct) met\n")
	b.WriteString("WHERE link-1gbit CPU time per KiB: 10018 ns through the link\n")
	b.WriteString("GOAL link-infiniband 1523MB/s 2629MB/s 0.55 >=0.90*min(5000MB/s,direct) MISSED\n")
	b.WriteString("GOAL link-rtt-met 20.0us 18.0us +2.0us <=+5us met\n")
	// A benchmark run again with a larger b.N: its last line counts.
	b.WriteString("WHERE link-1gbit CPU time per KiB: 9000 ns through the link\n")
	b.WriteString("GOAL oltp-pgbench-2-clients 78000tps 76805tps 1.02 >=1.00 met\n")
	b.WriteString("PASS\n")
	return strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
}

// wantTable is the table goal-table makes of goalLines, columns aligned.
const wantTable = `goal                    ours      peer      ratio    wanted                       verdict
oltp-pgbench-1-clients  15501tps  10852tps  1.43     >=1.00                       met
oltp-pgbench-2-clients  78000tps  76805tps  1.02     >=1.00                       met
rbar-vs-sysbench        5200rt/s  8286tps   0.63     >=1.00                       MISSED
repl-pull-vs-loopback   1.185s    1.005s    1.18     <=1.20                       met
repl-cold-pull          1.597s    1.087s    1.47     <=1.20                       MISSED
oltp-open-loop-p50      233us     195us     +19%     within+-10%                  MISSED
oltp-open-loop-p99.9    2.1ms     2.0ms     +5%      within+-10%                  met
repl-agent-vs-native    0.768s    0.671s    0.87     -                            retired
link-unimpaired-rtt     34.9us    18.0us    +17.7us  <=+5us                       MISSED
link-1gbit              125MB/s   2130MB/s  1.00     >=0.90*min(125MB/s,direct)   met
link-infiniband         1523MB/s  2629MB/s  0.55     >=0.90*min(5000MB/s,direct)  MISSED
link-rtt-met            20.0us    18.0us    +2.0us   <=+5us                       met

link-1gbit: CPU time per KiB: 9000 ns through the link

11 goals: 6 met, 5 MISSED; 1 retired (kept for reference)
`

func goalTable(t *testing.T, input string, args ...string) string {
	t.Helper()
	cmd := exec.Command("sh", append([]string{filepath.Join("..", "..", "scripts", "goal-table")}, args...)...)
	cmd.Stdin = strings.NewReader(input)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("scripts/goal-table %v: %v\n%s", args, err, stderr.String())
	}
	return string(out)
}

func TestGoalTablePassesTheOutputThroughAndEndsWithOneTable(t *testing.T) {
	t.Parallel()
	input := strings.Join(goalLines(t), "\n") + "\n"
	got := goalTable(t, input)
	if want := input + "\n" + wantTable; got != want {
		t.Errorf("scripts/goal-table printed\n%s\nwant\n%s", got, want)
	}
}

func TestGoalTableOnlyPrintsTheTable(t *testing.T) {
	t.Parallel()
	got := goalTable(t, strings.Join(goalLines(t), "\n")+"\n", "--table-only")
	if got != wantTable {
		t.Errorf("scripts/goal-table --table-only printed\n%s\nwant\n%s", got, wantTable)
	}
}

// make bench appends each benchmark's output to one file and reads it at the
// end: the table of the file is the table of every benchmark's goals.
func TestGoalTableAppendsAndTheFileMakesOneTable(t *testing.T) {
	t.Parallel()
	lines := goalLines(t)
	file := filepath.Join(t.TempDir(), "goals")
	first, second := strings.Join(lines[:9], "\n")+"\n", strings.Join(lines[9:], "\n")+"\n"
	for _, part := range []string{first, second} {
		if got := goalTable(t, part, "--append", file); got != part {
			t.Errorf("scripts/goal-table --append printed\n%s\nwant its input alone\n%s", got, part)
		}
	}
	collected, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if string(collected) != first+second {
		t.Errorf("the file holds\n%s\nwant both outputs", collected)
	}
	if got := goalTable(t, string(collected), "--table-only"); got != wantTable {
		t.Errorf("the collected file's table is\n%s\nwant\n%s", got, wantTable)
	}
}

func TestGoalTableAddsNothingWithoutAGoal(t *testing.T) {
	t.Parallel()
	input := "goos: linux\n--- FAIL: BenchmarkX\nFAIL\n"
	if got := goalTable(t, input); got != input {
		t.Errorf("scripts/goal-table printed\n%s\nwant its input alone", got)
	}
	if got := goalTable(t, input, "--table-only"); got != "" {
		t.Errorf("scripts/goal-table --table-only printed %q, want nothing", got)
	}
}
