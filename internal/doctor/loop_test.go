package doctor

import (
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// misalignedLoop attaches a 16 MiB image whose MBR holds partition 1 at
// sector 63 (32,256 bytes, as Windows Server 2003 made them) and partition 2
// at sector 2048 (1 MiB), and returns the loop device's name ("loop3"). It
// skips, with the exact reason, where the kernel or the sandbox refuses
// loop devices.
func misalignedLoop(t *testing.T) string {
	t.Helper()
	losetup, err := exec.LookPath("losetup")
	if err != nil {
		t.Skip("skipped: losetup not installed (util-linux)")
	}
	if os.Geteuid() != 0 {
		t.Skip("skipped: loop devices need root")
	}
	img := filepath.Join(t.TempDir(), "disk.img")
	mbr := make([]byte, 512)
	parts := [][2]uint32{{63, 1985}, {2048, 30720}}
	for i, p := range parts {
		e := mbr[446+16*i:]
		e[4] = 0x83 // Linux
		binary.LittleEndian.PutUint32(e[8:], p[0])
		binary.LittleEndian.PutUint32(e[12:], p[1])
	}
	mbr[510], mbr[511] = 0x55, 0xaa
	if err := os.WriteFile(img, mbr, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(img, 16<<20); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(losetup, "--find", "--show", "--partscan", img).CombinedOutput()
	if err != nil {
		t.Skipf("skipped: the kernel or sandbox refuses loop devices: losetup: %v: %s", err, strings.TrimSpace(string(out)))
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() {
		if out, err := exec.Command(losetup, "--detach", dev).CombinedOutput(); err != nil {
			t.Errorf("losetup --detach %s: %v: %s", dev, err, out)
		}
	})
	name := filepath.Base(dev)
	if !waitFor(filepath.Join("/sys/block", name, name+"p1"), 200*time.Millisecond) {
		// Kernels built without the MSDOS partition parser (this one:
		// CONFIG_MSDOS_PARTITION unset) do not read the MBR: add the
		// partitions from user space, as partx --add does.
		for i, p := range parts {
			if err := addPartition(dev, i+1, int64(p[0])*512, int64(p[1])*512); err != nil {
				t.Skipf("skipped: the kernel does not scan the loop device's MBR and refuses BLKPG_ADD_PARTITION: %v", err)
			}
		}
		if !waitFor(filepath.Join("/sys/block", name, name+"p1"), 2*time.Second) {
			t.Skipf("skipped: %s has no partitions in sysfs after BLKPG_ADD_PARTITION", dev)
		}
	}
	return name
}

func waitFor(path string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		if _, err := os.Stat(path); err == nil {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// addPartition adds partition number at start (bytes) of length bytes to
// dev with the BLKPG ioctl.
func addPartition(dev string, number int, start, length int64) error {
	f, err := os.OpenFile(dev, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	p := unix.BlkpgPartition{Start: start, Length: length, Pno: int32(number)}
	arg := unix.BlkpgIoctlArg{Op: unix.BLKPG_ADD_PARTITION, Datalen: int32(unsafe.Sizeof(p)), Data: (*byte)(unsafe.Pointer(&p))}
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), unix.BLKPG, uintptr(unsafe.Pointer(&arg)))
	if errno != 0 {
		return fmt.Errorf("BLKPG_ADD_PARTITION %s partition %d: %w", dev, number, errno)
	}
	return nil
}

// TestLoopDeviceMisalignedPartition checks this host live while a loop
// device with a partition at sector 63 is attached: its row must fail with
// the offset, the 1 MiB partition's row must pass.
func TestLoopDeviceMisalignedPartition(t *testing.T) {
	name := misalignedLoop(t)
	h := checkSource(t, DirSource{Root: "/"}, nil)
	p1 := find(t, h, "disk.alignment", name+"p1")
	if p1.Status != Fail || p1.Values["start_bytes"] != int64(32256) || !strings.Contains(p1.Observed, "start sector 63 = 32256 B: not 4 KiB-aligned") {
		t.Errorf("%sp1: %s %q %v", name, p1.Status, p1.Observed, p1.Values)
	}
	p2 := find(t, h, "disk.alignment", name+"p2")
	if p2.Status != Pass || p2.Values["start_bytes"] != int64(1<<20) {
		t.Errorf("%sp2: %s %q", name, p2.Status, p2.Observed)
	}
	// The collector sees the same device.
	viaScript := checkSource(t, runCollector(t, "/"), nil)
	if r := find(t, viaScript, "disk.alignment", name+"p1"); r.Status != Fail || r.Observed != p1.Observed {
		t.Errorf("collector: %s %q", r.Status, r.Observed)
	}
}
