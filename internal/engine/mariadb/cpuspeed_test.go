package mariadb_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dbrig/dbrig/internal/engine"
	"github.com/dbrig/dbrig/internal/engine/mariadb/mariatest"
)

// TestCPUSpeedAndMemoryShareOneCgroup starts mariadbd with a memory cap and
// a quarter of a core: both limits are one cgroup of dbrig's own, whose CPU
// quota is 25 ms per 100 ms period, and mariadbd (every thread of it, as a
// connection is a thread) runs in it from its first instruction.
func TestCPUSpeedAndMemoryShareOneCgroup(t *testing.T) {
	t.Parallel()
	for _, c := range []string{"cpu", "memory"} {
		if _, err := engine.CgroupSupport(c); err != nil {
			t.Skip(err)
		}
	}
	inst := mariatest.StartConfig(t, engine.InstanceConfig{Name: "quarter-core", Engine: "mariadb",
		CPUSpeed: 0.25, Memory: 512 << 20}, mariatest.BaseDir(t))
	cg := inst.Cgroup()
	if cg == nil {
		t.Fatal("no cgroup for cpu_speed 0.25 and memory 512MB")
	}
	name := filepath.Base(cg.Path())
	own, err := os.ReadFile("/proc/" + itoa(inst.PID()) + "/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	var cpuDir, unified string
	for _, line := range strings.Split(strings.TrimSpace(string(own)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) < 3 {
			continue
		}
		switch {
		case parts[1] == "": // cgroup v2's, which holds every limit on a v2-only machine
			unified = filepath.Join("/sys/fs/cgroup", parts[2])
		case strings.Contains(","+parts[1]+",", ",cpu,"):
			cpuDir = filepath.Join("/sys/fs/cgroup", parts[1], parts[2])
		case parts[1] == "memory" && filepath.Base(parts[2]) != name:
			t.Errorf("mariadbd's memory cgroup is %s, want dbrig's %s", parts[2], name)
		}
	}
	if cpuDir == "" {
		cpuDir = unified
	}
	if filepath.Base(cpuDir) != name {
		t.Fatalf("mariadbd's CPU cgroup is %q, want dbrig's %s (/proc/%d/cgroup: %q)", cpuDir, name, inst.PID(), own)
	}
	quota, err := os.ReadFile(filepath.Join(cpuDir, "cpu.cfs_quota_us"))
	if os.IsNotExist(err) {
		quota, err = os.ReadFile(filepath.Join(cpuDir, "cpu.max"))
	}
	if err != nil {
		t.Fatal(err)
	}
	if q := strings.Fields(string(quota)); len(q) == 0 || q[0] != "25000" {
		t.Errorf("CPU quota of %s = %q, want 25000 us per period", cpuDir, quota)
	}
}
