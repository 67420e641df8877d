package expr

import (
	"fmt"
	"strings"
)

// Resolve gives the slot of a variable by name: the caller keeps one
// table of variables for a whole program, so that evaluation indexes a
// slice instead of looking names up.
type Resolve func(name string) int

// DefaultSeed is the variable that hash() and permute() read when not
// given a seed, as pgbench's :default_seed.
const DefaultSeed = "default_seed"

// maxArgs is the most arguments a function takes (pgbench's MAX_FARGS).
const maxArgs = 16

// Parse parses one pgbench expression, as \set, \if and \elif take it.
func Parse(src string, resolve Resolve) (Node, error) {
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks, resolve: resolve}
	n, err := p.expr(0)
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tEOF {
		return nil, p.syntaxError(t)
	}
	return n, nil
}

type parser struct {
	toks    []token
	at      int
	resolve Resolve
}

func (p *parser) peek() token { return p.toks[p.at] }
func (p *parser) next() token {
	t := p.toks[p.at]
	if t.kind != tEOF {
		p.at++
	}
	return t
}

func (p *parser) syntaxError(t token) error {
	if t.kind == tEOF {
		return &SyntaxError{t.pos, "syntax error at end of expression"}
	}
	return &SyntaxError{t.pos, "syntax error"}
}

// Precedence levels, lowest first, as exprparse.y declares them (taken
// from PostgreSQL's SQL grammar).
const (
	precOr      = 1
	precAnd     = 2
	precNot     = 3
	precIs      = 4 // IS, ISNULL, NOTNULL: postfix
	precCompare = 5 // non-associative
	precBit     = 6 // | # & << >> and the prefix ~
	precAdd     = 7
	precMul     = 8
	precUnary   = 9
)

type binop struct {
	prec int
	fn   funcID
	swap bool // a > b is b < a, a >= b is b <= a, as pgbench rewrites them
}

var binops = map[string]binop{
	"+": {precAdd, fAdd, false}, "-": {precAdd, fSub, false},
	"*": {precMul, fMul, false}, "/": {precMul, fDiv, false}, "%": {precMul, fMod, false},
	"<": {precCompare, fLt, false}, "<=": {precCompare, fLe, false},
	">": {precCompare, fLt, true}, ">=": {precCompare, fLe, true},
	"=": {precCompare, fEq, false}, "<>": {precCompare, fNe, false}, "!=": {precCompare, fNe, false},
	"&": {precBit, fBitAnd, false}, "|": {precBit, fBitOr, false}, "#": {precBit, fBitXor, false},
	"<<": {precBit, fShl, false}, ">>": {precBit, fShr, false},
}

// binary returns the binary operator a token is, if any.
func binary(t token) (binop, bool) {
	switch t.kind {
	case tOr:
		return binop{prec: precOr, fn: fOr}, true
	case tAnd:
		return binop{prec: precAnd, fn: fAnd}, true
	case tOp:
		b, ok := binops[t.text]
		return b, ok
	}
	return binop{}, false
}

// expr parses operators of at least minPrec by precedence climbing, which
// resolves every case as the yacc grammar's precedences do.
func (p *parser) expr(minPrec int) (Node, error) {
	lhs, err := p.prefix()
	if err != nil {
		return nil, err
	}
	for {
		t := p.peek()
		if t.kind == tIs || t.kind == tIsNull || t.kind == tNotNull {
			if precIs < minPrec {
				return lhs, nil
			}
			if lhs, err = p.postfix(lhs); err != nil {
				return nil, err
			}
			continue
		}
		op, ok := binary(t)
		if !ok || op.prec < minPrec {
			return lhs, nil
		}
		p.next()
		rhs, err := p.expr(op.prec + 1)
		if err != nil {
			return nil, err
		}
		lhs = makeBinary(op, lhs, rhs)
		if op.prec == precCompare {
			if next, ok := binary(p.peek()); ok && next.prec == precCompare {
				return nil, p.syntaxError(p.peek())
			}
		}
	}
}

func makeBinary(op binop, lhs, rhs Node) Node {
	switch op.fn {
	case fAnd:
		return &andNode{lhs, rhs}
	case fOr:
		return &orNode{lhs, rhs}
	}
	if op.swap {
		lhs, rhs = rhs, lhs
	}
	return &funcNode{fn: op.fn, args: []Node{lhs, rhs}}
}

// postfix parses IS [NOT] NULL|TRUE|FALSE, ISNULL and NOTNULL.
func (p *parser) postfix(lhs Node) (Node, error) {
	isNull := func(n Node) Node { return &funcNode{fn: fIs, args: []Node{n, &constNode{NullValue()}}} }
	not := func(n Node) Node { return &funcNode{fn: fNot, args: []Node{n}} }
	switch t := p.next(); t.kind {
	case tIsNull:
		return isNull(lhs), nil
	case tNotNull:
		return not(isNull(lhs)), nil
	}
	negate := false
	if p.peek().kind == tNot {
		p.next()
		negate = true
	}
	var n Node
	switch t := p.next(); t.kind {
	case tNull:
		n = isNull(lhs)
	case tTrue, tFalse:
		n = &funcNode{fn: fIs, args: []Node{lhs, &constNode{BoolValue(t.kind == tTrue)}}}
	default:
		return nil, p.syntaxError(t)
	}
	if negate {
		n = not(n)
	}
	return n, nil
}

// prefix parses a primary expression or a prefix operator and its operand.
func (p *parser) prefix() (Node, error) {
	t := p.next()
	switch t.kind {
	case tOp:
		switch t.text {
		case "(":
			n, err := p.expr(0)
			if err != nil {
				return nil, err
			}
			if c := p.next(); c.kind != tOp || c.text != ")" {
				return nil, p.syntaxError(c)
			}
			return n, nil
		case "+":
			return p.expr(precUnary + 1)
		case "-":
			if p.peek().kind == tMaxIntPlusOne {
				p.next()
				return &constNode{IntValue(-1 << 63)}, nil
			}
			n, err := p.expr(precUnary + 1)
			if err != nil {
				return nil, err
			}
			return &funcNode{fn: fSub, args: []Node{&constNode{IntValue(0)}, n}}, nil
		case "~":
			n, err := p.expr(precBit + 1)
			if err != nil {
				return nil, err
			}
			return &funcNode{fn: fBitXor, args: []Node{&constNode{IntValue(-1)}, n}}, nil
		}
	case tNot:
		n, err := p.expr(precNot + 1)
		if err != nil {
			return nil, err
		}
		return &funcNode{fn: fNot, args: []Node{n}}, nil
	case tNull:
		return &constNode{NullValue()}, nil
	case tTrue, tFalse:
		return &constNode{BoolValue(t.kind == tTrue)}, nil
	case tInt:
		return &constNode{IntValue(t.i)}, nil
	case tDouble:
		return &constNode{DoubleValue(t.f)}, nil
	case tMaxIntPlusOne:
		return nil, &SyntaxError{t.pos, "bigint constant overflow (9223372036854775808)"}
	case tVar:
		return &varNode{slot: p.resolve(t.text), name: t.text}, nil
	case tFunc:
		return p.call(t)
	case tCase:
		return p.caseExpr()
	}
	return nil, p.syntaxError(t)
}

// call parses a function's arguments and checks their number.
func (p *parser) call(name token) (Node, error) {
	f, ok := functions[strings.ToLower(name.text)]
	if !ok {
		return nil, &SyntaxError{name.pos, fmt.Sprintf("unexpected function name (%s)", name.text)}
	}
	if t := p.next(); t.kind != tOp || t.text != "(" {
		return nil, p.syntaxError(t)
	}
	var args []Node
	if t := p.peek(); t.kind == tOp && t.text == ")" {
		p.next()
	} else {
		for {
			a, err := p.expr(0)
			if err != nil {
				return nil, err
			}
			args = append(args, a)
			t := p.next()
			if t.kind == tOp && t.text == ")" {
				break
			}
			if t.kind != tOp || t.text != "," {
				return nil, p.syntaxError(t)
			}
		}
	}
	args, err := f.checkArgs(name, args, p.resolve)
	if err != nil {
		return nil, err
	}
	return &funcNode{fn: f.id, args: args}, nil
}

// caseExpr parses CASE WHEN c THEN v ... [ELSE e] END; without ELSE the
// value is NULL.
func (p *parser) caseExpr() (Node, error) {
	n := &caseNode{otherwise: &constNode{NullValue()}}
	for p.peek().kind == tWhen {
		p.next()
		cond, err := p.expr(0)
		if err != nil {
			return nil, err
		}
		if t := p.next(); t.kind != tThen {
			return nil, p.syntaxError(t)
		}
		then, err := p.expr(0)
		if err != nil {
			return nil, err
		}
		n.conds, n.thens = append(n.conds, cond), append(n.thens, then)
	}
	if len(n.conds) == 0 {
		return nil, p.syntaxError(p.peek())
	}
	if p.peek().kind == tElse {
		p.next()
		e, err := p.expr(0)
		if err != nil {
			return nil, err
		}
		n.otherwise = e
	}
	if t := p.next(); t.kind != tEnd {
		return nil, p.syntaxError(t)
	}
	return n, nil
}
