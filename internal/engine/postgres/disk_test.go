package postgres_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/blockdev"
	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/postgres"
	"github.com/dbrig/dbrig/internal/engine/postgres/pgtest"
)

// coldScan is what a cold sequential scan read from its device.
type coldScan struct {
	seconds       float64
	bytes, reads  int64
	device        blockdev.Device
	bytesPerSec   float64
	requestPerSec float64
}

// TestEmulatedDiskThrottlesAColdScan scans a table larger than
// shared_buffers, cold, on an instance whose data is on sata-hdd (120 MB/s,
// 150 IOPS) and on one whose data is on an unthrottled dbrig loop device
// (nvme): the throttled scan reads at no more than 1.2 x the profile's
// rates, the unthrottled one faster. The devices' read-ahead is 32 KiB, so
// that the scan's requests, not the kernel's megabyte reads that a busy
// machine's CPU holds under 120 MB/s anyway, meet the throttle: without
// it, a scan of 32 KiB reads goes well beyond 150 a second.
func TestEmulatedDiskThrottlesAColdScan(t *testing.T) {
	t.Parallel()
	if err := blockdev.Permitted(); err != nil {
		t.Skipf("skipped: %v", err)
	}
	if _, err := engine.CgroupSupport("blkio"); err != nil {
		t.Skipf("skipped: %v", err)
	}
	bin := pgtest.Binaries(t)
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	hdd, err := blockdev.LookupProfile("sata-hdd")
	if err != nil {
		t.Fatal(err)
	}
	throttled := scanCold(ctx, t, bin, hdd.Name)
	free := scanCold(ctx, t, bin, "nvme")
	t.Logf("sata-hdd: %d bytes in %d reads, %.2f s: %.1f MB/s, %.0f reads/s; nvme: %.2f s, %.1f MB/s",
		throttled.bytes, throttled.reads, throttled.seconds, throttled.bytesPerSec/1e6, throttled.requestPerSec, free.seconds, free.bytesPerSec/1e6)
	if throttled.bytesPerSec > 1.2*float64(hdd.ReadBPS) || throttled.requestPerSec > 1.2*float64(hdd.ReadIOPS) {
		t.Errorf("the throttled scan read %.1f MB/s in %.0f reads/s, beyond 1.2 x sata-hdd's %d MB/s and %d IOPS",
			throttled.bytesPerSec/1e6, throttled.requestPerSec, hdd.ReadBPS/1e6, hdd.ReadIOPS)
	}
	if free.bytesPerSec < 1.5*throttled.bytesPerSec {
		t.Errorf("the unthrottled scan read %.1f MB/s, not 1.5 x the throttled one's %.1f MB/s", free.bytesPerSec/1e6, throttled.bytesPerSec/1e6)
	}
}

// scanCold starts an instance with its data on an emulated disk of the
// profile, fills a table, empties both caches and scans it once.
func scanCold(ctx context.Context, t *testing.T, bin postgres.Binaries, profile string) coldScan {
	t.Helper()
	inst, err := postgres.Start(ctx, postgres.Options{Binaries: bin, InstanceConfig: engine.InstanceConfig{Name: "disk-" + profile, DataDisk: profile,
		Settings: map[string]string{"shared_buffers": "16MB", "max_parallel_workers_per_gather": "0", "fsync": "off"}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := inst.Stop(context.Background()); err != nil {
			t.Errorf("stop: %v", err)
		}
		if _, err := os.Stat(filepath.Dir(filepath.Dir(inst.Dir()))); !os.IsNotExist(err) {
			t.Errorf("the emulated disk's directory is left: %v", err)
		}
	})
	dev, err := blockdev.DeviceOf(inst.DataDir())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(dev.Name, "loop") || !blockdev.MadeByThisProcess(dev) {
		t.Fatalf("the data directory %s is on %s, not a loop device of this process's", inst.DataDir(), dev.Path())
	}
	if err := inst.Exec(ctx, "postgres", "CREATE TABLE t (id int, filler char(900))",
		"INSERT INTO t SELECT g, 'x' FROM generate_series(1, 24000) g", "CHECKPOINT"); err != nil {
		t.Fatal(err)
	}
	if err := dev.SetReadAheadKB(32); err != nil {
		t.Fatal(err)
	}
	if err := inst.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	conn, err := inst.Connect(ctx, "postgres")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	files, err := blockdev.FilesUnder(inst.DataDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := blockdev.Evict(files...); err != nil {
		t.Fatal(err)
	}
	if err := dev.FlushBuffers(); err != nil {
		t.Fatal(err)
	}
	before, err := dev.Stats()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := conn.Exec(ctx, "SELECT count(*) FROM t"); err != nil {
		t.Fatal(err)
	}
	seconds := time.Since(start).Seconds()
	after, err := dev.Stats()
	if err != nil {
		t.Fatal(err)
	}
	d := after.Sub(before)
	if d.BytesRead() < 20<<20 {
		t.Fatalf("the scan read %d bytes from %s: not cold", d.BytesRead(), dev.Path())
	}
	return coldScan{seconds: seconds, bytes: d.BytesRead(), reads: d.Reads, device: dev,
		bytesPerSec: float64(d.BytesRead()) / seconds, requestPerSec: float64(d.Reads) / seconds}
}
