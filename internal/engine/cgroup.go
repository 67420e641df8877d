package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Limits are what a cgroup of dbrig's own caps for one server and every
// process it forks: memory, CPU time and a disk's bandwidth and requests.
// A zero field caps nothing.
type Limits struct {
	// Memory caps the bytes of memory (v2 memory.max, v1
	// memory.limit_in_bytes).
	Memory int64
	// CPU caps the CPU time, in cores' worth of one period (0.25 = a
	// quarter of one core), by the CFS quota (v2 cpu.max, v1
	// cpu.cfs_quota_us over cpu.cfs_period_us).
	CPU float64
	// Disks throttle reads and writes of block devices (v2 io.max, v1
	// blkio.throttle.*_device).
	Disks []DiskLimit
	// Idle makes the cgroup's processes run only on CPU time no other
	// cgroup wants (cpu.idle, v1 and v2): a SCHED_IDLE process alone is
	// idle only among the processes of its own cgroup or session
	// (autogroup), and competes with every other at full weight.
	Idle bool
}

// DiskLimit throttles one block device; a zero rate is unthrottled.
type DiskLimit struct {
	// Device is the device's "major:minor".
	Device              string
	ReadBPS, WriteBPS   int64
	ReadIOPS, WriteIOPS int64
}

// cfsPeriod is the CFS period dbrig sets: the kernel's default, short
// enough that a throttled server's stalls stay under a query's time.
const cfsPeriod = 100 * time.Millisecond

// MinCPUSpeed is the least CPU share a quota may give: the kernel refuses a
// quota under 1 ms of its 100 ms period.
const MinCPUSpeed = 0.01

// controllers names the v1 controllers (and v2 interface files) a set of
// limits needs, in the order they are made.
func (l Limits) controllers() []string {
	var cs []string
	if l.Memory > 0 {
		cs = append(cs, "memory")
	}
	if l.CPU > 0 || l.Idle {
		cs = append(cs, "cpu")
	}
	if len(l.Disks) > 0 {
		cs = append(cs, "blkio")
	}
	return cs
}

// Any reports whether the limits set anything, a bad value included (which
// NewCgroup refuses rather than ignores).
func (l Limits) Any() bool { return l.Memory != 0 || l.CPU != 0 || len(l.Disks) > 0 || l.Idle }

func (l Limits) check() error {
	if l.Memory < 0 {
		return fmt.Errorf("memory cap %d: want a positive number of bytes", l.Memory)
	}
	if l.CPU < 0 || (l.CPU > 0 && l.CPU < MinCPUSpeed) {
		return fmt.Errorf("CPU cap %g: want at least %g of a core", l.CPU, MinCPUSpeed)
	}
	for _, d := range l.Disks {
		if _, _, ok := strings.Cut(d.Device, ":"); !ok {
			return fmt.Errorf("disk limit: device %q is not major:minor", d.Device)
		}
		if d.ReadBPS < 0 || d.WriteBPS < 0 || d.ReadIOPS < 0 || d.WriteIOPS < 0 {
			return fmt.Errorf("disk limit of %s: rates must not be negative", d.Device)
		}
	}
	if len(l.controllers()) == 0 {
		return errors.New("a cgroup without a limit caps nothing")
	}
	return nil
}

// Cgroup is a cgroup of dbrig's own that caps one server: on cgroup v2 one
// directory under dbrig's own cgroup where the machine delegates the
// controllers, else one directory per cgroup v1 controller.
type Cgroup struct {
	dirs []cgroupDir // v2: one; v1: one per controller, memory first
	v1   bool
	fd   int // v2: an open directory for clone3's CLONE_INTO_CGROUP
}

type cgroupDir struct {
	controller string // v1's controller; "" on v2
	path       string
	parent     string // where a v1 thread returns to
}

// ErrNoMemoryCgroup says the machine lets dbrig cap no process's memory.
var ErrNoMemoryCgroup = errors.New("no writable memory cgroup on this machine (neither cgroup v2 with the memory controller delegated nor cgroup v1's memory hierarchy): memory caps cannot be applied")

// NoCgroupError says the machine has no writable cgroup with a controller
// a limit needs.
type NoCgroupError struct{ Controller string }

func (e NoCgroupError) Error() string {
	if e.Controller == "memory" {
		return ErrNoMemoryCgroup.Error()
	}
	return fmt.Sprintf("no writable %s cgroup on this machine (neither cgroup v2 with the %s controller delegated nor cgroup v1's %s hierarchy, which need root): %s limits cannot be applied",
		e.Controller, v2Name(e.Controller), e.Controller, e.Controller)
}

// Is lets errors.Is(err, ErrNoMemoryCgroup) hold for a missing memory cgroup.
func (e NoCgroupError) Is(target error) bool {
	return target == ErrNoMemoryCgroup && e.Controller == "memory"
}

// v2Name is a v1 controller's name on cgroup v2.
func v2Name(controller string) string {
	if controller == "blkio" {
		return "io"
	}
	return controller
}

// NewMemoryCgroup makes a cgroup named name under dbrig's own cgroup with
// its memory capped at limit bytes.
func NewMemoryCgroup(name string, limit int64) (*Cgroup, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("memory cap %d: want a positive number of bytes", limit)
	}
	return NewCgroup(name, Limits{Memory: limit})
}

// NewCgroup makes a cgroup named name under dbrig's own cgroup with the
// given limits. Nothing is left behind when it fails. The directory's name
// begins with "dbrig-" (added when name lacks it) and ends with this
// process's id (dbrig-name.pidN), so that RemoveStaleCgroups knows it for
// dbrig's and a killed dbrig's from a running one's.
func NewCgroup(name string, l Limits) (*Cgroup, error) {
	if err := l.check(); err != nil {
		return nil, err
	}
	// A killed dbrig's empty cgroups go first, so that they do not pile up
	// beside the ones of runs that ended well: once a process, not at
	// every server's start (a sweep starts hundreds).
	staleCgroupsOnce.Do(func() { RemoveStaleCgroups() })
	if !strings.HasPrefix(name, cgroupPrefix) {
		name = cgroupPrefix + name
	}
	name = fmt.Sprintf("%s%s%d", name, ownerMark, os.Getpid())
	cs := l.controllers()
	if parent, ok := v2Parent(cs...); ok {
		return newV2(filepath.Join(parent, name), parent, l)
	}
	cg := &Cgroup{v1: true, fd: -1}
	for _, c := range cs {
		parent, ok := v1Parent(c)
		if !ok {
			_ = cg.Remove()
			return nil, NoCgroupError{Controller: c}
		}
		d := cgroupDir{controller: c, path: filepath.Join(parent, name), parent: parent}
		if err := os.Mkdir(d.path, 0o755); err != nil {
			_ = cg.Remove()
			return nil, fmt.Errorf("create cgroup %s: %w", d.path, err)
		}
		cg.dirs = append(cg.dirs, d)
		if err := write(d.path, v1Writes(c, l)); err != nil {
			_ = cg.Remove()
			return nil, err
		}
	}
	return cg, nil
}

func newV2(path, parent string, l Limits) (*Cgroup, error) {
	cg := &Cgroup{dirs: []cgroupDir{{path: path, parent: parent}}, fd: -1}
	if err := os.Mkdir(path, 0o755); err != nil {
		return nil, fmt.Errorf("create cgroup %s: %w", path, err)
	}
	if err := write(path, v2Writes(l)); err != nil {
		_ = cg.Remove()
		return nil, err
	}
	fd, err := unix.Open(path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		_ = cg.Remove()
		return nil, fmt.Errorf("open cgroup %s: %w", path, err)
	}
	cg.fd = fd
	return cg, nil
}

var staleCgroupsOnce sync.Once

// cgroupPrefix begins the name of every cgroup dbrig makes: a sweep
// removes no other.
const cgroupPrefix = "dbrig-"

// ownerMark separates a cgroup's name from the id of the dbrig that made it.
const ownerMark = ".pid"

// RemoveStaleCgroups removes the empty cgroups a killed dbrig left under
// this process's cgroups: those whose name ends with the id of a process
// that no longer runs (the kernel stopped their servers with dbrig, see
// Start, but a cgroup outlives its processes). A cgroup still holding a
// process is never removed (the kernel refuses), nor one of a running
// dbrig. It returns the directories removed.
func RemoveStaleCgroups() (removed []string) {
	var parents []string
	if dir, ok := v2Parent(); ok {
		parents = append(parents, dir)
	}
	for c := range v1Probe {
		if dir, ok := v1Parent(c); ok {
			parents = append(parents, dir)
		}
	}
	for _, parent := range parents {
		entries, err := os.ReadDir(parent)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if pid, ok := cgroupOwner(e.Name()); e.IsDir() && ok && !processRuns(pid) {
				if dir := filepath.Join(parent, e.Name()); os.Remove(dir) == nil {
					removed = append(removed, dir)
				}
			}
		}
	}
	return removed
}

// cgroupOwner reads the owner's id from a cgroup name dbrig made.
func cgroupOwner(name string) (int, bool) {
	if !strings.HasPrefix(name, cgroupPrefix) {
		return 0, false
	}
	i := strings.LastIndex(name, ownerMark)
	if i < 0 {
		return 0, false
	}
	pid, err := strconv.Atoi(name[i+len(ownerMark):])
	return pid, err == nil && pid > 0
}

func processRuns(pid int) bool {
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}

// write makes each (file, value) write in dir, in order.
func write(dir string, writes [][2]string) error {
	for _, w := range writes {
		if err := os.WriteFile(filepath.Join(dir, w[0]), []byte(w[1]), 0); err != nil {
			return fmt.Errorf("set %s of cgroup %s to %q: %w", w[0], dir, w[1], err)
		}
	}
	return nil
}

// quota is a CPU share as CFS microseconds per period.
func quota(cpu float64) (quotaUS, periodUS int64) {
	periodUS = cfsPeriod.Microseconds()
	return int64(cpu*float64(periodUS) + 0.5), periodUS
}

// v1Writes are the writes that set a v1 controller's limits, in order.
func v1Writes(controller string, l Limits) [][2]string {
	switch controller {
	case "memory":
		return [][2]string{{"memory.limit_in_bytes", strconv.FormatInt(l.Memory, 10)}}
	case "cpu":
		var ws [][2]string
		if l.CPU > 0 {
			q, p := quota(l.CPU)
			ws = append(ws, [2]string{"cpu.cfs_period_us", strconv.FormatInt(p, 10)}, [2]string{"cpu.cfs_quota_us", strconv.FormatInt(q, 10)})
		}
		if l.Idle {
			ws = append(ws, [2]string{"cpu.idle", "1"})
		}
		return ws
	case "blkio":
		return diskWrites(l.Disks, true)
	}
	return nil
}

// v2Writes are the writes that set a v2 cgroup's limits, in order.
func v2Writes(l Limits) [][2]string {
	var ws [][2]string
	if l.Memory > 0 {
		ws = append(ws, [2]string{"memory.max", strconv.FormatInt(l.Memory, 10)})
	}
	if l.CPU > 0 {
		q, p := quota(l.CPU)
		ws = append(ws, [2]string{"cpu.max", fmt.Sprintf("%d %d", q, p)})
	}
	if l.Idle {
		ws = append(ws, [2]string{"cpu.idle", "1"})
	}
	return append(ws, diskWrites(l.Disks, false)...)
}

// diskWrites throttle each device: v1 takes one line per device and
// direction, v2 one line per device.
func diskWrites(disks []DiskLimit, v1 bool) [][2]string {
	var ws [][2]string
	for _, d := range disks {
		rates := []struct {
			v1File, v2Key string
			value         int64
		}{
			{"blkio.throttle.read_bps_device", "rbps", d.ReadBPS},
			{"blkio.throttle.write_bps_device", "wbps", d.WriteBPS},
			{"blkio.throttle.read_iops_device", "riops", d.ReadIOPS},
			{"blkio.throttle.write_iops_device", "wiops", d.WriteIOPS},
		}
		var keys []string
		for _, r := range rates {
			if r.value <= 0 {
				continue
			}
			if v1 {
				ws = append(ws, [2]string{r.v1File, fmt.Sprintf("%s %d", d.Device, r.value)})
			} else {
				keys = append(keys, fmt.Sprintf("%s=%d", r.v2Key, r.value))
			}
		}
		if len(keys) > 0 {
			ws = append(ws, [2]string{"io.max", d.Device + " " + strings.Join(keys, " ")})
		}
	}
	return ws
}

// MemoryCgroupSupport says how this machine caps memory ("cgroup v2
// memory.max", "cgroup v1 memory.limit_in_bytes") or why it cannot.
func MemoryCgroupSupport() (string, error) { return CgroupSupport("memory") }

// CgroupSupport says how this machine applies a v1 controller's limits
// (memory, cpu or blkio), or why it cannot.
func CgroupSupport(controller string) (string, error) {
	if _, ok := v2Parent(controller); ok {
		return "cgroup v2 " + v2Name(controller), nil
	}
	if _, ok := v1Parent(controller); ok {
		return "cgroup v1 " + controller, nil
	}
	return "", NoCgroupError{Controller: controller}
}

// Path is the cgroup's directory (v1: the first controller's).
func (c *Cgroup) Path() string {
	if len(c.dirs) == 0 {
		return ""
	}
	return c.dirs[0].path
}

// dir is the directory holding a controller's files.
func (c *Cgroup) dir(controller string) (string, bool) {
	for _, d := range c.dirs {
		if !c.v1 || d.controller == controller {
			return d.path, true
		}
	}
	return "", false
}

// Usage reads the cgroup's memory: current use and the peak since it was
// made (0 where the kernel does not report a peak, or without a memory cap).
func (c *Cgroup) Usage() (current, peak int64) {
	dir, ok := c.dir("memory")
	if !ok {
		return 0, 0
	}
	read := func(name string) int64 {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return 0
		}
		n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		return n
	}
	if c.v1 {
		return read("memory.usage_in_bytes"), read("memory.max_usage_in_bytes")
	}
	return read("memory.current"), read("memory.peak")
}

// Remove deletes the cgroup once its processes have exited (it waits up to
// a few seconds for the kernel to let go of them).
func (c *Cgroup) Remove() error {
	if c.fd > 0 {
		_ = unix.Close(c.fd)
		c.fd = -1
	}
	var errs []error
	for _, d := range c.dirs {
		var err error
		for range 50 {
			if err = os.Remove(d.path); err == nil || errors.Is(err, os.ErrNotExist) {
				err = nil
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("remove cgroup %s: %w", d.path, err))
		}
	}
	return errors.Join(errs...)
}

// enterV1 moves the calling thread into each of the cgroup's v1
// directories (a forked child inherits them) and returns how to leave.
func (c *Cgroup) enterV1(tid string) (leave func(), err error) {
	var entered []cgroupDir
	leave = func() {
		for _, d := range entered {
			_ = os.WriteFile(d.parent+"/tasks", []byte(tid), 0)
		}
	}
	for _, d := range c.dirs {
		if err := os.WriteFile(d.path+"/tasks", []byte(tid), 0); err != nil {
			leave()
			return nil, fmt.Errorf("enter %s cgroup %s: %w", d.controller, d.path, err)
		}
		entered = append(entered, d)
	}
	return leave, nil
}

// v2Parent is this process's cgroup v2 directory when every named v1
// controller's v2 counterpart is enabled for its children.
func v2Parent(controllers ...string) (string, bool) {
	root := "/sys/fs/cgroup"
	if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err != nil {
		return "", false
	}
	rel, ok := ownCgroup("")
	if !ok {
		return "", false
	}
	dir := filepath.Join(root, rel)
	sub, err := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	if err != nil || unix.Access(dir, unix.W_OK) != nil {
		return "", false
	}
	for _, c := range controllers {
		if !strings.Contains(" "+strings.TrimSpace(string(sub))+" ", " "+v2Name(c)+" ") {
			return "", false
		}
	}
	return dir, true
}

// v1Probe names, per controller, the file whose presence says a v1 hierarchy is this
// controller's.
var v1Probe = map[string]string{
	"memory": "memory.limit_in_bytes",
	"cpu":    "cpu.cfs_quota_us",
	"blkio":  "blkio.throttle.read_bps_device",
}

// v1Parent is this process's cgroup v1 directory of a controller when
// writable.
func v1Parent(controller string) (string, bool) {
	rel, ok := ownCgroup(controller)
	if !ok {
		return "", false
	}
	dir := filepath.Join("/sys/fs/cgroup", controller, rel)
	if _, err := os.Stat(filepath.Join(dir, v1Probe[controller])); err != nil || unix.Access(dir, unix.W_OK) != nil {
		return "", false
	}
	return dir, true
}

// ownCgroup reads this process's cgroup path for a v1 controller, or for
// the v2 hierarchy when controller is "".
//
// It reads the calling thread's, not /proc/self's: /proc/self/cgroup is
// the main thread's, and the spawner's locked thread may be the main thread,
// which on v1 sits in a child's cgroups while it forks; read then, a
// concurrent NewCgroup would nest its cgroup inside another server's and a
// sweep would look for stale cgroups in the wrong place. No other goroutine
// runs on the spawner's thread, and threads the runtime starts from a locked
// one are cloned by its template thread, so every other thread stays where
// the process started.
func ownCgroup(controller string) (string, bool) {
	b, err := os.ReadFile("/proc/thread-self/cgroup")
	if err != nil {
		b, err = os.ReadFile("/proc/self/cgroup")
	}
	if err != nil {
		return "", false
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if controller == "" && parts[0] == "0" && parts[1] == "" {
			return parts[2], true
		}
		for _, c := range strings.Split(parts[1], ",") {
			if controller != "" && c == controller {
				return parts[2], true
			}
		}
	}
	return "", false
}
