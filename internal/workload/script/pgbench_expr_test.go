package script

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/workload/script/expr"
)

// exprCases are expressions whose values pgbench 15 and dbrig must agree
// on: every operator and function, pgbench's types and coercions, its
// hashes and permutation, and its random functions under a fixed seed.
var exprCases = []string{
	"1 + 2 * 3", "(1 + 2) * 3", "7 / 2", "-7 / 2", "7 % 3", "-7 % 3", "7.0 / 2", "1 - 2.5", "5 / 3.0",
	"2 + 3 * 4 - 10 / 3", "1 << 2", "8 >> 2", "1 << 64", "-16 >> 2", "1 | 2", "1 # 3", "1 & 3", "~ 1", "~ 1 + 2", "- ~ 1", "~ 1 | 2",
	"1 < 2", "2 <= 2", "3 > 4", "5 >= 4", "5 = 4", "5 <> 4", "5 != 5", "1.5 < 2", "2 = 2.0",
	"true and false", "true or false", "not true", "not false and true", "not 1 = 2", "null and true", "false and null",
	"null is null", "1 is null", "1 isnull", "1 notnull", "null", "true", "1 is not null", "true is true",
	"1 is true", "false is not true", "null = 1", "abs(null)", "- 0.0", "1 + 2 isnull",
	"abs(-17)", "abs(-17.5)", "abs(-9223372036854775807)", "double(5432)", "exp(1.0)", "greatest(5, 4, 3, 2)",
	"greatest(5, 4.5)", "least(5, 4, 3, 2.1)", "least(3)", "int(5.4 + 3.8)", "int(2.5)", "int(3.5)", "int(-2.5)",
	"ln(2.718281828459045)", "mod(54, 32)", "mod(-54, 32)", "mod(5.5, 2)", "pi()", "pow(2.0, 10)", "power(2, 0.5)", "sqrt(2.0)",
	"1e3", ".5", "1.", "12.5e-1", "1e15", "1e16", "123456789.123456789", "0.0001", "0.00001", "1.0 / 3",
	"-9223372036854775808", "9223372036854775807", "-(-9223372036854775807)",
	"hash(10, 5432)", "hash_fnv1a(10, 5432)", "hash_murmur2(10, 5432)", "hash(-1)", "hash_fnv1a(0)", "hash(1, 0)",
	"HASH_FNV1A(-9223372036854775808, -1)",
	"permute(0, 4, 5)", "permute(7, 100, 12345)", "permute(-3, 1000000, 1)", "permute(12, 13)",
	"permute(1234567, 1000000007, 42)", "permute(5, 1)", "permute(1, 2, 3)", "permute(2, 3, 4)",
	"random(1, 10)", "random(-5000, 5000)", "random(1, 100000 * :scale)", "random(0, 9223372036854775806)",
	"random_exponential(1, 10, 3.0)", "random_exponential(1, 1000000, 0.5)", "random_gaussian(1, 10, 2.5)",
	"random_gaussian(1, 1000000, 5)", "random_zipfian(1, 10, 1.5)", "random_zipfian(1, 1000000, 1.07)",
	"random_zipfian(1, 1000000, 2.5)", "random(5, 5)",
	"case when 1 = 1 then 10 else 20 end", "case when 1 = 2 then 10 end",
	"case when false then 1 when true then 2 else 3 end", "case when 0 then 1 when 1.5 then 2 end",
	":client_id", ":scale", ":random_seed", ":default_seed", ":x", ":y + 1", ":t", ":f", ":n", ":x * 2 + :y",
	"CASE WHEN :x > 40 AND NOT :t IS FALSE THEN :y ELSE -1 END",
}

// exprErrors are expressions pgbench stops a client on, with what its
// message and dbrig's both say.
var exprErrors = []struct{ expr, want string }{
	{"9223372036854775807 + 1", "bigint add out of range"},
	{"-9223372036854775808 - 1", "bigint sub out of range"},
	{"9223372036854775807 * 2", "bigint mul out of range"},
	{"-9223372036854775808 / -1", "bigint div out of range"},
	{"1 / 0", "division by zero"},
	{"1 % 0", "division by zero"},
	{"int(1e30)", "double to int overflow"},
	{"random(10, 1)", "empty range given to random"},
	{"random(-9223372036854775808, 9223372036854775807)", "random range is too large"},
	{"random_gaussian(1, 10, 1.5)", "gaussian parameter must be at least"},
	{"random_zipfian(1, 10, 1.0)", "zipfian parameter must be in range"},
	{"random_exponential(1, 10, 0)", "exponential parameter must be greater than zero"},
	{"permute(1, 0)", "permute size parameter must be greater than zero"},
	{"5 or 0", "cannot coerce int to boolean"},
	{"not 1", "cannot coerce int to boolean"},
	{"1 + true", "cannot coerce boolean to int"},
	{":undefined", "undefined variable"},
}

// exprSyntaxErrors are expressions pgbench refuses before it runs.
var exprSyntaxErrors = []string{"1 +", "least()", "hash(1,2,3)", "100000000000000000000", "1.0E309", "foo(1)", "1 < 2 < 3", "(1", "1 1", "9223372036854775808"}

const exprDefines = "x=42,y=2.5,t=yes,f=of,n=null"

var debugRE = regexp.MustCompile(`debug\(script=0,command=(\d+)\): (.*)`)

// debugText is a value as pgbench's debug() prints it.
func debugText(v expr.Value) string {
	switch v.Type {
	case expr.Null:
		return "null"
	case expr.Bool:
		return "boolean " + v.String()
	case expr.Int:
		return "int " + v.String()
	case expr.Double:
		return "double " + v.String()
	}
	return "? " + v.String()
}

// TestExpressionsAgreeWithPgbench sets each expression with \set through
// debug() in pgbench 15 (one client, --random-seed) and reads what it
// printed, then evaluates the same script in dbrig under the same seed:
// every value must be the same, and every error and refusal too.
func TestExpressionsAgreeWithPgbench(t *testing.T) {
	t.Parallel()
	inst, db := sharedServer.Database(t)
	dir := t.TempDir()
	var script strings.Builder
	for i, e := range exprCases {
		fmt.Fprintf(&script, "\\set r%d debug(%s)\n", i, e)
	}
	file := writeFile(t, dir, "exprs.sql", script.String())
	args := []string{"-n", "-t", "1", "-c", "1", "-j", "1", "--random-seed=7"}
	for _, d := range strings.Split(exprDefines, ",") {
		args = append(args, "-D", d)
	}
	withFile := func(file string) []string { return append(append([]string(nil), args...), "-f", file) }
	_, stderr, err := runPgbench(t, inst, db, dir, withFile(file)...)
	if err != nil {
		t.Fatalf("pgbench: %v\n%s", err, stderr)
	}
	theirs := map[int]string{}
	for _, m := range debugRE.FindAllStringSubmatch(stderr, -1) {
		n, _ := strconv.Atoi(m[1])
		theirs[n-1] = m[2]
	}
	if len(theirs) != len(exprCases) {
		t.Fatalf("pgbench printed %d values of %d:\n%s", len(theirs), len(exprCases), stderr)
	}
	ours := evalScript(t, script.String())
	for i, e := range exprCases {
		if got := debugText(ours.vars[mustSlot(t, ours.prog, fmt.Sprintf("r%d", i))]); got != theirs[i] {
			t.Errorf("%s: dbrig %s, pgbench %s", e, got, theirs[i])
		}
	}
	for _, c := range exprErrors {
		text := fmt.Sprintf("\\set r debug(%s)\n", c.expr)
		_, stderr, err := runPgbench(t, inst, db, dir, withFile(writeFile(t, dir, "err.sql", text))...)
		if err == nil || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: pgbench did not fail with %q: %v\n%s", c.expr, c.want, err, stderr)
		}
		cl := newTestClient(t, text)
		if err := cl.run(context.Background(), 0); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: dbrig did not fail with %q: %v", c.expr, c.want, err)
		}
	}
	for _, e := range exprSyntaxErrors {
		text := fmt.Sprintf("\\set r %s\n", e)
		_, stderr, err := runPgbench(t, inst, db, dir, "-n", "-t", "1", "-f", writeFile(t, dir, "syntax.sql", text))
		if err == nil {
			t.Errorf("%s: pgbench took it", e)
		}
		if _, perr := Parse([]Source{{Name: "syntax.sql", Text: text, Weight: 1}}, Options{}); perr == nil {
			t.Errorf("%s: dbrig took it (pgbench: %s)", e, strings.TrimSpace(stderr))
		} else if !strings.HasPrefix(perr.Error(), "syntax.sql:1: ") {
			t.Errorf("%s: %v, want the file and line first", e, perr)
		}
	}
}

type testClient struct {
	*client
}

// newTestClient is client 0 of one, seeded 7, with exprDefines, for a
// script of meta commands only.
func newTestClient(tb testing.TB, text string) testClient {
	tb.Helper()
	defs, err := ParseDefines(exprDefines)
	if err != nil {
		tb.Fatal(err)
	}
	prog := mustParse(tb, text, Options{Defines: defs})
	seeds, defaultSeed := clientSeeds(7, 1)
	return testClient{newClient(prog, 0, 1, 7, seeds[0], defaultSeed, nil)}
}

func evalScript(tb testing.TB, text string) testClient {
	tb.Helper()
	c := newTestClient(tb, text)
	if err := c.run(context.Background(), 0); err != nil {
		tb.Fatal(err)
	}
	return c
}

func mustSlot(tb testing.TB, p *Program, name string) int {
	tb.Helper()
	s, ok := p.Slot(name)
	if !ok {
		tb.Fatalf("no variable %s", name)
	}
	return s
}
