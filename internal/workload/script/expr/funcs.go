package expr

import (
	"fmt"
	"math"
)

type funcID uint8

const (
	fAdd funcID = iota
	fSub
	fMul
	fDiv
	fMod
	fEq
	fNe
	fLe
	fLt
	fIs
	fNot
	fAnd
	fOr
	fBitAnd
	fBitOr
	fBitXor
	fShl
	fShr
	fAbs
	fLeast
	fGreatest
	fDebug
	fPi
	fSqrt
	fLn
	fExp
	fInt
	fDouble
	fPow
	fRandom
	fRandomGaussian
	fRandomExponential
	fRandomZipfian
	fHashMurmur2
	fHashFNV1a
	fPermute
)

// Argument counts other than a fixed one.
const (
	argsVariable = -1 // at least one (least, greatest)
	argsHash     = -2 // value [, seed]
	argsPermute  = -3 // value, size [, seed]
)

type function struct {
	id    funcID
	name  string
	nargs int
}

var functions = map[string]function{}

func init() {
	for _, f := range []function{
		{fAbs, "abs", 1}, {fLeast, "least", argsVariable}, {fGreatest, "greatest", argsVariable},
		{fDebug, "debug", 1}, {fPi, "pi", 0}, {fSqrt, "sqrt", 1}, {fLn, "ln", 1}, {fExp, "exp", 1},
		{fInt, "int", 1}, {fDouble, "double", 1}, {fPow, "pow", 2}, {fPow, "power", 2}, {fMod, "mod", 2},
		{fRandom, "random", 2}, {fRandomGaussian, "random_gaussian", 3},
		{fRandomExponential, "random_exponential", 3}, {fRandomZipfian, "random_zipfian", 3},
		{fHashMurmur2, "hash", argsHash}, {fHashMurmur2, "hash_murmur2", argsHash},
		{fHashFNV1a, "hash_fnv1a", argsHash}, {fPermute, "permute", argsPermute},
	} {
		functions[f.name] = f
	}
}

// checkArgs checks the number of arguments and adds :default_seed where a
// hash or permute call leaves its seed out.
func (f function) checkArgs(name token, args []Node, resolve Resolve) ([]Node, error) {
	bad := func(msg string) error { return &SyntaxError{name.pos, fmt.Sprintf("%s (%s)", msg, f.name)} }
	seed := func() Node { return &varNode{slot: resolve(DefaultSeed), name: DefaultSeed} }
	switch f.nargs {
	case argsVariable:
		if len(args) == 0 {
			return nil, bad("at least one argument expected")
		}
		if len(args) > maxArgs {
			return nil, bad(fmt.Sprintf("too many function arguments, maximum is %d", maxArgs))
		}
	case argsHash:
		if len(args) < 1 || len(args) > 2 {
			return nil, bad("unexpected number of arguments")
		}
		if len(args) == 1 {
			args = append(args, seed())
		}
	case argsPermute:
		if len(args) < 2 || len(args) > 3 {
			return nil, bad("unexpected number of arguments")
		}
		if len(args) == 2 {
			args = append(args, seed())
		}
	default:
		if len(args) != f.nargs {
			return nil, bad("unexpected number of arguments")
		}
	}
	return args, nil
}

// apply runs a function on evaluated arguments, none NULL unless the
// function takes NULL (IS, debug).
func apply(fn funcID, a []Value, e *Env) (Value, error) {
	switch fn {
	case fAdd, fSub, fMul, fDiv, fMod, fEq, fNe, fLe, fLt:
		return arith(fn, a[0], a[1])
	case fBitAnd, fBitOr, fBitXor, fShl, fShr:
		return bitwise(fn, a[0], a[1])
	case fNot:
		b, err := a[0].asBool()
		return BoolValue(!b), err
	case fIs:
		// As pgbench: the same type and the same boolean (NULL is NULL).
		return BoolValue(a[0].Type == a[1].Type && a[0].I == a[1].I), nil
	case fPi:
		return DoubleValue(math.Pi), nil
	case fAbs:
		if a[0].Type == Int {
			return IntValue(max(a[0].I, -a[0].I)), nil
		}
		d, err := a[0].asDouble()
		return DoubleValue(math.Abs(d)), err
	case fDebug:
		return a[0], nil
	case fDouble, fSqrt, fLn, fExp:
		return mathFunc(fn, a[0])
	case fInt:
		i, err := a[0].asInt()
		return IntValue(i), err
	case fLeast, fGreatest:
		return extremum(fn, a)
	case fPow:
		x, err := a[0].asDouble()
		if err != nil {
			return Value{}, err
		}
		y, err := a[1].asDouble()
		return DoubleValue(math.Pow(x, y)), err
	case fRandom, fRandomGaussian, fRandomExponential, fRandomZipfian:
		return random(fn, a, e.Rand)
	case fHashMurmur2, fHashFNV1a:
		return hash(fn, a)
	case fPermute:
		return permuteFunc(a)
	}
	return Value{}, fmt.Errorf("unknown function %d", fn)
}

// bitwise coerces both sides to integers; shifts count modulo 64, as the
// x86 instructions pgbench compiles to do.
func bitwise(fn funcID, l, r Value) (Value, error) {
	li, err := l.asInt()
	if err != nil {
		return Value{}, err
	}
	ri, err := r.asInt()
	if err != nil {
		return Value{}, err
	}
	switch fn {
	case fBitAnd:
		return IntValue(li & ri), nil
	case fBitOr:
		return IntValue(li | ri), nil
	case fBitXor:
		return IntValue(li ^ ri), nil
	case fShl:
		return IntValue(li << (uint64(ri) & 63)), nil
	}
	return IntValue(li >> (uint64(ri) & 63)), nil
}

func mathFunc(fn funcID, v Value) (Value, error) {
	d, err := v.asDouble()
	if err != nil {
		return Value{}, err
	}
	switch fn {
	case fSqrt:
		d = math.Sqrt(d)
	case fLn:
		d = math.Log(d)
	case fExp:
		d = math.Exp(d)
	}
	return DoubleValue(d), nil
}

// extremum is least and greatest: a double when any argument is one.
func extremum(fn funcID, a []Value) (Value, error) {
	double := false
	for _, v := range a {
		double = double || v.Type == Double
	}
	if double {
		best, err := a[0].asDouble()
		for _, v := range a[1:] {
			if err != nil {
				break
			}
			var d float64
			d, err = v.asDouble()
			if fn == fLeast {
				best = min(best, d)
			} else {
				best = max(best, d)
			}
		}
		return DoubleValue(best), err
	}
	best, err := a[0].asInt()
	for _, v := range a[1:] {
		if err != nil {
			break
		}
		var i int64
		i, err = v.asInt()
		if fn == fLeast {
			best = min(best, i)
		} else {
			best = max(best, i)
		}
	}
	return IntValue(best), err
}

// random is random, random_gaussian, random_exponential and
// random_zipfian, with pgbench's checks of the range and parameter.
func random(fn funcID, a []Value, r *Rand) (Value, error) {
	lo, err := a[0].asInt()
	if err != nil {
		return Value{}, err
	}
	hi, err := a[1].asInt()
	if err != nil {
		return Value{}, err
	}
	if lo > hi {
		return Value{}, fmt.Errorf("empty range given to random")
	}
	if span := hi - lo; span < 0 || span+1 < 0 {
		return Value{}, fmt.Errorf("random range is too large")
	}
	if fn == fRandom {
		return IntValue(r.uniform(lo, hi)), nil
	}
	param, err := a[2].asDouble()
	if err != nil {
		return Value{}, err
	}
	switch fn {
	case fRandomGaussian:
		if param < 2.0 {
			return Value{}, fmt.Errorf("gaussian parameter must be at least 2.000000 (not %f)", param)
		}
		return IntValue(r.gaussian(lo, hi, param)), nil
	case fRandomZipfian:
		if param < 1.001 || param > 1000.0 {
			return Value{}, fmt.Errorf("zipfian parameter must be in range [1.001, 1000] (not %f)", param)
		}
		return IntValue(r.zipfian(lo, hi, param)), nil
	}
	if param <= 0.0 {
		return Value{}, fmt.Errorf("exponential parameter must be greater than zero (not %f)", param)
	}
	return IntValue(r.exponential(lo, hi, param)), nil
}

func hash(fn funcID, a []Value) (Value, error) {
	v, err := a[0].asInt()
	if err != nil {
		return Value{}, err
	}
	seed, err := a[1].asInt()
	if err != nil {
		return Value{}, err
	}
	if fn == fHashFNV1a {
		return IntValue(hashFNV1a(v, uint64(seed))), nil
	}
	return IntValue(hashMurmur2(v, uint64(seed))), nil
}

func permuteFunc(a []Value) (Value, error) {
	var n [3]int64
	for i := range n {
		v, err := a[i].asInt()
		if err != nil {
			return Value{}, err
		}
		n[i] = v
	}
	if n[1] <= 0 {
		return Value{}, fmt.Errorf("permute size parameter must be greater than zero")
	}
	return IntValue(permute(n[0], n[1], n[2])), nil
}
