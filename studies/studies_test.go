package studies

import (
	"testing"

	"github.com/BurntSushi/toml"
)

// TestEachStudyRegistersForItsWorkload: a built-in study's judges and
// report sections are registered for the workload kind its file runs; under
// another name they are never used, and its report has no findings and no
// sections of its own. One without a file (load-oltp's sections) holds
// its registration to the kind in its own test.
func TestEachStudyRegistersForItsWorkload(t *testing.T) {
	t.Parallel()
	for _, b := range All() {
		if b.File == nil {
			continue
		}
		var file struct {
			Name     string
			Workload struct{ Kind string }
		}
		if _, err := toml.Decode(string(b.File), &file); err != nil {
			t.Fatalf("%s: %v", b.Path, err)
		}
		if file.Name != b.Name || file.Workload.Kind != b.Workload {
			t.Errorf("%s: registered as %q for workload %q; its file is %q of workload %q", b.Path, b.Name, b.Workload, file.Name, file.Workload.Kind)
		}
	}
}
