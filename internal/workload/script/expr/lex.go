package expr

import (
	"fmt"
	"strconv"
	"strings"
)

// tokKind is a token of pgbench's expression language (exprscan.l).
type tokKind uint8

const (
	tEOF tokKind = iota
	tInt
	tMaxIntPlusOne // 9223372036854775808, valid only after a unary minus
	tDouble
	tVar
	tFunc
	tOp // an operator or punctuation: + - * / % ( ) , < > = <= >= <> != << >> & | # ~
	tAnd
	tOr
	tNot
	tIs
	tIsNull
	tNotNull
	tNull
	tTrue
	tFalse
	tCase
	tWhen
	tThen
	tElse
	tEnd
)

type token struct {
	kind tokKind
	text string // operator, variable or function name
	i    int64
	f    float64
	pos  int // byte offset in the expression, for errors
}

var keywords = map[string]tokKind{
	"and": tAnd, "or": tOr, "not": tNot, "is": tIs, "isnull": tIsNull, "notnull": tNotNull,
	"null": tNull, "true": tTrue, "false": tFalse,
	"case": tCase, "when": tWhen, "then": tThen, "else": tElse, "end": tEnd,
}

// SyntaxError is a problem in an expression, at a byte offset of it.
type SyntaxError struct {
	Pos int
	Msg string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("%s at column %d", e.Msg, e.Pos+1)
}

func isAlpha(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c >= 0x80
}
func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isAlnum(c byte) bool { return isAlpha(c) || isDigit(c) }

// lex splits an expression into tokens.
func lex(src string) ([]token, error) {
	var toks []token
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v' || c == '\n':
			i++
		case c == ':':
			j := i + 1
			for j < len(src) && isAlnum(src[j]) {
				j++
			}
			if j == i+1 {
				return nil, &SyntaxError{i, "unexpected character \":\""}
			}
			toks = append(toks, token{kind: tVar, text: src[i+1 : j], pos: i})
			i = j
		case isDigit(c) || c == '.' && i+1 < len(src) && isDigit(src[i+1]):
			t, n, err := lexNumber(src[i:])
			if err != nil {
				return nil, &SyntaxError{i, err.Error()}
			}
			t.pos = i
			toks = append(toks, t)
			i += n
		case isAlpha(c):
			j := i + 1
			for j < len(src) && isAlnum(src[j]) {
				j++
			}
			word := src[i:j]
			if k, ok := keywords[strings.ToLower(word)]; ok {
				toks = append(toks, token{kind: k, text: word, pos: i})
			} else {
				toks = append(toks, token{kind: tFunc, text: word, pos: i})
			}
			i = j
		default:
			op := lexOp(src[i:])
			if op == "" {
				return nil, &SyntaxError{i, fmt.Sprintf("unexpected character %q", string(c))}
			}
			toks = append(toks, token{kind: tOp, text: op, pos: i})
			i += len(op)
		}
	}
	return append(toks, token{kind: tEOF, pos: len(src)}), nil
}

// lexOp reads an operator, the longest first.
func lexOp(s string) string {
	if len(s) >= 2 {
		switch two := s[:2]; two {
		case "<>", "!=", "<=", ">=", "<<", ">>":
			return two
		}
	}
	if strings.IndexByte("+-*/%(),<>=&|#~", s[0]) >= 0 {
		return s[:1]
	}
	return ""
}

// lexNumber reads an integer ({digit}+) or a double ({digit}+ with a
// fraction or an exponent, or .{digit}+): the longest match, as flex does.
func lexNumber(s string) (token, int, error) {
	j := 0
	for j < len(s) && isDigit(s[j]) {
		j++
	}
	intEnd := j
	double := false
	if j < len(s) && s[j] == '.' {
		double = true
		j++
		for j < len(s) && isDigit(s[j]) {
			j++
		}
	}
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		k := j + 1
		if k < len(s) && (s[k] == '+' || s[k] == '-') {
			k++
		}
		if k < len(s) && isDigit(s[k]) {
			for k < len(s) && isDigit(s[k]) {
				k++
			}
			double, j = true, k
		}
	}
	if !double {
		text := s[:intEnd]
		if text == "9223372036854775808" {
			return token{kind: tMaxIntPlusOne}, intEnd, nil
		}
		i, err := strconv.ParseInt(text, 10, 64)
		if err != nil {
			return token{}, 0, fmt.Errorf("bigint constant overflow (%s)", text)
		}
		return token{kind: tInt, i: i}, intEnd, nil
	}
	f, err := strconv.ParseFloat(s[:j], 64)
	mantissa, _, _ := strings.Cut(strings.ToLower(s[:j]), "e")
	if err != nil || f == 0 && strings.ContainsAny(mantissa, "123456789") {
		// C's strtod reports an underflow to zero as a range error too.
		return token{}, 0, fmt.Errorf("double constant overflow (%s)", s[:j])
	}
	return token{kind: tDouble, f: f}, j, nil
}
