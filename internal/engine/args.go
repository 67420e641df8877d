package engine

import "strconv"

// ArgKind is the type of a statement's parameter.
type ArgKind uint8

const (
	IntArg     ArgKind = iota // Arg.I
	FloatArg                  // Arg.F
	TextArg                   // Arg.S, or Arg.B when set
	DecimalArg                // Arg.I with Arg.Scale digits after the point: 12345 with scale 2 is 123.45
	BoolArg                   // Arg.I: 0 false, else true
	NullArg
)

// Arg is one parameter of a statement.
type Arg struct {
	Kind  ArgKind
	I     int64
	F     float64
	S     string
	Scale uint8
	// B, when set, is the value as text, owned by the caller until the
	// statement returns: what the text protocols send, as it is (pgbench
	// writes a double its own way). The binary protocols send the typed
	// value.
	B []byte
}

// Args are a statement's parameters. A caller keeps one and reuses it, so
// that binding parameters allocates nothing where the engine's protocol
// sends them as text (PostgreSQL).
type Args struct{ v []Arg }

// Reset empties the list, keeping its room.
func (a *Args) Reset() *Args { a.v = a.v[:0]; return a }

// Add appends a parameter.
func (a *Args) Add(v Arg) *Args { a.v = append(a.v, v); return a }

// Int appends a whole number.
func (a *Args) Int(i int64) *Args { return a.Add(Arg{Kind: IntArg, I: i}) }

// Text appends a string.
func (a *Args) Text(s string) *Args { return a.Add(Arg{Kind: TextArg, S: s}) }

// Decimal appends a fixed-point number: unscaled with scale digits after
// the point (cents are scale 2).
func (a *Args) Decimal(unscaled int64, scale uint8) *Args {
	return a.Add(Arg{Kind: DecimalArg, I: unscaled, Scale: scale})
}

// Len is the number of parameters (0 for nil).
func (a *Args) Len() int {
	if a == nil {
		return 0
	}
	return len(a.v)
}

// At is the i-th parameter.
func (a *Args) At(i int) *Arg { return &a.v[i] }

// AppendText writes a parameter as text (nothing for NULL): Arg.B when
// set, else the value in the form SQL reads.
func AppendText(b []byte, v *Arg) []byte {
	if v.B != nil {
		return append(b, v.B...)
	}
	switch v.Kind {
	case IntArg:
		return strconv.AppendInt(b, v.I, 10)
	case FloatArg:
		return strconv.AppendFloat(b, v.F, 'g', -1, 64)
	case DecimalArg:
		return AppendDecimal(b, v.I, v.Scale)
	case BoolArg:
		if v.I != 0 {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	case NullArg:
		return b
	}
	return append(b, v.S...)
}

// AppendDecimal writes unscaled with scale digits after the point: 12345
// with scale 2 as 123.45, -5 as -0.05.
func AppendDecimal(b []byte, unscaled int64, scale uint8) []byte {
	if scale == 0 {
		return strconv.AppendInt(b, unscaled, 10)
	}
	if unscaled < 0 {
		b = append(b, '-')
		unscaled = -unscaled
	}
	div := int64(1)
	for range scale {
		div *= 10
	}
	b = strconv.AppendInt(b, unscaled/div, 10)
	b = append(b, '.')
	frac := unscaled % div
	for d := div / 10; d > 1 && frac < d; d /= 10 {
		b = append(b, '0')
	}
	return strconv.AppendInt(b, frac, 10)
}
