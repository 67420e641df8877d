package doctor

import (
	"path"
	"strconv"
	"strings"
)

// host is what the checks learn from one Source, read once.
type host struct {
	hostname string
	kernel   string
	memTotal int64 // bytes; 0 when unknown
	cpu      cpuInfo
	blocks   []blockDev
	mounts   []mount
	ifaces   []iface
	tcp      tcpSettings
}

func readHost(src Source) *host {
	h := &host{}
	h.hostname, _ = readString(src, "proc/sys/kernel/hostname")
	h.kernel, _ = readString(src, "proc/sys/kernel/osrelease")
	if b, err := src.ReadFile("proc/meminfo"); err == nil {
		h.memTotal = parseMemTotal(string(b))
	}
	h.cpu = readCPU(src)
	h.blocks = readBlockDevices(src)
	if b, err := src.ReadFile("proc/self/mountinfo"); err == nil {
		h.mounts = parseMountinfo(string(b))
	}
	h.ifaces = readInterfaces(src)
	h.tcp = readTCP(src)
	return h
}

// readString reads a one-value file (sysfs, /proc/sys) without its newline.
func readString(src Source, name string) (string, bool) {
	b, err := src.ReadFile(name)
	if err != nil {
		return "", false
	}
	s := strings.TrimSpace(string(b))
	return s, s != ""
}

// readInt reads a file holding one integer.
func readInt(src Source, name string) (int64, bool) {
	s, ok := readString(src, name)
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseInt(s, 10, 64)
	return v, err == nil
}

// readLinkBase returns the last element of a symbolic link's target.
func readLinkBase(src Source, name string) string {
	t, err := src.ReadLink(name)
	if err != nil {
		return ""
	}
	return path.Base(t)
}

func parseMemTotal(meminfo string) int64 {
	for line := range strings.Lines(meminfo) {
		if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			f := strings.Fields(rest)
			if len(f) >= 1 {
				kb, err := strconv.ParseInt(f[0], 10, 64)
				if err == nil {
					return kb * 1024
				}
			}
		}
	}
	return 0
}

// mount is one line of /proc/self/mountinfo.
type mount struct {
	dev    string // major:minor of the file system
	point  string // where it is mounted
	fstype string
	source string // e.g. /dev/sda1
}

// parseMountinfo reads /proc/PID/mountinfo (proc(5)): ID, parent, major:minor,
// root, mount point, options, optional fields, "-", type, source, options.
func parseMountinfo(s string) []mount {
	var out []mount
	for line := range strings.Lines(s) {
		f := strings.Fields(line)
		if len(f) < 7 {
			continue
		}
		m := mount{dev: f[2], point: unescapeMount(f[4])}
		for i := 6; i < len(f); i++ {
			if f[i] == "-" {
				if i+1 < len(f) {
					m.fstype = f[i+1]
				}
				if i+2 < len(f) {
					m.source = unescapeMount(f[i+2])
				}
				break
			}
		}
		out = append(out, m)
	}
	return out
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// mountFor returns the mount holding path p (already free of symbolic
// links): the longest mount point that is a prefix of p; the last one wins
// when several are mounted on the same point.
func mountFor(mounts []mount, p string) (mount, bool) {
	var best mount
	found := false
	for _, m := range mounts {
		if m.point == p || m.point == "/" || strings.HasPrefix(p, strings.TrimSuffix(m.point, "/")+"/") {
			if !found || len(m.point) >= len(best.point) {
				best, found = m, true
			}
		}
	}
	return best, found
}
