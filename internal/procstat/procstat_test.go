package procstat

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"
)

// TestTreeFindsAChildAndItsCPU starts a child that burns CPU and reads it
// back through the tree of this process.
func TestTreeFindsAChildAndItsCPU(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "sh", "-c", "i=0; while [ $i -lt 2000000 ]; do i=$((i+1)); done; sleep 30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	self := os.Getpid()
	deadline := time.Now().Add(20 * time.Second)
	for {
		pids, err := Tree(self)
		if err != nil {
			t.Fatal(err)
		}
		if pids[0] != self || !slices.Contains(pids, cmd.Process.Pid) {
			t.Fatalf("Tree(%d) = %v, want this process first and the child %d", self, pids, cmd.Process.Pid)
		}
		u, err := TreeUsage(cmd.Process.Pid)
		if err != nil {
			t.Fatal(err)
		}
		if u.CPU > 0.05 && u.Processes >= 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the busy child's CPU stayed at %.2f s", u.CPU)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestMemoryAndIOOfThisProcess reads this process's own figures: its heap
// grows its private memory; a file written and synced counts as written.
func TestMemoryAndIOOfThisProcess(t *testing.T) {
	before, err := ProcessMemory(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	ballast := make([]byte, 64<<20)
	for i := range ballast {
		ballast[i] = byte(i)
	}
	after, err := ProcessMemory(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if after.RSSAnon-before.RSSAnon < 48<<20 {
		t.Errorf("private memory grew by %d bytes after touching 64 MiB", after.RSSAnon-before.RSSAnon)
	}
	if after.PSS <= 0 {
		t.Errorf("PSS = %d", after.PSS)
	}
	runtime.KeepAlive(ballast)

	_, w0, err := ProcessIO(os.Getpid())
	if err != nil {
		t.Skipf("no /proc/PID/io here: %v", err)
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, w1, _ := ProcessIO(os.Getpid())
	if w1-w0 < 1<<20 && w1 != 0 {
		t.Errorf("wrote and synced 1 MiB; write_bytes grew by %d", w1-w0)
	}
}

func TestHostBusyGrowsAndCPUsAreOnline(t *testing.T) {
	a, err := HostBusy()
	if err != nil {
		t.Fatal(err)
	}
	end := time.Now().Add(200 * time.Millisecond)
	for time.Now().Before(end) {
	}
	b, _ := HostBusy()
	if b <= a {
		t.Errorf("host busy time went from %.2f to %.2f while this test spun", a, b)
	}
	if n := OnlineCPUs(); n < 1 || n > 4096 {
		t.Errorf("OnlineCPUs() = %d", n)
	}
	if c, err := SelfCPU(); err != nil || c <= 0 {
		t.Errorf("SelfCPU() = %v, %v", c, err)
	}
}

func TestReadKeyed(t *testing.T) {
	p := filepath.Join(t.TempDir(), "status")
	os.WriteFile(p, []byte("Name:\tpostgres\nRssAnon:\t    2048 kB\nread_bytes: 4096\nbad line\n"), 0o644)
	m, err := readKeyed(p)
	if err != nil {
		t.Fatal(err)
	}
	if m["RssAnon"] != 2048*1024 || m["read_bytes"] != 4096 {
		t.Errorf("readKeyed = %v", m)
	}
	if _, ok := m["Name"]; ok {
		t.Errorf("a name was read as a number: %v", m)
	}
}
