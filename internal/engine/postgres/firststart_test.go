package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/enginetest"
	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
)

// What the first Start and Stop of a process costs, in CPU of this process
// and every process it waited for (an installer, the servers): what most
// dbrig runs and test binaries pay, each starting one or two servers. Run
// one start a process, with the template cache warm or not:
//
//	go test -c -o pg.test ./internal/engine/postgres/
//	./pg.test -test.run '^$' -test.bench FirstStartStop -test.benchtime 1x
func BenchmarkFirstStartStop(b *testing.B) {
	bin := pgtest.Binaries(b)
	base := pgtest.BaseDir(b)
	before := enginetest.CPUOfProcessAndChildren()
	for b.Loop() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		inst, err := postgres.Start(ctx, postgres.Options{
			InstanceConfig: engine.InstanceConfig{Name: "bench", Settings: map[string]string{"fsync": "off"}},
			StartOptions:   engine.StartOptions{BaseDir: base}, Binaries: bin,
		})
		if err != nil {
			b.Fatal(err)
		}
		if err := inst.Stop(ctx); err != nil {
			b.Fatal(err)
		}
		cancel()
	}
	b.ReportMetric((enginetest.CPUOfProcessAndChildren()-before).Seconds()/float64(b.N), "cpu-s/start")
}
