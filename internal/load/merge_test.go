package load

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dbrig/dbrig/internal/measure"
)

// spreadService gives each user's operations a spread of latencies, different
// per user and per run, so that the runs' distributions differ.
func spreadService(base time.Duration) func(id, n, tx int) (time.Duration, error) {
	return func(id, n, tx int) (time.Duration, error) {
		return base + time.Duration((id*7919+n*104729)%997)*37*time.Microsecond + 300*time.Microsecond, nil
	}
}

// TestMergedRunsEqualOneDistributionOfAllSamples runs two shares of a load
// (as two agents would), merges them, and checks the merge against every
// sample the runs recorded: counts are the sums, and each percentile is the
// one of a histogram of all the samples, exactly; averaging the runs' p99s
// would not give it.
func TestMergedRunsEqualOneDistributionOfAllSamples(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var results []*Result
		for i, base := range []time.Duration{time.Millisecond, 9 * time.Millisecond} {
			wl := &timedWorkload{service: spreadService(base)}
			cfg := Config{Users: 3 + i, WarmUp: time.Second + offset, Duration: 5 * time.Second, Seed: uint64(i),
				KeepSamples: true, IntervalHistograms: true}
			results = append(results, mustRun(t, cfg, wl))
		}
		m, err := MergeResults(results)
		if err != nil {
			t.Fatal(err)
		}
		all := measure.NewHistogram()
		var samples []int64
		var sumOps int64
		for _, r := range results {
			sumOps += r.Overall.Ops
			for _, iv := range r.Series {
				if iv.Phase != Measured {
					continue
				}
				for _, v := range iv.Samples {
					all.Record(time.Duration(v) * time.Microsecond)
					samples = append(samples, v)
				}
			}
		}
		if m.Overall.Ops != sumOps || m.Overall.Latency.Count() != sumOps || int64(len(samples)) != sumOps {
			t.Fatalf("merged ops %d, merged count %d, samples %d; want the sum %d", m.Overall.Ops, m.Overall.Latency.Count(), len(samples), sumOps)
		}
		if m.Users != 7 {
			t.Errorf("merged users %d, want 3+4", m.Users)
		}
		for _, q := range []float64{0.5, 0.9, 0.99, 0.999, 1} {
			if got, want := m.Overall.Latency.Quantile(q), all.Quantile(q); got != want {
				t.Errorf("q%v: merged %v, all samples %v", q, got, want)
			}
		}
		// The exact p99 of the samples is within the histogram's resolution
		// (HDR rounds the rank to the nearest sample).
		slices.Sort(samples)
		exact := time.Duration(samples[(len(samples)*99+99)/100-1]) * time.Microsecond
		if p99 := m.Overall.Latency.Quantile(0.99); math.Abs(float64(p99-exact)) > 0.001*float64(exact)+float64(time.Microsecond) {
			t.Errorf("merged p99 %v, exact p99 of the samples %v", p99, exact)
		}
		avg := (results[0].Overall.Latency.Quantile(0.99) + results[1].Overall.Latency.Quantile(0.99)) / 2
		if avg == m.Overall.Latency.Quantile(0.99) {
			t.Errorf("the test's runs are too alike: the average of their p99s equals the merged p99 (%v)", avg)
		}
		// The merged series: each measured second's counts are the sums and
		// its p99 comes from the merged second.
		for i, iv := range m.Series {
			var ops int64
			h := measure.NewHistogram()
			for _, r := range results {
				if i < len(r.Series) {
					ops += r.Series[i].Overall.Ops
					for _, v := range r.Series[i].Samples {
						h.Record(time.Duration(v) * time.Microsecond)
					}
				}
			}
			if iv.Overall.Ops != ops {
				t.Errorf("second %d: merged ops %d, want %d", i, iv.Overall.Ops, ops)
			}
			if h.Count() > 0 && iv.Overall.P99 != h.Quantile(0.99) {
				t.Errorf("second %d: merged p99 %v, samples' %v", i, iv.Overall.P99, h.Quantile(0.99))
			}
		}
	})
}

func TestMergeRefusesDifferentMixes(t *testing.T) {
	a := &Result{Mode: "closed", Types: []TypeResult{{Name: "a"}}}
	b := &Result{Mode: "closed", Types: []TypeResult{{Name: "b"}}}
	if _, err := MergeResults([]*Result{a, b}); err == nil {
		t.Error("merged runs of different mixes")
	}
	if _, err := MergeResults(nil); err == nil {
		t.Error("merged nothing")
	}
}

// TestReadyGatesTheClock: the run's clock starts when Ready returns, and an
// error from Ready ends the run before any operation, closing every worker.
func TestReadyGatesTheClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		wl := &timedWorkload{service: fixedService(10 * time.Millisecond)}
		var readyAt time.Time
		cfg := Config{Users: 2, Duration: time.Second + offset, Ready: func(ctx context.Context) error {
			time.Sleep(3 * time.Second) // a coordinator's start instant, 3 s away
			readyAt = time.Now()
			return nil
		}}
		start := time.Now()
		res := mustRun(t, cfg, wl)
		if readyAt.Sub(start) != 3*time.Second {
			t.Fatalf("Ready returned after %v", readyAt.Sub(start))
		}
		if res.Overall.Ops != 200 {
			t.Errorf("ops %d after the gate, want 2 users × 100", res.Overall.Ops)
		}

		wl = &timedWorkload{service: fixedService(10 * time.Millisecond)}
		r, err := NewRunner(Config{Users: 2, Duration: time.Second, Ready: func(context.Context) error {
			return errors.New("the coordinator is gone")
		}}, wl)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := r.Run(t.Context()); err == nil || wl.closed.Load() != 2 {
			t.Errorf("run %v with %d of 2 workers closed; want the Ready error and every worker closed", err, wl.closed.Load())
		}
	})
}

// TestArrivalOffsetStaggersAgents: two open loops at 50/s each, the second
// offset by 10 ms, together arrive every 10 ms, not twice every 20 ms.
func TestArrivalOffsetStaggersAgents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var lags []*measure.Histogram
		for _, off := range []time.Duration{0, 10 * time.Millisecond} {
			wl := &timedWorkload{service: fixedService(time.Millisecond + 100*time.Microsecond)}
			res := mustRun(t, Config{Users: 1, Rate: 50, Duration: time.Second, ArrivalOffset: off}, wl)
			if res.Overall.Ops != 50 || res.Late != 0 {
				t.Fatalf("offset %v: %d ops, %d late; want 50 on time", off, res.Overall.Ops, res.Late)
			}
			lags = append(lags, res.StartLag)
		}
		if lags[1].Max() > time.Millisecond {
			t.Errorf("the offset agent started up to %v late", lags[1].Max())
		}
	})
}

// TestMergeSeriesAlignsWithinEachPhase: two runs that ended a moment apart,
// one with a measured sliver where the other had begun stopping, merge into
// intervals of one phase each, and the measured ones hold every measured
// sample of both.
func TestMergeSeriesAlignsWithinEachPhase(t *testing.T) {
	iv := func(start time.Duration, p Phase, samples ...int64) Interval {
		return Interval{Start: start, Length: time.Second, Phase: p, Samples: samples, Types: []IntervalStats{{Name: "a"}}}
	}
	a := []Interval{iv(0, WarmUp, 1), iv(time.Second, Measured, 2, 3), iv(2*time.Second, Measured, 4), iv(3*time.Second, Stopping, 5)}
	b := []Interval{iv(0, WarmUp, 6), iv(time.Second, Measured, 7), iv(2*time.Second, Stopping, 8, 9)}
	got := MergeSeries([][]Interval{a, b})
	var phases []Phase
	measured := 0
	for _, m := range got {
		phases = append(phases, m.Phase)
		if m.Phase == Measured {
			measured += len(m.Samples)
		}
	}
	if want := []Phase{WarmUp, Measured, Measured, Stopping}; !slices.Equal(phases, want) || measured != 4 || len(got[3].Samples) != 3 {
		t.Errorf("phases %v, %d measured samples, %d stopping samples; want %v, 4, 3", phases, measured, len(got[3].Samples), want)
	}
}
