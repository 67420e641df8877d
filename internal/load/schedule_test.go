package load

import (
	"math"
	"testing"
	"time"
)

func TestScheduleFixedRate(t *testing.T) {
	tests := []struct {
		name string
		rate float64
		ramp time.Duration
		want []time.Duration // the first arrivals
	}{
		{"100/s", 100, 0, []time.Duration{0, 10 * time.Millisecond, 20 * time.Millisecond, 30 * time.Millisecond}},
		{"3/s", 3, 0, []time.Duration{0, 333333333, 666666667, time.Second}},
		// Ramp T = 2 s to 100/s: the k-th arrival at sqrt(2·T·k/r) s.
		{"ramp", 100, 2 * time.Second, []time.Duration{0, 200 * time.Millisecond, 282842712, 346410162, 400 * time.Millisecond}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSchedule(tt.rate, Fixed, tt.ramp, 1)
			for i, want := range tt.want {
				if got := s.next(); got != want {
					t.Errorf("arrival %d at %v, want %v", i, got, want)
				}
			}
		})
	}
}

func TestScheduleRampReachesTheRate(t *testing.T) {
	// Under a linear ramp of T to rate r, r·T/2 arrivals fall in the ramp and
	// the rest are spaced 1/r apart.
	s := newSchedule(100, Fixed, 2*time.Second, 1)
	var inRamp int
	var last time.Duration
	for {
		at := s.next()
		if at >= 2*time.Second {
			if at != 2*time.Second {
				t.Errorf("the ramp's last arrival is at %v, want 2s", at)
			}
			last = at
			break
		}
		inRamp++
	}
	if inRamp != 100 {
		t.Errorf("%d arrivals in the ramp, want 100", inRamp)
	}
	if next := s.next(); next-last != 10*time.Millisecond {
		t.Errorf("after the ramp arrivals are %v apart, want 10ms", next-last)
	}
}

func TestSchedulePoisson(t *testing.T) {
	// Exponential gaps: mean 1/rate and a coefficient of variation of 1.
	const n, rate = 200000, 1000.0
	s := newSchedule(rate, Poisson, 0, 42)
	var sum, sumSq float64
	prev := time.Duration(0)
	for range n {
		at := s.next()
		gap := float64(at-prev) / float64(time.Second)
		prev = at
		sum += gap
		sumSq += gap * gap
	}
	mean := sum / n
	cv := math.Sqrt(sumSq/n-mean*mean) / mean
	if math.Abs(mean*rate-1) > 0.01 || math.Abs(cv-1) > 0.01 {
		t.Errorf("mean gap %.6f s (want %.6f), CV %.3f (want 1)", mean, 1/rate, cv)
	}
	if again := newSchedule(rate, Poisson, 0, 42); again.next() != newSchedule(rate, Poisson, 0, 42).next() {
		t.Error("the same seed gave different arrivals")
	}
}
