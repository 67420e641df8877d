package load

import (
	"testing"
	"time"
)

// TestAStopOnTheSecondKeepsMeasuredSamplesApart: when the tick that closes a
// second comes just before the run's stop reaches the collector (a run of
// whole seconds stops on the grid), the operations measured in between and
// the ones that end after the stop must land in intervals of their own
// phases, so that the measured intervals' samples are exactly the measured
// operations (what agents' merged samples are checked against).
func TestAStopOnTheSecondKeepsMeasuredSamplesApart(t *testing.T) {
	r, err := NewRunner(Config{Users: 1, Duration: time.Second, KeepSamples: true}, &timedWorkload{mix: []TxType{{Name: "a", Weight: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	r.t0 = time.Now().Add(-time.Second)
	rec := newRecorder(1, false, time.Millisecond, time.Second)
	rec.keepSamples = true
	r.recorders = []*recorder{rec}
	c := newCollector(r)
	op := func(n int) {
		for range n {
			rec.record(0, succeeded, 0, time.Millisecond, time.Millisecond, noLag)
		}
	}
	op(5)
	c.drain()
	c.closeInterval(time.Second) // the tick at 1 s
	op(3)                        // measured: they ended before the stop was seen
	c.stop(time.Second)          // the run stopped at 1 s, on the grid
	op(2)                        // in flight at the stop
	c.drain()
	c.closeInterval(r.since())
	res := c.result()

	var samples int64
	for _, iv := range res.Series {
		if iv.Phase == Measured {
			samples += int64(len(iv.Samples))
		}
	}
	if res.Overall.Ops != 8 || samples != res.Overall.Ops || res.AfterEnd.Count() != 2 {
		t.Errorf("measured ops %d, samples in measured intervals %d, after the end %d; want 8, 8, 2",
			res.Overall.Ops, samples, res.AfterEnd.Count())
	}
}
