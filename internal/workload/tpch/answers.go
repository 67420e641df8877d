package tpch

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"hash"
	"hash/fnv"
	"strings"
)

// Answer is what a query returned, in a form that compares across runs,
// plans and engines: its row count and a checksum of its rows in order.
type Answer struct {
	Rows     int    `json:"rows"`
	Checksum string `json:"checksum"`
}

func (a Answer) String() string { return fmt.Sprintf("%d rows, checksum %s", a.Rows, a.Checksum) }

// answerHash accumulates a query's rows, each value in canonical form:
// trailing blanks cut (CHAR columns come back padded from PostgreSQL and
// trimmed from MariaDB), and decimal numbers rounded half up to two places,
// as the specification's answer set prints them (clause 2.1.3.5), so that
// engines whose averages carry different numbers of digits agree.
type answerHash struct {
	h    hash.Hash64
	rows int
}

func newAnswerHash() *answerHash { return &answerHash{h: fnv.New64a()} }

// add hashes one row; a nil value is NULL.
func (a *answerHash) add(row [][]byte) {
	for _, v := range row {
		if v == nil {
			a.h.Write([]byte{0})
		} else {
			a.h.Write([]byte(canonical(string(v))))
		}
		a.h.Write([]byte{0x1f})
	}
	a.h.Write([]byte{0x1e})
	a.rows++
}

func (a *answerHash) answer() Answer {
	return Answer{Rows: a.rows, Checksum: fmt.Sprintf("%016x", a.h.Sum64())}
}

// canonical is a value's comparable text.
func canonical(v string) string {
	v = strings.TrimRight(v, " ")
	if r, ok := roundDecimal(v, 2); ok {
		return r
	}
	return v
}

// roundDecimal rounds a decimal number written with a fractional part
// ("-12.3456") half up to places digits, exactly (on the digits, not through
// a float). ok is false when v is not such a number.
func roundDecimal(v string, places int) (string, bool) {
	neg := strings.HasPrefix(v, "-")
	body := strings.TrimPrefix(v, "-")
	whole, frac, found := strings.Cut(body, ".")
	if !found || whole == "" || frac == "" || !allDigits(whole) || !allDigits(frac) {
		return "", false
	}
	for len(frac) < places+1 {
		frac += "0"
	}
	digits := []byte(whole + frac[:places])
	if frac[places] >= '5' {
		i := len(digits) - 1
		for ; i >= 0; i-- {
			if digits[i] == '9' {
				digits[i] = '0'
				continue
			}
			digits[i]++
			break
		}
		if i < 0 {
			digits = append([]byte{'1'}, digits...)
		}
	}
	w := strings.TrimLeft(string(digits[:len(digits)-places]), "0")
	if w == "" {
		w = "0"
	}
	out := w + "." + string(digits[len(digits)-places:])
	if neg && strings.Trim(out, "0.") != "" {
		out = "-" + out
	}
	return out, true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// Golden answers: each query's answer at fixed scale factors, recorded from
// a real run by `go test ./internal/workload/tpch -run TestGoldenAnswers
// -update` (see answers_test.go). Every engine's answers must match them: a
// dialect that computes something else, or a plan that returns other rows,
// fails.
//
//go:embed testdata/answers.json
var goldenJSON []byte

// GoldenFile is the golden answers' file, by scale factor (as FormatScale
// prints it) and query name.
type GoldenFile struct {
	Note   string                       `json:"note"`
	Scales map[string]map[string]Answer `json:"scales"`
}

// golden returns the recorded answers at a scale factor, if any.
func golden(sf float64) (map[string]Answer, bool) {
	var g GoldenFile
	if err := json.Unmarshal(goldenJSON, &g); err != nil {
		panic("tpch: testdata/answers.json: " + err.Error())
	}
	a, ok := g.Scales[FormatScale(sf)]
	return a, ok
}
