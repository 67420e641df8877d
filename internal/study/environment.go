package study

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/dbrig/dbrig/internal/blockdev"
	"github.com/dbrig/dbrig/internal/doctor"
	"github.com/dbrig/dbrig/internal/engine"
)

// Environment describes the machine and software a run measured, for the
// report: results from different machines are not comparable without it.
type Environment struct {
	Hostname       string  `json:"hostname"`
	CPUModel       string  `json:"cpu_model"`
	CPUs           int     `json:"cpus"`
	CPUMaxMHz      float64 `json:"cpu_max_mhz,omitempty"`
	Governor       string  `json:"cpu_governor,omitempty"`
	MemoryBytes    int64   `json:"memory_bytes"`
	Kernel         string  `json:"kernel"`
	OS             string  `json:"os"`
	Virtualization string  `json:"virtualization"`
	LoadAverage    string  `json:"load_average"`
	// CPUIdle is how this machine's idle CPUs wait (doctor's cpu.idle): a
	// point at client.idle "spin" is compared with a halting CPU's.
	CPUIdle *doctor.CPUIdle   `json:"cpu_idle,omitempty"`
	Servers map[string]string `json:"servers"` // engine -> version
	// Targets are the user's servers the run measured.
	Targets []TargetEnvironment `json:"targets,omitempty"`
	// Disks are the emulated disks the run's instances used: each profile's
	// rates as this dbrig set them, and how the machine throttles them.
	Disks        []DiskEnvironment `json:"disks,omitempty"`
	DbrigVersion string            `json:"dbrig_version"`
	DbrigCommit  string            `json:"dbrig_commit,omitempty"`
	GoVersion    string            `json:"go_version"`
	Captured     time.Time         `json:"captured"`
}

// DiskEnvironment is an emulated disk profile a run used.
type DiskEnvironment struct {
	blockdev.Profile
	// Throttle is how this machine throttles it ("cgroup v1 blkio"), or
	// why it cannot (the points on it were skipped).
	Throttle string `json:"throttle"`
}

// diskEnvironment lists the disk profiles a plan's instances use.
func diskEnvironment(p *Plan) []DiskEnvironment {
	throttle, err := engine.CgroupSupport("blkio")
	if err != nil {
		throttle = err.Error()
	}
	var out []DiskEnvironment
	seen := map[string]bool{}
	for _, c := range p.Combos {
		for _, in := range c.Instances {
			for _, name := range []string{in.DataDisk, in.WALDisk} {
				if pr, err := blockdev.LookupProfile(name); err == nil && !seen[name] {
					seen[name] = true
					out = append(out, DiskEnvironment{Profile: pr, Throttle: throttle})
				}
			}
		}
	}
	return out
}

// TargetEnvironment is a user's server that stood in for an instance: its
// version, the settings it runs with that differ from the engine's
// defaults (never a password), and the study's server settings it runs
// with other values of its own.
type TargetEnvironment struct {
	Name     string            `json:"name"`
	Engine   string            `json:"engine"`
	Version  string            `json:"version"`
	Server   string            `json:"server"` // the login without its password
	Settings map[string]string `json:"settings,omitempty"`
	// Differs are the study's server settings the target runs with
	// another value, which every point ran with.
	Differs []SettingDiff `json:"settings_differ_from_study,omitempty"`
}

// CaptureEnvironment reads what it can of the host; missing pieces stay
// empty rather than fail a run.
func CaptureEnvironment(ctx context.Context, version string) Environment {
	e := Environment{
		CPUs:         runtime.NumCPU(),
		GoVersion:    runtime.Version(),
		DbrigVersion: version,
		Servers:      map[string]string{},
		Captured:     time.Now().UTC(),
	}
	e.Hostname, _ = os.Hostname()
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				e.DbrigCommit = s.Value
			}
		}
	}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), ":")
			if ok && strings.TrimSpace(k) == "model name" && e.CPUModel == "" {
				e.CPUModel = strings.TrimSpace(v)
			}
			if ok && strings.TrimSpace(k) == "flags" && strings.Contains(v, " hypervisor") && e.Virtualization == "" {
				e.Virtualization = "virtual machine (cpu flag: hypervisor)"
			}
		}
		f.Close()
	}
	if b, err := os.ReadFile("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq"); err == nil {
		if khz, err := strconv.ParseFloat(strings.TrimSpace(string(b)), 64); err == nil {
			e.CPUMaxMHz = khz / 1000
		}
	}
	if b, err := os.ReadFile("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor"); err == nil {
		e.Governor = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				f := strings.Fields(rest)
				if len(f) > 0 {
					kb, _ := strconv.ParseInt(f[0], 10, 64)
					e.MemoryBytes = kb * 1024
				}
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		e.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/etc/os-release"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "PRETTY_NAME="); ok {
				e.OS = strings.Trim(v, `"`)
			}
		}
	}
	idle := doctor.ReadCPUIdle(doctor.DirSource{Root: "/"})
	e.CPUIdle = &idle
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		f := strings.Fields(string(b))
		if len(f) >= 3 {
			e.LoadAverage = strings.Join(f[:3], " ")
		}
	}
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(cctx, "systemd-detect-virt").Output(); err == nil {
		if v := string(bytes.TrimSpace(out)); v != "" && v != "none" {
			e.Virtualization = v
		}
	}
	if e.Virtualization == "" {
		e.Virtualization = "none detected"
	}
	return e
}
