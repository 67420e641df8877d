package expr

import (
	"strings"
	"testing"
)

// resolver gives variables slots in order.
type resolver struct{ names []string }

func (r *resolver) slot(name string) int {
	for i, n := range r.names {
		if n == name {
			return i
		}
	}
	r.names = append(r.names, name)
	return len(r.names) - 1
}

func eval(t *testing.T, src string, vars map[string]Value) (Value, error) {
	t.Helper()
	r := &resolver{}
	n, err := Parse(src, r.slot)
	if err != nil {
		return Value{}, err
	}
	env := &Env{Vars: make([]Value, len(r.names)), Rand: &Rand{}}
	for i, name := range r.names {
		env.Vars[i] = vars[name]
	}
	*env.Rand = NewRand(1)
	return n.Eval(env)
}

// TestDocumentedExamples evaluates the examples of pgbench 15's manual
// (its operator and function tables).
func TestDocumentedExamples(t *testing.T) {
	for src, want := range map[string]string{
		"1 is null": "false", "1 notnull": "true", "5 = 4": "false", "5 <> 4": "true", "5 != 5": "false",
		"5 < 4": "false", "5 <= 4": "false", "5 > 4": "true", "5 >= 4": "true", "true and 0 = 1": "false",
		"not false": "true", "1 | 2": "3", "1 # 3": "2", "1 & 3": "1", "~ 1": "-2", "1 << 2": "4", "8 >> 2": "2",
		"5 + 4": "9", "3 - 2.0": "1", "5 * 4": "20", "5 / 3": "1", "3 % 2": "1", "- 2.0": "-2",
		"abs(-17)": "17", "debug(5432.1)": "5432.1", "double(5432)": "5432", "exp(1.0)": "2.71828182845905",
		"greatest(5, 4, 3, 2)": "5", "hash(10, 5432)": "-5817877081768721676", "hash_fnv1a(10, 5432)": "-7793829335365542153",
		"hash_murmur2(10, 5432)": "-5817877081768721676", "int(5.4 + 3.8)": "9", "least(5, 4, 3, 2.1)": "2.1",
		"ln(2.718281828459045)": "1", "mod(54, 32)": "22", "pi()": "3.14159265358979", "pow(2.0, 10)": "1024",
		"power(2.0, 10)": "1024", "sqrt(2.0)": "1.4142135623731",
		":x * 2": "84", ":s + 1": "3.5", ":b and true": "true",
		"CASE WHEN :x <> 0 THEN :x / 5 ELSE NULL END": "8",
	} {
		v, err := eval(t, src, map[string]Value{"x": IntValue(42), "s": TextValue("2.5"), "b": TextValue("yes")})
		if err != nil {
			t.Errorf("%s: %v", src, err)
			continue
		}
		if got := v.String(); got != want {
			t.Errorf("%s = %s, want %s", src, got, want)
		}
	}
}

// TestRandomWithinBounds draws from each distribution: always in range.
func TestRandomWithinBounds(t *testing.T) {
	for _, src := range []string{"random(-3, 7)", "random_exponential(-3, 7, 2.0)", "random_gaussian(-3, 7, 2.0)", "random_zipfian(-3, 7, 1.5)", "permute(:i, 11) - 3"} {
		r := &resolver{}
		n, err := Parse(src, r.slot)
		if err != nil {
			t.Fatal(err)
		}
		rnd := NewRand(42)
		env := &Env{Vars: make([]Value, len(r.names)), Rand: &rnd}
		for i := range 10000 {
			for j := range env.Vars {
				env.Vars[j] = IntValue(int64(i % 11))
			}
			v, err := n.Eval(env)
			if err != nil || v.Type != Int || v.I < -3 || v.I > 7 {
				t.Fatalf("%s = %v, %v", src, v, err)
			}
		}
	}
}

// TestEvalAllocatesNothing: the hot path of a script, a \set with a
// random draw over variables, costs no allocation.
func TestEvalAllocatesNothing(t *testing.T) {
	r := &resolver{}
	n, err := Parse("random(1, 100000 * :scale) + hash(:aid) % 10 + (CASE WHEN :aid > 5 THEN 1 ELSE 0 END)", r.slot)
	if err != nil {
		t.Fatal(err)
	}
	rnd := NewRand(1)
	env := &Env{Vars: make([]Value, len(r.names)), Rand: &rnd}
	for i, name := range r.names {
		env.Vars[i] = IntValue(map[string]int64{"scale": 10, "aid": 7, DefaultSeed: 3}[name])
	}
	if a := testing.AllocsPerRun(1000, func() { _, _ = n.Eval(env) }); a != 0 {
		t.Errorf("%v allocations per evaluation", a)
	}
}

// TestSyntaxErrors names what is wrong and where.
func TestSyntaxErrors(t *testing.T) {
	for src, want := range map[string]string{
		"1 +": "syntax error at end of expression at column 4", "foo(1)": "unexpected function name (foo) at column 1",
		"least()": "at least one argument expected (least)", "1 $ 2": `unexpected character "$" at column 3`,
		"random(1)": "unexpected number of arguments (random)", "1 < 2 < 3": "syntax error at column 7",
		"case when 1 then 2": "syntax error at end of expression", "99999999999999999999": "bigint constant overflow",
		"1e999": "double constant overflow", "1e-999": "double constant overflow",
	} {
		_, err := eval(t, src, nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", src, err, want)
		}
	}
}
