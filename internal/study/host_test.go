package study

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/workload"
)

// A client pinned to a CPU this machine lacks is refused when the plan is
// checked, before any server starts, with the CPUs the machine has.
func TestClientOnACPUThisMachineLacksIsRefusedBeforeAnythingStarts(t *testing.T) {
	t.Parallel()
	reg := NewRegistry(testEngines(), []workload.Kind{testKind()})
	lacks := runtime.NumCPU() + 75
	for _, cpus := range []string{fmt.Sprintf("%q", fmt.Sprint(lacks)), fmt.Sprint(lacks)} {
		src := strings.Replace(goodSpec, `gomaxprocs = "${procs}"`, "gomaxprocs = \"${procs}\"\ncpus = "+cpus, 1)
		s, err := Parse("demo.toml", []byte(src), reg)
		if err != nil {
			t.Fatal(err)
		}
		p, err := s.Plan("")
		if err != nil {
			t.Fatal(err)
		}
		want := fmt.Sprintf("demo.toml:11: client.cpus: CPU %d of list \"%d\" does not exist on this machine (it has %d: 0-%d)", lacks, lacks, runtime.NumCPU(), runtime.NumCPU()-1)
		err = CheckHost(p)
		var es SpecErrors
		if !errors.As(err, &es) || !strings.Contains(err.Error(), want) || strings.Count(err.Error(), "\n") != 0 {
			t.Errorf("cpus = %s: CheckHost = %v\nwant one SpecError %q", cpus, err, want)
		}
	}
}
