// Package doctor checks a host, or a fleet of hosts over ssh, for the faults
// dbrig's studies found: misaligned partitions (seed 002), duplex mismatches
// (seed 002), TCP buffers too small for a link's bandwidth-delay product
// (seed 000), database settings (seeds 000, 002, 003) and the CPU, clock and
// virtualization facts that row-by-row work depends on (seed 004).
//
// Every check reads a [Source]: sysfs and /proc files under a root. On this
// host that is a [DirSource]; for a remote host dbrig runs [CollectorScript]
// over ssh ([SSH]) and parses its output into a [Snapshot], so the same
// checks run on both, and on fixtures captured from real machines
// (testdata/). [Run] checks hosts in parallel and returns a [Report], which
// [WriteText] and [WriteJSON] print. The checks, why each matters and its
// fix are listed in [Catalog] and in docs/doctor.md.
package doctor
