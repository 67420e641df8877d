package procstat

import "sync"

// dbrig may keep the host's CPUs busy on purpose (package idleloop: a loop
// at the lowest priority on each CPU, so that no virtual CPU halts): that
// time is dbrig's choice of how the machine idles, not work the host did,
// and a host that reads 100 % busy because of it would hide what other
// processes took. HostBusy leaves it out, and SelfCPU the loops this
// process reaped.
var excluded struct {
	sync.Mutex
	live   map[int]func() float64
	next   int
	reaped float64
}

// ExcludeFromHost leaves the CPU time cpuTime reports out of HostBusy from
// now on. The returned function is called once the processes are reaped
// with their final CPU time: it stays excluded from HostBusy, and from
// SelfCPU, which counts reaped children.
func ExcludeFromHost(cpuTime func() float64) (reaped func(final float64)) {
	excluded.Lock()
	defer excluded.Unlock()
	if excluded.live == nil {
		excluded.live = map[int]func() float64{}
	}
	id := excluded.next
	excluded.next++
	excluded.live[id] = cpuTime
	var once sync.Once
	return func(final float64) {
		once.Do(func() {
			excluded.Lock()
			defer excluded.Unlock()
			delete(excluded.live, id)
			excluded.reaped += final
		})
	}
}

// excludedCPU is the excluded CPU time so far: of processes still
// running, and of those reaped.
func excludedCPU() (live, reaped float64) {
	excluded.Lock()
	fns := make([]func() float64, 0, len(excluded.live))
	for _, f := range excluded.live {
		fns = append(fns, f)
	}
	reaped = excluded.reaped
	excluded.Unlock()
	for _, f := range fns {
		live += f()
	}
	return live, reaped
}
