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

// What an instance costs to start and stop, in CPU of this process and
// every process it waited for (initdb, the servers): the first Start of a
// process, which makes the template, is left out. Run with:
//
//	go test -run '^$' -bench StartStop -benchtime 20x ./internal/engine/postgres/
func BenchmarkStartStop(b *testing.B) {
	bin := pgtest.Binaries(b)
	base := pgtest.BaseDir(b)
	startStop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
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
	}
	startStop()
	before := enginetest.CPUOfProcessAndChildren()
	for b.Loop() {
		startStop()
	}
	b.ReportMetric((enginetest.CPUOfProcessAndChildren()-before).Seconds()/float64(b.N), "cpu-s/start")
}
