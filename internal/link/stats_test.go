package link

import (
	"testing"
	"time"

	"github.com/dbrig/dbrig/internal/units"
)

func TestRecorderSeriesAndThroughput(t *testing.T) {
	r := newRecorder(t0, 10*time.Millisecond)
	r.delivered(forward, 1000, 1, t0.Add(5*time.Millisecond), 0, false)
	r.delivered(forward, 3000, 3, t0.Add(15*time.Millisecond), 0, false)
	r.delivered(forward, 500, 1, t0.Add(19*time.Millisecond), 0, false)
	r.delivered(forward, 4000, 3, t0.Add(1005*time.Millisecond), 0, false)
	r.delivered(reverse, 7, 1, t0.Add(42*time.Millisecond), 2*time.Millisecond, false)
	r.delivered(reverse, 7, 1, t0.Add(43*time.Millisecond), 4*time.Millisecond, true)
	st := r.snapshot()
	f := st.Forward
	if f.Bytes != 8500 || f.Segments != 8 || len(f.Series) != 101 || f.Series[0] != 1000 || f.Series[1] != 3500 || f.Series[100] != 4000 {
		t.Errorf("forward: %d bytes, %d segments, series of %d with [0]=%d [1]=%d [100]=%d; want 8500, 8, 101, 1000, 3500, 4000",
			f.Bytes, f.Segments, len(f.Series), f.Series[0], f.Series[1], f.Series[len(f.Series)-1])
	}
	if got, want := f.Throughput(), units.Rate(8500*8/1.0); got != want {
		t.Errorf("throughput %v bit/s, want %v (8500 bytes from 5 ms to 1005 ms)", float64(got), float64(want))
	}
	if rv := st.Reverse; rv.MeanLateness != 3*time.Millisecond || rv.MaxLateness != 4*time.Millisecond {
		t.Errorf("reverse lateness mean %v max %v, want 3ms and 4ms", rv.MeanLateness, rv.MaxLateness)
	}
	// The spun write and the other are split apart.
	if rv := st.Reverse; rv.Spun != (Lateness{1, 4 * time.Millisecond, 4 * time.Millisecond}) || rv.Unspun != (Lateness{1, 2 * time.Millisecond, 2 * time.Millisecond}) {
		t.Errorf("reverse lateness spun %+v, unspun %+v; want one write each, 4ms and 2ms", rv.Spun, rv.Unspun)
	}
	// A snapshot is a copy.
	st.Forward.Series[0] = -1
	if r.snapshot().Forward.Series[0] != 1000 {
		t.Error("changing a snapshot's series changed the recorder")
	}
	if (DirStats{Bytes: 10}).Throughput() != 0 {
		t.Error("throughput without a delivery span is not zero")
	}
}

func TestRecorderSeriesCoarsens(t *testing.T) {
	const interval = time.Microsecond
	r := newRecorder(t0, interval)
	r.delivered(forward, 1, 1, t0, 0, false)
	r.delivered(forward, 2, 1, t0.Add(interval), 0, false)
	r.delivered(forward, 4, 1, t0.Add(3*interval), 0, false)
	// Past maxSeries buckets the interval doubles until the series fits.
	r.delivered(forward, 8, 1, t0.Add(3*maxSeries*interval), 0, false)
	f := r.snapshot().Forward
	if f.SeriesInterval != 4*interval {
		t.Fatalf("interval %v after a delivery at 3×maxSeries buckets, want %v", f.SeriesInterval, 4*interval)
	}
	var sum int64
	for _, v := range f.Series {
		sum += v
	}
	if f.Series[0] != 7 || f.Series[len(f.Series)-1] != 8 || sum != 15 || len(f.Series) > maxSeries {
		t.Errorf("coarsened series: [0]=%d, last=%d, sum %d, %d buckets; want 7, 8, 15, at most %d",
			f.Series[0], f.Series[len(f.Series)-1], sum, len(f.Series), maxSeries)
	}
}
