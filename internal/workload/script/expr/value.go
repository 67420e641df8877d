package expr

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Type is the type of a [Value]: pgbench's NULL, boolean, integer and
// double, and the text a variable holds until an expression needs its
// value (what \gset and -D give).
type Type uint8

const (
	Unset  Type = iota // a variable that was never given a value
	Null               // NULL
	Bool               // TRUE, FALSE
	Int                // a 64-bit integer
	Double             // a float64
	Text               // text from a query result or -D, typed when an expression reads it
)

func (k Type) String() string {
	return [...]string{"none", "null", "boolean", "int", "double", "text"}[k]
}

// Value is one pgbench value. It is small and passed by value, so that
// evaluating an expression allocates nothing.
type Value struct {
	Type Type
	I    int64   // Int; 1 or 0 for Bool
	F    float64 // Double
	S    string  // Text
}

// IntValue, DoubleValue, BoolValue, TextValue and NullValue make values.
func IntValue(i int64) Value      { return Value{Type: Int, I: i} }
func DoubleValue(f float64) Value { return Value{Type: Double, F: f} }
func TextValue(s string) Value    { return Value{Type: Text, S: s} }
func NullValue() Value            { return Value{Type: Null} }
func BoolValue(b bool) Value {
	if b {
		return Value{Type: Bool, I: 1}
	}
	return Value{Type: Bool}
}

// AppendText appends the value as pgbench writes it into a query: an
// integer in decimal, a double with 15 significant digits (%.15g), true or
// false, NULL, or the text itself.
func (v Value) AppendText(b []byte) []byte {
	switch v.Type {
	case Int:
		return strconv.AppendInt(b, v.I, 10)
	case Double:
		return appendDouble(b, v.F)
	case Bool:
		if v.I != 0 {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	case Null:
		return append(b, "NULL"...)
	}
	return append(b, v.S...)
}

// String is the value as pgbench prints it.
func (v Value) String() string { return string(v.AppendText(nil)) }

// appendDouble writes C's %.15g (DBL_DIG digits), which pgbench uses for a
// double's text: Go's 'g' keeps trailing zeros out as C does, and both
// switch to an exponent below 1e-4 and from 1e15.
func appendDouble(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, "nan"...)
	case math.IsInf(f, 1):
		return append(b, "inf"...)
	case math.IsInf(f, -1):
		return append(b, "-inf"...)
	}
	return strconv.AppendFloat(b, f, 'g', 15, 64)
}

// Typed turns text into the value it spells, as pgbench does when an
// expression reads a variable set by \gset or -D: "null"; a prefix of
// "true" or "yes", or "on"; a prefix of "false" or "no", "off" or "of"; an
// integer (which must fit 64 bits); else a double.
func (v Value) Typed() (Value, error) {
	if v.Type != Text {
		return v, nil
	}
	s := v.S
	switch {
	case s == "":
		return v, fmt.Errorf("empty value")
	case strings.EqualFold(s, "null"):
		return NullValue(), nil
	case prefixFold(s, "true"), prefixFold(s, "yes"), strings.EqualFold(s, "on"):
		return BoolValue(true), nil
	case prefixFold(s, "false"), prefixFold(s, "no"), strings.EqualFold(s, "off"), strings.EqualFold(s, "of"):
		return BoolValue(false), nil
	case looksInt(s):
		i, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return v, fmt.Errorf("value %q is out of range for type bigint", s)
		}
		return IntValue(i), nil
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return v, fmt.Errorf("malformed value %q", s)
	}
	return DoubleValue(f), nil
}

// prefixFold reports whether s is a prefix of word, ignoring case.
func prefixFold(s, word string) bool {
	return len(s) <= len(word) && strings.EqualFold(s, word[:len(s)])
}

// looksInt reports whether s is spaces, a sign and digits only.
func looksInt(s string) bool {
	s = strings.TrimLeft(s, " \t\n\r\f\v")
	if s != "" && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Truth is a value as a condition: non-zero numbers and TRUE are true,
// zero, FALSE and NULL false.
func (v Value) Truth() bool {
	switch v.Type {
	case Bool, Int:
		return v.I != 0
	case Double:
		return v.F != 0
	}
	return false
}

// asInt coerces a number to an integer, rounding a double to the nearest
// (half to even, as C's rint).
func (v Value) asInt() (int64, error) {
	switch v.Type {
	case Int:
		return v.I, nil
	case Double:
		d := math.RoundToEven(v.F)
		if math.IsNaN(d) || d < -9223372036854775808.0 || d >= 9223372036854775808.0 {
			return 0, fmt.Errorf("double to int overflow for %f", d)
		}
		return int64(d), nil
	}
	return 0, fmt.Errorf("cannot coerce %s to int", v.Type)
}

// asDouble coerces a number to a double.
func (v Value) asDouble() (float64, error) {
	switch v.Type {
	case Double:
		return v.F, nil
	case Int:
		return float64(v.I), nil
	}
	return 0, fmt.Errorf("cannot coerce %s to double", v.Type)
}

// asBool accepts a boolean only, as pgbench's AND, OR and NOT do.
func (v Value) asBool() (bool, error) {
	if v.Type == Bool {
		return v.I != 0, nil
	}
	return false, fmt.Errorf("cannot coerce %s to boolean", v.Type)
}
