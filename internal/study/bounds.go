package study

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"strings"

	"github.com/dbrig/dbrig/internal/units"
)

// Bounds of a study file's counts. Each is far above what any built-in
// study and scale asks for, and low enough that a typo is refused at parse
// instead of filling the machine's memory or running for years.
const (
	// MaxRuns is the most runs of one combination: the seeds repeat 3 to
	// 10 times, and runs = 9223372036854775807 once allocated 23 GB.
	MaxRuns = 1000
	// MaxPoints is the most points of a plan (its combinations times
	// runs): the largest built-in plan has 624; at one second a point,
	// 100,000 run for more than a day.
	MaxPoints = 100_000
	// MaxCombinations is the most combinations of the sweep's lists before
	// rules skip any: each is matched against every rule. The largest
	// built-in sweep makes 20,736, of which its rules keep 21.
	MaxCombinations = 1_000_000
	// MaxInstances is the most instances of one set (count = N): each is a
	// server of its own, with its processes, port and a data directory of
	// about 40 MB; the seeds ran at most 16.
	MaxInstances = 1024
	// MaxGOMAXPROCS is the most threads a client's gomaxprocs asks for:
	// the most CPUs a CPU list names (Linux's CPU numbers up to 4095).
	MaxGOMAXPROCS = 4096
)

// runsError refuses a number of runs outside 1 to MaxRuns.
func runsError(runs int) string {
	switch {
	case runs < 1:
		return fmt.Sprintf("want at least 1 run, got %d", runs)
	case runs > MaxRuns:
		return fmt.Sprintf("runs = %d: at most %s runs per combination (the seeds repeat 3 to 10 times)", runs, units.FormatCount(MaxRuns))
	}
	return ""
}

// sweepSizeError says why the sweep's lists make too many combinations for
// their rules to be matched, or "" when they do not. It multiplies the
// lists' lengths without expanding anything and without overflow, so that
// a sweep of 10^15 combinations is refused before a single one is made.
func sweepSizeError(lists [][]any) string {
	combos := int64(1)
	var lens []string
	for _, l := range lists {
		combos = mulSaturating(combos, int64(len(l)))
		lens = append(lens, strconv.Itoa(len(l)))
	}
	if combos <= MaxCombinations {
		return ""
	}
	made := "more than " + units.FormatCount(math.MaxInt64)
	if combos < math.MaxInt64 {
		made = units.FormatCount(combos)
	}
	return fmt.Sprintf("the sweep's lists of %s values make %s combinations: at most %s, before rules skip any (each is matched against every rule)",
		strings.Join(lens, " × "), made, units.FormatCount(MaxCombinations))
}

// pointsError refuses a plan whose combinations, of runs each, make more
// than MaxPoints points.
func pointsError(runs int64) string {
	each := fmt.Sprintf("%d runs each", runs)
	if runs == 1 {
		each = "1 run each"
	}
	return fmt.Sprintf("the combinations no rule skips, of %s, make more than %s points: at most %s points in a plan (at a second a point that is more than a day)",
		each, units.FormatCount(MaxPoints), units.FormatCount(MaxPoints))
}

// mulSaturating multiplies two counts of 0 or more, stopping at
// math.MaxInt64 instead of wrapping around.
func mulSaturating(a, b int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(lo)
}
