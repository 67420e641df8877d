package expr

import (
	"errors"
	"fmt"
	"math"
)

// Env is what an expression reads: the client's variables, by the slots
// Parse resolved, and its random generator.
type Env struct {
	Vars []Value
	Rand *Rand
}

// Node is a parsed expression.
type Node interface {
	Eval(e *Env) (Value, error)
}

type constNode struct{ v Value }

func (n *constNode) Eval(*Env) (Value, error) { return n.v, nil }

type varNode struct {
	slot int
	name string
}

func (n *varNode) Eval(e *Env) (Value, error) {
	v := e.Vars[n.slot]
	switch v.Type {
	case Unset:
		return v, fmt.Errorf("undefined variable %q", n.name)
	case Text:
		t, err := v.Typed()
		if err != nil {
			return v, fmt.Errorf("malformed variable %q value: %w", n.name, err)
		}
		return t, nil
	}
	return v, nil
}

// andNode and orNode evaluate their right side only when the left does
// not decide, and take booleans only (pgbench coerces nothing to one).
type andNode struct{ l, r Node }
type orNode struct{ l, r Node }

func (n *andNode) Eval(e *Env) (Value, error) { return lazyLogic(e, n.l, n.r, false) }
func (n *orNode) Eval(e *Env) (Value, error)  { return lazyLogic(e, n.l, n.r, true) }

// lazyLogic is AND (decider false) and OR (decider true): NULL on the left
// is NULL, the decider on the left is the answer, else the right side.
func lazyLogic(e *Env, l, r Node, decider bool) (Value, error) {
	a, err := l.Eval(e)
	if err != nil {
		return a, err
	}
	if a.Type == Null {
		return a, nil
	}
	ba, err := a.asBool()
	if err != nil {
		return a, err
	}
	if ba == decider {
		return BoolValue(decider), nil
	}
	b, err := r.Eval(e)
	if err != nil || b.Type == Null {
		return b, err
	}
	bb, err := b.asBool()
	if err != nil {
		return b, err
	}
	return BoolValue(bb), nil
}

type caseNode struct {
	conds, thens []Node
	otherwise    Node
}

func (n *caseNode) Eval(e *Env) (Value, error) {
	for i, c := range n.conds {
		v, err := c.Eval(e)
		if err != nil {
			return v, err
		}
		if v.Truth() {
			return n.thens[i].Eval(e)
		}
	}
	return n.otherwise.Eval(e)
}

type funcNode struct {
	fn   funcID
	args []Node
}

// Eval evaluates the arguments into an array on the stack and applies the
// function: NULL in, NULL out, but for IS and debug.
func (n *funcNode) Eval(e *Env) (Value, error) {
	var argv [maxArgs]Value
	args := argv[:len(n.args)]
	hasNull := false
	for i, a := range n.args {
		v, err := a.Eval(e)
		if err != nil {
			return v, err
		}
		args[i] = v
		hasNull = hasNull || v.Type == Null
	}
	if hasNull && n.fn != fIs && n.fn != fDebug {
		return NullValue(), nil
	}
	return apply(n.fn, args, e)
}

var errDivisionByZero = errors.New("division by zero")

// arith is + - * / % = <> <= <: doubles when either side is one (but %),
// else integers with overflow checked, as pgbench.
func arith(fn funcID, l, r Value) (Value, error) {
	if (l.Type == Double || r.Type == Double) && fn != fMod {
		ld, err := l.asDouble()
		if err != nil {
			return Value{}, err
		}
		rd, err := r.asDouble()
		if err != nil {
			return Value{}, err
		}
		return doubleArith(fn, ld, rd), nil
	}
	li, err := l.asInt()
	if err != nil {
		return Value{}, err
	}
	ri, err := r.asInt()
	if err != nil {
		return Value{}, err
	}
	return intArith(fn, li, ri)
}

func doubleArith(fn funcID, l, r float64) Value {
	switch fn {
	case fAdd:
		return DoubleValue(l + r)
	case fSub:
		return DoubleValue(l - r)
	case fMul:
		return DoubleValue(l * r)
	case fDiv:
		return DoubleValue(l / r)
	case fEq:
		return BoolValue(l == r)
	case fNe:
		return BoolValue(l != r)
	case fLe:
		return BoolValue(l <= r)
	}
	return BoolValue(l < r)
}

func intArith(fn funcID, l, r int64) (Value, error) {
	switch fn {
	case fAdd:
		s := l + r
		if (s > l) != (r > 0) {
			return Value{}, errors.New("bigint add out of range")
		}
		return IntValue(s), nil
	case fSub:
		d := l - r
		if (d < l) != (r > 0) {
			return Value{}, errors.New("bigint sub out of range")
		}
		return IntValue(d), nil
	case fMul:
		if l != 0 && r != 0 && ((l == -1 && r == math.MinInt64) || (r == -1 && l == math.MinInt64) || (l*r)/r != l) {
			return Value{}, errors.New("bigint mul out of range")
		}
		return IntValue(l * r), nil
	case fDiv, fMod:
		switch {
		case r == 0:
			return Value{}, errDivisionByZero
		case r == -1 && fn == fMod:
			return IntValue(0), nil
		case r == -1 && l == math.MinInt64:
			return Value{}, errors.New("bigint div out of range")
		case fn == fDiv:
			return IntValue(l / r), nil
		}
		return IntValue(l % r), nil
	case fEq:
		return BoolValue(l == r), nil
	case fNe:
		return BoolValue(l != r), nil
	case fLe:
		return BoolValue(l <= r), nil
	}
	return BoolValue(l < r), nil
}
