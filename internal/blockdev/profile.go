package blockdev

import (
	"fmt"
	"slices"
	"strings"
)

// Profile is an emulated disk: the rates a blkio throttle holds a dbrig
// loop device's reads and writes to, for the processes of one server. A
// zero rate is unthrottled.
type Profile struct {
	Name string `json:"name"`
	Doc  string `json:"doc,omitempty"`
	// ReadBPS and WriteBPS are bytes per second; ReadIOPS and WriteIOPS
	// requests per second.
	ReadBPS   int64 `json:"read_bps,omitempty"`
	WriteBPS  int64 `json:"write_bps,omitempty"`
	ReadIOPS  int64 `json:"read_iops,omitempty"`
	WriteIOPS int64 `json:"write_iops,omitempty"`
}

// Unlimited says whether the profile throttles nothing.
func (p Profile) Unlimited() bool {
	return p.ReadBPS == 0 && p.WriteBPS == 0 && p.ReadIOPS == 0 && p.WriteIOPS == 0
}

// String writes the profile's rates as its listing does.
func (p Profile) String() string {
	if p.Unlimited() {
		return p.Name + ": unthrottled"
	}
	rate := func(bps, iops int64) string {
		b, i := "any MB/s", "any IOPS"
		if bps > 0 {
			b = fmt.Sprintf("%g MB/s", float64(bps)/1e6)
		}
		if iops > 0 {
			i = fmt.Sprintf("%d IOPS", iops)
		}
		return b + ", " + i
	}
	return fmt.Sprintf("%s: read %s; write %s", p.Name, rate(p.ReadBPS, p.ReadIOPS), rate(p.WriteBPS, p.WriteIOPS))
}

// profiles are the emulated disks, by name. The figures are what the seeds'
// machines had, or a common device of the kind.
var profiles = []Profile{
	{Name: "san-2009", Doc: "seed 002's SAN: about 200 MB/s of large reads, 5,000 requests per second",
		ReadBPS: 200e6, WriteBPS: 200e6, ReadIOPS: 5000, WriteIOPS: 5000},
	{Name: "sata-hdd", Doc: "a 7,200 rpm SATA disk: 120 MB/s sequential, 150 random requests per second",
		ReadBPS: 120e6, WriteBPS: 120e6, ReadIOPS: 150, WriteIOPS: 150},
	{Name: "nvme", Doc: "no throttle: the machine's own disk beneath the loop device"},
}

// Profiles lists the emulated disks by name.
func Profiles() []Profile { return slices.Clone(profiles) }

// ProfileNames are the profiles' names, for a message.
func ProfileNames() string {
	names := make([]string, len(profiles))
	for i, p := range profiles {
		names[i] = p.Name
	}
	return strings.Join(names, ", ")
}

// LookupProfile finds an emulated disk by name.
func LookupProfile(name string) (Profile, error) {
	for _, p := range profiles {
		if p.Name == name {
			return p, nil
		}
	}
	return Profile{}, fmt.Errorf("no disk profile %q (dbrig has: %s)", name, ProfileNames())
}
