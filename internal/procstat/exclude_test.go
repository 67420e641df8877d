package procstat

import "testing"

// The host's busy time leaves out what ExcludeFromHost names, while the
// processes run and once reaped; this process's own time leaves out the
// reaped ones' only (a running loop is not in it). Not parallel: the
// exclusion is the process's, and another test's two readings must not
// straddle it.
func TestHostBusyLeavesTheExcludedTimeOut(t *testing.T) {
	before, err := HostBusy()
	if err != nil {
		t.Fatal(err)
	}
	// Half the host's busy time so far: far beyond what the CPUs do during
	// the test, yet below the total, which HostBusy would clamp at zero (a
	// fixed 1,000 s did on a machine up for minutes, and then made every
	// later test's reading zero).
	loops := before / 2
	if loops < 1 {
		t.Skipf("the host has been busy %.2f s since boot: too little to exclude a part of", before)
	}
	t.Cleanup(func() {
		excluded.Lock()
		excluded.reaped -= loops
		excluded.Unlock()
	})
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
