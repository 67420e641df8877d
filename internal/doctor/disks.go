package doctor

import (
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
)

// sysfs reports partition starts and sizes in 512-byte sectors, whatever
// the device's logical block size.
const sectorSize = 512

// blockDev is a block device from /sys/block.
type blockDev struct {
	name        string
	dev         string // major:minor
	sectors     int64
	logical     int64
	physical    int64
	minIO       int64
	optimalIO   int64
	alignOffset int64 // -1: the kernel found the device stack misaligned
	rotational  bool
	virtual     bool // under /sys/devices/virtual (loop, dm, md, zram)
	backingFile string
	dmName      string
	parts       []partition
}

// partition is one partition of a block device.
type partition struct {
	name        string
	dev         string
	number      int64
	start       int64 // sectors of 512 bytes
	sectors     int64
	alignOffset int64
}

func readBlockDevices(src Source) []blockDev {
	names, _ := src.ReadDir("sys/block")
	var out []blockDev
	for _, name := range names {
		if strings.HasPrefix(name, "ram") || strings.HasPrefix(name, "zram") {
			continue // memory, not storage
		}
		dir := "sys/block/" + name
		d := blockDev{name: name}
		var ok bool
		if d.sectors, ok = readInt(src, dir+"/size"); !ok || d.sectors == 0 {
			continue // empty loop device, drive without media
		}
		d.dev, _ = readString(src, dir+"/dev")
		d.logical, _ = readInt(src, dir+"/queue/logical_block_size")
		d.physical, _ = readInt(src, dir+"/queue/physical_block_size")
		d.minIO, _ = readInt(src, dir+"/queue/minimum_io_size")
		d.optimalIO, _ = readInt(src, dir+"/queue/optimal_io_size")
		d.alignOffset, _ = readInt(src, dir+"/alignment_offset")
		rot, _ := readInt(src, dir+"/queue/rotational")
		d.rotational = rot == 1
		if t, err := src.ReadLink(dir); err == nil {
			d.virtual = strings.Contains(t, "/virtual/")
		}
		d.backingFile, _ = readString(src, dir+"/loop/backing_file")
		d.dmName, _ = readString(src, dir+"/dm/name")
		entries, _ := src.ReadDir(dir)
		for _, e := range entries {
			pdir := dir + "/" + e
			if _, err := src.ReadFile(pdir + "/partition"); err != nil {
				continue
			}
			p := partition{name: e}
			p.number, _ = readInt(src, pdir+"/partition")
			p.start, _ = readInt(src, pdir+"/start")
			p.sectors, _ = readInt(src, pdir+"/size")
			p.alignOffset, _ = readInt(src, pdir+"/alignment_offset")
			p.dev, _ = readString(src, pdir+"/dev")
			d.parts = append(d.parts, p)
		}
		slices.SortFunc(d.parts, func(a, b partition) int { return int(a.number - b.number) })
		out = append(out, d)
	}
	return out
}

// alignment is a start offset judged against the boundaries that matter.
type alignment struct {
	offset                 int64 // bytes from the device's start
	a4K, a64K, a1M         bool
	aPhys, aMinIO, aOptIO  bool
	physical, minIO, optIO int64
}

// alignedTo reports whether x is a multiple of unit (units <= 0 are ignored).
func alignedTo(x, unit int64) bool { return unit <= 0 || x%unit == 0 }

// judgeAlignment measures offset against 4 KiB, 64 KiB, 1 MiB and the
// device's physical block, minimum and optimal I/O sizes. devAlign is the
// device's own alignment_offset (bytes from LBA 0 to its first natural
// boundary, as on 512e drives jumpered for Windows XP): boundaries are
// counted from there.
func judgeAlignment(offset, physical, minIO, optIO, devAlign int64) alignment {
	x := offset - max(devAlign, 0)
	return alignment{offset: offset,
		a4K: alignedTo(x, 4096), a64K: alignedTo(x, 64<<10), a1M: alignedTo(x, 1<<20),
		aPhys: alignedTo(x, physical), aMinIO: alignedTo(x, minIO), aOptIO: alignedTo(x, optIO),
		physical: physical, minIO: minIO, optIO: optIO}
}

// status: misaligned against 4 KiB or the device's own units fails; aligned
// to those but not to 64 KiB (a common RAID stripe unit) warns.
func (a alignment) status() Status {
	switch {
	case !a.a4K || !a.aPhys || !a.aMinIO || !a.aOptIO:
		return Fail
	case !a.a64K:
		return Warn
	}
	return Pass
}

// describe says which boundaries the offset meets, in words.
func (a alignment) describe() string {
	var missed []string
	if !a.aPhys && a.physical > 4096 {
		missed = append(missed, "the "+sizeWords(a.physical)+" physical block")
	}
	if !a.aMinIO && a.minIO > 4096 {
		missed = append(missed, "the "+sizeWords(a.minIO)+" minimum I/O size")
	}
	if !a.aOptIO {
		missed = append(missed, "the "+sizeWords(a.optIO)+" optimal I/O size")
	}
	var s string
	switch {
	case a.a1M:
		s = "1 MiB-aligned"
	case a.a64K:
		s = "64 KiB-aligned, not 1 MiB"
	case a.a4K:
		s = "4 KiB-aligned, not 64 KiB"
	default:
		s = "not 4 KiB-aligned"
	}
	if len(missed) > 0 {
		s += "; not a multiple of " + strings.Join(missed, " or ")
	}
	return s
}

// expected is the rule in words for this device.
func (a alignment) expected() string {
	units := []string{"64 KiB"}
	for _, u := range []int64{a.physical, a.minIO, a.optIO} {
		if u > 0 && (64<<10)%u != 0 && !slices.Contains(units, sizeWords(u)) {
			units = append(units, sizeWords(u))
		}
	}
	return "start a multiple of " + strings.Join(units, " and ") + " (1 MiB best)"
}

// sizeWords writes a byte count the way a person would say it.
func sizeWords(n int64) string {
	switch {
	case n >= 1<<30 && n%(1<<30) == 0:
		return strconv.FormatInt(n>>30, 10) + " GiB"
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + " MiB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + " KiB"
	}
	return strconv.FormatInt(n, 10) + " B"
}

// humanBytes rounds a byte count to one decimal in binary units.
func humanBytes(n int64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	v := float64(n)
	i := 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	if i == 0 || v == float64(int64(v)) {
		return strconv.FormatFloat(v, 'f', 0, 64) + " " + units[i]
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + " " + units[i]
}

// checkDisks judges every partition, and every device used whole. marks
// adds words to the row of the device or partition with that major:minor
// (such as "holds the PostgreSQL data directory").
func checkDisks(h *host, marks map[string][]string) []Result {
	where := placesOf(h, marks)
	if len(h.blocks) == 0 {
		return []Result{result("disk.alignment", "", Skip, "no block device with a size in /sys/block", "")}
	}
	var out []Result
	for _, d := range h.blocks {
		devWords, devValues := describeDevice(d)
		if len(d.parts) == 0 {
			out = append(out, wholeDeviceAlignment(d, devWords, devValues, where))
			continue
		}
		for _, p := range d.parts {
			out = append(out, partitionAlignment(d, p, devWords, devValues, where))
		}
	}
	return out
}

// placesOf says of a device where it is mounted and what marks it (as
// "; mounted on /, /boot; ..."), or nothing.
func placesOf(h *host, marks map[string][]string) func(dev string) string {
	mounted := map[string][]string{}
	for _, m := range h.mounts {
		if !slices.Contains(mounted[m.dev], m.point) {
			mounted[m.dev] = append(mounted[m.dev], m.point)
		}
	}
	return func(dev string) string {
		var parts []string
		if pts := mounted[dev]; len(pts) > 0 {
			if len(pts) > 3 {
				pts = append(pts[:3:3], fmt.Sprintf("%d more", len(pts)-3))
			}
			parts = append(parts, "mounted on "+strings.Join(pts, ", "))
		}
		parts = append(parts, marks[dev]...)
		if len(parts) == 0 {
			return ""
		}
		return "; " + strings.Join(parts, "; ")
	}
}

// describeDevice is a device's geometry in words and as a result's values.
func describeDevice(d blockDev) (string, []any) {
	kind := "SSD"
	if d.rotational {
		kind = "rotational"
	}
	devWords := fmt.Sprintf("%s/%s sectors, %s", sizeWords(d.logical), sizeWords(d.physical), kind)
	if d.optimalIO > 0 {
		devWords += ", optimal I/O " + sizeWords(d.optimalIO)
	}
	if d.backingFile != "" {
		devWords += ", backed by " + d.backingFile
	}
	if d.dmName != "" {
		devWords += ", device-mapper " + d.dmName
	}
	devValues := []any{"device", d.name, "logical_block_size", d.logical, "physical_block_size", d.physical,
		"minimum_io_size", d.minIO, "optimal_io_size", d.optimalIO, "device_alignment_offset", d.alignOffset,
		"rotational", d.rotational, "size_bytes", d.sectors * sectorSize}
	return devWords, devValues
}

// wholeDeviceAlignment judges a device used whole, without partitions.
func wholeDeviceAlignment(d blockDev, devWords string, devValues []any, where func(string) string) Result {
	a := judgeAlignment(0, d.physical, d.minIO, d.optimalIO, d.alignOffset)
	st := a.status()
	obs := fmt.Sprintf("whole device, no partitions (%s, %s)", humanBytes(d.sectors*sectorSize), devWords)
	switch {
	case d.alignOffset < 0:
		st = Fail
		obs = "the kernel reports the device's stack misaligned (alignment_offset -1); " + devWords
	case d.alignOffset > 0:
		st = Fail
		obs = fmt.Sprintf("used whole, but its first natural boundary is %d B in (alignment_offset); %s", d.alignOffset, devWords)
	}
	r := result("disk.alignment", d.name, st, obs+where(d.dev), a.expected()).
		with(devValues...).with("start_bytes", 0, "aligned_4k", a.a4K, "aligned_64k", a.a64K, "aligned_1m", a.a1M)
	if st != Pass {
		r = r.withFix("Put the file system on a partition that starts on a 1 MiB boundary (parted -a optimal, or sfdisk's default start sector 2048) and restore the data.")
	}
	return r
}

// partitionAlignment judges where partition p of device d starts.
func partitionAlignment(d blockDev, p partition, devWords string, devValues []any, where func(string) string) Result {
	off := p.start * sectorSize
	a := judgeAlignment(off, d.physical, d.minIO, d.optimalIO, d.alignOffset)
	st := a.status()
	obs := fmt.Sprintf("start sector %d = %s: %s (on %s, %s)", p.start, offsetWords(off), a.describe(), d.name, devWords)
	if p.alignOffset != 0 && st != Fail {
		st = Fail
		obs += fmt.Sprintf("; the kernel reports it %d B off the device's natural alignment", p.alignOffset)
	}
	r := result("disk.alignment", p.name, st, obs+where(p.dev), a.expected()).
		with(devValues...).
		with("start_sector", p.start, "start_bytes", off, "size_bytes", p.sectors*sectorSize,
			"aligned_4k", a.a4K, "aligned_64k", a.a64K, "aligned_1m", a.a1M,
			"aligned_physical_block", a.aPhys, "aligned_optimal_io", a.aOptIO, "partition_alignment_offset", p.alignOffset)
	switch st {
	case Fail:
		r = r.withFix(fmt.Sprintf("%s starts %d bytes (sector %d) into %s. Back up its data, re-create the partition "+
			"starting on a 1 MiB boundary (sector 2048: parted -a optimal, or fdisk/sfdisk defaults), and restore; "+
			"a partition cannot be realigned in place.", p.name, off, p.start, d.name))
	case Warn:
		r = r.withFix(fmt.Sprintf("%s is aligned for 4 KiB blocks but not for 64 KiB stripe units; if %s sits on RAID or a SAN LUN, "+
			"re-create the partition at a 1 MiB boundary (sector 2048).", p.name, d.name))
	}
	return r
}

// offsetWords writes an offset in bytes, and in binary units when exact.
func offsetWords(off int64) string {
	s := strconv.FormatInt(off, 10) + " B"
	if off > 0 && off%1024 == 0 {
		s += " (" + sizeWords(off) + ")"
	}
	return s
}

// blockByDev finds the partition or device with major:minor dev, and the
// device that holds it.
func (h *host) blockByDev(dev string) (name string, disk *blockDev) {
	name, _, disk = h.findBlock(func(name, dev2 string) bool { return dev2 == dev })
	return name, disk
}

// blockByName finds a device or partition by its kernel name ("sda1").
func (h *host) blockByName(name string) (dev string, disk *blockDev) {
	_, dev, disk = h.findBlock(func(name2, _ string) bool { return name2 == name })
	return dev, disk
}

// findBlock returns the first device or partition that match accepts (by
// kernel name and major:minor), with the device that holds it.
func (h *host) findBlock(match func(name, dev string) bool) (name, dev string, disk *blockDev) {
	for i := range h.blocks {
		d := &h.blocks[i]
		if match(d.name, d.dev) {
			return d.name, d.dev, d
		}
		for _, p := range d.parts {
			if match(p.name, p.dev) {
				return p.name, p.dev, d
			}
		}
	}
	return "", "", nil
}

// placement says where a path (free of symbolic links) lives: its mount,
// and the block device or partition under it when one is known.
type placement struct {
	path  string
	mount mount
	block string    // "sda1", "" when the file system has no block device of its own
	disk  *blockDev // the device holding block
}

func (h *host) place(p string) (placement, bool) {
	m, ok := mountFor(h.mounts, p)
	if !ok {
		return placement{path: p}, false
	}
	pl := placement{path: p, mount: m}
	pl.block, pl.disk = h.blockByDev(m.dev)
	if pl.disk == nil && strings.HasPrefix(m.source, "/dev/") {
		// btrfs and others report an anonymous device number: fall back
		// to the source's name ("/dev/sda1").
		_, pl.disk = h.blockByName(path.Base(m.source))
		if pl.disk != nil {
			pl.block = path.Base(m.source)
		}
	}
	return pl, true
}

// words describes the placement for a report row.
func (p placement) words() string {
	s := p.mount.point
	if p.mount.fstype != "" {
		s += " (" + p.mount.fstype + ")"
	}
	switch {
	case p.disk == nil:
		s += ", no block device known for " + p.mount.source
	case p.block != p.disk.name:
		s += " on " + p.block + " of " + p.disk.name
	default:
		s += " on " + p.block
	}
	return s
}
