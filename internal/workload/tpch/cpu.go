package tpch

import (
	"time"

	"github.com/dbrig/dbrig/internal/monitor"
	"github.com/dbrig/dbrig/internal/procstat"
)

// cpuSample is the host's busy CPU time, the server's and dbrig's own at
// one moment, to tell how much of the CPUs other work took during a point:
// a parallel degree can only gain what the CPUs have free.
type cpuSample struct {
	at     time.Time
	host   float64 // busy seconds of all CPUs since boot
	server float64 // the server and every process it reaped, seconds
	self   float64 // this process, seconds
	ok     bool
}

// sampleCPU reads the CPU times; serverPID 0 (a target, or a client
// process) gives no sample.
func sampleCPU(serverPID int) cpuSample {
	s := cpuSample{at: time.Now()}
	if serverPID <= 0 {
		return s
	}
	// The host's busy time leaves dbrig's idle loops out, so this
	// process's own must too (procstat reads both the same way).
	host, errHost := procstat.HostBusy()
	server, ok := monitor.TreeCPU(serverPID)
	self, errSelf := procstat.SelfCPU()
	s.host, s.server, s.self, s.ok = host, server, self, errHost == nil && ok && errSelf == nil
	return s
}

// otherCPUs is the CPUs' worth of work, on average between two samples,
// that neither the server nor dbrig did.
func otherCPUs(a, b cpuSample) (float64, bool) {
	wall := b.at.Sub(a.at).Seconds()
	if !a.ok || !b.ok || wall <= 0 {
		return 0, false
	}
	other := (b.host - a.host) - (b.server - a.server) - (b.self - a.self)
	return max(other, 0) / wall, true
}
