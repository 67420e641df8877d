package mariadb_test

import (
	"context"
	"testing"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/enginetest"
	"github.com/dbrig/dbrig/internal/engine/mariadb/mariatest"
)

// What the first Start and Stop of a process costs, in CPU of this process
// and every process it waited for (an installer, the servers): what most
// dbrig runs and test binaries pay, each starting one or two servers. Run
// one start a process, with the template cache warm or not:
//
//	go test -c -o maria.test ./internal/engine/mariadb/
//	./maria.test -test.run '^$' -test.bench FirstStartStop -test.benchtime 1x
func BenchmarkFirstStartStop(b *testing.B) {
	e := mariatest.Engine(b)
	base := mariatest.BaseDir(b)
	before := enginetest.CPUOfProcessAndChildren()
	for b.Loop() {
		inst, err := e.StartInstance(context.Background(), engine.InstanceConfig{Name: "bench", Settings: mariatest.FastSettings},
			engine.StartOptions{BaseDir: base})
		if err != nil {
			b.Fatal(err)
		}
		if err := inst.Stop(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric((enginetest.CPUOfProcessAndChildren()-before).Seconds()/float64(b.N), "cpu-s/start")
}
