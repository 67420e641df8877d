package readahead

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/blockdev"
	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/mariadb/mariatest"
	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
	"github.com/dbrig/dbrig/internal/topology"
	"github.com/dbrig/dbrig/internal/workload"
	"github.com/dbrig/dbrig/internal/workload/workloadtest"
)

// envFor is what the runner gives a workload, with Cleanup collecting what
// the runner would run after the servers stop.
func envFor(db string, inst engine.Instance, cleanups *[]func(context.Context) error) *workload.Env {
	env := workloadtest.Env(db, inst)
	env.Cleanup = func(f func(context.Context) error) { *cleanups = append(*cleanups, f) }
	return env
}

func newTestWorkload(t *testing.T, rows int64, readAhead string) *readahead {
	t.Helper()
	w, err := newWorkload(workload.Params{"rows": rows, "read_ahead": readAhead, "device_size": int64(0),
		"calibration_bytes": int64(8 << 20), "instance": "db"})
	if err != nil {
		t.Fatal(err)
	}
	return w.(*readahead)
}

// loopsUnder lists this test process's loop directories under the
// temporary directory (each is named dbrig-loop-<pid>-...): another dbrig
// run sharing the directory makes and removes its own meanwhile.
func loopsUnder(t *testing.T) []string {
	t.Helper()
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "dbrig-loop-"+strconv.Itoa(os.Getpid())+"-*"))
	return dirs
}

// TestColdScanOnEachEngine prepares the table on a loop device under a real
// server of each engine and scans it cold with the device's read-ahead at
// its default and at its least: no page of the table cached when the scan
// starts, the whole table read from the device, PostgreSQL's reads one
// 8 KiB page each at the least and larger at the default, InnoDB's own
// read-ahead off at the least; and the device gone once the server has
// stopped and the cleanups ran.
func TestColdScanOnEachEngine(t *testing.T) {
	if err := blockdev.Permitted(); err != nil {
		t.Skipf("skipped: %v", err)
	}
	const rows = 3000
	for _, tc := range []struct {
		name  string
		start func(t *testing.T) engine.Instance
	}{
		{"postgres", func(t *testing.T) engine.Instance {
			return pgtest.Start(t, "readahead", map[string]string{"shared_buffers": "16MB", "wal_level": "minimal", "max_wal_senders": "0"})
		}},
		{"mariadb", func(t *testing.T) engine.Instance {
			return mariatest.Start(t, "readahead", map[string]string{"innodb_buffer_pool_size": "32M",
				"innodb_buffer_pool_load_at_startup": "OFF", "innodb_buffer_pool_dump_at_shutdown": "OFF"})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inst := tc.start(t)
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
			defer cancel()
			var cleanups []func(context.Context) error
			before := loopsUnder(t)
			defer func() {
				// As the runner: the servers stop first, then the cleanups.
				if err := inst.Stop(context.Background()); err != nil {
					t.Error(err)
				}
				for i := len(cleanups) - 1; i >= 0; i-- {
					if err := cleanups[i](context.Background()); err != nil {
						t.Error(err)
					}
				}
				if after := loopsUnder(t); len(after) != len(before) {
					t.Errorf("loop directories left: %q (before: %q)", after, before)
				}
			}()
			env := envFor("dbrig_read_ahead", inst, &cleanups)
			if err := newTestWorkload(t, rows, Default).Prepare(ctx, env); err != nil {
				t.Fatal(err)
			}
			if len(cleanups) != 1 || len(loopsUnder(t)) != len(before)+1 {
				t.Fatalf("Prepare made %d loop directories and registered %d cleanups", len(loopsUnder(t))-len(before), len(cleanups))
			}
			got := map[string]workload.Measurement{}
			for _, ra := range []string{Default, Minimal} {
				m, err := newTestWorkload(t, rows, ra).Run(ctx, env)
				if err != nil {
					t.Fatalf("%s: %v", ra, err)
				}
				got[ra] = m
				x := m.Metrics
				if x["resident_before"] != 0 || len(m.Notes) != 0 {
					t.Errorf("%s: %v pages cached before the scan; notes %q", ra, x["resident_before"], m.Notes)
				}
				if x["bytes_read"] < 0.9*x["table_bytes"] || x["seconds"] <= 0 || x["mb_per_s"] <= 0 || x["device_mb_per_s"] <= 0 {
					t.Errorf("%s: read %v bytes of a %v-byte table in %v s; device %v MB/s", ra, x["bytes_read"], x["table_bytes"], x["seconds"], x["device_mb_per_s"])
				}
			}
			def, least := got[Default].Metrics, got[Minimal].Metrics
			if least["read_ahead_kb"] != minimalKB || def["read_ahead_kb"] <= minimalKB {
				t.Errorf("read-ahead: default %v KiB, minimal %v KiB", def["read_ahead_kb"], least["read_ahead_kb"])
			}
			switch tc.name {
			case "postgres":
				if b := least["bytes_per_read"]; b < 7000 || b > 9500 {
					t.Errorf("with the least read-ahead PostgreSQL's reads averaged %v bytes, want one 8 KiB page", b)
				}
				if def["bytes_per_read"] < 4*least["bytes_per_read"] {
					t.Errorf("with the default read-ahead reads averaged %v bytes, with the least %v", def["bytes_per_read"], least["bytes_per_read"])
				}
			case "mariadb":
				if least["engine_read_ahead_threshold"] != 0 || least["engine_read_ahead_pages"] != 0 || def["engine_read_ahead_threshold"] == 0 {
					t.Errorf("InnoDB's read-ahead: default threshold %v, minimal threshold %v with %v pages read ahead",
						def["engine_read_ahead_threshold"], least["engine_read_ahead_threshold"], least["engine_read_ahead_pages"])
				}
			}
		})
	}
}

// TestTargetIsSkipped: dbrig never restarts a server it did not start, so a
// cold scan of a target is skipped with the reason, before anything is made.
func TestTargetIsSkipped(t *testing.T) {
	inst := pgtest.Start(t, "readahead-target", nil)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	target, err := postgres.New("").Attach(ctx, "db", inst.Login("postgres"), engine.AttachOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer target.Stop(ctx)
	var cleanups []func(context.Context) error
	err = newTestWorkload(t, 100, Default).Prepare(ctx, envFor("dbrig_read_ahead", target, &cleanups))
	var skip *topology.Unreachable
	if !errors.As(err, &skip) || !strings.Contains(skip.Reason, "never restarts a server it did not start") || len(cleanups) != 0 {
		t.Errorf("Prepare on a target = %v, %d cleanups", err, len(cleanups))
	}
}

// TestTableGoesOnTheInstancesEmulatedDisk: on an instance whose data is on
// an emulated disk, the table goes on that disk, whose reads the server's
// cgroup throttles, rather than on a loop device of the workload's own.
func TestTableGoesOnTheInstancesEmulatedDisk(t *testing.T) {
	t.Parallel()
	if err := blockdev.Permitted(); err != nil {
		t.Skipf("skipped: %v", err)
	}
	if _, err := engine.CgroupSupport("blkio"); err != nil {
		t.Skipf("skipped: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	inst, err := postgres.Start(ctx, postgres.Options{Binaries: pgtest.Binaries(t), InstanceConfig: engine.InstanceConfig{Name: "readahead-disk", DataDisk: "nvme",
		Settings: map[string]string{"shared_buffers": "16MB", "wal_level": "minimal", "max_wal_senders": "0", "fsync": "off"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := inst.Stop(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	var cleanups []func(context.Context) error
	env := envFor("dbrig_read_ahead", inst, &cleanups)
	if err := newTestWorkload(t, 2000, Default).Prepare(ctx, env); err != nil {
		t.Fatal(err)
	}
	if len(cleanups) != 0 {
		t.Errorf("Prepare made a loop device of its own (%d cleanups) beside the instance's emulated disk", len(cleanups))
	}
	ep, err := env.Conn(env.ClientSite, "db", env.Database)
	if err != nil {
		t.Fatal(err)
	}
	where, err := readMarker(ctx, env, ep.Conn)
	if err != nil {
		t.Fatal(err)
	}
	tableDev, err1 := blockdev.DeviceOf(where.dir)
	dataDev, err2 := blockdev.DeviceOf(inst.DataDir())
	if err1 != nil || err2 != nil || tableDev != dataDev {
		t.Errorf("the table is on %v, the instance's data on %v (%v, %v)", tableDev, dataDev, err1, err2)
	}
	m, err := newTestWorkload(t, 2000, Default).Run(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	if m.Metrics["bytes_read"] < 0.9*m.Metrics["table_bytes"] {
		t.Errorf("the scan read %v bytes of a %v-byte table", m.Metrics["bytes_read"], m.Metrics["table_bytes"])
	}
}
