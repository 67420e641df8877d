package blockdev

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A line of this machine's /proc/diskstats, and a partition's.
const diskstats = `   7       3 loop3 27267 1 821426 2709 208 84 459696 1869 0 1604 4590 2 0 1048584 0 9 11
 254       0 vda 54808 7641 3840378 22601 91106 40589 7267056 26576 0 9412 51588 21443 72 8177072 1468 28295 940
 254       1 vda1 100 0 800 10 0 0 0 0 0 10 10
`

func TestParseDiskstats(t *testing.T) {
	s, err := ParseDiskstats(strings.NewReader(diskstats), "loop3")
	if err != nil {
		t.Fatal(err)
	}
	want := Stats{Reads: 27267, ReadSectors: 821426, ReadMS: 2709, Writes: 208, WriteSecs: 459696, IOMS: 1604, WeightedMS: 4590}
	if s != want {
		t.Errorf("loop3 = %+v, want %+v", s, want)
	}
	if s, err := ParseDiskstats(strings.NewReader(diskstats), "vda"); err != nil || s.Reads != 54808 || s.WeightedMS != 51588 {
		t.Errorf("vda = %+v, %v", s, err)
	}
	if _, err := ParseDiskstats(strings.NewReader(diskstats), "vdb"); err == nil || !strings.Contains(err.Error(), `no device "vdb"`) {
		t.Errorf("a missing device: %v", err)
	}
	if _, err := ParseDiskstats(strings.NewReader(strings.Replace(diskstats, "27267", "x", 1)), "loop3"); err == nil {
		t.Error("a bad field parsed")
	}
}

func TestStatsArithmetic(t *testing.T) {
	before := Stats{Reads: 10, ReadSectors: 160, WeightedMS: 1000}
	after := Stats{Reads: 110, ReadSectors: 160 + 100*16, WeightedMS: 3000}
	d := after.Sub(before)
	if d.Reads != 100 || d.BytesRead() != 100*8192 || d.BytesPerRead() != 8192 {
		t.Errorf("%+v: %d bytes, %v per read", d, d.BytesRead(), d.BytesPerRead())
	}
	if q := d.QueueDepth(4); q != 0.5 {
		t.Errorf("queue depth %v, want 0.5", q)
	}
	if (Stats{}).BytesPerRead() != 0 || (Stats{}).QueueDepth(0) != 0 {
		t.Error("no reads: want zeros")
	}
	if r := (Rate{Bytes: 100, Seconds: 4}); r.BytesPerSecond() != 25 || (Rate{}).BytesPerSecond() != 0 {
		t.Errorf("rate %v", r.BytesPerSecond())
	}
}

func TestPidOf(t *testing.T) {
	for name, want := range map[string]int{"dbrig-loop-123-456": 123, "dbrig-loop-x-1": 0, "dbrig-loop-123": 0, "other-123-4": 0} {
		if got, ok := pidOf(name); got != want || ok != (want > 0) {
			t.Errorf("pidOf(%q) = %d, %v", name, got, ok)
		}
	}
}

// requireLoops skips, with the reason, where this process may not make
// loop devices (not root, a sandbox without them).
func requireLoops(t *testing.T) {
	t.Helper()
	if err := Permitted(); err != nil {
		t.Skipf("skipped: %v", err)
	}
}

// TestLoopReadAheadAndCache makes a loop device and reads a file on it
// cold: its read-ahead sets the size of the device's reads (one 8 KiB read
// call per device read with the least read-ahead, several times that with
// more), the file's pages leave the cache when evicted and come back when
// read, and Close leaves no device, mount or file.
func TestLoopReadAheadAndCache(t *testing.T) {
	requireLoops(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	base := t.TempDir()
	l, err := NewLoop(ctx, base, LoopOptions{Size: 256 << 20, UID: 1, GID: 1})
	if err != nil {
		t.Skipf("skipped: the kernel or sandbox refuses loop devices: %v", err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			l.Close(context.Background())
		}
	})
	if !strings.HasPrefix(l.Device.Name, "loop") || !isMounted(l.Mount) {
		t.Fatalf("loop %+v not mounted", l)
	}
	if st, err := os.Stat(l.Mount); err != nil || st.Sys().(*syscall.Stat_t).Uid != 1 {
		t.Errorf("the mount's root is not the owner's: %v", err)
	}
	file := filepath.Join(l.Mount, "data")
	chunk := make([]byte, 1<<20)
	for i := range chunk {
		chunk[i] = byte(i * 7)
	}
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	for range 64 {
		if _, err := f.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	dev, err := DeviceOf(file)
	if err != nil || dev != l.Device {
		t.Fatalf("DeviceOf = %v, %v; want %v", dev, err, l.Device)
	}
	if !MadeByThisProcess(dev) {
		t.Error("the loop is not recognised as this process's")
	}
	if root, err := DeviceOf("/"); err == nil && MadeByThisProcess(root) {
		t.Errorf("the root file system's device %s passed as this process's loop", root.Name)
	}

	coldRead := func(readAheadKB int) (Stats, Rate) {
		t.Helper()
		if err := dev.SetReadAheadKB(readAheadKB); err != nil {
			t.Fatal(err)
		}
		if err := Evict(file); err != nil {
			t.Fatal(err)
		}
		if err := dev.FlushBuffers(); err != nil {
			t.Fatal(err)
		}
		if res, total, err := Resident(file); err != nil || res != 0 || total != 64<<20/int64(os.Getpagesize()) {
			t.Fatalf("after Evict %d of %d pages resident, %v", res, total, err)
		}
		before, err := dev.Stats()
		if err != nil {
			t.Fatal(err)
		}
		r, err := ReadRate(ctx, file, 8192, false, 32<<20, time.Minute)
		if err != nil || r.Bytes != 32<<20 || r.Seconds <= 0 {
			t.Fatalf("read %+v, %v", r, err)
		}
		after, _ := dev.Stats()
		if res, _, _ := Resident(file); res == 0 {
			t.Error("a read left no page of the file in the cache")
		}
		return after.Sub(before), r
	}
	small, _ := coldRead(4)
	if got := small.BytesPerRead(); got < 7000 || got > 9500 {
		t.Errorf("with 4 KiB of read-ahead, %v bytes a device read, want one 8 KiB read call's", got)
	}
	if small.BytesRead() < 32<<20 {
		t.Errorf("the device read %d bytes for a 32 MiB file", small.BytesRead())
	}
	large, _ := coldRead(512)
	if got := large.BytesPerRead(); got < 4*small.BytesPerRead() {
		t.Errorf("with 512 KiB of read-ahead, %v bytes a device read; with 4 KiB, %v", got, small.BytesPerRead())
	}

	if _, err := ReadRate(ctx, file, 5000, true, 1<<20, time.Second); err == nil {
		t.Error("a direct read of 5000-byte chunks was accepted")
	}
	if r, err := ReadRate(ctx, file, 64<<10, true, 8<<20, time.Minute); err != nil || r.Bytes != 8<<20 {
		t.Errorf("a direct read: %+v, %v", r, err)
	}

	if err := l.Close(ctx); err != nil {
		t.Fatal(err)
	}
	closed = true
	if err := l.Close(ctx); err != nil {
		t.Errorf("a second Close: %v", err)
	}
	assertGone(t, l)
}

func assertGone(t *testing.T, l *Loop) {
	t.Helper()
	if _, err := os.Stat(l.Dir); !os.IsNotExist(err) {
		t.Errorf("%s is left: %v", l.Dir, err)
	}
	if isMounted(l.Mount) {
		t.Errorf("%s is still mounted", l.Mount)
	}
	if out, _ := exec.Command("losetup", "--associated", l.Backing).Output(); len(strings.TrimSpace(string(out))) > 0 {
		t.Errorf("a loop device still reads %s: %s", l.Backing, out)
	}
}

// TestRemoveStale removes what a killed dbrig left (a loop of a pid no
// longer running) and nothing of a live one's, nor a disk it kept
// (--keep), whose image holds the data.
func TestRemoveStale(t *testing.T) {
	requireLoops(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	base := t.TempDir()
	done := exec.Command("true")
	if err := done.Run(); err != nil {
		t.Fatal(err)
	}
	dead, err := newLoop(ctx, base, LoopOptions{Size: 64 << 20, UID: -1, GID: -1}, done.Process.Pid)
	if err != nil {
		t.Skipf("skipped: the kernel or sandbox refuses loop devices: %v", err)
	}
	t.Cleanup(func() { dead.Close(context.Background()) })
	live, err := NewLoop(ctx, base, LoopOptions{Size: 64 << 20, UID: -1, GID: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { live.Close(context.Background()) })
	kept, err := newLoop(ctx, base, LoopOptions{Size: 64 << 20, UID: -1, GID: -1}, done.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	kept.Keep()
	if err := kept.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if err := RemoveStale(ctx, base); err != nil {
		t.Fatal(err)
	}
	assertGone(t, dead)
	if !isMounted(live.Mount) {
		t.Errorf("the live run's loop was removed")
	}
	if _, err := os.Stat(kept.Backing); err != nil || isMounted(kept.Mount) {
		t.Errorf("the kept disk's image: %v, mounted %v; want it kept, unmounted", err, isMounted(kept.Mount))
	}
}

func TestDiskProfiles(t *testing.T) {
	t.Parallel()
	san, err := LookupProfile("san-2009")
	if err != nil {
		t.Fatal(err)
	}
	if san.ReadBPS != 200e6 || san.ReadIOPS != 5000 {
		t.Errorf("san-2009 = %+v, want seed 002's 200 MB/s and 5,000 IOPS", san)
	}
	if got := san.String(); got != "san-2009: read 200 MB/s, 5000 IOPS; write 200 MB/s, 5000 IOPS" {
		t.Errorf("san-2009 reads %q", got)
	}
	if nvme, err := LookupProfile("nvme"); err != nil || !nvme.Unlimited() || nvme.String() != "nvme: unthrottled" {
		t.Errorf("nvme = %+v, %v", nvme, err)
	}
	if _, err := LookupProfile("floppy"); err == nil || !strings.Contains(err.Error(), "san-2009, sata-hdd, nvme") {
		t.Errorf("an unknown profile: %v", err)
	}
}
