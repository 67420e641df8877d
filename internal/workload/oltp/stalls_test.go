package oltp

import (
	"math"
	"testing"
)

// TestStalledThroughput: the users split between the stalls and the rest
// of the system. With the rest a line (no queue) it is N / (C + s), s =
// a × X; with two users and a station as fast with one as with two, the
// figure balances the chain's three states written out by hand.
func TestStalledThroughput(t *testing.T) {
	t.Parallel()
	const a = 1e-6 // s² a transaction a second
	line := []CurvePoint{{Users: 8, TPS: 2000}}
	c := 8 / 2000.0
	saturated := []CurvePoint{{Users: 1, TPS: 1000}, {Users: 2, TPS: 1000}}
	for _, tc := range []struct {
		name  string
		n     int
		curve []CurvePoint
		a     float64
		// balance is the throughput of the chain at a stall of s.
		balance func(s float64) float64
	}{
		{"a line", 8, line, a, func(s float64) float64 { return 8 / (c + s) }},
		{"no stalls", 8, line, 0, func(float64) float64 { return 2000 }},
		{"a saturated station", 2, saturated, 2e-4, func(s float64) float64 {
			w1, w2 := 2/(s*1000), 2/(s*s*1000*1000)
			return 1000 * (w1 + w2) / (1 + w1 + w2)
		}},
	} {
		got := stalledThroughput(tc.n, tc.curve, tc.a)
		if want := tc.balance(tc.a * got); math.Abs(got-want) > 1e-6*want {
			t.Errorf("%s: X = %v, but the chain at s = a × X gives %v", tc.name, got, want)
		}
	}
}

// TestActiveTPS: the curve's throughput for j users is linear from none
// to its lightest point and between its points, its heaviest's beyond.
func TestActiveTPS(t *testing.T) {
	t.Parallel()
	curve := []CurvePoint{{Users: 8, TPS: 4000}, {Users: 32, TPS: 6400}, {Users: 128, TPS: 4480}}
	for _, tc := range []struct{ j, want float64 }{
		{0, 0}, {2, 1000}, {8, 4000}, {20, 5200}, {32, 6400}, {80, 5440}, {128, 4480}, {200, 4480},
	} {
		if got := activeTPS(curve, tc.j); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%g users: %v, want %v", tc.j, got, tc.want)
		}
	}
	if got := activeTPS(nil, 4); got != 0 {
		t.Errorf("no curve: %v, want 0", got)
	}
}
