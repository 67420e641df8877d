package report

import (
	"strings"
	"testing"
)

func TestMarkdownEscapesCells(t *testing.T) {
	tests := []struct{ in, want string }{
		{"a | b", `a \| b`},
		{"two\nlines", "two<br>lines"},
		{"<script>x</script>", `\<script>x\</script>`},
		{`back\slash`, `back\\slash`},
	}
	for _, tt := range tests {
		if got := mdCell(tt.in); got != tt.want {
			t.Errorf("mdCell(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestNumericCell(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"12.5", true}, {"-3", true}, {"1,200", true}, {"1.2e+06", true}, {"+2.1%", true},
		{"0.49 s", true}, {"38 ms", true}, {"5200 rows/s", true}, {"2.1×", true},
		{"server-loop", false}, {"1.5 s, 1.6 s", false}, {"rtt-77ms", false}, {"", false},
	}
	for _, tt := range tests {
		if got := numericCell(tt.in); got != tt.want {
			t.Errorf("numericCell(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestFormatNum(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{0, "0"}, {1, "1"}, {0.05, "0.05"}, {157.123456, "157.123"}, {1234567, "1234570"},
		{1e-6, "1e-06"}, {2.5e20, "2.5e+20"},
	}
	for _, tt := range tests {
		if got := formatNum(tt.in); got != tt.want {
			t.Errorf("formatNum(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestWrap(t *testing.T) {
	tests := []struct {
		in    string
		width int
		want  []string
	}{
		{"", 10, nil},
		{"one two three", 7, []string{"one two", "three"}},
		{"abcdefghij", 4, []string{"abcd", "efgh", "ij"}},
		{"a µs b", 4, []string{"a µs", "b"}},
	}
	for _, tt := range tests {
		got := wrap(tt.in, tt.width)
		if strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("wrap(%q, %d) = %q, want %q", tt.in, tt.width, got, tt.want)
		}
	}
}
