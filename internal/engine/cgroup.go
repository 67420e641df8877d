package engine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Cgroup is a memory cgroup of dbrig's own that caps one server's memory:
// cgroup v2's memory.max where the machine delegates the memory controller,
// else cgroup v1's memory.limit_in_bytes.
type Cgroup struct {
	path   string
	parent string // where a v1 thread returns to
	v1     bool
	fd     int // v2: an open directory for clone3's CLONE_INTO_CGROUP
}

// ErrNoMemoryCgroup says the machine lets dbrig cap no process's memory.
var ErrNoMemoryCgroup = errors.New("no writable memory cgroup on this machine (neither cgroup v2 with the memory controller delegated nor cgroup v1's memory hierarchy): memory caps cannot be applied")

// NewMemoryCgroup makes a cgroup named name under dbrig's own cgroup with
// its memory capped at limit bytes.
func NewMemoryCgroup(name string, limit int64) (*Cgroup, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("memory cap %d: want a positive number of bytes", limit)
	}
	if parent, ok := v2Parent(); ok {
		cg := &Cgroup{path: filepath.Join(parent, name), parent: parent}
		if err := os.Mkdir(cg.path, 0o755); err != nil {
			return nil, fmt.Errorf("create cgroup %s: %w", cg.path, err)
		}
		if err := os.WriteFile(filepath.Join(cg.path, "memory.max"), []byte(strconv.FormatInt(limit, 10)), 0); err != nil {
			_ = os.Remove(cg.path)
			return nil, fmt.Errorf("cap memory of cgroup %s: %w", cg.path, err)
		}
		fd, err := unix.Open(cg.path, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err != nil {
			_ = os.Remove(cg.path)
			return nil, fmt.Errorf("open cgroup %s: %w", cg.path, err)
		}
		cg.fd = fd
		return cg, nil
	}
	if parent, ok := v1Parent(); ok {
		cg := &Cgroup{path: filepath.Join(parent, name), parent: parent, v1: true, fd: -1}
		if err := os.Mkdir(cg.path, 0o755); err != nil {
			return nil, fmt.Errorf("create cgroup %s: %w", cg.path, err)
		}
		if err := os.WriteFile(filepath.Join(cg.path, "memory.limit_in_bytes"), []byte(strconv.FormatInt(limit, 10)), 0); err != nil {
			_ = os.Remove(cg.path)
			return nil, fmt.Errorf("cap memory of cgroup %s: %w", cg.path, err)
		}
		return cg, nil
	}
	return nil, ErrNoMemoryCgroup
}

// MemoryCgroupSupport says how this machine caps memory ("cgroup v2
// memory.max", "cgroup v1 memory.limit_in_bytes") or why it cannot.
func MemoryCgroupSupport() (string, error) {
	if _, ok := v2Parent(); ok {
		return "cgroup v2 memory.max", nil
	}
	if _, ok := v1Parent(); ok {
		return "cgroup v1 memory.limit_in_bytes", nil
	}
	return "", ErrNoMemoryCgroup
}

// Path is the cgroup's directory.
func (c *Cgroup) Path() string { return c.path }

// Usage reads the cgroup's memory: current use and the peak since it was
// made (0 where the kernel does not report a peak).
func (c *Cgroup) Usage() (current, peak int64) {
	read := func(name string) int64 {
		b, err := os.ReadFile(filepath.Join(c.path, name))
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
	var err error
	for range 50 {
		if err = os.Remove(c.path); err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("remove cgroup %s: %w", c.path, err)
}

// v2Parent is this process's cgroup v2 directory when the memory
// controller is enabled for its children.
func v2Parent() (string, bool) {
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
	if err != nil || !strings.Contains(" "+string(sub)+" ", " memory") || unix.Access(dir, unix.W_OK) != nil {
		return "", false
	}
	return dir, true
}

// v1Parent is this process's cgroup v1 memory directory when writable.
func v1Parent() (string, bool) {
	rel, ok := ownCgroup("memory")
	if !ok {
		return "", false
	}
	dir := filepath.Join("/sys/fs/cgroup/memory", rel)
	if _, err := os.Stat(filepath.Join(dir, "memory.limit_in_bytes")); err != nil || unix.Access(dir, unix.W_OK) != nil {
		return "", false
	}
	return dir, true
}

// ownCgroup reads this process's cgroup path for a v1 controller, or for
// the v2 hierarchy when controller is "".
func ownCgroup(controller string) (string, bool) {
	b, err := os.ReadFile("/proc/self/cgroup")
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
