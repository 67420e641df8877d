package load

import (
	"math/rand/v2"
	"runtime"
	"testing"
	"testing/synctest"
	"time"
	"unsafe"
)

// recordSecond records one second's worth of operations into every
// recorder, as workers would: latencies spread over a realistic range.
func recordSecond(recs []*recorder, rng *rand.Rand, types, perWorker int) {
	for _, rec := range recs {
		for range perWorker {
			lat := time.Duration(rng.ExpFloat64() * float64(3*time.Millisecond))
			rec.record(rng.IntN(types), succeeded, 0, lat, lat, lat/10)
		}
	}
}

func TestCollectorAllocationsPerTickDoNotGrow(t *testing.T) {
	// 1,000 workers (100 under the race detector), 5 types, 2 operations
	// each per second. After the
	// buffers have grown to the spread of values, a tick (take every
	// worker's buffer, merge, close the second) allocates only the second's
	// entry of the series, whether it is the 100th tick or the 3,000th.
	users, types, warm, more := 1000, 5, 300, 2000
	if raceEnabled {
		users, warm, more = 100, 100, 400
	}
	mix := make([]TxType, types)
	for i := range mix {
		mix[i] = TxType{Name: string(rune('a' + i)), Weight: 1}
	}
	r, err := NewRunner(Config{Users: users, Rate: 1, Duration: time.Hour}, &timedWorkload{mix: mix})
	if err != nil {
		t.Fatal(err)
	}
	r.t0 = time.Now()
	r.recorders = make([]*recorder, users)
	for i := range r.recorders {
		r.recorders[i] = newRecorder(types, true, time.Millisecond, time.Second)
	}
	c := newCollector(r)
	rng := rand.New(rand.NewPCG(1, 1))
	second := time.Duration(0)
	ticks := 0
	tickOnce := func() {
		ticks++
		recordSecond(r.recorders, rng, types, 2)
		c.drain()
		second += time.Second
		c.closeInterval(second)
	}
	for range warm { // let every buffer grow to the spread of values
		tickOnce()
	}
	early := testing.AllocsPerRun(100, tickOnce)
	for range more {
		tickOnce()
	}
	late := testing.AllocsPerRun(100, tickOnce)
	t.Logf("allocations per tick: %v after %d ticks, %v after %d", early, warm, late, ticks)
	// One allocation: the interval's per-type statistics, kept in the
	// series. (The series itself was sized for the run's duration.)
	if late > 1 || late > early {
		t.Errorf("allocations per tick: %v after %d ticks, %v after %d; want at most 1 and no growth", early, warm, late, ticks)
	}
	if len(c.series) != ticks || cap(c.series) != 3602 {
		t.Errorf("series of %d intervals, capacity %d; want %d in the 3602 sized for an hour", len(c.series), cap(c.series), ticks)
	}
}

func TestThousandUsersForAnHourKeepMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("an hour of 1,000 users on the fake clock takes a while")
	}
	// 1,000 users (20 under the race detector, where an hour's ticks cost
	// more than the users' operations: 100 took 19.8 s of CPU, 20 took
	// 15.7) with a TPC-C-like think time for a (fake) hour. The heap
	// after 10 minutes and after 60 minutes differ by no more than what the
	// per-second series adds for the 50 minutes between.
	synctest.Test(t, func(t *testing.T) {
		var at10, at60 uint64
		heap := func() uint64 {
			runtime.GC()
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			return m.HeapAlloc
		}
		wl := &timedWorkload{
			mix: []TxType{{"new-order", 45}, {"payment", 43}, {"status", 4}, {"delivery", 4}, {"stock", 4}},
			service: func(id, n, tx int) (time.Duration, error) {
				return time.Duration(1+(id*7+n*13)%40) * time.Millisecond, nil
			},
		}
		users := 1000
		if raceEnabled {
			users = 20
		}
		res := mustRun(t, Config{
			Users: users, Think: Think{Mean: 5 * time.Second, Exponential: true},
			RampUp: 10 * time.Second, WarmUp: 10 * time.Second, Duration: time.Hour - 10*time.Second,
			OnInterval: func(iv Interval) {
				switch iv.Start {
				case 10 * time.Minute:
					at10 = heap()
				case 60*time.Minute - time.Second:
					at60 = heap()
				}
			},
		}, wl)
		perInterval := uint64(unsafe.Sizeof(Interval{})) + 5*uint64(unsafe.Sizeof(IntervalStats{}))
		seriesGrowth := 50 * 60 * perInterval
		const slack = 1 << 20
		t.Logf("%d ops; heap %d KB at 10 min, %d KB at 60 min; the series adds %d KB in between",
			res.Overall.Ops, at10>>10, at60>>10, seriesGrowth>>10)
		if at10 == 0 || at60 == 0 {
			t.Fatal("the heap was not measured")
		}
		if at60 > at10+seriesGrowth+slack {
			t.Errorf("the heap grew from %d KB to %d KB, more than the series' %d KB (+1 MB)", at10>>10, at60>>10, seriesGrowth>>10)
		}
		if want := float64(users) / 5; res.Overall.TPS < 0.9*want || res.Overall.TPS > 1.1*want {
			t.Errorf("tps %.0f, want about %d users / 5 s think = %.0f", res.Overall.TPS, users, want)
		}
	})
}
