package procstat

import "testing"

// The host's busy time leaves out what ExcludeFromHost names, while the
// processes run and once reaped; this process's own time leaves out the
// reaped ones' only (a running loop is not in it). Not parallel: the
// exclusion is the process's, and another test's two readings must not
// straddle it.
func TestHostBusyLeavesTheExcludedTimeOut(t *testing.T) {
	const loops = 1000.0 // seconds: far beyond what the CPUs do meanwhile
	before, err := HostBusy()
	if err != nil {
		t.Fatal(err)
	}
	self, _ := SelfCPU()
	reaped := ExcludeFromHost(func() float64 { return loops })
	during, _ := HostBusy()
	if during > before-loops/2 {
		t.Errorf("host busy %.1f s with %.0f s of loops running, %.1f s before: their time is counted in", during, loops, before)
	}
	if s, _ := SelfCPU(); s < self {
		t.Errorf("this process's CPU fell from %.2f to %.2f s while the loops run: only reaped loops are in it", self, s)
	}
	reaped(loops)
	after, _ := HostBusy()
	if after > before-loops/2 {
		t.Errorf("host busy %.1f s once the loops were reaped, %.1f s before: their time is counted in again", after, before)
	}
	// Every later reading carries the same offset, so intervals are
	// unchanged; a second reaped call adds nothing.
	reaped(loops)
	if again, _ := HostBusy(); again < after-loops/2 {
		t.Errorf("a second reaped call excluded the loops twice: %.1f s, then %.1f s", after, again)
	}
}
