package study

import (
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/workload"
)

// A misplaced key in a later element of an array of tables is reported at
// its own line, not at the first element's header (a key appended under
// the last [[scale.full.when]] at line 242 was reported at line 202).
func TestUnknownKeyInALaterArrayElementIsAtItsOwnLine(t *testing.T) {
	t.Parallel()
	reg := NewRegistry(testEngines(), []workload.Kind{testKind()})
	for _, tt := range []struct {
		name, old, new, want string
	}{
		{"the last [[scale.quick.when]]", "skip = true\n", "skip = true\ncolour = 1\n", "demo.toml:39: scale.quick.when.1.colour: unknown key"},
		{"the first [[scale.quick.when]]", "set = { rows = 3 }\n", "set = { rows = 3 }\ncolour = 1\n", "demo.toml:36: scale.quick.when.0.colour: unknown key"},
		{"a second [[instance]]", "[client]\n", "[[instance]]\nname = \"db2\"\ncolour = 1\n\n[client]\n", "demo.toml:11: instance.1.colour: unknown key"},
	} {
		_, err := Parse("demo.toml", []byte(strings.Replace(goodSpec, tt.old, tt.new, 1)), reg)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Parse = %v\nwant %q", tt.name, err, tt.want)
		}
	}
	both := strings.Replace(strings.Replace(goodSpec, "skip = true\n", "skip = true\ncolour = 2\n", 1), "set = { rows = 3 }\n", "set = { rows = 3 }\ncolour = 1\n", 1)
	_, err := Parse("demo.toml", []byte(both), reg)
	for _, w := range []string{"demo.toml:36: scale.quick.when.0.colour", "demo.toml:40: scale.quick.when.1.colour"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("the same unknown key in two elements: %v\nwant %q", err, w)
		}
	}
}
