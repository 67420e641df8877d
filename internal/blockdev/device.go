package blockdev

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Device is a whole block device, by its kernel name ("loop3", "vda").
type Device struct{ Name string }

// Path is the device node ("/dev/loop3").
func (d Device) Path() string { return "/dev/" + d.Name }

func (d Device) sysfs(parts ...string) string {
	return filepath.Join(append([]string{"/sys/block", d.Name}, parts...)...)
}

// DeviceOf finds the block device whose file system holds path (for a
// partition, the partition's own device).
func DeviceOf(path string) (Device, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return Device{}, fmt.Errorf("stat %s: %w", path, err)
	}
	link := fmt.Sprintf("/sys/dev/block/%d:%d", unix.Major(st.Dev), unix.Minor(st.Dev))
	target, err := os.Readlink(link)
	if err != nil {
		return Device{}, fmt.Errorf("%s is on device %d:%d, which is not a block device (%v)", path, unix.Major(st.Dev), unix.Minor(st.Dev), err)
	}
	return Device{Name: filepath.Base(target)}, nil
}

// MajorMinor is the device's number as the kernel's cgroup files name it
// ("7:3").
func (d Device) MajorMinor() (string, error) {
	b, err := os.ReadFile(d.sysfs("dev"))
	if err != nil {
		return "", fmt.Errorf("the device number of %s: %w", d.Path(), err)
	}
	return strings.TrimSpace(string(b)), nil
}

// ReadAheadKB is the device's read-ahead: how far past a read the kernel
// reads a file on it sequentially, in KiB (/sys/block/NAME/queue/read_ahead_kb).
func (d Device) ReadAheadKB() (int, error) {
	b, err := os.ReadFile(d.sysfs("queue", "read_ahead_kb"))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// SetReadAheadKB sets the device's read-ahead and reads it back.
func (d Device) SetReadAheadKB(kb int) error {
	if kb < 0 {
		return fmt.Errorf("read-ahead of %d KiB", kb)
	}
	if err := os.WriteFile(d.sysfs("queue", "read_ahead_kb"), []byte(strconv.Itoa(kb)), 0o644); err != nil {
		return fmt.Errorf("set the read-ahead of %s: %w", d.Path(), err)
	}
	got, err := d.ReadAheadKB()
	if err != nil {
		return err
	}
	if got != kb {
		return fmt.Errorf("set the read-ahead of %s to %d KiB: it reads back %d", d.Path(), kb, got)
	}
	return nil
}

// LoopBacking is a loop device's backing file; ok is false for any other
// device.
func (d Device) LoopBacking() (string, bool) {
	b, err := os.ReadFile(d.sysfs("loop", "backing_file"))
	if err != nil {
		return "", false
	}
	return strings.TrimSpace(string(b)), true
}

// FlushBuffers writes out and drops the device's own buffer cache (the
// file system's metadata blocks): BLKFLSBUF, as `blockdev --flushbufs`.
func (d Device) FlushBuffers() error {
	f, err := os.Open(d.Path())
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.IoctlSetInt(int(f.Fd()), unix.BLKFLSBUF, 0); err != nil {
		return fmt.Errorf("flush the buffers of %s: %w", d.Path(), err)
	}
	return nil
}

// Stats are a device's I/O counters (Documentation/admin-guide/iostats.rst).
type Stats struct {
	Reads       int64 // reads completed
	ReadSectors int64 // 512-byte sectors read
	ReadMS      int64 // milliseconds spent reading
	Writes      int64
	WriteSecs   int64 // sectors written
	IOMS        int64 // milliseconds with I/O in flight
	WeightedMS  int64 // milliseconds of I/O in flight, weighted by how many
}

// Stats reads the device's counters from /proc/diskstats.
func (d Device) Stats() (Stats, error) {
	f, err := os.Open("/proc/diskstats")
	if err != nil {
		return Stats{}, err
	}
	defer f.Close()
	return ParseDiskstats(f, d.Name)
}

// ParseDiskstats reads one device's line of /proc/diskstats.
func ParseDiskstats(r io.Reader, name string) (Stats, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 14 || f[2] != name {
			continue
		}
		var v [11]int64
		for i := range v {
			n, err := strconv.ParseInt(f[3+i], 10, 64)
			if err != nil {
				return Stats{}, fmt.Errorf("/proc/diskstats, %s: field %d = %q", name, 4+i, f[3+i])
			}
			v[i] = n
		}
		return Stats{Reads: v[0], ReadSectors: v[2], ReadMS: v[3], Writes: v[4], WriteSecs: v[6], IOMS: v[9], WeightedMS: v[10]}, nil
	}
	if err := sc.Err(); err != nil {
		return Stats{}, err
	}
	return Stats{}, fmt.Errorf("/proc/diskstats has no device %q", name)
}

// Sub is the counters' change from o to s.
func (s Stats) Sub(o Stats) Stats {
	return Stats{Reads: s.Reads - o.Reads, ReadSectors: s.ReadSectors - o.ReadSectors, ReadMS: s.ReadMS - o.ReadMS,
		Writes: s.Writes - o.Writes, WriteSecs: s.WriteSecs - o.WriteSecs, IOMS: s.IOMS - o.IOMS, WeightedMS: s.WeightedMS - o.WeightedMS}
}

// BytesRead are the bytes the reads moved.
func (s Stats) BytesRead() int64 { return s.ReadSectors * 512 }

// BytesPerRead is the average size of a read (0 without reads).
func (s Stats) BytesPerRead() float64 {
	if s.Reads == 0 {
		return 0
	}
	return float64(s.BytesRead()) / float64(s.Reads)
}

// QueueDepth is the average number of requests in flight over seconds of
// wall time.
func (s Stats) QueueDepth(seconds float64) float64 {
	if seconds <= 0 {
		return 0
	}
	return float64(s.WeightedMS) / 1000 / seconds
}

// MountPoint is the directory where the file system holding path is
// mounted: the highest directory above path on the same device.
func MountPoint(path string) (string, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return "", fmt.Errorf("stat %s: %w", path, err)
	}
	dir := filepath.Clean(path)
	for dir != "/" {
		parent := filepath.Dir(dir)
		var pst unix.Stat_t
		if err := unix.Stat(parent, &pst); err != nil || pst.Dev != st.Dev {
			break
		}
		dir = parent
	}
	return dir, nil
}
