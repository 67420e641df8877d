package doctor

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// cpuInfo is what /proc/cpuinfo, cpufreq, DMI and the clock source say.
type cpuInfo struct {
	model       string
	count       int
	sockets     int
	mhz         float64 // "cpu MHz" of the first CPU: the current clock
	hypervisor  bool    // the "hypervisor" CPU flag
	maxKHz      int64   // cpufreq cpuinfo_max_freq, highest over CPUs; 0 unknown
	governors   map[string][]string
	driver      string
	dmiVendor   string
	dmiProduct  string
	hvType      string // /sys/hypervisor/type (Xen)
	clock       string
	clocksAvail []string
	idle        CPUIdle
}

func readCPU(src Source) cpuInfo {
	c := cpuInfo{governors: map[string][]string{}}
	if b, err := src.ReadFile("proc/cpuinfo"); err == nil {
		sockets := map[string]bool{}
		for line := range strings.Lines(string(b)) {
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			switch k {
			case "processor":
				c.count++
			case "model name", "Model", "cpu model":
				if c.model == "" {
					c.model = v
				}
			case "physical id":
				sockets[v] = true
			case "cpu MHz":
				if c.mhz == 0 {
					c.mhz, _ = strconv.ParseFloat(v, 64)
				}
			case "flags":
				if !c.hypervisor {
					c.hypervisor = slices.Contains(strings.Fields(v), "hypervisor")
				}
			}
		}
		c.sockets = len(sockets)
	}
	cpus, _ := src.ReadDir("sys/devices/system/cpu")
	for _, name := range cpus {
		if n, ok := strings.CutPrefix(name, "cpu"); !ok || n == "" || strings.Trim(n, "0123456789") != "" {
			continue
		}
		dir := "sys/devices/system/cpu/" + name + "/cpufreq/"
		if g, ok := readString(src, dir+"scaling_governor"); ok {
			c.governors[g] = append(c.governors[g], name)
		}
		if f, ok := readInt(src, dir+"cpuinfo_max_freq"); ok && f > c.maxKHz {
			c.maxKHz = f
		}
		if d, ok := readString(src, dir+"scaling_driver"); ok {
			c.driver = d
		}
	}
	c.dmiVendor, _ = readString(src, "sys/class/dmi/id/sys_vendor")
	c.dmiProduct, _ = readString(src, "sys/class/dmi/id/product_name")
	c.hvType, _ = readString(src, "sys/hypervisor/type")
	c.clock, _ = readString(src, "sys/devices/system/clocksource/clocksource0/current_clocksource")
	avail, _ := readString(src, "sys/devices/system/clocksource/clocksource0/available_clocksource")
	c.clocksAvail = strings.Fields(avail)
	c.idle = ReadCPUIdle(src)
	return c
}

// virtualProducts are DMI vendor or product words of virtual machines.
var virtualProducts = []string{"kvm", "qemu", "vmware", "virtualbox", "virtual machine", "xen", "bochs", "parallels",
	"google compute engine", "openstack", "bhyve", "cloud hypervisor", "firecracker"}

func (c cpuInfo) virtualHints() []string {
	var hints []string
	if c.hypervisor {
		hints = append(hints, "the CPU flag 'hypervisor'")
	}
	if c.hvType != "" {
		hints = append(hints, "/sys/hypervisor/type "+c.hvType)
	}
	dmi := strings.ToLower(c.dmiVendor + " " + c.dmiProduct)
	for _, w := range virtualProducts {
		if strings.Contains(dmi, w) {
			hints = append(hints, "DMI '"+strings.TrimSpace(c.dmiVendor+" "+c.dmiProduct)+"'")
			break
		}
	}
	return hints
}

func checkCPU(h *host) []Result {
	c := h.cpu
	var out []Result

	model := c.model
	if model == "" {
		model = "model unknown"
	}
	obs := fmt.Sprintf("%s, %d CPUs", model, c.count)
	if c.sockets > 1 {
		obs += fmt.Sprintf(" in %d sockets", c.sockets)
	}
	switch {
	case c.maxKHz > 0:
		obs += fmt.Sprintf(", max %.2f GHz (cpufreq)", float64(c.maxKHz)/1e6)
	case c.mhz > 0:
		obs += fmt.Sprintf(", %.0f MHz now (no cpufreq: maximum not reported)", c.mhz)
	}
	out = append(out, result("cpu.model", "", Info, obs, "").
		with("model", c.model, "cpus", c.count, "sockets", c.sockets, "max_khz", c.maxKHz, "current_mhz", c.mhz))

	gov := result("cpu.governor", "", Pass, "", "performance")
	switch {
	case len(c.governors) == 0:
		gov.Status = Skip
		gov.Observed = "no cpufreq interface: the firmware or the hypervisor sets the frequency"
	default:
		var parts []string
		for _, g := range slices.Sorted(maps.Keys(c.governors)) {
			parts = append(parts, fmt.Sprintf("%s on %d CPUs", g, len(c.governors[g])))
		}
		gov.Observed = strings.Join(parts, ", ")
		if c.driver != "" {
			gov.Observed += " (driver " + c.driver + ")"
		}
		if len(c.governors) > 1 || c.governors["performance"] == nil {
			gov.Status = Warn
			gov = gov.withFix("Set the performance governor on every CPU: cpupower frequency-set -g performance (or write " +
				"'performance' to /sys/devices/system/cpu/cpu*/cpufreq/scaling_governor), and keep it across reboots " +
				"(tuned-adm profile latency-performance, or the distribution's cpufrequtils setting).")
		}
	}
	out = append(out, gov.with("governors", c.governors))

	hints := c.virtualHints()
	virt := result("cpu.virtual", "", Pass, "physical: no hypervisor flag, no virtual DMI vendor", "").with("virtual", len(hints) > 0)
	if len(hints) > 0 {
		virt.Status = Info
		virt.Observed = "virtual machine: " + strings.Join(hints, ", ")
		virt = virt.withFix("Expect 5-30 % more time per row than on a physical host (seed 004); for measurements that must compare " +
			"with physical figures, use a dedicated host or pinned vCPUs and say so in the report.")
	}
	out = append(out, virt)

	clk := result("clock.source", "", Pass, c.clock, "tsc (or the hypervisor's paravirtual clock)").with("clocksource", c.clock, "available", c.clocksAvail)
	switch c.clock {
	case "":
		clk.Status, clk.Observed = Skip, "clock source not readable"
	case "tsc", "kvm-clock", "arch_sys_counter", "hyperv_clocksource_tsc_page", "xen", "timebase", "riscv_clocksource", "vmware-tsc":
	case "hpet", "acpi_pm", "jiffies", "refined-jiffies", "pit":
		clk.Status = Warn
		clk.Observed = c.clock + " (available: " + strings.Join(c.clocksAvail, " ") + ")"
		if slices.Contains(c.clocksAvail, "tsc") {
			clk = clk.withFix("Switch to tsc: echo tsc > /sys/devices/system/clocksource/clocksource0/current_clocksource, " +
				"and clocksource=tsc on the kernel command line to keep it.")
		} else {
			clk = clk.withFix("The kernel found no stable tsc: check the BIOS (C-states, TSC sync) or the hypervisor's " +
				"invariant-TSC setting; until then per-row timings carry the clock's cost.")
		}
	default:
		clk.Status = Info
	}
	out = append(out, clk, checkIdle(c))
	return out
}

// checkIdle says how an idle CPU waits for its next wake-up. A guest whose
// haltpoll driver never polls halts each idle vCPU at once, and every
// wake-up is then a VM exit through the hypervisor: a round trip wakes an
// idle CPU at each hop (client, server, proxy).
func checkIdle(c cpuInfo) Result {
	idle := c.idle
	r := result("cpu.idle", "", Info, idle.String(), "an idle vCPU polls before it halts (haltpoll's guest_halt_poll_ns above 0)").
		with("driver", idle.Driver, "governor", idle.Governor, "guest_halt_poll_ns", idle.HaltPollNs)
	switch {
	case idle.Driver == "":
		r.Status = Skip
	case idle.HaltsAtOnce():
		r.Status = Warn
		r.Observed = "haltpoll with guest_halt_poll_ns 0: an idle vCPU halts at once, and each wake-up is a VM exit through the hypervisor"
		r = r.withFix("Let the guest poll before it halts: echo 200000 > /sys/module/haltpoll/parameters/guest_halt_poll_ns " +
			"(haltpoll.guest_halt_poll_ns=200000 on the kernel command line to keep it); an idle vCPU then spins up to 200 µs " +
			"of the host's CPU time before it halts. Else expect every round trip between processes to carry the wake-ups, " +
			"and say so beside figures compared with a physical host.")
	case idle.Driver == "haltpoll" && idle.HaltPollNs > 0:
		r.Status = Pass
	}
	return r
}

// CPUIdle is how a machine's idle CPUs wait: the facts doctor's cpu.idle
// check reads, for a run's environment to record beside its figures.
type CPUIdle struct {
	Driver   string `json:"driver,omitempty"`   // cpuidle's driver; "" without cpuidle
	Governor string `json:"governor,omitempty"` // cpuidle's governor
	// HaltPollNs is haltpoll's guest_halt_poll_ns; -1 when not read.
	HaltPollNs int64 `json:"guest_halt_poll_ns"`
}

// ReadCPUIdle reads src's cpuidle driver, governor and haltpoll parameter.
func ReadCPUIdle(src Source) CPUIdle {
	c := CPUIdle{HaltPollNs: -1}
	c.Driver, _ = readString(src, "sys/devices/system/cpu/cpuidle/current_driver")
	if g, ok := readString(src, "sys/devices/system/cpu/cpuidle/current_governor_ro"); ok {
		c.Governor = g
	} else {
		c.Governor, _ = readString(src, "sys/devices/system/cpu/cpuidle/current_governor")
	}
	if n, ok := readInt(src, "sys/module/haltpoll/parameters/guest_halt_poll_ns"); ok {
		c.HaltPollNs = n
	}
	return c
}

// HaltsAtOnce reports whether an idle vCPU halts without polling first
// (haltpoll with guest_halt_poll_ns 0), so that each wake-up is a VM exit.
func (c CPUIdle) HaltsAtOnce() bool { return c.Driver == "haltpoll" && c.HaltPollNs == 0 }

// String says it in words.
func (c CPUIdle) String() string {
	switch {
	case c.Driver == "":
		return "no cpuidle interface"
	case c.HaltsAtOnce():
		return "haltpoll with guest_halt_poll_ns 0: an idle vCPU halts at once, each wake-up a VM exit"
	case c.Driver == "haltpoll" && c.HaltPollNs > 0:
		return fmt.Sprintf("haltpoll: an idle vCPU polls up to %d µs before it halts", c.HaltPollNs/1000)
	case c.Governor != "":
		return "cpuidle driver " + c.Driver + ", governor " + c.Governor
	}
	return "cpuidle driver " + c.Driver
}
