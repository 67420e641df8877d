package mariadb_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/enginetest"
	"github.com/dbrig/dbrig/internal/engine/mariadb"
	"github.com/dbrig/dbrig/internal/engine/mariadb/mariatest"
)

// What a study's settings cost to check before anything starts, and what
// an instance costs to start. Run with:
//
//	go test -run '^$' -bench . -benchtime 10x ./internal/engine/mariadb/

var benchSettings = map[string]string{
	"innodb_buffer_pool_size": "256M", "innodb_flush_log_at_trx_commit": "2", "max_connections": "200", "binlog_format": "ROW",
}

// A fresh engine: the catalogue run plus the value check.
func BenchmarkCheckSettingsFirst(b *testing.B) {
	mariatest.Engine(b)
	for b.Loop() {
		if errs := mariadb.New("").CheckSettings(b.Context(), benchSettings); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/check")
}

// The catalogue known: one value check for a set not seen before (a new
// point of a sweep).
func BenchmarkCheckSettingsNextPoint(b *testing.B) {
	e := mariatest.Engine(b)
	e.CheckSettings(b.Context(), benchSettings)
	n := 0
	for b.Loop() {
		n++
		s := map[string]string{"max_connections": strconv.Itoa(100 + n), "innodb_buffer_pool_size": "256M"}
		if errs := e.CheckSettings(b.Context(), s); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/check")
}

// Start with the server's defaults (mariadb-install-db, mariadbd, dbrig's
// login ready); Stop is not timed.
func BenchmarkStart(b *testing.B) {
	e := mariatest.Engine(b)
	base := mariatest.BaseDir(b)
	var started time.Duration
	for b.Loop() {
		t0 := time.Now()
		inst, err := e.StartInstance(b.Context(), engine.InstanceConfig{Name: "bench"}, engine.StartOptions{BaseDir: base})
		started += time.Since(t0)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := inst.Stop(context.Background()); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(started.Seconds()/float64(b.N), "s/start")
}

// What an instance costs to start and stop, in CPU of this process and
// every process it waited for (the installer, the servers): the first
// Start of a process, which makes the template, is left out.
func BenchmarkStartStop(b *testing.B) {
	e := mariatest.Engine(b)
	base := mariatest.BaseDir(b)
	startStop := func() {
		inst, err := e.StartInstance(b.Context(), engine.InstanceConfig{Name: "bench", Settings: mariatest.FastSettings}, engine.StartOptions{BaseDir: base})
		if err != nil {
			b.Fatal(err)
		}
		if err := inst.Stop(context.Background()); err != nil {
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
