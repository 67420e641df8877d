// Package benchgoal prints the speed goals of dbrig's benchmarks in the one
// form scripts/goal-table collects into a table, for benchmarks only (the
// binary does not use it). Each goal is one line,
//
//	GOAL <name> <ours> <peer> <ratio> <wanted> <met|MISSED|retired>
//
// where the peer's figure is measured in the same run as ours, so that the
// load of a shared machine falls on both, and the verdict is computed from
// the measured ratio, never typed; a retired goal is a comparison kept for
// reference after its target was withdrawn (its WHERE line says why), and
// counts neither way. Where a goal's time goes is one line
//
//	WHERE <name> <text>
//
// `make bench` ends with one table of every goal its benchmarks printed;
// each `make bench-*` with the table of its own.
package benchgoal

import (
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
)

// Goal is one speed goal as measured in one run.
type Goal struct {
	// Name is one word that says what is measured, with its setting
	// (link-10gbit, oltp-pgbench-4-clients).
	Name string
	// Ours and Peer are the two figures, each with its unit, no space.
	Ours, Peer string
	// Ratio is the figure the goal judges and Wanted what it must reach.
	Ratio, Wanted string
	Met           bool
	// Retired marks a comparison whose target was withdrawn: its figures
	// are printed, and it is neither met nor missed.
	Retired bool
}

// AtLeast is a goal met when ratio reaches want: ours against the peer's
// rate, or the peer's time against ours.
func AtLeast(name, ours, peer string, ratio, want float64) Goal {
	return Goal{Name: name, Ours: ours, Peer: peer, Ratio: fmt.Sprintf("%.2f", ratio), Wanted: fmt.Sprintf(">=%.2f", want), Met: ratio >= want}
}

// AtMost is a goal met when ratio stays at or under want: our time against
// the peer's.
func AtMost(name, ours, peer string, ratio, want float64) Goal {
	return Goal{Name: name, Ours: ours, Peer: peer, Ratio: fmt.Sprintf("%.2f", ratio), Wanted: fmt.Sprintf("<=%.2f", want), Met: ratio <= want}
}

// Within is a goal met when ratio lies within share of 1 either way: a
// figure that must agree with the peer's, neither side better. Its ratio
// reads as the difference, +19%.
func Within(name, ours, peer string, ratio, share float64) Goal {
	return Goal{Name: name, Ours: ours, Peer: peer, Ratio: fmt.Sprintf("%+.0f%%", 100*(ratio-1)),
		Wanted: fmt.Sprintf("within+-%.0f%%", 100*share), Met: ratio >= 1-share && ratio <= 1+share}
}

// Retired is a comparison kept for reference after its target was
// withdrawn: ours against the peer's, the ratio as AtLeast writes it.
func Retired(name, ours, peer string, ratio float64) Goal {
	return Goal{Name: name, Ours: ours, Peer: peer, Ratio: fmt.Sprintf("%.2f", ratio), Wanted: "-", Retired: true}
}

// Line is the goal's GOAL line, or an error naming the field that would
// break the line's columns (empty, or holding a space).
func (g Goal) Line() (string, error) {
	verdict := "MISSED"
	switch {
	case g.Retired:
		verdict = "retired"
	case g.Met:
		verdict = "met"
	}
	fields := []struct{ key, value string }{
		{"name", g.Name}, {"ours", g.Ours}, {"peer", g.Peer}, {"ratio", g.Ratio}, {"wanted", g.Wanted},
	}
	for _, f := range fields {
		if f.value == "" || strings.ContainsAny(f.value, " \t\n") {
			return "", fmt.Errorf("goal %q: its %s %q must be one word", g.Name, f.key, f.value)
		}
	}
	return strings.Join([]string{"GOAL", g.Name, g.Ours, g.Peer, g.Ratio, g.Wanted, verdict}, " "), nil
}

// Print writes the goal's line to the benchmark's standard output (not its
// log, which go test indents), and fails the benchmark on a malformed goal.
func Print(tb testing.TB, g Goal) {
	tb.Helper()
	if err := Fprint(os.Stdout, g); err != nil {
		tb.Fatal(err)
	}
}

// Fprint writes the goal's line to w.
func Fprint(w io.Writer, g Goal) error {
	line, err := g.Line()
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, line)
	return err
}

// Where prints where the named goal's time goes, measured, as a WHERE line.
func Where(tb testing.TB, name, format string, args ...any) {
	tb.Helper()
	text := fmt.Sprintf(format, args...)
	if name == "" || strings.ContainsAny(name, " \t\n") || strings.Contains(text, "\n") {
		tb.Fatalf("WHERE %q %q: want a one-word name and one line", name, text)
	}
	fmt.Fprintf(os.Stdout, "WHERE %s %s\n", name, text)
}
